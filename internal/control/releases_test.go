package control

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/people"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// shop is a plane on a counted SQLite store with one tenant, its admin,
// a cluster, and a project with a service and an environment on it.
type shop struct {
	p     *Plane
	st    *store.Store
	drv   *counting
	boot  *people.Bootstrapped
	admin context.Context
	svc   *model.Service
	env   *model.Environment
}

func newShop(t *testing.T, opts ...core.Option) *shop {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := &shop{drv: &counting{Driver: db}}
	st := store.New(s.drv)
	s.st = st
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if s.p, err = New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), opts...); err != nil {
		t.Fatal(err)
	}
	if s.boot, err = s.p.People.Bootstrap(ctx, "acme", "admin@acme.test"); err != nil {
		t.Fatal(err)
	}
	s.admin = s.as(t, s.boot.Secret)
	proj, err := s.p.CreateProject(s.admin, s.boot.Tenant.ID, "shop", "")
	if err != nil {
		t.Fatal(err)
	}
	image, name := "registry.example.com/shop/api", "prod"
	if s.svc, err = s.p.CreateService(s.admin, proj.ID, core.ServiceInput{Name: "api", Image: &image,
		Processes: []model.Process{{Name: "web", Command: []string{"/api"}, Replicas: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.p.RegisterCluster(s.admin, s.boot.Tenant.ID, "eu-1", nil); err != nil {
		t.Fatal(err)
	}
	if s.env, err = s.p.CreateEnvironment(s.admin, proj.ID, core.EnvironmentInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	return s
}

// as is a context acting with an API token.
func (s *shop) as(t *testing.T, secret string) context.Context {
	t.Helper()
	actor, err := s.p.People.Authenticate(context.Background(), secret, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return authz.WithActor(context.Background(), actor)
}

// deploy deploys the service with the image digest of n.
func (s *shop) deploy(t *testing.T, n int) (*model.Release, *model.Deployment) {
	t.Helper()
	rel, d, err := s.p.Deploy(s.admin, s.svc.ID, s.env.ID, digestOf(n))
	if err != nil {
		t.Fatal(err)
	}
	return rel, d
}

func digestOf(n int) string {
	const hex = "0123456789abcdef"
	b := []byte("sha256:")
	for i := range 64 {
		b = append(b, hex[(n+i)%16])
	}
	return string(b)
}

// A deployment's release is read once: afterwards the plane's release
// cache serves it, with the caller's permissions still checked.
func TestReleasesByIDsReadsAReleaseOnce(t *testing.T) {
	s := newShop(t)
	rel, _ := s.deploy(t, 1)
	read := func(ctx context.Context) (map[model.ReleaseID]*model.Release, int64) {
		t.Helper()
		before := s.drv.n.Load()
		got, err := s.p.ReleasesByIDs(ctx, []model.ReleaseID{rel.ID})
		if err != nil {
			t.Fatal(err)
		}
		return got, s.drv.n.Load() - before
	}
	read(s.admin) // read (or kept by the deploy's compile)
	got, n := read(s.admin)
	if got[rel.ID] == nil || got[rel.ID].ImageDigest != rel.ImageDigest || got[rel.ID].Number != rel.Number {
		t.Fatalf("got %+v, want release %s", got, rel.ID)
	}
	if n != 0 {
		t.Errorf("reading a release the second time took %d statements, want 0", n)
	}

	_, _, otherSecret, err := s.p.People.CreateTenant(s.admin, "other")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := read(s.as(t, otherSecret)); len(got) != 0 {
		t.Errorf("another tenant's admin read %+v through the cache, want nothing", got)
	}
}
