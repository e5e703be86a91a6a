package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/idempotency"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The rules of idempotency keys, tested on the embedded store without the
// API: a key is claimed once, its mutation records it in its own
// transaction, and a retry is answered from what became of the first.

func request(key, body string) idempotency.KeyRequest {
	return idempotency.KeyRequest{Key: key, RequestHash: []byte(body), Operation: "createProject", TTL: time.Hour}
}

func claim(t *testing.T, ctx context.Context, s *controltest.Shop, req idempotency.KeyRequest) idempotency.KeyAnswer {
	t.Helper()
	ans, err := s.P.Idempotency.ClaimKey(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

func TestKeyClaimedOnceAndReplayed(t *testing.T) {
	s := controltest.New(t)
	req := request("k-1", "create web")
	first := claim(t, s.Admin, s, req)
	if first.Verdict != idempotency.KeyRun || first.Claim == nil {
		t.Fatalf("the first claim: %+v, want to run", first)
	}
	// While it runs, the same request waits and another is refused.
	if ans := claim(t, s.Admin, s, req); ans.Verdict != idempotency.KeyInProgress {
		t.Fatalf("the same key while it runs: verdict %d, want in progress", ans.Verdict)
	}
	if ans := claim(t, s.Admin, s, request("k-1", "create api")); ans.Verdict != idempotency.KeyMismatch {
		t.Fatalf("the key for another request: verdict %d, want a mismatch", ans.Verdict)
	}
	// The mutation runs under the claim: its change records the key.
	ctx := idempotency.WithKey(s.Admin, first.Claim)
	if _, err := s.P.Delivery.CreateProject(ctx, s.Boot.Tenant.ID, "web", ""); err != nil {
		t.Fatal(err)
	}
	if !first.Claim.Recorded() {
		t.Fatal("the change did not record its key")
	}
	// A second change under the same claim is refused, and changes nothing.
	if _, err := s.P.Delivery.CreateProject(ctx, s.Boot.Tenant.ID, "web-2", ""); err == nil {
		t.Fatal("a second change under one key was made")
	}
	page, err := s.P.Delivery.Projects(s.Admin, s.Boot.Tenant.ID, store.PageArgs{First: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 {
		t.Fatalf("%d projects, want the shop's and web", len(page.Items))
	}
	end := store.KeyEnd{State: store.KeyDone, ResponseStatus: 200, ResponseType: "application/json", ResponseBody: []byte(`{"data":{}}`)}
	if err := s.P.Idempotency.FinishKey(s.Admin, first.Claim, end); err != nil {
		t.Fatal(err)
	}
	again := claim(t, s.Admin, s, req)
	if again.Verdict != idempotency.KeyReplay || again.Record == nil || string(again.Record.ResponseBody) != `{"data":{}}` {
		t.Fatalf("the retry: %+v, want the first response replayed", again)
	}
	// The same key of another tenant's admin is another key.
	if ans := claim(t, s.OtherAdmin(t), s, req); ans.Verdict != idempotency.KeyRun {
		t.Fatalf("another tenant's same key: verdict %d, want to run", ans.Verdict)
	}
}

// A key whose mutation did not commit is let go: its retry runs.
func TestUncommittedKeyReleased(t *testing.T) {
	s := controltest.New(t)
	req := request("k-2", "create bad")
	first := claim(t, s.Admin, s, req)
	if _, err := s.P.Delivery.CreateProject(idempotency.WithKey(s.Admin, first.Claim), s.Boot.Tenant.ID, "", ""); err == nil {
		t.Fatal("a project without a name was made")
	}
	if first.Claim.Recorded() {
		t.Fatal("a failed change recorded its key")
	}
	if err := s.P.Idempotency.FinishKey(s.Admin, first.Claim, store.KeyEnd{State: store.KeyDone, ResponseStatus: 200}); err != nil {
		t.Fatal(err)
	}
	if ans := claim(t, s.Admin, s, req); ans.Verdict != idempotency.KeyRun {
		t.Fatalf("the retry of a failed mutation: verdict %d, want to run", ans.Verdict)
	}
}

// Sixty claims of one key at once: exactly one runs.
func TestKeyClaimedOnceUnderConcurrency(t *testing.T) {
	s := controltest.New(t)
	req := request("k-3", "create once")
	var mu sync.Mutex
	runs := 0
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			ans, err := s.P.Idempotency.ClaimKey(s.Admin, req)
			if err != nil {
				t.Error(err)
				return
			}
			if ans.Verdict == idempotency.KeyRun {
				mu.Lock()
				runs++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if runs != 1 {
		t.Fatalf("%d of 60 claims of one key ran, want exactly 1", runs)
	}
}

// A key needs an API token: a call without a caller or with no token is
// refused before anything is stored.
func TestKeyNeedsAToken(t *testing.T) {
	s := controltest.New(t)
	if _, err := s.P.Idempotency.ClaimKey(context.Background(), request("k-4", "x")); err == nil {
		t.Fatal("a key was claimed without a caller")
	}
	session := s.Person(t, "dev@acme.test", model.TenantAdmin, "")
	if _, err := s.P.Idempotency.ClaimKey(session, request("k-4", "x")); !errors.Is(err, idempotency.ErrKeyForTokens) {
		t.Fatalf("a signed-in browser's key: %v, want ErrKeyForTokens", err)
	}
}
