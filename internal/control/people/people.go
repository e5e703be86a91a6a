package people

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/passphrase"
	"github.com/nebulactrl/nebula/internal/store"
)

// Secrets of people's sign-in: an invitation link's and a session's (the
// cookie). Both are random like API tokens and stored as SHA-256 hashes.
const (
	InvitationPrefix = "nbi_"
	SessionPrefix    = "nbs_"
)

// The sign-in rate limits count failures in a sliding window, per account
// (an email) and per client address.
const (
	signinWindow         = 15 * time.Minute
	signinAccountLimit   = 10
	signinAddressLimit   = 30
	sessionTouchInterval = time.Minute
)

// Errors of signing in. Every failure of a sign-in reads the same, whether
// or not the account exists; a used, revoked or expired invitation too.
var (
	ErrSignInFailed      = errors.New("wrong email or passphrase")
	ErrInvitationInvalid = errors.New("this invitation link is not valid: it was used, revoked or has expired; ask for a new one")
)

// RateLimited says that sign-ins are refused for a while, and why when it
// is not failures (Reason).
type RateLimited struct {
	RetryAfter time.Duration
	Reason     string
}

func (r RateLimited) Error() string {
	why := r.Reason
	if why == "" {
		why = "too many failed sign-ins"
	}
	return fmt.Sprintf("%s; try again in %s", why, r.RetryAfter.Round(time.Second))
}

// People's actions (audited in the tenant they concern).
var (
	ActMemberInvite       = core.Action{Name: "member.invite", KeepsState: true}
	ActInvitationRevoke   = core.Action{Name: "invitation.revoke", KeepsState: true}
	ActInvitationAccept   = core.Action{Name: "invitation.accept", KeepsState: true}
	ActSessionCreate      = core.Action{Name: "session.create", KeepsState: true}
	ActSessionSigninFails = core.Action{Name: "session.signin_failed", KeepsState: true}
	ActSessionRevoke      = core.Action{Name: "session.revoke", KeepsState: true, Access: true}
)

// hashing bounds the passphrase derivations computed at once (each holds
// 19 MiB and a core for ~40 ms): sign-ins beyond it wait their turn, at
// most maxHashWaiting of them; past that a sign-in is refused at once
// (RateLimited), not left to stall.
var (
	hashing        = make(chan struct{}, passphrase.Slots)
	hashWaiting    atomic.Int32
	maxHashWaiting = int32(32)
)

func withHashing[T any](ctx context.Context, f func() T) (T, error) {
	var zero T
	select {
	case hashing <- struct{}{}:
	default:
		if hashWaiting.Add(1) > maxHashWaiting {
			hashWaiting.Add(-1)
			return zero, RateLimited{RetryAfter: time.Second, Reason: "too many sign-ins are being checked"}
		}
		select {
		case hashing <- struct{}{}:
			hashWaiting.Add(-1)
		case <-ctx.Done():
			hashWaiting.Add(-1)
			return zero, ctx.Err()
		}
	}
	defer func() { <-hashing }()
	return f(), nil
}

// inFlight holds the keys with work under way (one account's sign-in
// being checked). A second sign-in of an account while one is checked is
// refused at once rather than queued: no one signs in to one account
// twice at the same moment, and a burst of guesses at it then costs one
// derivation at a time, one of the hashing slots everybody shares, and
// no write to the store per guess. (Per process; the limits in the store
// hold across replicas.)
type inFlight struct {
	mu sync.Mutex
	m  map[string]bool
}

// begin marks key in flight; false when it already is.
func (k *inFlight) begin(key string) (end func(), ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[key] {
		return nil, false
	}
	if k.m == nil {
		k.m = map[string]bool{}
	}
	k.m[key] = true
	return func() {
		k.mu.Lock()
		delete(k.m, key)
		k.mu.Unlock()
	}, true
}

// errSignInInFlight refuses a sign-in of an account while another is
// checked; any email gets it alike, so it says nothing of the account.
var errSignInInFlight = RateLimited{RetryAfter: time.Second, Reason: "a sign-in to this account is being checked"}

// Client is where a sign-in comes from: its address (rate limits, audit,
// the session list) and its user agent (the session list).
type Client struct {
	Address   string
	UserAgent string
}

// InviteMemberInput invites a person into a tenant.
type InviteMemberInput struct {
	Tenant model.TenantID
	Email  string
	Name   string
	Role   model.TenantRole
}

// InviteMember invites a person to sign in to a tenant: a member already
// (a person, not an integration), or added now as AddMember would. It
// returns the member, the invitation and its link secret, shown once; the
// person opens the link and sets a passphrase for this tenant. A new
// invitation replaces the member's open ones. Tenant admins.
func (p *People) InviteMember(ctx context.Context, in InviteMemberInput) (*model.Member, *model.Invitation, string, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.MemberManage, model.Scope{Tenant: in.Tenant}); err != nil {
		return nil, nil, "", err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	in.Name = strings.TrimSpace(in.Name)
	var c core.Checks
	c.Email(in.Email, "input", "email")
	c.Text(in.Name, "name", 100, true, "input", "name")
	if err := c.Err(); err != nil {
		return nil, nil, "", err
	}
	var m *model.Member
	var inv *model.Invitation
	var secret string
	err = p.Change(ctx, in.Tenant, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		now := p.Now()
		u, err := store.UserByEmail(ctx, q, in.Email)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if u != nil {
			m, err = store.MemberOf(ctx, q, in.Tenant, u.ID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if m == nil {
			if err := p.EnsureRoom(ctx, q, t, model.LimitMembers, 1); err != nil {
				return err
			}
			if u, err = store.InsertUserIfAbsent(ctx, q, &model.User{ID: core.NewID[model.UserID](), Email: in.Email,
				Name: in.Name, Kind: model.UserHuman, CreatedAt: now}); err != nil {
				return err
			}
			m = &model.Member{ID: core.NewID[model.MemberID](), TenantID: in.Tenant, UserID: u.ID, Role: in.Role, CreatedAt: now}
			if err := store.Members.Insert(ctx, q, m); err != nil {
				return err
			}
			if err := store.PutMemberProfile(ctx, q, in.Tenant, &model.User{ID: u.ID, Email: in.Email, Name: in.Name,
				Kind: model.UserHuman, CreatedAt: now}); err != nil {
				return err
			}
		} else {
			known, err := store.UserAsKnownIn(ctx, q, in.Tenant, u.ID)
			if err != nil {
				return err
			}
			if known.Kind != model.UserHuman {
				return core.Problem{Field: []string{"input", "email"}, Code: core.CodeInvalid,
					Message: in.Email + " is an integration of this tenant: integrations use API tokens, they do not sign in"}
			}
		}
		if inv, secret, err = p.openInvitation(ctx, q, in.Tenant, u.ID, in.Email, a.User.ID); err != nil {
			return err
		}
		core.Target(ev, ActMemberInvite, "Member", string(m.ID))
		ev.Details["email"], ev.Details["role"], ev.Details["invitationId"] = in.Email, string(m.Role), string(inv.ID)
		ev.Details["expiresAt"] = inv.ExpiresAt.Format(time.RFC3339)
		return nil
	})
	if err != nil {
		return nil, nil, "", err
	}
	return m, inv, secret, nil
}

// openInvitation replaces a person's open invitations to a tenant with a
// new one, from by; it returns it and its link's secret, shown once (only
// its hash is stored).
func (p *People) openInvitation(ctx context.Context, q *core.Txn, tenant model.TenantID, user model.UserID, email string, by model.UserID) (*model.Invitation, string, error) {
	now := p.Now()
	if _, err := store.RevokeInvitations(ctx, q, tenant, user, now); err != nil {
		return nil, "", err
	}
	secret, _, hash := core.NewSecret(InvitationPrefix)
	inv := &model.Invitation{ID: core.NewID[model.InvitationID](), TenantID: tenant, UserID: user, Email: email, Hash: hash,
		InvitedBy: by, CreatedAt: now, ExpiresAt: now.Add(p.Settings.InvitationTTL)}
	if err := store.Invitations.Insert(ctx, q, inv); err != nil {
		return nil, "", err
	}
	return inv, secret, nil
}

// Invitations pages a tenant's invitations, newest first; tenant admins.
func (p *People) Invitations(ctx context.Context, tenant model.TenantID, pg store.PageArgs) (store.Page[model.Invitation], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.MemberManage, model.Scope{Tenant: tenant}); err != nil {
		return store.Page[model.Invitation]{}, err
	}
	return store.TenantInvitations(ctx, p.Querier(ctx), tenant, pg)
}

// Invitation reads one invitation, for tenant admins of its tenant; to
// anyone else it does not exist.
func (p *People) Invitation(ctx context.Context, id model.InvitationID) (*model.Invitation, error) {
	inv, err := store.Invitations.Get(ctx, p.Querier(ctx), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, authz.ErrNotVisible
	}
	if err != nil {
		return nil, err
	}
	if err := p.Authorizer().CheckCtx(ctx, authz.MemberManage, model.Scope{Tenant: inv.TenantID}); err != nil {
		return nil, authz.ErrNotVisible
	}
	return inv, nil
}

// RevokeInvitation ends an open invitation; tenant admins.
func (p *People) RevokeInvitation(ctx context.Context, id model.InvitationID) (*model.Invitation, error) {
	inv, err := store.Invitations.Get(ctx, p.Querier(ctx), id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, authz.ErrNotVisible
		}
		return nil, err
	}
	if err := p.Authorizer().CheckCtx(ctx, authz.MemberManage, model.Scope{Tenant: inv.TenantID}); err != nil {
		return nil, authz.ErrNotVisible
	}
	err = p.Change(ctx, inv.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if inv.AcceptedAt != nil || inv.RevokedAt != nil {
			return core.Problem{Field: []string{"input", "invitationId"}, Code: core.CodeConflict, Message: "the invitation was used or revoked already"}
		}
		now := p.Now()
		if _, err := store.RevokeInvitations(ctx, q, inv.TenantID, inv.UserID, now); err != nil {
			return err
		}
		inv.RevokedAt = &now
		core.Target(ev, ActInvitationRevoke, "Invitation", string(inv.ID))
		ev.Details["email"], ev.Details["userId"] = inv.Email, string(inv.UserID)
		return nil
	})
	return core.Committed(inv, err)
}

// AcceptInvitation uses an invitation link: the person sets their
// passphrase for the invitation's tenant and is signed in there; their
// other sessions that act there end (a passphrase reset: what the old one
// opened closes), audited with the acceptance. A link works once, until it
// expires, unless revoked or replaced.
func (p *People) AcceptInvitation(ctx context.Context, secret, pass string, from Client) (*model.Session, string, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	if err := passphrase.Valid(pass); err != nil {
		return nil, "", core.Problem{Field: []string{"passphrase"}, Code: core.CodeInvalid, Message: err.Error()}
	}
	if !strings.HasPrefix(secret, InvitationPrefix) || len(secret) > 200 {
		return nil, "", ErrInvitationInvalid
	}
	inv, err := store.InvitationByHash(ctx, p.Querier(ctx), core.HashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", ErrInvitationInvalid
	}
	if err != nil {
		return nil, "", err
	}
	now := p.Now()
	if inv.AcceptedAt != nil || inv.RevokedAt != nil || !now.Before(inv.ExpiresAt) {
		return nil, "", ErrInvitationInvalid
	}
	kdf, err := store.PassphraseKDF(ctx, p.Querier(ctx), inv.UserID)
	if errors.Is(err, store.ErrNotFound) {
		kdf, err = passphrase.NewKDF(), nil
	}
	if err != nil {
		return nil, "", err
	}
	key, err := derive(ctx, kdf, pass)
	if err != nil {
		return nil, "", err
	}
	var sess *model.Session
	var sessionSecret string
	err = p.InTx(ctx, func(q *core.Txn) error {
		if _, err := store.LockTenant(ctx, q, inv.TenantID); err != nil {
			return err
		}
		if _, err := store.MemberOf(ctx, q, inv.TenantID, inv.UserID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return ErrInvitationInvalid // removed since
			}
			return err
		}
		ok, err := store.AcceptInvitation(ctx, q, inv.ID, now)
		if err != nil {
			return err
		}
		if !ok {
			return ErrInvitationInvalid // used at the same moment
		}
		// A new passphrase for a tenant ends the sign-ins made with the
		// old one there (a reset: the old may be known to someone else).
		ended, err := store.RevokeTenantSessions(ctx, q, inv.TenantID, inv.UserID, now)
		if err != nil {
			return err
		}
		if err := p.setPassphrase(ctx, q, inv.UserID, inv.TenantID, kdf, key, pass, now); err != nil {
			return err
		}
		details := map[string]any{"invitationId": string(inv.ID)}
		if ended > 0 {
			details["sessionsEnded"] = ended
			if err := p.Note(ctx, q, bus.User(string(inv.UserID))); err != nil {
				return err
			}
		}
		ev := p.personEvent(inv.TenantID, inv.UserID, from, ActInvitationAccept, "Member", "", details)
		if err := q.Audited(ctx, ev); err != nil {
			return err
		}
		sess, sessionSecret, err = p.newSession(ctx, q, inv.UserID, []model.TenantID{inv.TenantID}, "invitation", from)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return sess, sessionSecret, nil
}

// personEvent is an audit event of a person's own step in signing in or
// out of a tenant (no token or session acts for them yet): the person is
// the actor, from their client; id, when not empty, names the target.
func (p *People) personEvent(tenant model.TenantID, user model.UserID, from Client, act core.Action, typ, id string, details map[string]any) *model.AuditEvent {
	ev := &model.AuditEvent{TenantID: tenant, ActorID: &user, ClientAddress: from.Address, CreatedAt: p.Now(),
		Action: act.Name, TargetType: typ, Details: details}
	if id != "" {
		ev.TargetID = &id
	}
	return ev
}

// newSession starts a session of a user acting in tenants, audited in
// each of them.
func (p *People) newSession(ctx context.Context, q *core.Txn, user model.UserID, tenants []model.TenantID, method string, from Client) (*model.Session, string, error) {
	secret, prefix, hash := core.NewSecret(SessionPrefix)
	now := p.Now()
	slices.Sort(tenants)
	s := &model.Session{ID: core.NewID[model.SessionID](), UserID: user, Tenants: tenants, Method: method, Prefix: prefix, Hash: hash,
		Address: core.ClipText(from.Address, 100), UserAgent: core.ClipText(from.UserAgent, 300), CreatedAt: now, LastSeenAt: now,
		ExpiresAt: now.Add(p.Settings.SessionTTL)}
	if err := store.Sessions.Insert(ctx, q, s); err != nil {
		return nil, "", err
	}
	for _, t := range tenants {
		ev := p.personEvent(t, user, from, ActSessionCreate, "User", string(user), map[string]any{"method": method, "sessionId": string(s.ID)})
		if err := store.InsertAudit(ctx, q, ev); err != nil {
			return nil, "", err
		}
	}
	return s, secret, nil
}

// limitKey is what a rate limit counts a client address under: an IPv4
// address itself, an IPv6 address by its /64 (one host may use a whole
// /64, and rotating within it must not start its count over).
func limitKey(address string) string {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return address
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

// derive derives a passphrase's key under a KDF, as one of the hashing
// slots.
func derive(ctx context.Context, kdf, pass string) ([]byte, error) {
	type derived struct {
		key []byte
		err error
	}
	d, err := withHashing(ctx, func() derived {
		key, err := passphrase.Derive(kdf, pass)
		return derived{key, err}
	})
	if err != nil {
		return nil, err
	}
	return d.key, d.err
}

// setPassphrase stores a person's passphrase for a tenant, sealed with the
// key derived under their KDF (recorded now if they had none; when another
// transaction recorded one first, the key is derived again under it).
func (p *People) setPassphrase(ctx context.Context, q *core.Txn, user model.UserID, tenant model.TenantID, kdf string, key []byte,
	pass string, now time.Time) error {
	kept, err := store.EnsurePassphraseKDF(ctx, q, user, kdf)
	if err != nil {
		return err
	}
	if kept != kdf {
		if key, err = derive(ctx, kept, pass); err != nil {
			return err
		}
	}
	return store.SetPassphrase(ctx, q, user, tenant, passphrase.Seal(key, string(tenant)), now)
}

// SignIn signs a person in with their email and passphrase: the session
// acts in every tenant whose passphrase it is. The attempt is counted
// against the limits per account and per address before the passphrase is
// checked, atomically (past them, RateLimited); one account's attempts are
// checked one at a time; the check is one key derivation whatever the
// number of tenants (a row written before that keeps its own hash costs its
// own until the person signs in there, which reseals it). Failures read the
// same whether or not the account exists, and take as long.
func (p *People) SignIn(ctx context.Context, email, pass string, from Client) (*model.Session, string, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	email = strings.ToLower(strings.TrimSpace(email))
	if len(email) > 320 || len(pass) > 4*passphrase.MaxLength {
		return nil, "", ErrSignInFailed
	}
	now := p.Now()
	since := now.Add(-signinWindow)
	account, address := "account:"+email, "address:"+limitKey(from.Address)
	end, ok := p.signins.begin(account)
	if !ok {
		return nil, "", errSignInInFlight
	}
	defer end()
	// Past a limit already (a read: no write lock), refused at once; under
	// it, the attempt is reserved atomically below. A burst of guesses at
	// one account thus takes the store's write lock as many times as the
	// limit lets through, not once per guess.
	for _, lim := range []store.SigninLimit{{Subject: account, Max: signinAccountLimit}, {Subject: address, Max: signinAddressLimit}} {
		n, err := store.SigninFailures(ctx, p.Querier(ctx), lim.Subject, since)
		if err != nil {
			return nil, "", err
		}
		if n >= lim.Max {
			return nil, "", RateLimited{RetryAfter: signinWindow}
		}
	}
	var room bool
	if err := p.InTx(ctx, func(q *core.Txn) error {
		var err error
		room, err = store.ReserveSignin(ctx, q, []store.SigninLimit{{Subject: account, Max: signinAccountLimit},
			{Subject: address, Max: signinAddressLimit}}, now, since)
		return err
	}); err != nil {
		return nil, "", err
	}
	if !room {
		return nil, "", RateLimited{RetryAfter: signinWindow}
	}
	u, err := store.UserByEmail(ctx, p.Querier(ctx), email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, "", err
	}
	var hashes []store.Passphrase
	kdf := ""
	if u != nil {
		if hashes, err = store.PassphrasesOf(ctx, p.Querier(ctx), u.ID); err != nil {
			return nil, "", err
		}
		if kdf, err = store.PassphraseKDF(ctx, p.Querier(ctx), u.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, "", err
		}
	}
	type checked struct {
		matched, legacy []model.TenantID
		key             []byte
	}
	c, err := withHashing(ctx, func() (c checked) {
		sealed := slices.ContainsFunc(hashes, func(h store.Passphrase) bool { return passphrase.Sealed(h.Hash) })
		switch {
		case sealed:
			c.key, _ = passphrase.Derive(kdf, pass)
		case len(hashes) == 0:
			_, _ = passphrase.Derive(passphrase.DummyKDF, pass) // as long as a real check
		}
		for _, h := range hashes {
			switch {
			case passphrase.Sealed(h.Hash):
				if c.key != nil && passphrase.Opens(c.key, string(h.Tenant), h.Hash) {
					c.matched = append(c.matched, h.Tenant)
				}
			case passphrase.Check(h.Hash, pass): // written before: its own hash
				c.matched = append(c.matched, h.Tenant)
				c.legacy = append(c.legacy, h.Tenant)
			}
		}
		return c
	})
	if err != nil {
		return nil, "", err
	}
	if len(c.matched) == 0 {
		err := p.InTx(ctx, func(q *core.Txn) error {
			for _, h := range hashes {
				ev := p.personEvent(h.Tenant, u.ID, from, ActSessionSigninFails, "User", "", map[string]any{"method": "passphrase"})
				if err := store.InsertAudit(ctx, q, ev); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, "", err
		}
		p.Log().InfoContext(ctx, "a sign-in failed", "address", from.Address)
		return nil, "", ErrSignInFailed
	}
	if len(c.legacy) > 0 && kdf == "" {
		kdf = passphrase.NewKDF()
		if c.key, err = derive(ctx, kdf, pass); err != nil {
			return nil, "", err
		}
	}
	var sess *model.Session
	var secret string
	err = p.InTx(ctx, func(q *core.Txn) error {
		if err := store.ClearSigninFailures(ctx, q, account); err != nil {
			return err
		}
		if err := store.ForgetSigninAttempt(ctx, q, address, now); err != nil {
			return err
		}
		for _, t := range c.legacy { // resealed: one derivation from now on
			if err := p.setPassphrase(ctx, q, u.ID, t, kdf, c.key, pass, now); err != nil {
				return err
			}
		}
		sess, secret, err = p.newSession(ctx, q, u.ID, c.matched, "passphrase", from)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return sess, secret, nil
}

// authenticateSession turns a session secret (the cookie) into an actor.
func (p *People) authenticateSession(ctx context.Context, secret, origin string) (*authz.Actor, error) {
	q := p.Querier(ctx)
	s, err := store.SessionByHash(ctx, q, core.HashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, authz.ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("looking up session: %w", err)
	}
	now := p.Now()
	if s.RevokedAt != nil || !now.Before(s.ExpiresAt) || len(s.Tenants) == 0 {
		return nil, authz.ErrUnauthenticated
	}
	user, err := store.UserAsKnownIn(ctx, q, s.Tenants[0], s.UserID)
	if err != nil {
		return nil, fmt.Errorf("reading session user: %w", err)
	}
	if now.Sub(s.LastSeenAt) >= sessionTouchInterval {
		if err := store.TouchSession(ctx, q, s.ID, now, sessionTouchInterval); err != nil {
			p.Log().WarnContext(ctx, "recording session use", "session_id", s.ID, "error", err)
		}
	}
	return &authz.Actor{User: user, Session: s, Origin: origin}, nil
}

// Sessions pages the caller's live sessions that act only in tenants the
// caller acts in, newest first: a person invited into another tenant is
// not shown, there, where and how they are signed in elsewhere. The
// tenants are part of the read, so a page is full while there are more.
func (p *People) Sessions(ctx context.Context, pg store.PageArgs) (store.Page[model.Session], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.Session]{}, err
	}
	within, every := a.Within()
	if !every && within == nil {
		within = []model.TenantID{} // acting in none: no session is the caller's to see
	}
	return store.UserSessions(ctx, p.Querier(ctx), a.User.ID, within, p.Now(), pg)
}

// Session reads one of the caller's live sessions that Sessions lists;
// any other does not exist for the caller.
func (p *People) Session(ctx context.Context, id model.SessionID) (*model.Session, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	s, err := store.Sessions.Get(ctx, p.Querier(ctx), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (s.UserID != a.User.ID || s.RevokedAt != nil || !s.ExpiresAt.After(p.Now()) || !a.Covers(s.Tenants)) {
		return nil, authz.ErrNotVisible
	}
	return s, err
}

// RevokeSession ends one of the caller's sessions (signing out there),
// audited in the tenants it acted in; the connections it holds close.
// Nobody ends another person's session, nor one of their own that acts in
// a tenant the caller does not: it does not exist for them.
func (p *People) RevokeSession(ctx context.Context, id model.SessionID) error {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return err
	}
	return p.InTx(ctx, func(q *core.Txn) error {
		s, err := store.Sessions.Get(ctx, q, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && (s.UserID != a.User.ID || s.RevokedAt != nil || !a.Covers(s.Tenants)) {
			return authz.ErrNotVisible
		}
		if err != nil {
			return err
		}
		if _, err := store.RevokeSession(ctx, q, a.User.ID, id, p.Now()); err != nil {
			return err
		}
		for _, t := range s.Tenants {
			ev := p.NewAuditEvent(a, t)
			core.Target(ev, ActSessionRevoke, "Session", string(id))
			ev.Details["method"] = s.Method
			if err := store.InsertAudit(ctx, q, ev.AuditEvent); err != nil {
				return err
			}
		}
		return p.Note(ctx, q, bus.User(string(a.User.ID)))
	})
}

// SignOut ends the session whose secret the browser holds; an unknown or
// ended one changes nothing.
func (p *People) SignOut(ctx context.Context, secret string, from Client) error {
	ctx = core.As(ctx, core.SystemAuthenticator)
	s, err := store.SessionByHash(ctx, p.Querier(ctx), core.HashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return p.InTx(ctx, func(q *core.Txn) error {
		now := p.Now()
		ok, err := store.RevokeSession(ctx, q, s.UserID, s.ID, now)
		if err != nil || !ok {
			return err // ended already: nothing to audit
		}
		for _, t := range s.Tenants {
			ev := p.personEvent(t, s.UserID, from, ActSessionRevoke, "Session", string(s.ID), map[string]any{"method": s.Method, "signedOut": true})
			if err := store.InsertAudit(ctx, q, ev); err != nil {
				return err
			}
		}
		return p.Note(ctx, q, bus.User(string(s.UserID)))
	})
}
