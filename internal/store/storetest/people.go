package storetest

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func testPeople(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newTenant(t, s), newTenant(t, s)
	u, other := newUser(t, s), newUser(t, s)
	newMember(t, s, a, u, model.TenantMember)
	newMember(t, s, b, u, model.TenantMember)
	now := store.Now()

	t.Run("passphrases", func(t *testing.T) {
		wantNoErr(t, "setting a's", store.SetPassphrase(ctx, s.Q(), u.ID, a.ID, "$argon2id$a1", now))
		wantNoErr(t, "setting b's", store.SetPassphrase(ctx, s.Q(), u.ID, b.ID, "$argon2id$b", now))
		wantNoErr(t, "setting a's again", store.SetPassphrase(ctx, s.Q(), u.ID, a.ID, "$argon2id$a2", now.Add(time.Second)))
		got, err := store.PassphrasesOf(ctx, s.Q(), u.ID)
		wantNoErr(t, "reading", err)
		want := []store.Passphrase{{Tenant: a.ID, Hash: "$argon2id$a2"}, {Tenant: b.ID, Hash: "$argon2id$b"}}
		if a.ID > b.ID {
			want[0], want[1] = want[1], want[0]
		}
		assertEqual(t, "passphrases", got, want)
		// A tenant the user left keeps no door open, even before its row
		// is deleted.
		wantNoErr(t, "leaving b", store.Members.Delete(ctx, s.Q(), memberOf(t, s, b, u).ID))
		got, _ = store.PassphrasesOf(ctx, s.Q(), u.ID)
		assertEqual(t, "passphrases after leaving b", got, []store.Passphrase{{Tenant: a.ID, Hash: "$argon2id$a2"}})
		wantNoErr(t, "deleting b's", store.DeletePassphrase(ctx, s.Q(), u.ID, b.ID))
		if n := mustCount(t, s, "passphrases", "user_id = $1", string(u.ID)); n != 1 {
			t.Errorf("%d passphrase rows after deleting b's, want 1", n)
		}
		none, _ := store.PassphrasesOf(ctx, s.Q(), other.ID)
		if len(none) != 0 {
			t.Errorf("a user without passphrases has %v", none)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		mkOf := func(user model.UserID, tenants []model.TenantID, hash string, created time.Time) *model.Session {
			x := &model.Session{ID: model.SessionID(newID()), UserID: user, Tenants: tenants, Method: "passphrase", Prefix: "nbs_abcdefgh",
				Hash: []byte(hash), Address: "198.51.100.7", UserAgent: "Firefox", CreatedAt: created, LastSeenAt: created,
				ExpiresAt: created.Add(12 * time.Hour)}
			wantNoErr(t, "inserting a session", store.Sessions.Insert(ctx, s.Q(), x))
			return x
		}
		mk := func(tenants []model.TenantID, hash string, created time.Time) *model.Session {
			return mkOf(u.ID, tenants, hash, created)
		}
		s1 := mk([]model.TenantID{a.ID}, "h1", now)
		s2 := mk([]model.TenantID{a.ID, b.ID}, "h2", now.Add(time.Minute))
		s3 := mk([]model.TenantID{b.ID}, "h3", now.Add(2*time.Minute))
		old := mk([]model.TenantID{a.ID}, "h4", now.Add(-13*time.Hour)) // expired
		revoked := mk([]model.TenantID{a.ID}, "h5", now.Add(2*time.Minute))
		theirs := mkOf(other.ID, []model.TenantID{a.ID}, "h6", now.Add(2*time.Minute))
		s4 := mk([]model.TenantID{a.ID}, "h7", now.Add(150*time.Second))
		got, err := store.SessionByHash(ctx, s.Q(), []byte("h2"))
		wantNoErr(t, "by hash", err)
		assertEqual(t, "session by hash", got, s2)
		_, err = store.SessionByHash(ctx, s.Q(), []byte("nope"))
		wantErr(t, "an unknown hash", err, store.ErrNotFound)

		wantNoErr(t, "touching", store.TouchSession(ctx, s.Q(), s1.ID, now.Add(30*time.Second), time.Minute))
		if got := mustGet(t, s, store.Sessions, s1.ID); !got.LastSeenAt.Equal(s1.LastSeenAt) {
			t.Errorf("touched within the interval: last seen %v, want %v", got.LastSeenAt, s1.LastSeenAt)
		}
		later := now.Add(2 * time.Minute)
		wantNoErr(t, "touching later", store.TouchSession(ctx, s.Q(), s1.ID, later, time.Minute))
		if got := mustGet(t, s, store.Sessions, s1.ID); !got.LastSeenAt.Equal(later) {
			t.Errorf("touched after the interval: last seen %v, want %v", got.LastSeenAt, later)
		}
		if ok, err := store.RevokeSession(ctx, s.Q(), u.ID, revoked.ID, now); err != nil || !ok {
			t.Fatalf("revoking a session: %v, %v", ok, err)
		}

		// Newest first, paged both ways; the ended, the expired and another
		// user's sessions are never read.
		sessID := func(x *model.Session) model.SessionID { return x.ID }
		at := now.Add(3 * time.Minute)
		page := func(what string, within []model.TenantID, pg store.PageArgs, want []*model.Session, hasNext, hasPrevious bool) {
			t.Helper()
			p, err := store.UserSessions(ctx, s.Q(), u.ID, within, at, pg)
			wantNoErr(t, what, err)
			wantIDs(t, what, p.Items, want, sessID)
			if p.HasNext != hasNext || p.HasPrevious != hasPrevious {
				t.Errorf("%s: HasNext %v, HasPrevious %v; want %v, %v", what, p.HasNext, p.HasPrevious, hasNext, hasPrevious)
			}
		}
		page("live sessions", nil, store.PageArgs{First: 10}, []*model.Session{s4, s3, s2, s1}, false, false)
		page("the first two", nil, store.PageArgs{First: 2}, []*model.Session{s4, s3}, true, false)
		page("the first two, not asking for more", nil, store.PageArgs{First: 2, NoNext: true}, []*model.Session{s4, s3}, false, false)
		page("after the second", nil, store.PageArgs{First: 2, After: string(s3.ID)}, []*model.Session{s2, s1}, false, false)
		page("the last two", nil, store.PageArgs{First: 2, FromEnd: true}, []*model.Session{s2, s1}, false, true)
		page("the two before the third", nil, store.PageArgs{First: 2, Before: string(s2.ID), FromEnd: true}, []*model.Session{s4, s3}, false, false)
		page("between the first and the last", nil, store.PageArgs{First: 10, After: string(s4.ID), Before: string(s1.ID)}, []*model.Session{s3, s2}, false, false)
		page("between, from the end", nil, store.PageArgs{First: 1, After: string(s4.ID), Before: string(s1.ID), FromEnd: true}, []*model.Session{s2}, false, true)
		page("after an ended session", nil, store.PageArgs{First: 10, After: string(revoked.ID)}, []*model.Session{s3, s2, s1}, false, false)
		page("none", nil, store.PageArgs{First: 0}, nil, true, false)
		// Within tenants: only the sessions acting in none but those, and
		// a page is full while there are more of them.
		page("acting in a only", []model.TenantID{a.ID}, store.PageArgs{First: 10}, []*model.Session{s4, s1}, false, false)
		page("acting in a only, the first", []model.TenantID{a.ID}, store.PageArgs{First: 1}, []*model.Session{s4}, true, false)
		page("acting in a only, after the first", []model.TenantID{a.ID}, store.PageArgs{First: 1, After: string(s4.ID)}, []*model.Session{s1}, false, false)
		page("acting in a only, the last", []model.TenantID{a.ID}, store.PageArgs{First: 1, FromEnd: true}, []*model.Session{s1}, false, true)
		page("acting in b only", []model.TenantID{b.ID}, store.PageArgs{First: 10}, []*model.Session{s3}, false, false)
		page("acting in a or b", []model.TenantID{b.ID, a.ID}, store.PageArgs{First: 10}, []*model.Session{s4, s3, s2, s1}, false, false)
		page("acting in another tenant", []model.TenantID{model.TenantID(newID())}, store.PageArgs{First: 10}, nil, false, false)
		page("acting in no tenant", []model.TenantID{}, store.PageArgs{First: 10}, nil, false, false)
		if p, err := store.UserSessions(ctx, s.Q(), u.ID, nil, old.CreatedAt.Add(time.Minute), store.PageArgs{First: 10}); err != nil || !slices.ContainsFunc(p.Items, func(x *model.Session) bool { return x.ID == old.ID }) {
			t.Errorf("before it expired, the old session is not listed: %v, %v", p.Items, err)
		}
		p, err := store.UserSessions(ctx, s.Q(), other.ID, nil, at, store.PageArgs{First: 10})
		wantNoErr(t, "listing the other user's", err)
		wantIDs(t, "the other user's sessions", p.Items, []*model.Session{theirs}, sessID)

		ok, err := store.RevokeSession(ctx, s.Q(), other.ID, s3.ID, now)
		wantNoErr(t, "revoking another's", err)
		if ok {
			t.Error("a user revoked another user's session")
		}
		ok, _ = store.RevokeSession(ctx, s.Q(), u.ID, s3.ID, now)
		again, _ := store.RevokeSession(ctx, s.Q(), u.ID, s3.ID, now)
		if !ok || again {
			t.Errorf("revoking: %v, then again: %v; want true, false", ok, again)
		}
		n, err := store.RevokeTenantSessions(ctx, s.Q(), b.ID, u.ID, now)
		wantNoErr(t, "revoking b's", err)
		if n != 1 || mustGet(t, s, store.Sessions, s2.ID).RevokedAt == nil || mustGet(t, s, store.Sessions, s1.ID).RevokedAt != nil {
			t.Errorf("revoking the sessions acting in b ended %d; want s2 only (s3 was already)", n)
		}
	})

	t.Run("invitations", func(t *testing.T) {
		mk := func(hash string, created time.Time) *model.Invitation {
			x := &model.Invitation{ID: model.InvitationID(newID()), TenantID: a.ID, UserID: u.ID, Email: u.Email, Hash: []byte(hash),
				InvitedBy: other.ID, CreatedAt: created, ExpiresAt: created.Add(7 * 24 * time.Hour)}
			wantNoErr(t, "inserting an invitation", store.Invitations.Insert(ctx, s.Q(), x))
			return x
		}
		i1, i2 := mk("i1", now), mk("i2", now.Add(time.Second))
		got, err := store.InvitationByHash(ctx, s.Q(), []byte("i1"))
		wantNoErr(t, "by hash", err)
		assertEqual(t, "invitation by hash", got, i1)
		list, err := store.TenantInvitations(ctx, s.Q(), a.ID, store.PageArgs{First: 10})
		wantNoErr(t, "listing", err)
		invID := func(x *model.Invitation) model.InvitationID { return x.ID }
		wantIDs(t, "a's invitations", list.Items, []*model.Invitation{i2, i1}, invID)
		got2, err := store.TenantInvitations(ctx, s.Q(), a.ID, store.PageArgs{First: 1, After: string(i2.ID)})
		wantNoErr(t, "listing after the newest", err)
		wantIDs(t, "after the newest", got2.Items, []*model.Invitation{i1}, invID)
		got2, err = store.TenantInvitations(ctx, s.Q(), a.ID, store.PageArgs{First: 1, FromEnd: true})
		wantNoErr(t, "listing from the end", err)
		wantIDs(t, "the oldest, from the end", got2.Items, []*model.Invitation{i1}, invID)
		if !got2.HasPrevious {
			t.Error("the oldest of two, read from the end: HasPrevious false")
		}
		ok, _ := store.AcceptInvitation(ctx, s.Q(), i1.ID, now)
		again, _ := store.AcceptInvitation(ctx, s.Q(), i1.ID, now)
		if !ok || again {
			t.Errorf("accepting: %v, then again: %v; want true, false (single use)", ok, again)
		}
		n, err := store.RevokeInvitations(ctx, s.Q(), a.ID, u.ID, now)
		wantNoErr(t, "revoking", err)
		if n != 1 || mustGet(t, s, store.Invitations, i2.ID).RevokedAt == nil {
			t.Errorf("revoked %d open invitations, want i2's", n)
		}
		if ok, _ := store.AcceptInvitation(ctx, s.Q(), i2.ID, now); ok {
			t.Error("a revoked invitation was accepted")
		}
	})

	t.Run("awaiting approval", func(t *testing.T) {
		g := newGraph(t, s)
		waiting := newDeploymentWith(t, s, g.release, g.cluster, func(d *model.Deployment) { d.Stage = model.StageAwaitingApproval })
		newDeploymentWith(t, s, g.release, g.cluster, func(d *model.Deployment) { d.Stage = model.StageDelivering })
		later := newDeploymentWith(t, s, g.release, g.cluster, func(d *model.Deployment) { d.Stage = model.StageAwaitingApproval })
		id := func(x *model.Deployment) model.DeploymentID { return x.ID }
		got, err := store.AwaitingApproval(ctx, s.Q(), g.tenant.ID, true, nil, store.PageArgs{First: 10})
		wantNoErr(t, "reading", err)
		wantIDs(t, "awaiting approval", got.Items, []*model.Deployment{waiting, later}, id)
		// Paged both ways, oldest first.
		first, err := store.AwaitingApproval(ctx, s.Q(), g.tenant.ID, true, nil, store.PageArgs{First: 1})
		wantNoErr(t, "reading one", err)
		wantIDs(t, "the oldest", first.Items, []*model.Deployment{waiting}, id)
		last, err := store.AwaitingApproval(ctx, s.Q(), g.tenant.ID, true, nil, store.PageArgs{First: 1, FromEnd: true})
		wantNoErr(t, "reading the last", err)
		wantIDs(t, "the newest, from the end", last.Items, []*model.Deployment{later}, id)
		if !first.HasNext || !last.HasPrevious {
			t.Errorf("pages of one of two: HasNext %v, HasPrevious %v", first.HasNext, last.HasPrevious)
		}
		// Of the projects given only.
		mine, err := store.AwaitingApproval(ctx, s.Q(), g.tenant.ID, false, []model.ProjectID{g.project.ID}, store.PageArgs{First: 10})
		wantNoErr(t, "reading a project's", err)
		wantIDs(t, "of its project", mine.Items, []*model.Deployment{waiting, later}, id)
		for name, projects := range map[string][]model.ProjectID{"no project": nil, "another project": {model.ProjectID(newID())}} {
			if none, _ := store.AwaitingApproval(ctx, s.Q(), g.tenant.ID, false, projects, store.PageArgs{First: 10}); len(none.Items) != 0 {
				t.Errorf("%s: %d deployments", name, len(none.Items))
			}
		}
		none, _ := store.AwaitingApproval(ctx, s.Q(), a.ID, true, nil, store.PageArgs{First: 10})
		if len(none.Items) != 0 {
			t.Errorf("another tenant's: %v", none.Items)
		}
	})

	t.Run("tenants named", func(t *testing.T) {
		got, err := store.TenantsNamed(ctx, s.Q(), a.Name)
		wantNoErr(t, "by name", err)
		wantIDs(t, "tenants named like a", got, []*model.Tenant{a}, func(x *model.Tenant) model.TenantID { return x.ID })
		none, _ := store.TenantsNamed(ctx, s.Q(), "no tenant is called this")
		if len(none) != 0 {
			t.Errorf("an unknown name: %v", none)
		}
	})

	t.Run("signin failures", func(t *testing.T) {
		subj, addr := "account:"+newID(), "address:192.0.2.1"
		limits := []store.SigninLimit{{Subject: subj, Max: 3}, {Subject: addr, Max: 100}}
		reserve := func(at, since time.Time) bool {
			t.Helper()
			ok, err := store.ReserveSignin(ctx, s.Q(), limits, at, since)
			wantNoErr(t, "reserving", err)
			return ok
		}
		for i := range 3 {
			if !reserve(now.Add(time.Duration(i)*time.Minute), now.Add(-time.Hour)) {
				t.Fatalf("attempt %d refused within the limit", i)
			}
		}
		if reserve(now.Add(3*time.Minute), now.Add(-time.Hour)) {
			t.Error("a fourth attempt within the window was let through a limit of 3")
		}
		n, err := store.SigninFailures(ctx, s.Q(), subj, now.Add(90*time.Second))
		wantNoErr(t, "counting", err)
		if n != 1 {
			t.Errorf("failures since 90 s in: %d, want 1", n)
		}
		// A refused attempt recorded nothing, for either subject.
		if n, _ := store.SigninFailures(ctx, s.Q(), addr, now.Add(-time.Hour)); n != 3 {
			t.Errorf("the address has %d attempts, want 3", n)
		}
		// An attempt that succeeded is forgotten for its subject alone.
		wantNoErr(t, "forgetting", store.ForgetSigninAttempt(ctx, s.Q(), addr, now.Add(time.Minute)))
		if n, _ := store.SigninFailures(ctx, s.Q(), addr, now.Add(-time.Hour)); n != 2 {
			t.Errorf("after forgetting one: %d, want 2", n)
		}
		// Reserving forgets what is older than its window.
		if !reserve(now.Add(time.Hour), now.Add(30*time.Minute)) {
			t.Fatal("an attempt after the window moved was refused")
		}
		if n, _ := store.SigninFailures(ctx, s.Q(), subj, now.Add(-time.Hour)); n != 1 {
			t.Errorf("after the window moved: %d failures kept, want 1", n)
		}
		wantNoErr(t, "clearing", store.ClearSigninFailures(ctx, s.Q(), subj))
		if n, _ := store.SigninFailures(ctx, s.Q(), subj, now.Add(-time.Hour)); n != 0 {
			t.Errorf("after clearing: %d", n)
		}
	})

	t.Run("signin limit under concurrency", func(t *testing.T) {
		// 60 attempts at once against a limit of 10: exactly 10 get
		// through, on either store.
		subj := "account:" + newID()
		var wg sync.WaitGroup
		var through atomic.Int32
		for i := range 60 {
			wg.Go(func() {
				var ok bool
				err := s.Tx(ctx, func(q store.Querier) error {
					var err error
					ok, err = store.ReserveSignin(ctx, q, []store.SigninLimit{{Subject: subj, Max: 10}},
						now.Add(time.Duration(i)*time.Millisecond), now.Add(-time.Hour))
					return err
				})
				if err != nil {
					t.Errorf("reserving: %v", err)
				}
				if ok {
					through.Add(1)
				}
			})
		}
		wg.Wait()
		if n := through.Load(); n != 10 {
			t.Errorf("%d of 60 concurrent attempts got through a limit of 10", n)
		}
	})

	t.Run("passphrase derivations", func(t *testing.T) {
		u := newUser(t, s)
		if _, err := store.PassphraseKDF(ctx, s.Q(), u.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a person without one: %v, want ErrNotFound", err)
		}
		first, err := store.EnsurePassphraseKDF(ctx, s.Q(), u.ID, "$argon2id$v=19$m=19456,t=2,p=1$Zmlyc3Q")
		wantNoErr(t, "recording", err)
		kept, err := store.EnsurePassphraseKDF(ctx, s.Q(), u.ID, "$argon2id$v=19$m=19456,t=2,p=1$c2Vjb25k")
		wantNoErr(t, "recording again", err)
		if got, _ := store.PassphraseKDF(ctx, s.Q(), u.ID); kept != first || got != first {
			t.Errorf("the second derivation replaced the first: %q, %q, want %q", kept, got, first)
		}
	})
}

func memberOf(t *testing.T, s *store.Store, tenant *model.Tenant, u *model.User) *model.Member {
	t.Helper()
	m, err := store.MemberOf(t.Context(), s.Q(), tenant.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
