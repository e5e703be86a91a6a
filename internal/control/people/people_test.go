package people

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// The rules of this domain, tested on the embedded store without the API:
// a tenant bootstrapped, people invited and signed in, their sessions and
// tokens ended, and what a lower role or a last admin may not do.

type tenant struct {
	p     *People
	st    *store.Store
	boot  *Bootstrapped
	admin context.Context
}

func newTenant(t *testing.T) *tenant {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "people.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := core.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tn := &tenant{p: New(c), st: st}
	if tn.boot, err = tn.p.Bootstrap(ctx, "acme", "admin@acme.test"); err != nil {
		t.Fatal(err)
	}
	tn.admin = tn.withToken(t, tn.boot.Secret)
	return tn
}

// withToken is a context acting with an API token's secret.
func (tn *tenant) withToken(t *testing.T, secret string) context.Context {
	t.Helper()
	a, err := tn.p.Authenticate(context.Background(), secret, "127.0.0.1")
	if err != nil {
		t.Fatalf("authenticating a token: %v", err)
	}
	return authz.WithActor(context.Background(), a)
}

// withSession is a context acting with a session's secret.
func (tn *tenant) withSession(t *testing.T, secret string) context.Context {
	t.Helper()
	a, err := tn.p.AuthenticateSession(context.Background(), secret, "127.0.0.1")
	if err != nil {
		t.Fatalf("authenticating a session: %v", err)
	}
	return authz.WithActor(context.Background(), a)
}

// invite invites email with role and accepts the invitation with pass: the
// new person's session secret.
func (tn *tenant) invite(t *testing.T, email string, role model.TenantRole, pass string) string {
	t.Helper()
	_, _, link, err := tn.p.InviteMember(tn.admin, InviteMemberInput{Tenant: tn.boot.Tenant.ID, Email: email, Name: email, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := tn.p.AcceptInvitation(context.Background(), link, pass, Client{Address: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func (tn *tenant) members(t *testing.T) []*model.Member {
	t.Helper()
	page, err := tn.p.Members(tn.admin, tn.boot.Tenant.ID, store.PageArgs{First: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

const pass = "correct horse battery staple 42"

func TestInvitedPersonSignsInAndOut(t *testing.T) {
	tn := newTenant(t)
	first := tn.invite(t, "dev@acme.test", model.TenantMember, pass)
	if a := tn.withSession(t, first); a == nil {
		t.Fatal("no actor")
	}
	// An invitation link works once.
	if _, _, err := tn.p.AcceptInvitation(context.Background(), first, pass, Client{Address: "192.0.2.1"}); err == nil {
		t.Fatal("a session secret was taken as an invitation link")
	}

	if _, _, err := tn.p.SignIn(context.Background(), "dev@acme.test", pass+"x", Client{Address: "192.0.2.1"}); !errors.Is(err, ErrSignInFailed) {
		t.Fatalf("a wrong passphrase: %v, want ErrSignInFailed", err)
	}
	if _, _, err := tn.p.SignIn(context.Background(), "nobody@acme.test", pass, Client{Address: "192.0.2.1"}); !errors.Is(err, ErrSignInFailed) {
		t.Fatalf("an unknown email: %v, want the same ErrSignInFailed", err)
	}
	_, second, err := tn.p.SignIn(context.Background(), "dev@acme.test", pass, Client{Address: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	tn.withSession(t, second)

	if err := tn.p.SignOut(context.Background(), second, Client{Address: "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.p.AuthenticateSession(context.Background(), second, "127.0.0.1"); err == nil {
		t.Fatal("a signed-out session still authenticates")
	}
	// The other session is not ended by it.
	tn.withSession(t, first)
}

func TestLowerRoleCannotManageMembers(t *testing.T) {
	tn := newTenant(t)
	member := tn.withSession(t, tn.invite(t, "dev@acme.test", model.TenantMember, pass))
	before := len(tn.members(t))
	_, _, _, err := tn.p.InviteMember(member, InviteMemberInput{Tenant: tn.boot.Tenant.ID, Email: "x@acme.test", Name: "x", Role: model.TenantAdmin})
	if !errors.Is(err, authz.ErrForbidden) {
		t.Fatalf("a member invited a tenant admin: %v, want forbidden", err)
	}
	if after := len(tn.members(t)); after != before {
		t.Fatalf("a refused invitation changed the members: %d, then %d", before, after)
	}
}

func TestLastAdminStays(t *testing.T) {
	tn := newTenant(t)
	ms := tn.members(t)
	if len(ms) != 1 {
		t.Fatalf("%d members after bootstrap, want 1", len(ms))
	}
	err := tn.p.RemoveMember(tn.admin, ms[0].ID)
	var ps core.Problems
	if !errors.As(err, &ps) && !errors.As(err, new(core.Problem)) {
		t.Fatalf("removing the last admin: %v, want a problem", err)
	}
	if _, err := tn.p.UpdateMemberRole(tn.admin, ms[0].ID, model.TenantMember); err == nil {
		t.Fatal("the last admin was made a viewer")
	}
	if got := tn.members(t); len(got) != 1 || got[0].Role != model.TenantAdmin {
		t.Fatalf("members after refused changes: %+v", got)
	}
}

func TestRevokedTokenStopsAtOnce(t *testing.T) {
	tn := newTenant(t)
	tok, secret, err := tn.p.CreateAPIToken(tn.admin, CreateTokenInput{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	// Authenticated once, so that the token is kept in the cache.
	tn.withToken(t, secret)
	if _, err := tn.p.RevokeAPIToken(tn.admin, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.p.Authenticate(context.Background(), secret, "127.0.0.1"); err == nil {
		t.Fatal("a revoked token still authenticates on the replica that revoked it")
	}
}
