package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/store"
)

// testPersistedQueries: a document kept under its hash is read back by any
// connection; the first document of a hash stays; beyond the limit the
// least recently used go first.
func testPersistedQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	_, _, err := store.PersistedQuery(ctx, s.Q(), "missing")
	wantErr(t, "reading a hash never kept", err, store.ErrNotFound)
	for i := range 3 {
		wantNoErr(t, "persisting", store.PersistQuery(ctx, s.Q(), fmt.Sprintf("h%d", i), fmt.Sprintf("{ q%d }", i), at.Add(time.Duration(i)*time.Minute), 3))
	}
	wantNoErr(t, "persisting a kept hash again", store.PersistQuery(ctx, s.Q(), "h0", "{ other }", at.Add(time.Hour), 3))
	doc, used, err := store.PersistedQuery(ctx, s.Q(), "h0")
	wantNoErr(t, "reading", err)
	if doc != "{ q0 }" || !used.Equal(at) {
		t.Errorf("h0: got %q used %v, want the first document, used %v", doc, used, at)
	}
	// h0 used last: h1 is now the least recently used, and goes when a
	// fourth is kept under a limit of three.
	wantNoErr(t, "touching", store.TouchPersistedQuery(ctx, s.Q(), "h0", at.Add(2*time.Hour)))
	wantNoErr(t, "persisting a fourth", store.PersistQuery(ctx, s.Q(), "h3", "{ q3 }", at.Add(3*time.Hour), 3))
	n, err := store.CountPersistedQueries(ctx, s.Q())
	wantNoErr(t, "counting", err)
	if n != 3 {
		t.Errorf("got %d kept, want the limit of 3", n)
	}
	_, _, err = store.PersistedQuery(ctx, s.Q(), "h1")
	wantErr(t, "reading the least recently used after the eviction", err, store.ErrNotFound)
	for _, h := range []string{"h0", "h2", "h3"} {
		_, _, err := store.PersistedQuery(ctx, s.Q(), h)
		wantNoErr(t, "reading "+h+" after the eviction", err)
	}
}
