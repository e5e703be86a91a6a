package documents_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/documents"
	"github.com/nebulactrl/nebula/internal/store"
)

// A document kept by one caller is read by any caller who knows its hash,
// never without a caller; an over-long one is not kept; a read records
// the use at most once an hour, which is what the eviction goes by.
func TestPersistedDocuments(t *testing.T) {
	clk := &controltest.Clock{At: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)}
	s := controltest.New(t, core.WithClock(clk.Now))
	d := s.P.Documents
	if _, err := d.PersistedDocument(s.Admin, "h1"); !errors.Is(err, documents.ErrNotKept) {
		t.Fatalf("an unknown hash: %v, want ErrNotKept", err)
	}
	if err := d.PersistDocument(s.Admin, "h1", "{ viewer { user { id } } }"); err != nil {
		t.Fatal(err)
	}
	if doc, err := d.PersistedDocument(s.Admin, "h1"); err != nil || doc != "{ viewer { user { id } } }" {
		t.Errorf("h1: %q %v", doc, err)
	}
	for name, ctx := range map[string]context.Context{"no subject": context.Background(), "the jobs": core.As(context.Background(), core.SystemJobs)} {
		before := s.Statements.N()
		if _, err := d.PersistedDocument(ctx, "h1"); !errors.Is(err, authz.ErrUnauthenticated) {
			t.Errorf("%s reading: %v, want ErrUnauthenticated", name, err)
		}
		if err := d.PersistDocument(ctx, "h2", "{ x }"); !errors.Is(err, authz.ErrUnauthenticated) {
			t.Errorf("%s keeping: %v, want ErrUnauthenticated", name, err)
		}
		if n := s.Statements.N() - before; n != 0 {
			t.Errorf("%s reached the database %d times", name, n)
		}
	}
	if err := d.PersistDocument(s.Admin, "long", strings.Repeat(" ", documents.MaxDocument+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PersistedDocument(s.Admin, "long"); !errors.Is(err, documents.ErrNotKept) {
		t.Errorf("a document over MaxDocument: %v, want it not kept", err)
	}
	_, used, err := store.PersistedQuery(s.Admin, s.St.Q(), "h1")
	if err != nil || !used.Equal(clk.Now()) {
		t.Fatalf("h1 used at %v (%v), want %v", used, err, clk.Now())
	}
	clk.Advance(30 * time.Minute)
	_, _ = d.PersistedDocument(s.Admin, "h1")
	if _, used, _ = store.PersistedQuery(s.Admin, s.St.Q(), "h1"); !used.Equal(clk.Now().Add(-30 * time.Minute)) {
		t.Errorf("read within the hour: used moved to %v", used)
	}
	clk.Advance(time.Hour)
	_, _ = d.PersistedDocument(s.Admin, "h1")
	if _, used, _ = store.PersistedQuery(s.Admin, s.St.Q(), "h1"); !used.Equal(clk.Now()) {
		t.Errorf("read after an hour: used %v, want %v", used, clk.Now())
	}
}
