package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func testMigrations(t *testing.T, s *store.Store) {
	ctx := t.Context()
	type row struct {
		version int
		name    string
	}
	applied := func() []row {
		t.Helper()
		rows, err := s.Q().Query(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
		wantNoErr(t, "reading schema_migrations", err)
		defer rows.Close()
		var out []row
		for rows.Next() {
			var r row
			wantNoErr(t, "scanning schema_migrations", rows.Scan(&r.version, &r.name))
			out = append(out, r)
		}
		wantNoErr(t, "reading schema_migrations", rows.Err())
		return out
	}

	before := applied()
	if len(before) == 0 {
		t.Fatal("got no rows in schema_migrations after Migrate, want every migration recorded")
	}
	if before[0].version != 1 || before[0].name != "0001_core" {
		t.Errorf("got first migration %d %q, want 1 \"0001_core\"", before[0].version, before[0].name)
	}
	for i, r := range before {
		if want := fmt.Sprintf("%04d_", r.version); len(r.name) <= len(want) || r.name[:len(want)] != want {
			t.Errorf("migration %d: got name %q, want it to start with %q", r.version, r.name, want)
		}
		if i > 0 && r.version <= before[i-1].version {
			t.Errorf("got versions %d then %d, want strictly ascending", before[i-1].version, r.version)
		}
	}

	for i := range 2 {
		names, err := s.Migrate(ctx)
		wantNoErr(t, "migrating again", err)
		if len(names) != 0 {
			t.Errorf("Migrate #%d on a migrated store: got applied %q, want nothing", i+2, names)
		}
	}
	if after := applied(); !slices.Equal(after, before) {
		t.Errorf("schema_migrations after repeated Migrate: got %v, want %v", after, before)
	}

	// Every table the store reads exists, empty.
	for _, table := range []string{
		"tenants", "users", "members", "member_profiles", "api_tokens", "projects", "project_members", "environments",
		"clusters", "cluster_revisions", "namespace_targets", "connect_tokens", "cluster_commands", "services",
		"variables", "secret_versions", "releases", "deployments", "deployment_events", "approvals", "audit_events",
		"idempotency_keys",
	} {
		n, err := countRows(t, s, table, "1 = 1")
		if err != nil {
			t.Errorf("counting %s: %v", table, err)
		} else if n != 0 {
			t.Errorf("counting %s in a fresh store: got %d, want 0", table, n)
		}
	}
	n, err := store.CountTenants(ctx, s.Q())
	wantNoErr(t, "counting tenants", err)
	if n != 0 {
		t.Errorf("CountTenants in a fresh store: got %d, want 0", n)
	}
	n, err = store.CountAudit(ctx, s.Q(), "no-such-tenant")
	wantNoErr(t, "counting audit events", err)
	if n != 0 {
		t.Errorf("CountAudit in a fresh store: got %d, want 0", n)
	}
}

// roundTrip inserts want and reads it back by id.
func roundTrip[K ~string, T any](t *testing.T, s *store.Store, table *store.Table[K, T], id K, want *T) {
	t.Helper()
	mustInsert(t, s, table, want)
	assertEqual(t, table.Name, mustGet(t, s, table, id), want)
}

func testRoundTrip(t *testing.T, s *store.Store) {
	g := newGraph(t, s)
	now := store.Now()
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"tenant", func(t *testing.T) {
			id := model.TenantID(newID())
			roundTrip(t, s, store.Tenants, id, &model.Tenant{ID: id, Name: "Acme “Ünïcode” GmbH", PlanName: model.PlanEnterprise, CreatedAt: at})
		}},
		{"user human", func(t *testing.T) {
			id := model.UserID(newID())
			roundTrip(t, s, store.Users, id, &model.User{ID: id, Email: "ada+" + string(id) + "@example.com", Name: "Ada", Kind: model.UserHuman, CreatedAt: now})
		}},
		{"user integration", func(t *testing.T) {
			id := model.UserID(newID())
			roundTrip(t, s, store.Users, id, &model.User{ID: id, Email: string(id) + "@bots.example.com", Name: "", Kind: model.UserIntegration, CreatedAt: at})
		}},
		{"member", func(t *testing.T) {
			id := model.MemberID(newID())
			roundTrip(t, s, store.Members, id, &model.Member{ID: id, TenantID: g.tenant.ID, UserID: g.user.ID, Role: model.TenantAdmin, CreatedAt: now})
		}},
		{"token without optional times", func(t *testing.T) {
			id := model.TokenID(newID())
			roundTrip(t, s, store.Tokens, id, &model.APIToken{ID: id, TenantID: g.tenant.ID, UserID: g.user.ID, Name: "ci", Prefix: "nbl_ab12",
				Hash: []byte{0, 1, 2, 0xfe, 0xff, 0, 'x'}, CreatedAt: now})
		}},
		{"token with every time", func(t *testing.T) {
			id := model.TokenID(newID())
			roundTrip(t, s, store.Tokens, id, &model.APIToken{ID: id, TenantID: g.tenant.ID, UserID: g.user.ID, Name: "deploy bot", Prefix: "nbl_cd34",
				Hash: []byte(id), CreatedAt: at, LastUsedAt: ptr(now), ExpiresAt: ptr(at.AddDate(1, 0, 0)), RevokedAt: ptr(now.Add(time.Microsecond))})
		}},
		{"project", func(t *testing.T) {
			id := model.ProjectID(newID())
			roundTrip(t, s, store.Projects, id, &model.Project{ID: id, TenantID: g.tenant.ID, Name: "shop", Description: "multi\nline 'quoted' \"text\"", CreatedAt: now})
		}},
		{"project with empty description", func(t *testing.T) {
			id := model.ProjectID(newID())
			roundTrip(t, s, store.Projects, id, &model.Project{ID: id, TenantID: g.tenant.ID, Name: "blank", CreatedAt: at})
		}},
		{"project member", func(t *testing.T) {
			id := model.ProjectMemberID(newID())
			roundTrip(t, s, store.ProjectMembers, id, &model.ProjectMember{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				UserID: g.user.ID, Role: model.ProjectEditor, CreatedAt: now})
		}},
		{"environment with selectors", func(t *testing.T) {
			id := model.EnvironmentID(newID())
			roundTrip(t, s, store.Environments, id, &model.Environment{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				Name: "production", Protected: true,
				ClusterSelector:   model.Labels{{Key: "env", Value: "prod"}, {Key: "region", Value: "eu-west"}},
				NamespaceSelector: model.Labels{{Key: "team", Value: "shop"}},
				CreatedAt:         now})
		}},
		{"environment with empty selectors", func(t *testing.T) {
			id := model.EnvironmentID(newID())
			roundTrip(t, s, store.Environments, id, &model.Environment{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				Name: "staging", ClusterSelector: model.Labels{}, NamespaceSelector: model.Labels{}, CreatedAt: at})
		}},
		{"environment with nil selectors", func(t *testing.T) {
			id := model.EnvironmentID(newID())
			roundTrip(t, s, store.Environments, id, &model.Environment{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				Name: "preview", CreatedAt: now})
		}},
		{"cluster never seen", func(t *testing.T) {
			id := model.ClusterID(newID())
			roundTrip(t, s, store.Clusters, id, &model.Cluster{ID: id, TenantID: g.tenant.ID, Name: "edge-1",
				Labels: model.Labels{}, CreatedAt: now})
		}},
		{"cluster with heartbeat", func(t *testing.T) {
			id := model.ClusterID(newID())
			roundTrip(t, s, store.Clusters, id, &model.Cluster{ID: id, TenantID: g.tenant.ID, Name: "k3s-fra",
				Labels:          model.Labels{{Key: "provider", Value: "hetzner"}, {Key: "region", Value: "eu"}},
				LastHeartbeatAt: ptr(at.Add(42 * time.Microsecond)), CreatedAt: at})
		}},
		{"namespace target", func(t *testing.T) {
			id := model.NamespaceTargetID(newID())
			roundTrip(t, s, store.NamespaceTargets, id, &model.NamespaceTarget{ID: id, TenantID: g.tenant.ID, ClusterID: g.cluster.ID,
				Namespace: "shop-prod", Labels: model.Labels{{Key: "tier", Value: "gold"}}, CreatedAt: now})
		}},
		{"service with full config", func(t *testing.T) {
			id := model.ServiceID(newID())
			roundTrip(t, s, store.Services, id, &model.Service{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				Name: "web", Image: "ghcr.io/acme/web:v1.2.3", ServiceConfig: fullConfig(), CreatedAt: at, UpdatedAt: now})
		}},
		{"service with empty config", func(t *testing.T) {
			id := model.ServiceID(newID())
			roundTrip(t, s, store.Services, id, &model.Service{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				Name: "bare", Image: "nginx", CreatedAt: now, UpdatedAt: now})
		}},
		{"release by nobody", func(t *testing.T) {
			id := model.ReleaseID(newID())
			roundTrip(t, s, store.Releases, id, &model.Release{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, Number: 7, Image: "nginx:1",
				ImageDigest: "sha256:0123", CreatedAt: now})
		}},
		{"release by a user", func(t *testing.T) {
			id := model.ReleaseID(newID())
			roundTrip(t, s, store.Releases, id, &model.Release{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, Number: 8, Image: "ghcr.io/acme/web:v2",
				ImageDigest: "sha256:4567", ServiceConfig: fullConfig(), CreatedBy: ptr(g.user.ID), CreatedAt: at})
		}},
		{"release frozen with none", func(t *testing.T) {
			// Frozen with no variables: read back empty, not nil (unfrozen).
			id := model.ReleaseID(newID())
			roundTrip(t, s, store.Releases, id, &model.Release{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, Number: 9, Image: "nginx:1",
				ImageDigest: "sha256:89ab", Variables: []model.ReleaseVariable{}, CreatedAt: now})
			if r := mustGet(t, s, store.Releases, id); !r.Frozen() || r.Variables == nil {
				t.Errorf("a release frozen with none read back unfrozen: %#v", r.Variables)
			}
		}},
		{"release with frozen variables", func(t *testing.T) {
			id := model.ReleaseID(newID())
			roundTrip(t, s, store.Releases, id, &model.Release{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, Number: 10, Image: "ghcr.io/acme/web:v3",
				ImageDigest: "sha256:cdef", ServiceConfig: fullConfig(), Variables: []model.ReleaseVariable{
					{Name: "LOG_LEVEL", Scope: model.VariableProject, Value: "info"},
					{Name: "GREETING", Scope: model.VariableEnvironment, Value: "multi\nline 'quoted' \"ünïcode\" ${OTHER}"},
					{Name: "EMPTY", Scope: model.VariableService},
					{Name: "DB_PASSWORD", Scope: model.VariableEnvironment, Secret: true,
						Version: model.SecretVersionID(newID() + "@1709231398123456")},
				}, CreatedBy: ptr(g.user.ID), CreatedAt: at})
		}},
		{"release unfrozen", func(t *testing.T) {
			// Made before releases froze their variables: read back nil.
			id := model.ReleaseID(newID())
			roundTrip(t, s, store.Releases, id, &model.Release{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, Number: 11, Image: "nginx:1",
				ImageDigest: "sha256:0011", ServiceConfig: fullConfig(), CreatedAt: now})
			if r := mustGet(t, s, store.Releases, id); r.Frozen() {
				t.Errorf("an unfrozen release read back frozen: %#v", r.Variables)
			}
		}},
		{"secret version", func(t *testing.T) {
			id := model.SecretVersionID(newID() + "@1709231398123456")
			roundTrip(t, s, store.SecretVersions, id, &model.SecretVersion{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				VariableID: model.VariableID(newID()), Sealed: "v1:key1:sealed “ünïcode”\n'quoted'", CreatedAt: at})
		}},
		{"project variable", func(t *testing.T) {
			id := model.VariableID(newID())
			roundTrip(t, s, store.Variables, id, &model.Variable{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				Name: "LOG_LEVEL", Value: "info", CreatedAt: now, UpdatedAt: at})
		}},
		{"environment secret", func(t *testing.T) {
			id := model.VariableID(newID())
			roundTrip(t, s, store.Variables, id, &model.Variable{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				EnvironmentID: ptr(g.env.ID), Name: "DB_PASSWORD", Secret: true, Value: "v1:abcd:sealed", CreatedAt: now, UpdatedAt: now})
		}},
		{"service variable", func(t *testing.T) {
			id := model.VariableID(newID())
			roundTrip(t, s, store.Variables, id, &model.Variable{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: ptr(g.service.ID), Name: "PORT", Value: "8080", CreatedAt: now, UpdatedAt: now})
		}},
		{"deployment", func(t *testing.T) {
			id := model.DeploymentID(newID())
			roundTrip(t, s, store.Deployments, id, &model.Deployment{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, ReleaseID: g.release.ID, ClusterID: g.cluster.ID,
				Stage: model.StageQueued, CreatedAt: now, UpdatedAt: now})
		}},
		{"deployment blocked", func(t *testing.T) {
			id := model.DeploymentID(newID())
			roundTrip(t, s, store.Deployments, id, &model.Deployment{ID: id, TenantID: g.tenant.ID, ProjectID: g.project.ID,
				ServiceID: g.service.ID, EnvironmentID: g.env.ID, ReleaseID: g.release.ID, ClusterID: g.cluster.ID,
				Stage: model.StageDelivering, Blocker: ptr(model.BlockerDelivery), RequestedBy: ptr(g.user.ID), CreatedAt: at, UpdatedAt: now})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func testNotFound(t *testing.T, s *store.Store) {
	ctx, q := t.Context(), s.Q()
	missing := newID()
	// The rows exist in some other table: a miss is per table. The named
	// reads below miss though their parents exist: the miss is the filter's.
	g := newGraph(t, s)
	tests := []struct {
		table string
		get   func() error
	}{
		{"tenants", func() error { _, err := store.Tenants.Get(ctx, q, model.TenantID(missing)); return err }},
		{"users", func() error { _, err := store.Users.Get(ctx, q, model.UserID(missing)); return err }},
		{"members", func() error { _, err := store.Members.Get(ctx, q, model.MemberID(missing)); return err }},
		{"api_tokens", func() error { _, err := store.Tokens.Get(ctx, q, model.TokenID(missing)); return err }},
		{"projects", func() error { _, err := store.Projects.Get(ctx, q, model.ProjectID(missing)); return err }},
		{"project_members", func() error {
			_, err := store.ProjectMembers.Get(ctx, q, model.ProjectMemberID(missing))
			return err
		}},
		{"environments", func() error { _, err := store.Environments.Get(ctx, q, model.EnvironmentID(missing)); return err }},
		{"clusters", func() error { _, err := store.Clusters.Get(ctx, q, model.ClusterID(missing)); return err }},
		{"namespace_targets", func() error {
			_, err := store.NamespaceTargets.Get(ctx, q, model.NamespaceTargetID(missing))
			return err
		}},
		{"services", func() error { _, err := store.Services.Get(ctx, q, model.ServiceID(missing)); return err }},
		{"releases", func() error { _, err := store.Releases.Get(ctx, q, model.ReleaseID(missing)); return err }},
		{"deployments", func() error { _, err := store.Deployments.Get(ctx, q, model.DeploymentID(missing)); return err }},
		{"secret_versions", func() error {
			_, err := store.SecretVersions.Get(ctx, q, model.SecretVersionID(missing))
			return err
		}},
		{"GetForUpdate", func() error { _, err := store.Tenants.GetForUpdate(ctx, q, model.TenantID(missing)); return err }},
		{"UserByEmail", func() error { _, err := store.UserByEmail(ctx, q, "nobody@example.com"); return err }},
		{"MemberOf a user who is not a member", func() error { _, err := store.MemberOf(ctx, q, g.tenant.ID, g.user.ID); return err }},
		{"ReleaseByNumber with no such number", func() error {
			_, err := store.ReleaseByNumber(ctx, q, g.service.ID, g.env.ID, g.release.Number+1)
			return err
		}},
		{"VariableIn with no such name", func() error { _, err := store.VariableIn(ctx, q, g.project.ID, "project", "NOPE"); return err }},
		{"ConnectTokenByHash with no such hash", func() error {
			_, err := store.ConnectTokenByHash(ctx, q, []byte("no such hash"))
			return err
		}},
		{"ShareTenant", func() error { _, err := store.ShareTenant(ctx, q, model.TenantID(missing)); return err }},
		{"LatestRevision of a cluster never bumped", func() error { _, err := store.LatestRevision(ctx, q, g.cluster.ID); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.table, func(t *testing.T) {
			wantErr(t, "getting a missing "+tc.table+" row", tc.get(), store.ErrNotFound)
		})
	}
}

func testConflict(t *testing.T, s *store.Store) {
	ctx, q := t.Context(), s.Q()
	g := newGraph(t, s)
	other := newTenant(t, s)
	tests := []struct {
		name   string
		insert func() error
	}{
		{"same primary key", func() error {
			dup := *g.tenant
			dup.Name = "another name"
			return store.Tenants.Insert(ctx, q, &dup)
		}},
		{"same user email", func() error {
			return store.Users.Insert(ctx, q, &model.User{ID: model.UserID(newID()), Email: g.user.Email, Name: "Twin",
				Kind: model.UserHuman, CreatedAt: store.Now()})
		}},
		{"same project name in a tenant", func() error {
			return store.Projects.Insert(ctx, q, &model.Project{ID: model.ProjectID(newID()), TenantID: g.tenant.ID,
				Name: g.project.Name, CreatedAt: store.Now()})
		}},
		{"same member twice", func() error {
			newMember(t, s, g.tenant, g.user, model.TenantMember)
			return store.Members.Insert(ctx, q, &model.Member{ID: model.MemberID(newID()), TenantID: g.tenant.ID,
				UserID: g.user.ID, Role: model.TenantAdmin, CreatedAt: store.Now()})
		}},
		{"same token hash", func() error {
			tok := newToken(t, s, g.tenant, g.user)
			return store.Tokens.Insert(ctx, q, &model.APIToken{ID: model.TokenID(newID()), TenantID: g.tenant.ID, UserID: g.user.ID, Name: "b",
				Prefix: "nbl_x", Hash: tok.Hash, CreatedAt: store.Now()})
		}},
		{"same cluster name in a tenant", func() error {
			return store.Clusters.Insert(ctx, q, &model.Cluster{ID: model.ClusterID(newID()), TenantID: g.tenant.ID,
				Name: g.cluster.Name, Labels: model.Labels{}, CreatedAt: store.Now()})
		}},
		{"same environment name in a project", func() error {
			return store.Environments.Insert(ctx, q, &model.Environment{ID: model.EnvironmentID(newID()),
				TenantID: g.tenant.ID, ProjectID: g.project.ID, Name: g.env.Name, CreatedAt: store.Now()})
		}},
		{"same release number", func() error {
			r := *g.release
			r.ID = model.ReleaseID(newID())
			return store.Releases.Insert(ctx, q, &r)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantConflict(t, "inserting a duplicate", tc.insert(), false)
		})
	}

	// Uniqueness is per tenant: the same name elsewhere is fine.
	t.Run("same project name in another tenant", func(t *testing.T) {
		err := store.Projects.Insert(ctx, q, &model.Project{ID: model.ProjectID(newID()), TenantID: other.ID,
			Name: g.project.Name, CreatedAt: store.Now()})
		if err != nil {
			t.Errorf("inserting a project named like one in another tenant: got %v, want nil", err)
		}
	})
}

func testForeignKey(t *testing.T, s *store.Store) {
	ctx, q := t.Context(), s.Q()
	g := newGraph(t, s)
	tests := []struct {
		name string
		op   func() error
	}{
		{"project in unknown tenant", func() error {
			return store.Projects.Insert(ctx, q, &model.Project{ID: model.ProjectID(newID()),
				TenantID: model.TenantID(newID()), Name: "orphan", CreatedAt: store.Now()})
		}},
		{"member of unknown user", func() error {
			return store.Members.Insert(ctx, q, &model.Member{ID: model.MemberID(newID()), TenantID: g.tenant.ID,
				UserID: model.UserID(newID()), Role: model.TenantMember, CreatedAt: store.Now()})
		}},
		{"deployment to unknown cluster", func() error {
			d := *g.deployment
			d.ID, d.ClusterID = model.DeploymentID(newID()), model.ClusterID(newID())
			return store.Deployments.Insert(ctx, q, &d)
		}},
		{"deleting a tenant still in use", func() error { return store.Tenants.Delete(ctx, q, g.tenant.ID) }},
		{"deleting a cluster still deployed to", func() error { return store.Clusters.Delete(ctx, q, g.cluster.ID) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantConflict(t, tc.name, tc.op(), true)
		})
	}
	// A refused delete leaves the row.
	mustGet(t, s, store.Tenants, g.tenant.ID)
	mustGet(t, s, store.Clusters, g.cluster.ID)
}

func testByIDs(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	var ps []*model.Project
	for range 4 {
		ps = append(ps, newProject(t, s, tenant))
	}
	missing := model.ProjectID(newID())
	tests := []struct {
		name string
		ids  []model.ProjectID
		want []*model.Project
	}{
		{"none", nil, nil},
		{"some", []model.ProjectID{ps[2].ID, ps[0].ID}, []*model.Project{ps[2], ps[0]}},
		{"with a missing id", []model.ProjectID{ps[1].ID, missing, ps[3].ID}, []*model.Project{ps[1], ps[3]}},
		{"only missing", []model.ProjectID{missing}, nil},
		{"repeated id", []model.ProjectID{ps[1].ID, ps[1].ID}, []*model.Project{ps[1]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.Projects.ByIDs(ctx, s.Q(), tc.ids)
			wantNoErr(t, "reading projects by id", err)
			if got == nil {
				t.Fatal("got a nil map, want an empty one")
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d projects, want %d", len(got), len(tc.want))
			}
			for _, p := range tc.want {
				if g, ok := got[p.ID]; !ok {
					t.Errorf("project %s: missing from the result", p.ID)
				} else {
					assertEqual(t, "project "+string(p.ID), g, p)
				}
			}
			if _, ok := got[missing]; ok {
				t.Errorf("got an entry for missing id %s, want none", missing)
			}
		})
	}
}

// walk reads every page of list, first rows at a time from the start, and
// returns the ids in the order read, each page's size and HasNext.
func walk[T any, K ~string](t *testing.T, first int, id func(*T) K,
	list func(pg store.PageArgs) (store.Page[T], error)) (got []string, sizes []int, next []bool) {
	t.Helper()
	after := ""
	for page := 0; ; page++ {
		if page > 200 {
			t.Fatalf("still paging after %d pages", page)
		}
		pg, err := list(store.PageArgs{First: first, After: after})
		wantNoErr(t, fmt.Sprintf("listing page %d", page), err)
		sizes = append(sizes, len(pg.Items))
		next = append(next, pg.HasNext)
		got = append(got, ids(pg.Items, id)...)
		if pg.HasPrevious {
			t.Errorf("page %d read forwards: HasPrevious set", page)
		}
		if !pg.HasNext || len(pg.Items) == 0 {
			walkBack(t, first, id, list, got)
			return got, sizes, next
		}
		after = got[len(got)-1]
	}
}

// walkBack reads every page of list backwards, first rows at a time from
// the end (FromEnd, before the first row of the page read last), and wants
// the ids walk read forwards, each page in the list's order and
// HasPrevious on every page but the first of the list.
func walkBack[T any, K ~string](t *testing.T, first int, id func(*T) K,
	list func(pg store.PageArgs) (store.Page[T], error), want []string) {
	t.Helper()
	var got []string
	before := ""
	for page := 0; ; page++ {
		if page > 200 {
			t.Fatalf("still paging backwards after %d pages", page)
		}
		pg, err := list(store.PageArgs{First: first, Before: before, FromEnd: true})
		wantNoErr(t, fmt.Sprintf("listing page %d from the end", page), err)
		if pg.HasNext {
			t.Errorf("page %d read from the end: HasNext set", page)
		}
		got = append(ids(pg.Items, id), got...)
		if !pg.HasPrevious || len(pg.Items) == 0 {
			break
		}
		before = got[0]
	}
	if !slices.Equal(got, want) {
		t.Errorf("walking every page from the end: got ids %v, want %v", got, want)
	}
	// Both cursors: the rows strictly between them.
	if len(want) >= 3 {
		pg, err := list(store.PageArgs{First: len(want), After: want[0], Before: want[len(want)-1]})
		wantNoErr(t, "listing between two cursors", err)
		if between := ids(pg.Items, id); !slices.Equal(between, want[1:len(want)-1]) || pg.HasNext {
			t.Errorf("between %s and %s: got %v (HasNext %v), want %v", want[0], want[len(want)-1], between, pg.HasNext, want[1:len(want)-1])
		}
	}
}

// wantPages checks what walk read: the page sizes, HasNext on every page
// but the last, and every id once, in order.
func wantPages(t *testing.T, got []string, sizes []int, next []bool, want []string, wantSizes []int) {
	t.Helper()
	if !slices.Equal(sizes, wantSizes) {
		t.Errorf("got page sizes %v, want %v", sizes, wantSizes)
	}
	for i, n := range next {
		if wantNext := i < len(wantSizes)-1; n != wantNext {
			t.Errorf("page %d: got HasNext %v, want %v", i, n, wantNext)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("walking every page: got ids %v, want each of %v once, in order", got, want)
	}
}

func testList(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newTenant(t, s), newTenant(t, s)
	var want []string
	var inA []*model.Project
	for range 25 {
		p := newProject(t, s, a)
		inA = append(inA, p)
		want = append(want, string(p.ID))
	}
	var inB []*model.Project
	for range 5 {
		inB = append(inB, newProject(t, s, b))
	}
	slices.Sort(want)
	projectID := func(p *model.Project) model.ProjectID { return p.ID }

	tests := []struct {
		first int
		pages []int // the size of each page
	}{
		{10, []int{10, 10, 5}},
		{5, []int{5, 5, 5, 5, 5}},
		{24, []int{24, 1}},
		{25, []int{25}},
		{store.MaxPage, []int{25}},
		{1, slices.Repeat([]int{1}, 25)},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("ProjectsOf first=%d", tc.first), func(t *testing.T) {
			got, sizes, next := walk(t, tc.first, projectID, func(pg store.PageArgs) (store.Page[model.Project], error) {
				page, err := store.ProjectsOf(ctx, s.Q(), a.ID, pg)
				for _, p := range page.Items {
					if p.TenantID != a.ID {
						t.Errorf("got project %s of tenant %s, want only tenant %s", p.ID, p.TenantID, a.ID)
					}
				}
				return page, err
			})
			wantPages(t, got, sizes, next, want, tc.pages)
		})
	}
	t.Run("ProjectsOf whole rows", func(t *testing.T) {
		pg, err := store.ProjectsOf(ctx, s.Q(), b.ID, store.PageArgs{First: 1})
		wantNoErr(t, "listing", err)
		if len(pg.Items) != 1 || !pg.HasNext {
			t.Fatalf("got %d items, HasNext %v; want 1, true", len(pg.Items), pg.HasNext)
		}
		assertEqual(t, "project", pg.Items[0], inB[0])
	})

	t.Run("ReleasesOf newest first", func(t *testing.T) {
		p := newProject(t, s, newTenant(t, s)) // a tenant of its own: a and b keep their projects
		svc, otherSvc := newService(t, s, p), newService(t, s, p)
		env, otherEnv := newEnvironment(t, s, p, false), newEnvironment(t, s, p, false)
		var inEnv, ofSvc []string
		var rels []*model.Release
		for n := 1; n <= 25; n++ {
			r := newRelease(t, s, svc, env, n)
			rels = append(rels, r)
			inEnv = append(inEnv, string(r.ID))
			ofSvc = append(ofSvc, string(r.ID))
			if n%5 == 0 { // the same service in another environment, interleaved
				ofSvc = append(ofSvc, string(newRelease(t, s, svc, otherEnv, n/5).ID))
			}
		}
		newRelease(t, s, otherSvc, env, 1) // another service's
		slices.Sort(inEnv)
		slices.Reverse(inEnv)
		slices.Sort(ofSvc)
		slices.Reverse(ofSvc)
		releaseID := func(r *model.Release) model.ReleaseID { return r.ID }

		got, sizes, next := walk(t, 10, releaseID, func(pg store.PageArgs) (store.Page[model.Release], error) {
			return store.ReleasesOf(ctx, s.Q(), svc.ID, &env.ID, pg)
		})
		wantPages(t, got, sizes, next, inEnv, []int{10, 10, 5})

		got, sizes, next = walk(t, 10, releaseID, func(pg store.PageArgs) (store.Page[model.Release], error) {
			return store.ReleasesOf(ctx, s.Q(), svc.ID, nil, pg)
		})
		wantPages(t, got, sizes, next, ofSvc, []int{10, 10, 10})

		pg, err := store.ReleasesOf(ctx, s.Q(), svc.ID, &env.ID, store.PageArgs{First: 1})
		wantNoErr(t, "listing", err)
		if len(pg.Items) != 1 || !pg.HasNext {
			t.Fatalf("got %d items, HasNext %v; want 1, true", len(pg.Items), pg.HasNext)
		}
		assertEqual(t, "newest release", pg.Items[0], rels[len(rels)-1])

		pg, err = store.ReleasesOf(ctx, s.Q(), svc.ID, &env.ID, store.PageArgs{First: 10, After: inEnv[len(inEnv)-1]})
		wantNoErr(t, "listing after the oldest", err)
		if len(pg.Items) != 0 || pg.HasNext {
			t.Errorf("after the oldest release: got %d items, HasNext %v; want 0, false", len(pg.Items), pg.HasNext)
		}
		pg, err = store.ReleasesOf(ctx, s.Q(), model.ServiceID(newID()), nil, store.PageArgs{First: 10})
		wantNoErr(t, "listing an unknown service", err)
		if len(pg.Items) != 0 || pg.HasNext {
			t.Errorf("an unknown service: got %d items, HasNext %v; want 0, false", len(pg.Items), pg.HasNext)
		}
	})

	t.Run("ProjectsIn", func(t *testing.T) {
		// Every other project of a, two of b's (another tenant's ids never
		// show) and an id that names nothing, asked in no particular order.
		var asked []model.ProjectID
		var wantIn []string
		for i, p := range inA {
			if i%2 == 0 {
				asked = append(asked, p.ID)
				wantIn = append(wantIn, string(p.ID))
			}
		}
		asked = append(asked, inB[0].ID, inB[1].ID, model.ProjectID(newID()))
		slices.Reverse(asked)
		slices.Sort(wantIn)
		got, sizes, next := walk(t, 5, projectID, func(pg store.PageArgs) (store.Page[model.Project], error) {
			return store.ProjectsIn(ctx, s.Q(), a.ID, asked, pg)
		})
		wantPages(t, got, sizes, next, wantIn, []int{5, 5, 3})

		for name, ids := range map[string][]model.ProjectID{
			"none":                 nil,
			"another tenant's ids": {inB[0].ID, inB[1].ID},
		} {
			pg, err := store.ProjectsIn(ctx, s.Q(), a.ID, ids, store.PageArgs{First: 10})
			wantNoErr(t, "listing "+name, err)
			if len(pg.Items) != 0 || pg.HasNext {
				t.Errorf("%s: got %d items, HasNext %v; want 0, false", name, len(pg.Items), pg.HasNext)
			}
		}
	})
	t.Run("after the last row", func(t *testing.T) {
		pg, err := store.ProjectsOf(ctx, s.Q(), a.ID, store.PageArgs{First: 10, After: want[len(want)-1]})
		wantNoErr(t, "listing", err)
		if len(pg.Items) != 0 || pg.HasNext {
			t.Errorf("got %d items, HasNext %v; want 0, false", len(pg.Items), pg.HasNext)
		}
	})
	t.Run("no matching rows", func(t *testing.T) {
		pg, err := store.ProjectsOf(ctx, s.Q(), model.TenantID(newID()), store.PageArgs{First: 10})
		wantNoErr(t, "listing", err)
		if len(pg.Items) != 0 || pg.HasNext {
			t.Errorf("got %d items, HasNext %v; want 0, false", len(pg.Items), pg.HasNext)
		}
	})
	t.Run("All", func(t *testing.T) {
		rows, err := store.LoadTenantRows(ctx, s.Q(), a.ID, nil)
		wantNoErr(t, "reading all", err)
		if got := ids(rows.Projects, projectID); !slices.Equal(got, want) {
			t.Errorf("got ids %v, want %v", got, want)
		}
		rows, err = store.LoadTenantRows(ctx, s.Q(), b.ID, nil)
		wantNoErr(t, "reading all", err)
		assertEqual(t, "projects", rows.Projects, inB)
	})
}

// parentPage is the page expected for one parent.
type parentPage struct {
	ids     []string
	hasNext bool
}

// wantParentPages checks the pages of a listing by parents: one per asked
// parent, even empty, each holding only that parent's rows.
func wantParentPages[T any, K ~string](t *testing.T, got map[string]store.Page[T], want map[string]parentPage,
	id func(*T) K, parent func(*T) string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got pages for %d parents, want %d", len(got), len(want))
	}
	for p, w := range want {
		pg, ok := got[p]
		if !ok {
			t.Errorf("parent %s: missing, want a page (even an empty one)", p)
			continue
		}
		gotIDs := ids(pg.Items, id)
		if !slices.Equal(gotIDs, w.ids) && (len(gotIDs) != 0 || len(w.ids) != 0) {
			t.Errorf("parent %s: got ids %v, want %v", p, gotIDs, w.ids)
		}
		// hasNext is "more in the direction read": HasPrevious when
		// reading from the end (walkBack holds pageOf to which is which).
		if more := pg.HasNext || pg.HasPrevious; more != w.hasNext || pg.HasNext && pg.HasPrevious {
			t.Errorf("parent %s: got HasNext %v, HasPrevious %v, want more: %v", p, pg.HasNext, pg.HasPrevious, w.hasNext)
		}
		for _, it := range pg.Items {
			if parent(it) != p {
				t.Errorf("parent %s: got %s of %s", p, id(it), parent(it))
			}
		}
	}
}

func testListByParents(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	cluster := newCluster(t, s, tenant)
	// Five children, two, none, and an unasked parent with some.
	sizes := []int{5, 2, 0, 3}

	// Environments of projects, oldest first.
	var projects []*model.Project
	envs := map[string][]*model.Environment{}
	for _, n := range sizes {
		p := newProject(t, s, tenant)
		projects = append(projects, p)
		for range n {
			envs[string(p.ID)] = append(envs[string(p.ID)], newEnvironment(t, s, p, false))
		}
	}
	for _, es := range envs {
		slices.SortFunc(es, func(a, b *model.Environment) int { return strings.Compare(string(a.ID), string(b.ID)) })
	}
	asked := []string{string(projects[0].ID), string(projects[1].ID), string(projects[2].ID)}
	envIDs := func(p int, from, to int) []string {
		all := ids(envs[string(projects[p].ID)], func(e *model.Environment) model.EnvironmentID { return e.ID })
		return all[from:min(to, len(all))]
	}
	envTests := []struct {
		name    string
		parents []string
		pg      store.PageArgs
		want    map[string]parentPage
	}{
		{"first page", asked, store.PageArgs{First: 3}, map[string]parentPage{
			asked[0]: {envIDs(0, 0, 3), true},
			asked[1]: {envIDs(1, 0, 3), false},
			asked[2]: {nil, false},
		}},
		{"exactly a page", asked[1:2], store.PageArgs{First: 2}, map[string]parentPage{
			asked[1]: {envIDs(1, 0, 2), false},
		}},
		{"after", asked[:1], store.PageArgs{First: 3, After: envIDs(0, 2, 3)[0]}, map[string]parentPage{
			asked[0]: {envIDs(0, 3, 5), false},
		}},
		{"after, a page short", asked[:1], store.PageArgs{First: 2, After: envIDs(0, 0, 1)[0]}, map[string]parentPage{
			asked[0]: {envIDs(0, 1, 3), true},
		}},
		{"no parents", nil, store.PageArgs{First: 3}, map[string]parentPage{}},
		{"from the end", asked, store.PageArgs{First: 3, FromEnd: true}, map[string]parentPage{
			asked[0]: {envIDs(0, 2, 5), true},
			asked[1]: {envIDs(1, 0, 2), false},
			asked[2]: {nil, false},
		}},
		{"before, from the end", asked[:1], store.PageArgs{First: 2, Before: envIDs(0, 4, 5)[0], FromEnd: true}, map[string]parentPage{
			asked[0]: {envIDs(0, 2, 4), true},
		}},
		// NoNext reads the page without the row past it: HasNext is never set.
		{"no next, a full page", asked, store.PageArgs{First: 3, NoNext: true}, map[string]parentPage{
			asked[0]: {envIDs(0, 0, 3), false},
			asked[1]: {envIDs(1, 0, 3), false},
			asked[2]: {nil, false},
		}},
		{"no next, after", asked[:1], store.PageArgs{First: 2, After: envIDs(0, 0, 1)[0], NoNext: true}, map[string]parentPage{
			asked[0]: {envIDs(0, 1, 3), false},
		}},
	}
	for _, tc := range envTests {
		t.Run("EnvironmentsOfProjects "+tc.name, func(t *testing.T) {
			got, err := store.EnvironmentsOfProjects(ctx, s.Q(), tc.parents, tc.pg)
			wantNoErr(t, "listing by parents", err)
			wantParentPages(t, got, tc.want, func(e *model.Environment) model.EnvironmentID { return e.ID },
				func(e *model.Environment) string { return string(e.ProjectID) })
		})
	}
	t.Run("EnvironmentsOfProjects whole rows", func(t *testing.T) {
		got, err := store.EnvironmentsOfProjects(ctx, s.Q(), asked[1:2], store.PageArgs{First: 1})
		wantNoErr(t, "listing by parents", err)
		if items := got[asked[1]].Items; len(items) != 1 {
			t.Errorf("got %d items, want 1", len(items))
		} else {
			assertEqual(t, "environment", items[0], envs[asked[1]][0])
		}
	})

	// Services of the same projects, oldest first: one, none, none.
	svc := newService(t, s, projects[0])
	later := newService(t, s, projects[0])
	newService(t, s, projects[3])
	t.Run("ServicesOfProjects", func(t *testing.T) {
		got, err := store.ServicesOfProjects(ctx, s.Q(), asked[:2], store.PageArgs{First: 1})
		wantNoErr(t, "listing by parents", err)
		wantParentPages(t, got, map[string]parentPage{
			asked[0]: {[]string{string(svc.ID)}, true},
			asked[1]: {nil, false},
		}, func(s *model.Service) model.ServiceID { return s.ID }, func(s *model.Service) string { return string(s.ProjectID) })
		if items := got[asked[0]].Items; len(items) == 1 {
			assertEqual(t, "service", items[0], svc)
		}
		got, err = store.ServicesOfProjects(ctx, s.Q(), asked[:1], store.PageArgs{First: 1, After: string(svc.ID)})
		wantNoErr(t, "listing by parents after", err)
		wantParentPages(t, got, map[string]parentPage{asked[0]: {[]string{string(later.ID)}, false}},
			func(s *model.Service) model.ServiceID { return s.ID }, func(s *model.Service) string { return string(s.ProjectID) })
		got, err = store.ServicesOfProjects(ctx, s.Q(), nil, store.PageArgs{First: 1})
		wantNoErr(t, "listing no parents", err)
		wantParentPages(t, got, map[string]parentPage{},
			func(s *model.Service) model.ServiceID { return s.ID }, func(s *model.Service) string { return string(s.ProjectID) })
	})

	// Deployments of environments, newest first: the same sizes, under
	// four environments of one project.
	p := newProject(t, s, tenant)
	dsvc := newService(t, s, p)
	var depEnvs []*model.Environment
	deps := map[string][]*model.Deployment{}
	rels := map[model.ReleaseID]*model.Release{}
	for _, n := range sizes {
		e := newEnvironment(t, s, p, false)
		depEnvs = append(depEnvs, e)
		r := newRelease(t, s, dsvc, e, 1)
		rels[r.ID] = r
		for range n {
			deps[string(e.ID)] = append(deps[string(e.ID)], newDeployment(t, s, r, cluster))
		}
	}
	for _, ds := range deps {
		slices.SortFunc(ds, func(a, b *model.Deployment) int { return strings.Compare(string(b.ID), string(a.ID)) })
	}
	depByID := map[model.DeploymentID]*model.Deployment{}
	for _, ds := range deps {
		for _, d := range ds {
			depByID[d.ID] = d
		}
	}
	askedEnvs := []string{string(depEnvs[0].ID), string(depEnvs[1].ID), string(depEnvs[2].ID)}
	depIDs := func(e int, from, to int) []string {
		all := ids(deps[string(depEnvs[e].ID)], func(d *model.Deployment) model.DeploymentID { return d.ID })
		return all[from:min(to, len(all))]
	}
	depTests := []struct {
		name    string
		parents []string
		pg      store.PageArgs
		want    map[string]parentPage
	}{
		{"from the end", askedEnvs, store.PageArgs{First: 3, FromEnd: true}, map[string]parentPage{
			askedEnvs[0]: {depIDs(0, 2, 5), true},
			askedEnvs[1]: {depIDs(1, 0, 2), false},
			askedEnvs[2]: {nil, false},
		}},
		{"first page", askedEnvs, store.PageArgs{First: 3}, map[string]parentPage{
			askedEnvs[0]: {depIDs(0, 0, 3), true},
			askedEnvs[1]: {depIDs(1, 0, 3), false},
			askedEnvs[2]: {nil, false},
		}},
		{"exactly a page", askedEnvs[1:2], store.PageArgs{First: 2}, map[string]parentPage{
			askedEnvs[1]: {depIDs(1, 0, 2), false},
		}},
		{"after", askedEnvs[:1], store.PageArgs{First: 2, After: depIDs(0, 1, 2)[0]}, map[string]parentPage{
			askedEnvs[0]: {depIDs(0, 2, 4), true},
		}},
		{"after, to the end", askedEnvs[:1], store.PageArgs{First: 3, After: depIDs(0, 2, 3)[0]}, map[string]parentPage{
			askedEnvs[0]: {depIDs(0, 3, 5), false},
		}},
		{"a parent asked twice", []string{askedEnvs[1], askedEnvs[1]}, store.PageArgs{First: 2}, map[string]parentPage{
			askedEnvs[1]: {depIDs(1, 0, 2), false},
		}},
		{"no parents", nil, store.PageArgs{First: 3}, map[string]parentPage{}},
	}
	for _, tc := range depTests {
		t.Run("DeploymentsOfEnvironments "+tc.name, func(t *testing.T) {
			got, err := store.DeploymentsOfEnvironments(ctx, s.Q(), tc.parents, tc.pg, 0)
			wantNoErr(t, "listing by parents", err)
			wantParentPages(t, got, tc.want, func(d *model.Deployment) model.DeploymentID { return d.ID },
				func(d *model.Deployment) string { return string(d.EnvironmentID) })
		})
		// The same pages with their releases joined: whole, without
		// their configuration, and some columns of each.
		for _, read := range joinedReads {
			t.Run(fmt.Sprintf("DeploymentsWithReleasesOfEnvironments %s, %s", tc.name, read.name), func(t *testing.T) {
				got, releases, err := store.DeploymentsWithReleasesOfEnvironments(ctx, s.Q(), tc.parents, tc.pg, read.deployment, read.release)
				wantNoErr(t, "listing by parents with releases", err)
				wantParentPages(t, got, tc.want, func(d *model.Deployment) model.DeploymentID { return d.ID },
					func(d *model.Deployment) string { return string(d.EnvironmentID) })
				wantReleases := map[model.ReleaseID]*model.Release{}
				for _, pg := range got {
					for _, d := range pg.Items {
						assertEqual(t, "joined deployment", d, read.deployments(depByID[d.ID]))
						wantReleases[d.ReleaseID] = read.releases(rels[d.ReleaseID])
					}
				}
				if len(releases) != len(wantReleases) {
					t.Fatalf("got %d releases, want %d", len(releases), len(wantReleases))
				}
				for id, want := range wantReleases {
					assertEqual(t, "joined release", releases[id], want)
				}
			})
		}
	}
	t.Run("DeploymentsOfEnvironments whole rows", func(t *testing.T) {
		got, err := store.DeploymentsOfEnvironments(ctx, s.Q(), askedEnvs[1:2], store.PageArgs{First: 1}, 0)
		wantNoErr(t, "listing by parents", err)
		if items := got[askedEnvs[1]].Items; len(items) != 1 {
			t.Errorf("got %d items, want 1", len(items))
		} else {
			assertEqual(t, "newest deployment", items[0], deps[askedEnvs[1]][0])
		}
	})
}

// joinedReads are the reads of some of the columns of deployments and
// their releases that DeploymentsWithReleasesOfEnvironments is tested
// with, and what each makes of a whole row.
var joinedReads = []struct {
	name                string
	deployment, release store.Cols
	deployments         func(*model.Deployment) *model.Deployment
	releases            func(*model.Release) *model.Release
}{
	{"whole rows", 0, 0,
		func(d *model.Deployment) *model.Deployment { return d },
		func(r *model.Release) *model.Release { return r }},
	{"releases without their configuration", 0,
		store.Releases.Cols("service_id", "environment_id", "number", "image", "image_digest", "created_by", "created_at"),
		func(d *model.Deployment) *model.Deployment { return d },
		func(r *model.Release) *model.Release {
			c := *r
			c.ServiceConfig = model.ServiceConfig{}
			return &c
		}},
	{"stages and digests", store.Deployments.Cols("stage", "created_at"), store.Releases.Cols("number", "image_digest"),
		func(d *model.Deployment) *model.Deployment {
			return &model.Deployment{ID: d.ID, TenantID: d.TenantID, ProjectID: d.ProjectID, EnvironmentID: d.EnvironmentID,
				ReleaseID: d.ReleaseID, Stage: d.Stage, CreatedAt: d.CreatedAt}
		},
		func(r *model.Release) *model.Release {
			return &model.Release{ID: r.ID, TenantID: r.TenantID, ProjectID: r.ProjectID, Number: r.Number, ImageDigest: r.ImageDigest}
		}},
}

func testCount(t *testing.T, s *store.Store) {
	ctx := t.Context()
	t.Run("CountTenants", func(t *testing.T) {
		for want := range 3 {
			n, err := store.CountTenants(ctx, s.Q())
			wantNoErr(t, "counting tenants", err)
			if n != want {
				t.Errorf("CountTenants: got %d, want %d", n, want)
			}
			newTenant(t, s)
		}
	})

	a, b := newTenant(t, s), newTenant(t, s)
	t.Run("CountMembersWithRole", func(t *testing.T) {
		var aMembers []*model.Member
		for _, role := range []model.TenantRole{model.TenantAdmin, model.TenantMember, model.TenantAdmin, model.TenantMember, model.TenantMember} {
			aMembers = append(aMembers, newMember(t, s, a, newUser(t, s), role))
		}
		newMember(t, s, b, newUser(t, s), model.TenantAdmin)
		count := func(tn model.TenantID, role model.TenantRole) int {
			t.Helper()
			n, err := store.CountMembersWithRole(ctx, s.Q(), tn, role)
			wantNoErr(t, "counting members", err)
			return n
		}
		for _, tc := range []struct {
			name   string
			tenant model.TenantID
			role   model.TenantRole
			want   int
		}{
			{"admins of a", a.ID, model.TenantAdmin, 2},
			{"members of a", a.ID, model.TenantMember, 3},
			{"admins of b", b.ID, model.TenantAdmin, 1},
			{"members of b", b.ID, model.TenantMember, 0},
			{"admins of an unknown tenant", model.TenantID(newID()), model.TenantAdmin, 0},
		} {
			if got := count(tc.tenant, tc.role); got != tc.want {
				t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
			}
		}
		wantNoErr(t, "promoting a member", store.UpdateMemberRole(ctx, s.Q(), aMembers[1].ID, model.TenantAdmin))
		if got, got2 := count(a.ID, model.TenantAdmin), count(a.ID, model.TenantMember); got != 3 || got2 != 2 {
			t.Errorf("after a promotion: got %d admins and %d members, want 3 and 2", got, got2)
		}
	})

	t.Run("CountClustersBehind", func(t *testing.T) {
		behind := newCluster(t, s, a)   // two revisions, none applied
		caughtUp := newCluster(t, s, a) // one revision, applied
		newCluster(t, s, a)             // never given a revision
		elsewhere := newCluster(t, s, b)
		for _, c := range []*model.Cluster{behind, behind, caughtUp, elsewhere} {
			_, err := store.BumpRevision(ctx, s.Q(), c.ID, "hash", "{}", "", store.Now())
			wantNoErr(t, "bumping", err)
		}
		wantNoErr(t, "acknowledging", store.RecordAck(ctx, s.Q(), caughtUp.ID, 1, nil))
		count := func(tn model.TenantID) int {
			t.Helper()
			n, err := store.CountClustersBehind(ctx, s.Q(), tn)
			wantNoErr(t, "counting clusters behind", err)
			return n
		}
		if got := count(a.ID); got != 1 {
			t.Errorf("tenant a: got %d clusters behind, want 1", got)
		}
		if got := count(b.ID); got != 1 {
			t.Errorf("tenant b: got %d clusters behind, want 1", got)
		}
		if got := count(model.TenantID(newID())); got != 0 {
			t.Errorf("an unknown tenant: got %d clusters behind, want 0", got)
		}
		// Applying one of two revisions leaves it behind; applying both
		// catches it up.
		wantNoErr(t, "acknowledging revision 1", store.RecordAck(ctx, s.Q(), behind.ID, 1, nil))
		if got := count(a.ID); got != 1 {
			t.Errorf("tenant a after revision 1 of 2 applied: got %d clusters behind, want 1", got)
		}
		wantNoErr(t, "acknowledging revision 2", store.RecordAck(ctx, s.Q(), behind.ID, 2, nil))
		if got := count(a.ID); got != 0 {
			t.Errorf("tenant a after every revision applied: got %d clusters behind, want 0", got)
		}
	})
}

func testDelete(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	p, keep := newProject(t, s, tenant), newProject(t, s, tenant)
	wantNoErr(t, "deleting a project", store.Projects.Delete(ctx, s.Q(), p.ID))
	_, err := store.Projects.Get(ctx, s.Q(), p.ID)
	wantErr(t, "getting a deleted project", err, store.ErrNotFound)
	wantErr(t, "deleting it again", store.Projects.Delete(ctx, s.Q(), p.ID), store.ErrNotFound)
	wantErr(t, "deleting a missing id", store.Projects.Delete(ctx, s.Q(), model.ProjectID(newID())), store.ErrNotFound)
	mustGet(t, s, store.Projects, keep.ID)
}

func testCascade(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	// A second environment with its own release, a project member, and a
	// second project that must be left alone.
	env2 := newEnvironment(t, s, g.project, true)
	newRelease(t, s, g.service, env2, 1)
	newProjectMember(t, s, g.project, g.user, model.ProjectViewer)
	other := newProject(t, s, g.tenant)
	otherEnv := newEnvironment(t, s, other, false)
	otherSvc := newService(t, s, other)
	otherRel := newRelease(t, s, otherSvc, otherEnv, 1)
	newDeployment(t, s, otherRel, g.cluster)
	nt := newNamespaceTarget(t, s, g.cluster)

	t.Run("project", func(t *testing.T) {
		wantNoErr(t, "deleting the project", store.Projects.Delete(ctx, s.Q(), g.project.ID))
		p := string(g.project.ID)
		for _, c := range []struct {
			table string
			n     int
		}{
			{"environments", mustCount(t, s, "environments", "project_id = $1", p)},
			{"services", mustCount(t, s, "services", "project_id = $1", p)},
			{"releases", mustCount(t, s, "releases", "project_id = $1", p)},
			{"deployments", mustCount(t, s, "deployments", "project_id = $1", p)},
			{"project_members", mustCount(t, s, "project_members", "project_id = $1", p)},
		} {
			if c.n != 0 {
				t.Errorf("%s of the deleted project: got %d rows, want 0", c.table, c.n)
			}
		}
		o := string(other.ID)
		for _, c := range []struct {
			table string
			n     int
		}{
			{"environments", mustCount(t, s, "environments", "project_id = $1", o)},
			{"services", mustCount(t, s, "services", "project_id = $1", o)},
			{"releases", mustCount(t, s, "releases", "project_id = $1", o)},
			{"deployments", mustCount(t, s, "deployments", "project_id = $1", o)},
		} {
			if c.n != 1 {
				t.Errorf("%s of the other project: got %d rows, want 1", c.table, c.n)
			}
		}
		mustGet(t, s, store.Users, g.user.ID)
		mustGet(t, s, store.Clusters, g.cluster.ID)
	})
	t.Run("cluster", func(t *testing.T) {
		// Its deployments hold it; once they are gone, deleting it takes its
		// namespace targets along.
		wantNoErr(t, "deleting the other project", store.Projects.Delete(ctx, s.Q(), other.ID))
		wantNoErr(t, "deleting the cluster", store.Clusters.Delete(ctx, s.Q(), g.cluster.ID))
		_, err := store.NamespaceTargets.Get(ctx, s.Q(), nt.ID)
		wantErr(t, "getting a namespace target of a deleted cluster", err, store.ErrNotFound)
	})
}

var errRollback = errors.New("roll back, please")

func testTx(t *testing.T, s *store.Store) {
	ctx := t.Context()
	t.Run("commit", func(t *testing.T) {
		var tenant *model.Tenant
		err := s.Tx(ctx, func(q store.Querier) error {
			tenant = &model.Tenant{ID: model.TenantID(newID()), Name: "committed", PlanName: model.PlanFree, CreatedAt: store.Now()}
			if err := store.Tenants.Insert(ctx, q, tenant); err != nil {
				return err
			}
			// The transaction reads its own writes.
			_, err := store.Tenants.Get(ctx, q, tenant.ID)
			return err
		})
		wantNoErr(t, "committing", err)
		assertEqual(t, "tenant", mustGet(t, s, store.Tenants, tenant.ID), tenant)
	})
	t.Run("fn error rolls back", func(t *testing.T) {
		tenant := &model.Tenant{ID: model.TenantID(newID()), Name: "rolled back", PlanName: model.PlanFree, CreatedAt: store.Now()}
		err := s.Tx(ctx, func(q store.Querier) error {
			if err := store.Tenants.Insert(ctx, q, tenant); err != nil {
				return err
			}
			p := &model.Project{ID: model.ProjectID(newID()), TenantID: tenant.ID, Name: "p", CreatedAt: store.Now()}
			if err := store.Projects.Insert(ctx, q, p); err != nil {
				return err
			}
			if err := store.InsertAudit(ctx, q, &model.AuditEvent{TenantID: tenant.ID, Action: "tenant.create",
				TargetType: "Tenant", ClientAddress: "127.0.0.1", CreatedAt: store.Now()}); err != nil {
				return err
			}
			return errRollback
		})
		wantErr(t, "Tx", err, errRollback)
		_, err = store.Tenants.Get(ctx, s.Q(), tenant.ID)
		wantErr(t, "getting the rolled back tenant", err, store.ErrNotFound)
		if n := mustCount(t, s, "projects", "tenant_id = $1", string(tenant.ID)); n != 0 {
			t.Errorf("projects of the rolled back tenant: got %d, want 0", n)
		}
		n, err := store.CountAudit(ctx, s.Q(), tenant.ID)
		wantNoErr(t, "counting audit events", err)
		if n != 0 {
			t.Errorf("audit events of the rolled back tenant: got %d, want 0", n)
		}
	})
	t.Run("failed statement rolls back", func(t *testing.T) {
		existing := newUser(t, s)
		first := &model.User{ID: model.UserID(newID()), Email: newID() + "@example.com", Kind: model.UserHuman, CreatedAt: store.Now()}
		err := s.Tx(ctx, func(q store.Querier) error {
			if err := store.Users.Insert(ctx, q, first); err != nil {
				return err
			}
			return store.Users.Insert(ctx, q, &model.User{ID: model.UserID(newID()), Email: existing.Email,
				Kind: model.UserHuman, CreatedAt: store.Now()})
		})
		wantConflict(t, "Tx", err, false)
		_, err = store.Users.Get(ctx, s.Q(), first.ID)
		wantErr(t, "getting the user inserted before the failure", err, store.ErrNotFound)
	})
}

func testTxPanic(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic to reach the caller unchanged", p)
			}
		}()
		_ = s.Tx(ctx, func(q store.Querier) error {
			cur, err := store.LockTenant(ctx, q, tenant.ID)
			if err != nil {
				return err
			}
			cur.Name = "changed by a panicking transaction"
			if err := store.UpdateTenant(ctx, q, cur); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	// A leaked transaction would hold the tenant's lock (SQLite: the write
	// lock) until the deadline.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.Tx(wctx, func(q store.Querier) error {
		_, err := store.LockTenant(wctx, q, tenant.ID)
		return err
	})
	wantNoErr(t, "locking the tenant after a panicking transaction", err)
	assertEqual(t, "tenant", mustGet(t, s, store.Tenants, tenant.ID), tenant)
}

func testLockTenant(t *testing.T, s *store.Store) {
	ctx := t.Context()
	t.Run("missing", func(t *testing.T) {
		err := s.Tx(ctx, func(q store.Querier) error {
			_, err := store.LockTenant(ctx, q, model.TenantID(newID()))
			return err
		})
		wantErr(t, "locking a missing tenant", err, store.ErrNotFound)
	})
	t.Run("existing", func(t *testing.T) {
		want := newTenant(t, s)
		err := s.Tx(ctx, func(q store.Querier) error {
			got, err := store.LockTenant(ctx, q, want.ID)
			if err == nil {
				assertEqual(t, "locked tenant", got, want)
			}
			return err
		})
		wantNoErr(t, "locking a tenant", err)
	})
	t.Run("serialises writers", func(t *testing.T) {
		// Each writer reads a counter under the lock and writes it back plus
		// one; without the lock, concurrent writers lose updates.
		tenant := newTenant(t, s)
		tenant.Name = "0"
		wantNoErr(t, "resetting the counter", store.UpdateTenant(ctx, s.Q(), tenant))
		const writers = 8
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				errs <- s.Tx(ctx, func(q store.Querier) error {
					cur, err := store.LockTenant(ctx, q, tenant.ID)
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(cur.Name)
					if err != nil {
						return err
					}
					cur.Name = strconv.Itoa(n + 1)
					return store.UpdateTenant(ctx, q, cur)
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			wantNoErr(t, "incrementing under the lock", err)
		}
		if got := mustGet(t, s, store.Tenants, tenant.ID).Name; got != strconv.Itoa(writers) {
			t.Errorf("counter after %d locked increments: got %s, want %d", writers, got, writers)
		}
	})
}

func testRows(t *testing.T, s *store.Store) {
	ctx := t.Context()
	newTenant(t, s)
	rows, err := s.Q().Query(ctx, `SELECT id FROM tenants`)
	wantNoErr(t, "querying", err)
	n := 0
	for rows.Next() {
		n++
	}
	wantNoErr(t, "reading rows", rows.Err())
	rows.Close()
	rows.Close() // idempotent
	if n != 1 {
		t.Errorf("got %d rows, want 1", n)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if name := s.Dialect().Name; name != "postgres" && name != "sqlite" {
		t.Errorf("Dialect().Name: got %q, want postgres or sqlite", name)
	}
	if kind := s.Kind(); kind != s.Dialect().Name {
		t.Errorf("Kind: got %q, want the dialect's name %q", kind, s.Dialect().Name)
	}
}

// testReadTx: a read transaction sees one snapshot, though a writer
// commits in the middle of it, and does not hold that writer up.
func testReadTx(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	var first, second string
	err := s.ReadTx(ctx, func(q store.Querier) error {
		got, err := store.Tenants.Get(ctx, q, tenant.ID)
		if err != nil {
			return err
		}
		first = got.Name
		// A writer commits meanwhile, on another connection.
		if err := s.Tx(ctx, func(w store.Querier) error {
			renamed := *tenant
			renamed.Name = "renamed"
			return store.UpdateTenant(ctx, w, &renamed)
		}); err != nil {
			return fmt.Errorf("writing during a read transaction: %w", err)
		}
		got, err = store.Tenants.Get(ctx, q, tenant.ID)
		if err != nil {
			return err
		}
		second = got.Name
		return nil
	})
	wantNoErr(t, "read transaction", err)
	if first != tenant.Name || second != tenant.Name {
		t.Errorf("inside one read transaction the name read %q, then %q; want %q both times", first, second, tenant.Name)
	}
	if got := mustGet(t, s, store.Tenants, tenant.ID).Name; got != "renamed" {
		t.Errorf("after the read transaction the name is %q, want the committed %q", got, "renamed")
	}
}

// testRefusing: a refusing querier runs nothing. Reads and writes through
// it fail with its error, and the rows stay as they were.
func testRefusing(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	errNo := errors.New("no subject")
	q := store.Refusing(errNo)
	if _, err := store.Tenants.Get(ctx, q, tenant.ID); !errors.Is(err, errNo) {
		t.Errorf("reading through a refusing querier: %v, want its error", err)
	}
	renamed := *tenant
	renamed.Name = "refused"
	if err := store.UpdateTenant(ctx, q, &renamed); !errors.Is(err, errNo) {
		t.Errorf("writing through a refusing querier: %v, want its error", err)
	}
	if got := mustGet(t, s, store.Tenants, tenant.ID).Name; got != tenant.Name {
		t.Errorf("after a refused write the name is %q, want %q", got, tenant.Name)
	}
}
