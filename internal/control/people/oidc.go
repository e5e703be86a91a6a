package people

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// OIDCIdentity is a person as the identity provider vouched for them: an
// ID token verified, and its user info.
type OIDCIdentity struct {
	Issuer, Subject string
	Email           string
	EmailVerified   bool
	Name            string
	Groups          []string
}

// Why a single sign-on is refused; said to the person.
var (
	ErrOIDCOff           = errors.New("single sign-on is not configured on this control plane")
	ErrOIDCEmail         = errors.New("the identity provider gave no verified email address")
	ErrOIDCDomain        = errors.New("your email domain is not allowed to sign in here")
	ErrOIDCNoTenant      = errors.New("none of your groups gives you a role in a tenant here; ask your administrator")
	ActMemberSyncedBySSO = core.Action{Name: "member.sso_sync", KeepsState: true, Access: true}
)

// SignInOIDC signs in a person the identity provider vouched for: their
// groups decide their roles (the provider is the source of truth, so a
// member is added, or their role changed, as the groups say, audited);
// the session acts in those tenants only.
func (p *People) SignInOIDC(ctx context.Context, id OIDCIdentity, from Client) (*model.Session, string, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	if p.Settings.OIDC == nil {
		return nil, "", ErrOIDCOff
	}
	email := strings.ToLower(strings.TrimSpace(id.Email))
	var c core.Checks
	c.Email(email, "email")
	if !id.EmailVerified || c.Err() != nil {
		return nil, "", ErrOIDCEmail
	}
	domain := email[strings.LastIndex(email, "@")+1:]
	if len(p.Settings.OIDC.AllowedDomains) > 0 && !slices.Contains(p.Settings.OIDC.AllowedDomains, domain) {
		p.Log().InfoContext(ctx, "single sign-on refused: domain not allowed", "domain", domain, "address", from.Address)
		return nil, "", ErrOIDCDomain
	}
	roles := map[model.TenantID]model.TenantRole{}
	groupOf := map[model.TenantID]string{}
	for _, g := range id.Groups {
		for _, gr := range p.Settings.OIDC.Roles[g] {
			if gr.TenantName != "" {
				named, err := store.TenantsNamed(ctx, p.Querier(ctx), gr.TenantName)
				if err != nil {
					return nil, "", err
				}
				if len(named) != 1 {
					p.Log().WarnContext(ctx, "NEBULA_OIDC_ROLES names a tenant by a name that is not one tenant's; use its id",
						"tenant_name", gr.TenantName, "tenants", len(named))
					continue
				}
				gr.Tenant = named[0].ID
			}
			// The strongest role wins when several groups map to a tenant.
			if cur, ok := roles[gr.Tenant]; !ok || cur != model.TenantAdmin {
				roles[gr.Tenant], groupOf[gr.Tenant] = gr.Role, g
			}
		}
	}
	if len(roles) == 0 {
		return nil, "", ErrOIDCNoTenant
	}
	name := strings.TrimSpace(id.Name)
	if name == "" {
		name = email[:strings.Index(email, "@")]
	}
	tenants := make([]model.TenantID, 0, len(roles))
	for t := range roles {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	var sess *model.Session
	var secret string
	err := p.InTx(ctx, func(q *core.Txn) error {
		now := p.Now()
		var user *model.User
		var kept []model.TenantID
		for _, t := range tenants {
			tenant, err := store.LockTenant(ctx, q, t)
			if errors.Is(err, store.ErrNotFound) {
				p.Log().WarnContext(ctx, "NEBULA_OIDC_ROLES names a tenant that does not exist", "tenant_id", t)
				continue
			}
			if err != nil {
				return err
			}
			if user == nil {
				if user, err = store.InsertUserIfAbsent(ctx, q, &model.User{ID: core.NewID[model.UserID](), Email: email, Name: name,
					Kind: model.UserHuman, CreatedAt: now}); err != nil {
					return err
				}
			}
			role := roles[t]
			m, err := store.MemberOf(ctx, q, t, user.ID)
			added := errors.Is(err, store.ErrNotFound)
			switch {
			case errors.Is(err, store.ErrNotFound):
				if err := p.EnsureRoom(ctx, q, tenant, model.LimitMembers, 1); err != nil {
					p.Log().WarnContext(ctx, "single sign-on could not add a member: the plan is full", "tenant_id", t)
					continue
				}
				m = &model.Member{ID: core.NewID[model.MemberID](), TenantID: t, UserID: user.ID, Role: role, CreatedAt: now}
				if err := store.Members.Insert(ctx, q, m); err != nil {
					return err
				}
				if err := store.PutMemberProfile(ctx, q, t, &model.User{ID: user.ID, Email: email, Name: name, Kind: model.UserHuman, CreatedAt: now}); err != nil {
					return err
				}
				if err := p.ssoAudit(ctx, q, m, user, nil, role, groupOf[t], from); err != nil {
					return err
				}
			case err != nil:
				return err
			}
			if !added { // a member before this sign-in: who are they here?
				known, err := store.UserAsKnownIn(ctx, q, t, user.ID)
				if err != nil {
					return err
				}
				if known.Kind != model.UserHuman {
					// An integration signs in with its API tokens only: an
					// identity with its email gets no session as it, and
					// its role stays as its admins set it.
					p.Log().WarnContext(ctx, "single sign-on refused for a tenant: the email is an integration's there",
						"tenant_id", t, "address", from.Address)
					continue
				}
			}
			switch {
			case m.Role != role:
				if m.Role == model.TenantAdmin {
					if n, err := store.CountMembersWithRole(ctx, q, t, model.TenantAdmin); err != nil {
						return err
					} else if n <= 1 {
						kept = append(kept, t) // the last admin stays one
						continue
					}
				}
				old := m.Role
				if err := store.UpdateMemberRole(ctx, q, m.ID, role); err != nil {
					return err
				}
				if err := p.ssoAudit(ctx, q, m, user, &old, role, groupOf[t], from); err != nil {
					return err
				}
			}
			kept = append(kept, t)
		}
		if len(kept) == 0 {
			return ErrOIDCNoTenant
		}
		var err error
		sess, secret, err = p.newSession(ctx, q, user.ID, kept, "oidc", from)
		if err != nil {
			return err
		}
		return p.Note(ctx, q, bus.User(string(user.ID)))
	})
	if err != nil {
		return nil, "", err
	}
	return sess, secret, nil
}

// ssoAudit records a membership single sign-on made or changed.
func (p *People) ssoAudit(ctx context.Context, q *core.Txn, m *model.Member, u *model.User, from *model.TenantRole, to model.TenantRole, group string, c Client) error {
	details := map[string]any{"userId": string(u.ID), "email": u.Email, "role": string(to), "group": group}
	if from != nil {
		details["role"] = map[string]any{"from": string(*from), "to": string(to)}
	}
	ev := p.personEvent(m.TenantID, u.ID, c, ActMemberSyncedBySSO, "Member", string(m.ID), details)
	if err := store.InsertAudit(ctx, q, ev); err != nil {
		return fmt.Errorf("auditing a single sign-on: %w", err)
	}
	return nil
}

// OIDCSettingsFrom reads single sign-on's settings (NEBULA_OIDC_*); tenant
// ids may be raw or global.
func OIDCSettingsFrom(c config.OIDC) core.OIDCSettings {
	out := core.OIDCSettings{AllowedDomains: c.AllowedDomains, Roles: map[string][]core.OIDCGrant{}}
	for group, grants := range c.Roles {
		for _, g := range grants {
			grant := core.OIDCGrant{Role: model.TenantRole(g.Role)}
			switch raw, err := gid.Decode[model.TenantID](gid.Tenant, g.Tenant); {
			case err == nil:
				grant.Tenant = raw
			case rawTenantID.MatchString(g.Tenant):
				grant.Tenant = model.TenantID(g.Tenant)
			default:
				grant.TenantName = g.Tenant
			}
			out.Roles[group] = append(out.Roles[group], grant)
		}
	}
	return out
}

// rawTenantID is a tenant's raw id (a UUID).
var rawTenantID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
