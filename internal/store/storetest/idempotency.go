package storetest

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

var errRollbackKey = errors.New("roll back")

func testIdempotencyKeys(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant, other := newTenant(t, s), newTenant(t, s)
	user, colleague := newUser(t, s), newUser(t, s)
	now := store.Now()
	lease := now.Add(time.Minute)
	hash := func(v string) []byte { h := sha256.Sum256([]byte(v)); return h[:] }
	scope := func(tn *model.Tenant, u *model.User, key string) store.KeyScope {
		return store.KeyScope{Tenant: tn.ID, User: u.ID, KeyHash: hash(key)}
	}
	newKey := func(sc store.KeyScope, owner string) *store.IdempotencyKey {
		return &store.IdempotencyKey{ID: store.IdempotencyKeyID(newID()), KeyScope: sc, RequestHash: hash("request " + owner),
			Operation: "deploy", State: store.KeyRunning, Owner: owner, LeaseUntil: &lease, CreatedAt: now,
			ExpiresAt: now.Add(24 * time.Hour)}
	}
	claim := func(t *testing.T, k *store.IdempotencyKey, at time.Time) bool {
		t.Helper()
		ok, err := store.ClaimKey(ctx, s.Q(), k, at)
		wantNoErr(t, "claiming", err)
		return ok
	}
	read := func(t *testing.T, sc store.KeyScope) *store.IdempotencyKey {
		t.Helper()
		k, err := store.KeyFor(ctx, s.Q(), sc)
		wantNoErr(t, "reading the key", err)
		return k
	}

	t.Run("ClaimKey", func(t *testing.T) {
		sc := scope(tenant, user, "claim")
		k := newKey(sc, "first")
		if !claim(t, k, now) {
			t.Fatal("first claim: got false, want the key stored")
		}
		assertEqual(t, "claimed key", read(t, sc), k)
		if claim(t, newKey(sc, "second"), now) {
			t.Error("second claim of the same key: got true, want false")
		}
		assertEqual(t, "key after a second claim", read(t, sc), k)
		// The same key string of another user, or of the same user in
		// another tenant, is another key; so is another key string.
		for name, sc := range map[string]store.KeyScope{
			"another user": scope(tenant, colleague, "claim"), "another tenant": scope(other, user, "claim"),
			"another key": scope(tenant, user, "claim-2"),
		} {
			if !claim(t, newKey(sc, "first"), now) {
				t.Errorf("%s: got false, want a key of its own", name)
			}
		}
		_, err := store.KeyFor(ctx, s.Q(), scope(tenant, user, "never used"))
		wantErr(t, "reading a key never claimed", err, store.ErrNotFound)
	})

	t.Run("ClaimKey expired", func(t *testing.T) {
		sc := scope(tenant, user, "expired")
		old := newKey(sc, "old")
		claim(t, old, now)
		if claim(t, newKey(sc, "early"), old.ExpiresAt.Add(-time.Microsecond)) {
			t.Error("a claim just before expiry: got true, want false")
		}
		fresh := newKey(sc, "fresh")
		if !claim(t, fresh, old.ExpiresAt) {
			t.Fatal("a claim once the old key expired: got false, want it stored")
		}
		assertEqual(t, "key replacing an expired one", read(t, sc), fresh)
	})

	t.Run("Concurrent claims", func(t *testing.T) {
		sc := scope(tenant, user, "race")
		const n = 8
		won := make([]bool, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.Tx(ctx, func(q store.Querier) error {
					var err error
					won[i], err = store.ClaimKey(ctx, q, newKey(sc, string(rune('a'+i))), now)
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i := range n {
			wantNoErr(t, "claiming concurrently", errs[i])
			if won[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Errorf("got %d claims stored, want 1", winners)
		}
	})

	t.Run("TakeOverKey", func(t *testing.T) {
		sc := scope(tenant, user, "take over")
		claim(t, newKey(sc, "slow"), now)
		later := now.Add(2 * time.Minute)
		ok, err := store.TakeOverKey(ctx, s.Q(), sc, "someone else", "retry", later)
		wantNoErr(t, "taking over from a wrong owner", err)
		if ok {
			t.Error("taking over from a wrong owner: got true, want false")
		}
		ok, err = store.TakeOverKey(ctx, s.Q(), sc, "slow", "retry", later)
		wantNoErr(t, "taking over", err)
		if !ok {
			t.Fatal("taking over: got false, want true")
		}
		got := read(t, sc)
		if got.Owner != "retry" || got.LeaseUntil == nil || !got.LeaseUntil.Equal(later) || got.State != store.KeyRunning {
			t.Errorf("after the take-over: owner %q, lease %v, state %s; want retry, %s, running", got.Owner, got.LeaseUntil, got.State, later)
		}
		// The slow request can no longer commit.
		ok, err = store.CommitKey(ctx, s.Q(), sc, "slow", "deployment.create", "Deployment", "d1")
		wantNoErr(t, "committing as the old owner", err)
		if ok {
			t.Error("committing as the old owner: got true, want false")
		}
	})

	t.Run("CommitKey", func(t *testing.T) {
		sc := scope(tenant, user, "commit")
		claim(t, newKey(sc, "owner"), now)
		// In a transaction that rolls back, the key stays running.
		err := s.Tx(ctx, func(q store.Querier) error {
			ok, err := store.CommitKey(ctx, q, sc, "owner", "project.create", "Project", "p1")
			if err != nil || !ok {
				t.Errorf("committing in a transaction: got %v, %v; want true", ok, err)
			}
			return errRollbackKey
		})
		wantErr(t, "rolled back transaction", err, errRollbackKey)
		if got := read(t, sc); got.State != store.KeyRunning || got.Action != "" {
			t.Errorf("after a rolled back commit: state %s, action %q; want running, none", got.State, got.Action)
		}
		err = s.Tx(ctx, func(q store.Querier) error {
			ok, err := store.CommitKey(ctx, q, sc, "owner", "project.create", "Project", "p1")
			if err == nil && !ok {
				t.Error("committing: got false, want true")
			}
			return err
		})
		wantNoErr(t, "committing", err)
		got := read(t, sc)
		if got.State != store.KeyCommitted || got.Action != "project.create" || got.TargetType != "Project" || got.TargetID != "p1" {
			t.Errorf("committed key: state %s, action %q, target %s %q", got.State, got.Action, got.TargetType, got.TargetID)
		}
		// One key, one commit.
		ok, err := store.CommitKey(ctx, s.Q(), sc, "owner", "project.create", "Project", "p2")
		wantNoErr(t, "committing again", err)
		if ok {
			t.Error("committing a committed key: got true, want false")
		}
	})

	t.Run("FinishKey", func(t *testing.T) {
		body := []byte("{\"data\":{\"x\":\"\xff\x00 ✓\"}}")
		committed := func(t *testing.T, key string) store.KeyScope {
			t.Helper()
			sc := scope(tenant, user, key)
			claim(t, newKey(sc, "owner"), now)
			ok, err := store.CommitKey(ctx, s.Q(), sc, "owner", "service.create", "Service", "s1")
			if err != nil || !ok {
				t.Fatalf("committing: %v, %v", ok, err)
			}
			return sc
		}
		tests := []struct {
			name string
			end  store.KeyEnd
			want store.KeyEnd
		}{
			{"done", store.KeyEnd{State: store.KeyDone, ResponseStatus: 200, ResponseType: "application/json", ResponseBody: body},
				store.KeyEnd{State: store.KeyDone, ResponseStatus: 200, ResponseType: "application/json", ResponseBody: body}},
			{"withheld", store.KeyEnd{State: store.KeyWithheld, ResponseStatus: 200, ResponseType: "application/json", ResponseBody: body},
				store.KeyEnd{State: store.KeyWithheld}},
			{"lost", store.KeyEnd{State: store.KeyCommitted}, store.KeyEnd{State: store.KeyCommitted}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				sc := committed(t, "finish "+tc.name)
				// Another owner's finish changes nothing.
				wantNoErr(t, "finishing as another owner", store.FinishKey(ctx, s.Q(), sc, "other", tc.end))
				if got := read(t, sc); got.State != store.KeyCommitted || got.LeaseUntil == nil {
					t.Errorf("after another owner's finish: state %s, lease %v; want committed, leased", got.State, got.LeaseUntil)
				}
				wantNoErr(t, "finishing", store.FinishKey(ctx, s.Q(), sc, "owner", tc.end))
				got := read(t, sc)
				assertEqual(t, "end", store.KeyEnd{State: got.State, ResponseStatus: got.ResponseStatus,
					ResponseType: got.ResponseType, ResponseBody: got.ResponseBody}, tc.want)
				if got.LeaseUntil != nil {
					t.Errorf("lease after finishing: got %v, want none", got.LeaseUntil)
				}
				if got.Action != "service.create" || got.TargetID != "s1" {
					t.Errorf("the change after finishing: got %q %q, want it kept", got.Action, got.TargetID)
				}
			})
		}
		t.Run("running is released", func(t *testing.T) {
			sc := scope(tenant, user, "finish running")
			claim(t, newKey(sc, "owner"), now)
			wantNoErr(t, "finishing as another owner", store.FinishKey(ctx, s.Q(), sc, "other", store.KeyEnd{State: store.KeyCommitted}))
			read(t, sc)
			wantNoErr(t, "finishing", store.FinishKey(ctx, s.Q(), sc, "owner", store.KeyEnd{State: store.KeyDone, ResponseBody: body}))
			_, err := store.KeyFor(ctx, s.Q(), sc)
			wantErr(t, "reading a released key", err, store.ErrNotFound)
			if !claim(t, newKey(sc, "retry"), now) {
				t.Error("claiming a released key: got false, want true")
			}
		})
		t.Run("not an end state", func(t *testing.T) {
			sc := committed(t, "finish bad")
			if err := store.FinishKey(ctx, s.Q(), sc, "owner", store.KeyEnd{State: store.KeyRunning}); err == nil {
				t.Error("finishing with state running: got no error")
			}
		})
	})

	t.Run("DeleteExpiredKeys", func(t *testing.T) {
		// A tenant of its own, counted alone.
		tn := newTenant(t, s)
		base := store.Now().Add(100 * 24 * time.Hour)
		for i, exp := range []time.Duration{-3 * time.Hour, -2 * time.Hour, -time.Hour, time.Hour} {
			k := newKey(scope(tn, user, string(rune('a'+i))), "owner")
			k.ExpiresAt = base.Add(exp)
			claim(t, k, now)
		}
		count := func() int { return mustCount(t, s, "idempotency_keys", "tenant_id = $1", string(tn.ID)) }
		// The keys of the cases above expire long before base: delete
		// them first.
		countKeys := func() int {
			t.Helper()
			n, err := store.CountKeys(ctx, s.Q())
			wantNoErr(t, "counting keys", err)
			return n
		}
		if n := countKeys(); n <= 4 {
			t.Errorf("CountKeys before deleting: got %d, want the 4 keys here and those of the cases above", n)
		}
		for {
			n, err := store.DeleteExpiredKeys(ctx, s.Q(), base.Add(-4*time.Hour), 1000)
			wantNoErr(t, "deleting older keys", err)
			if n == 0 {
				break
			}
		}
		// CountKeys counts every key, expired or not, of every tenant.
		if n := countKeys(); n != 4 {
			t.Errorf("CountKeys once only the 4 keys here are left: got %d, want 4", n)
		}
		for _, want := range []struct{ deleted, left int }{{2, 2}, {1, 1}, {0, 1}} {
			n, err := store.DeleteExpiredKeys(ctx, s.Q(), base, 2)
			wantNoErr(t, "deleting expired keys", err)
			if n != want.deleted || count() != want.left {
				t.Errorf("got %d deleted and %d left, want %d and %d", n, count(), want.deleted, want.left)
			}
			if n := countKeys(); n != want.left {
				t.Errorf("CountKeys: got %d, want %d (an expired key not deleted yet counts)", n, want.left)
			}
		}
	})
}
