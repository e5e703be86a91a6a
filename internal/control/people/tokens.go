package people

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// TokenPrefix starts every API token, so that secret scanners and people
// recognise one.
const TokenPrefix = "nbt_"

// tokenTouchInterval bounds how often a token's last-used time is written.
const tokenTouchInterval = time.Minute

// AuthenticateSession turns a session's secret into an actor: what a
// signed-in person's browser sends in its cookie, and nowhere else. Every
// failure reads the same.
func (p *People) AuthenticateSession(ctx context.Context, secret, origin string) (*authz.Actor, error) {
	if !strings.HasPrefix(secret, SessionPrefix) || len(secret) > 200 {
		return nil, authz.ErrUnauthenticated
	}
	return p.authenticateSession(core.As(ctx, core.SystemAuthenticator), secret, origin)
}

// Authenticate turns a presented API token into an actor; a session's
// secret is no token (it works only as the cookie it was set as:
// AuthenticateSession). Every failure reads the same to the caller, so a
// token's state is not disclosed.
func (p *People) Authenticate(ctx context.Context, secret, origin string) (*authz.Actor, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 200 {
		return nil, authz.ErrUnauthenticated
	}
	q := p.Querier(ctx)
	hash := [32]byte(core.HashToken(secret))
	tok, user, epoch, cached := p.tokens.get(hash)
	if !cached {
		at := p.tokens.now()
		// The user as the token's tenant knows them: its name and kind
		// for them decide, e.g., whether they may found tenants.
		var err error
		tok, user, err = store.TokenByHash(ctx, q, hash[:])
		if errors.Is(err, store.ErrNotFound) {
			return nil, authz.ErrUnauthenticated
		}
		if err != nil {
			return nil, fmt.Errorf("looking up token: %w", err)
		}
		p.tokens.put(hash, tok, user, epoch, at)
	}
	now := p.Now()
	if tok.RevokedAt != nil || (tok.ExpiresAt != nil && !now.Before(*tok.ExpiresAt)) {
		return nil, authz.ErrUnauthenticated
	}
	if tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) >= tokenTouchInterval {
		if err := store.TouchToken(ctx, q, tok.ID, now, tokenTouchInterval); err != nil {
			// Losing a last-used time must not fail the request.
			p.Log().WarnContext(ctx, "recording token use", "token_id", tok.ID, "error", err)
		} else {
			p.tokens.touched(hash, now)
		}
	}
	return &authz.Actor{User: user, Token: tok, Origin: origin}, nil
}

// insertToken creates a token for user in tenant and returns it with its
// secret. Minted over the API (an actor in ctx), the token expires no
// later than the token it is minted with, and the user may not hold more
// working tokens in the tenant than the cap: a token cannot be used to
// outlive itself, or to mint siblings without end. Callers hold the
// tenant's lock (or create the tenant).
func (p *People) insertToken(ctx context.Context, q store.Querier, tenant model.TenantID, user model.UserID, name string, expires *time.Time, trustedOnly bool) (*model.APIToken, string, error) {
	if a, err := authz.ActorFrom(ctx); err == nil && (a.Token != nil || a.Session != nil) {
		if a.Token != nil {
			if end := a.Token.ExpiresAt; end != nil && (expires == nil || expires.After(*end)) {
				e := *end
				expires = &e
			}
			// A token made with a token bound to trusted documents is
			// bound too: it cannot be a way out.
			trustedOnly = trustedOnly || a.Token.TrustedDocumentsOnly
		}
		n, err := store.CountLiveTokens(ctx, q, tenant, user, p.Now())
		if err != nil {
			return nil, "", err
		}
		if limit := p.Settings.MaxTokensPerUser; n >= limit {
			pr := core.Problem{Code: core.CodeConflict, Message: fmt.Sprintf(
				"you have %d working API tokens in this tenant, the most allowed (%d); revoke one first", n, limit)}
			if user != a.User.ID {
				pr.Field = []string{"input", "userId"}
				pr.Message = fmt.Sprintf("the user has %d working API tokens in this tenant, the most allowed (%d); revoke one first", n, limit)
			}
			return nil, "", pr
		}
	}
	secret, prefix, hash := core.NewSecret(TokenPrefix)
	tok := &model.APIToken{
		ID: core.NewID[model.TokenID](), TenantID: tenant, UserID: user, Name: name, Prefix: prefix, Hash: hash,
		CreatedAt: p.Now(), ExpiresAt: expires, TrustedDocumentsOnly: trustedOnly,
	}
	if err := store.Tokens.Insert(ctx, q, tok); err != nil {
		return nil, "", err
	}
	return tok, secret, nil
}

// CreateTokenInput asks for a token.
type CreateTokenInput struct {
	Name string
	// Tenant is the tenant the token acts in: nil for the caller's token's
	// (or the session's only) tenant.
	Tenant *model.TenantID
	// User is an integration user of the token's tenant, by the id the
	// tenant knows them by; nil for the caller.
	User          *model.LocalUserID
	ExpiresInDays *int
	// TrustedDocumentsOnly binds the token to the trusted documents:
	// it runs no other operation (an integration's opt-in).
	TrustedDocumentsOnly bool
}

// CreateAPIToken creates a token in the caller's tenant and returns its
// secret, which is never shown again.
func (p *People) CreateAPIToken(ctx context.Context, in CreateTokenInput) (*model.APIToken, string, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, "", err
	}
	var c core.Checks
	c.Text(in.Name, "token name", 100, true, "input", "name")
	var expires *time.Time
	if d := in.ExpiresInDays; d != nil {
		if *d < 1 || *d > 3650 {
			c.Add(core.Invalid("expiresInDays must be between 1 and 3650", "input", "expiresInDays"))
		} else {
			t := p.Now().Add(time.Duration(*d) * 24 * time.Hour)
			expires = &t
		}
	}
	if err := c.Err(); err != nil {
		return nil, "", err
	}
	tenant := a.Home()
	switch {
	case in.Tenant != nil && *in.Tenant != tenant && !(a.Session != nil && a.ActsIn(*in.Tenant)):
		return nil, "", core.Problem{Field: []string{"input", "tenantId"}, Code: core.CodeInvalid,
			Message: "a token can be made only in the tenant you act in with this credential"}
	case in.Tenant != nil:
		tenant = *in.Tenant
	case a.Session != nil && len(a.Session.Tenants) > 1:
		return nil, "", core.Invalid("signed in to several tenants: say in which one the token acts", "input", "tenantId")
	case tenant == "":
		return nil, "", core.Invalid("say in which tenant the token acts", "input", "tenantId")
	}
	owner := a.User.ID
	if in.User != nil {
		user, err := store.UserOfLocalID(ctx, p.Querier(ctx), tenant, *in.User)
		if err != nil {
			return nil, "", core.NotFoundOn(err, "userId", "no such user in this tenant")
		}
		if user != owner {
			if err := p.Authorizer().Check(ctx, a, authz.TokenManageIntegrate, model.Scope{Tenant: tenant}); err != nil {
				return nil, "", err
			}
			owner = user
		}
	}
	var tok *model.APIToken
	var secret string
	err = p.Change(ctx, tenant, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if owner != a.User.ID {
			if _, err := store.MemberOf(ctx, q, tenant, owner); err != nil {
				return core.NotFoundOn(err, "userId", "no such user in this tenant")
			}
			// Of the kind this tenant gave them, whatever another said.
			u, err := store.UserAsKnownIn(ctx, q, tenant, owner)
			if err != nil {
				return core.NotFoundOn(err, "userId", "no such user in this tenant")
			}
			if u.Kind != model.UserIntegration {
				return core.Invalid("tokens can be created for integration users only; people create their own", "input", "userId")
			}
		}
		var err error
		tok, secret, err = p.insertToken(ctx, q, tenant, owner, in.Name, expires, in.TrustedDocumentsOnly)
		if err != nil {
			return err
		}
		core.Target(ev, ActTokenCreate, "ApiToken", string(tok.ID))
		ev.Details["name"], ev.Details["prefix"], ev.Details["userId"] = tok.Name, tok.Prefix, string(owner)
		if tok.ExpiresAt != nil {
			ev.Details["expiresAt"] = tok.ExpiresAt.Format(time.RFC3339)
		}
		if tok.TrustedDocumentsOnly {
			ev.Details["trustedDocumentsOnly"] = true
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return tok, secret, nil
}

// RevokeAPIToken revokes a token: the caller's own, or any in the tenant for
// a tenant admin.
func (p *People) RevokeAPIToken(ctx context.Context, id model.TokenID) (*model.APIToken, error) {
	tok, err := p.APIToken(ctx, id)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, tok.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if err := store.RevokeToken(ctx, q, id, p.Now()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return core.Problem{Field: []string{"input", "apiTokenId"}, Code: core.CodeConflict, Message: "the token is already revoked"}
			}
			return err
		}
		core.Target(ev, ActTokenRevoke, "ApiToken", string(id))
		ev.Details["name"], ev.Details["prefix"], ev.Details["userId"] = tok.Name, tok.Prefix, string(tok.UserID)
		tok, err = store.Tokens.Get(ctx, q, id)
		return err
	})
	return core.Committed(tok, err)
}

// APIToken reads a token's metadata: the owner's, or a tenant admin's.
func (p *People) APIToken(ctx context.Context, id model.TokenID) (*model.APIToken, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := store.Tokens.Get(ctx, p.Querier(ctx), id)
	if err != nil {
		return nil, err
	}
	if tok.UserID == a.User.ID && a.ActsIn(tok.TenantID) {
		return tok, nil
	}
	if err := p.Authorizer().Check(ctx, a, authz.MemberManage, tok.Scope()); err != nil {
		return nil, authz.ErrNotVisible
	}
	return tok, nil
}

// MemberAPITokens lists a member's tokens in the member's tenant, oldest
// first: to tenant admins, and to the member.
func (p *People) MemberAPITokens(ctx context.Context, m *model.Member, pg store.PageArgs) (store.Page[model.APIToken], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.APIToken]{}, err
	}
	if m.UserID != a.User.ID || !a.ActsIn(m.TenantID) {
		if err := p.Authorizer().Check(ctx, a, authz.MemberManage, m.Scope()); err != nil {
			return store.Page[model.APIToken]{}, err
		}
	}
	return store.TokensOf(ctx, p.Querier(ctx), m.TenantID, m.UserID, pg)
}

// RevokeMemberAPITokens revokes every token of a member in its tenant not
// revoked yet (tenant admins): an integration's siblings included, which
// its admin may never have seen minted. It returns the tokens it revoked.
// The one audit event is a token revocation naming the user, so that the
// user's open connections check their token at once.
func (p *People) RevokeMemberAPITokens(ctx context.Context, id model.MemberID) (*model.Member, []*model.APIToken, error) {
	m, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Members, id, authz.MemberManage)
	if err != nil {
		return nil, nil, err
	}
	var revoked []*model.APIToken
	err = p.Change(ctx, m.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if m, err = store.Members.Get(ctx, q, id); err != nil {
			return err
		}
		toks, err := store.UnrevokedTokens(ctx, q, m.TenantID, m.UserID)
		if err != nil {
			return err
		}
		if len(toks) == 0 {
			return core.Problem{Field: []string{"input", "memberId"}, Code: core.CodeConflict, Message: "the member has no API token left to revoke"}
		}
		now := p.Now()
		if err := store.RevokeUserTokens(ctx, q, m.TenantID, m.UserID, now); err != nil {
			return err
		}
		prefixes := make([]string, len(toks))
		for i, t := range toks {
			t.RevokedAt = &now
			prefixes[i] = t.Prefix
		}
		revoked = toks
		// The action of a revocation: the user's connections recheck
		// their token (Plane.change notes the user named in the details).
		core.Target(ev, ActTokenRevoke, "Member", string(id))
		ev.Details["userId"], ev.Details["count"], ev.Details["prefixes"] = string(m.UserID), len(toks), prefixes
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return m, revoked, nil
}

// MyAPITokens lists the caller's tokens in the current tenant.
func (p *People) MyAPITokens(ctx context.Context, pg store.PageArgs) (store.Page[model.APIToken], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.APIToken]{}, err
	}
	return store.TokensOf(ctx, p.Querier(ctx), a.Home(), a.User.ID, pg)
}
