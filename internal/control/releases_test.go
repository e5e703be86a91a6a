package control_test

import (
	"context"
	"testing"

	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/model"
)

// A deployment's release is read once: afterwards the plane's release
// cache serves it, with the caller's permissions still checked.
func TestReleasesByIDsReadsAReleaseOnce(t *testing.T) {
	s := controltest.New(t)
	rel, _ := s.Deploy(t, 1)
	read := func(ctx context.Context) (map[model.ReleaseID]*model.Release, int64) {
		t.Helper()
		before := s.Statements.N()
		got, err := s.P.Delivery.ReleasesByIDs(ctx, []model.ReleaseID{rel.ID})
		if err != nil {
			t.Fatal(err)
		}
		return got, s.Statements.N() - before
	}
	read(s.Admin) // read (or kept by the deploy's compile)
	got, n := read(s.Admin)
	if got[rel.ID] == nil || got[rel.ID].ImageDigest != rel.ImageDigest || got[rel.ID].Number != rel.Number {
		t.Fatalf("got %+v, want release %s", got, rel.ID)
	}
	if n != 0 {
		t.Errorf("reading a release the second time took %d statements, want 0", n)
	}

	_, _, otherSecret, err := s.P.People.CreateTenant(s.Admin, "other")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := read(s.As(t, otherSecret)); len(got) != 0 {
		t.Errorf("another tenant's admin read %+v through the cache, want nothing", got)
	}
}
