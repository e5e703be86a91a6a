package control

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// A deployment's release is read once: afterwards the plane's release
// cache serves it, with the caller's permissions still checked.
func TestReleasesByIDsReadsAReleaseOnce(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "releases.db"))
	if err != nil {
		t.Fatal(err)
	}
	drv := &counting{Driver: db}
	st := store.New(drv)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	boot, err := p.Bootstrap(ctx, "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	as := func(secret string) context.Context {
		actor, err := p.Authenticate(ctx, secret, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return authz.WithActor(ctx, actor)
	}
	admin := as(boot.Secret)
	proj, err := p.CreateProject(admin, boot.Tenant.ID, "shop", "")
	if err != nil {
		t.Fatal(err)
	}
	image, name := "registry.example.com/shop/api", "prod"
	svc, err := p.CreateService(admin, proj.ID, ServiceInput{Name: "api", Image: &image,
		Processes: []model.Process{{Name: "web", Command: []string{"/api"}, Replicas: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.RegisterCluster(admin, boot.Tenant.ID, "eu-1", nil); err != nil {
		t.Fatal(err)
	}
	env, err := p.CreateEnvironment(admin, proj.ID, EnvironmentInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	rel, _, err := p.Deploy(admin, svc.ID, env.ID, "sha256:0123456789012345678901234567890123456789012345678901234567890123")
	if err != nil {
		t.Fatal(err)
	}

	read := func(ctx context.Context) (map[model.ReleaseID]*model.Release, int64) {
		t.Helper()
		before := drv.n.Load()
		got, err := p.ReleasesByIDs(ctx, []model.ReleaseID{rel.ID})
		if err != nil {
			t.Fatal(err)
		}
		return got, drv.n.Load() - before
	}
	read(admin) // read (or kept by the deploy's compile)
	got, n := read(admin)
	if got[rel.ID] == nil || got[rel.ID].ImageDigest != rel.ImageDigest || got[rel.ID].Number != rel.Number {
		t.Fatalf("got %+v, want release %s", got, rel.ID)
	}
	if n != 0 {
		t.Errorf("reading a release the second time took %d statements, want 0", n)
	}

	_, _, otherSecret, err := p.CreateTenant(admin, "other")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := read(as(otherSecret)); len(got) != 0 {
		t.Errorf("another tenant's admin read %+v through the cache, want nothing", got)
	}
}
