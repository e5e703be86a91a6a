package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func newCLILogin(t testing.TB, s *store.Store, code, address string, expires time.Time) *model.CLILogin {
	t.Helper()
	return mustInsert(t, s, store.CLILogins, &model.CLILogin{ID: model.CLILoginID(newID()), Code: code, SecretHash: []byte("hash " + code),
		ClientAddress: address, AddressKey: address, UserAgent: "nebula-cli", CreatedAt: at, ExpiresAt: expires})
}

func testCLILogins(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	now := store.Now()
	waiting := newCLILogin(t, s, "BCDF-GHJK", "198.51.100.7", now.Add(10*time.Minute))

	t.Run("ByCodeAndSecret", func(t *testing.T) {
		assertEqual(t, "by code", must(t)(store.CLILoginByCode(ctx, s.Q(), "BCDF-GHJK")), waiting)
		assertEqual(t, "by secret", must(t)(store.CLILoginBySecret(ctx, s.Q(), []byte("hash BCDF-GHJK"))), waiting)
		_, err := store.CLILoginByCode(ctx, s.Q(), "ZZZZ-ZZZZ")
		wantErr(t, "an unknown code", err, store.ErrNotFound)
		_, err = store.CLILoginBySecret(ctx, s.Q(), []byte("other"))
		wantErr(t, "an unknown secret", err, store.ErrNotFound)
	})

	t.Run("Approve", func(t *testing.T) {
		l := newCLILogin(t, s, "CDFG-HJKL", "198.51.100.8", now.Add(10*time.Minute))
		tok := model.TokenID(newID())
		want := *l
		want.TenantID, want.UserID, want.TokenID, want.SealedToken, want.ApprovedAt = &g.tenant.ID, &g.user.ID, &tok, "sealed", &at
		ok, err := store.ApproveCLILogin(ctx, s.Q(), &want)
		if err != nil || !ok {
			t.Fatalf("approving: %v, %v", ok, err)
		}
		assertEqual(t, "approved", mustGet(t, s, store.CLILogins, l.ID), &want)
		again := want
		again.SealedToken = "another"
		if ok, err := store.ApproveCLILogin(ctx, s.Q(), &again); err != nil || ok {
			t.Errorf("approving twice: %v, %v", ok, err)
		}
		assertEqual(t, "unchanged", mustGet(t, s, store.CLILogins, l.ID), &want)
	})

	t.Run("CountByAddressKey", func(t *testing.T) {
		// Two addresses of one IPv6 /64 count against one key.
		const key = "2001:db8:7::/64"
		for i, addr := range []string{"2001:db8:7::1", "2001:db8:7::2"} {
			mustInsert(t, s, store.CLILogins, &model.CLILogin{ID: model.CLILoginID(newID()), Code: []string{"HJKL-MNPQ", "JKLM-NPQR"}[i],
				SecretHash: []byte("key " + addr), ClientAddress: addr, AddressKey: key, UserAgent: "nebula-cli", CreatedAt: at, ExpiresAt: now.Add(time.Minute)})
		}
		n, err := store.CountCLILoginsFrom(ctx, s.Q(), key, now)
		wantNoErr(t, "counting", err)
		if n != 2 {
			t.Errorf("%d waiting from %s, want 2", n, key)
		}
	})

	t.Run("LockSubject makes counting and adding one step", func(t *testing.T) {
		// 60 starts at once from one address, each locking the address's
		// subject, counting and adding below a limit of 10: exactly 10
		// are added, on either store.
		key := "lock-" + newID()
		var wg sync.WaitGroup
		for i := range 60 {
			wg.Go(func() {
				err := s.Tx(ctx, func(q store.Querier) error {
					if err := store.LockSubject(ctx, q, "cli-start:"+key); err != nil {
						return err
					}
					n, err := store.CountCLILoginsFrom(ctx, q, key, now)
					if err != nil || n >= 10 {
						return err
					}
					return store.CLILogins.Insert(ctx, q, &model.CLILogin{ID: model.CLILoginID(newID()), Code: fmt.Sprintf("LOCK-%04d", i),
						SecretHash: []byte(fmt.Sprintf("lock %d", i)), ClientAddress: "198.51.100.1", AddressKey: key, UserAgent: "nebula-cli",
						CreatedAt: at, ExpiresAt: now.Add(time.Minute)})
				})
				if err != nil {
					t.Errorf("starting: %v", err)
				}
			})
		}
		wg.Wait()
		if n, err := store.CountCLILoginsFrom(ctx, s.Q(), key, now); err != nil || n != 10 {
			t.Errorf("%d of 60 concurrent starts added below a limit of 10 (%v)", n, err)
		}
	})

	t.Run("CountAndExpire", func(t *testing.T) {
		const addr = "203.0.113.99"
		newCLILogin(t, s, "DFGH-JKLM", addr, now.Add(time.Minute))
		old := newCLILogin(t, s, "FGHJ-KLMN", addr, now.Add(-time.Minute))
		newCLILogin(t, s, "GHJK-LMNP", "203.0.113.100", now.Add(time.Minute))
		n, err := store.CountCLILoginsFrom(ctx, s.Q(), addr, now)
		wantNoErr(t, "counting", err)
		if n != 1 {
			t.Errorf("%d waiting from %s, want 1 (one expired)", n, addr)
		}
		gone, err := store.DeleteExpiredCLILogins(ctx, s.Q(), now)
		wantNoErr(t, "deleting", err)
		if gone < 1 {
			t.Errorf("deleted %d", gone)
		}
		_, err = store.CLILogins.Get(ctx, s.Q(), old.ID)
		wantErr(t, "the expired one", err, store.ErrNotFound)
		mustGet(t, s, store.CLILogins, waiting.ID)
	})
}

// must unwraps a value and an error, failing the test on the error.
func must(t testing.TB) func(l *model.CLILogin, err error) *model.CLILogin {
	return func(l *model.CLILogin, err error) *model.CLILogin {
		t.Helper()
		wantNoErr(t, "reading", err)
		return l
	}
}
