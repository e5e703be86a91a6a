package apitest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The upgrade to releases that carry their configuration (migration 0023
// and FreezeReleases, which `nebula migrate` and every start run): on a
// database holding what the previous version made — releases whose
// config has no variables, secret variables with no kept versions, no
// secret_versions table — the migration and the freezing give every
// release the configuration in force (the service's domains, the variables
// merged, secrets by the version of their value), and nothing running
// changes: a recompile of the tenant gives the same revision. A second run
// does nothing; a release frozen so rolls back to its frozen values.
func TestReleasesFrozenOnUpgrade(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ctx := t.Context()
		setVar := func(name, value string, secret bool) {
			t.Helper()
			f.MustDo(t, `mutation($p: ID!, $s: ID!, $n: String!, $v: String!, $x: Boolean) { setVariable(input: {projectId: $p, serviceId: $s, name: $n, value: $v, secret: $x}) {
				variable { id } `+ue+` } }`, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "n": name, "v": value, "x": secret})
		}
		setVar("MODE", "fast", false)
		setVar("API_KEY", "migrated-secret-value", true)
		rev := f.revision(t)

		// What the previous version left: no versions, no variables in the
		// releases' config, migration 0023 not applied.
		q := env.Store.Q()
		rels, err := store.ReleasesOf(ctx, q, mustRaw[model.ServiceID](t, gid.Service, f.ServiceID), nil, store.PageArgs{First: 100})
		if err != nil || len(rels.Items) < 2 {
			t.Fatalf("the fixture's service has %d releases (%v), want the deploy's and the variables'", len(rels.Items), err)
		}
		for _, r := range rels.Items {
			old, _ := json.Marshal(r.ServiceConfig)
			if _, err := q.Exec(ctx, `UPDATE releases SET config = $1 WHERE id = $2`, string(old), string(r.ID)); err != nil {
				t.Fatal(err)
			}
		}
		for _, sql := range []string{`DROP TABLE secret_versions`, `DELETE FROM schema_migrations WHERE version = 23`} {
			if _, err := q.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}

		// The upgrade, on a replica started afresh.
		applied, err := env.Store.Migrate(ctx)
		if err != nil || len(applied) != 1 || !strings.HasPrefix(applied[0], "0023_") {
			t.Fatalf("migrating: applied %v (%v), want 0023", applied, err)
		}
		p := env.SecondPlane(t)
		rep, err := p.Delivery.FreezeReleases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Versions != 1 || rep.Releases < len(rels.Items) {
			t.Fatalf("freezing: %+v, want 1 secret version kept and at least the service's %d releases frozen", rep, len(rels.Items))
		}
		if again, err := p.Delivery.FreezeReleases(ctx); err != nil || again.Releases != 0 || again.Versions != 0 {
			t.Fatalf("a second run: %+v (%v), want nothing to do", again, err)
		}
		frozen, err := store.ReleasesOf(ctx, q, mustRaw[model.ServiceID](t, gid.Service, f.ServiceID), nil, store.PageArgs{First: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range frozen.Items {
			names := []string{}
			for _, v := range r.Variables {
				names = append(names, v.Name)
				if v.Secret && (v.Value != "" || v.Version == "") {
					t.Errorf("release %d froze %s as %+v, want a secret by its version", r.Number, v.Name, v)
				}
			}
			if !r.Frozen() || !strings.Contains(strings.Join(names, ","), "API_KEY") || !strings.Contains(strings.Join(names, ","), "MODE") {
				t.Errorf("release %d froze %v, want the variables in force (API_KEY, MODE)", r.Number, names)
			}
		}

		// Nothing running changes: a recompile of the tenant on the
		// upgraded replica gives the same state.
		a, err := p.People.Authenticate(ctx, f.Owner.Token, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Delivery.CreateProject(authz.WithActor(ctx, a), mustRaw[model.TenantID](t, gid.Tenant, f.TenantID), "after-upgrade", ""); err != nil {
			t.Fatal(err)
		}
		if got := f.revision(t); got != rev {
			t.Fatalf("after the upgrade and a recompile the cluster is at revision %d, want %d: something running changed", got, rev)
		}
	})
}
