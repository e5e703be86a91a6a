package storetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func testTenantQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant, other := newTenant(t, s), newTenant(t, s)
	t.Run("UpdateTenant", func(t *testing.T) {
		want := *tenant
		want.Name, want.PlanName = "Renamed", model.PlanEnterprise
		wantNoErr(t, "updating", store.UpdateTenant(ctx, s.Q(), &want))
		assertEqual(t, "tenant", mustGet(t, s, store.Tenants, tenant.ID), &want)
		assertEqual(t, "other tenant", mustGet(t, s, store.Tenants, other.ID), other)
	})
	t.Run("UpdateTenant missing", func(t *testing.T) {
		err := store.UpdateTenant(ctx, s.Q(), &model.Tenant{ID: model.TenantID(newID()), Name: "x", PlanName: model.PlanFree})
		wantErr(t, "updating a missing tenant", err, store.ErrNotFound)
	})
	t.Run("UserByEmail", func(t *testing.T) {
		u := newUser(t, s)
		newUser(t, s)
		got, err := store.UserByEmail(ctx, s.Q(), u.Email)
		wantNoErr(t, "reading by email", err)
		assertEqual(t, "user", got, u)
	})
}

func testGrants(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newTenant(t, s), newTenant(t, s)
	user, colleague, loner := newUser(t, s), newUser(t, s), newUser(t, s)
	pa1, pa2, pb := newProject(t, s, a), newProject(t, s, a), newProject(t, s, b)

	ma := newMember(t, s, a, user, model.TenantAdmin)
	newMember(t, s, b, user, model.TenantMember)
	newMember(t, s, a, colleague, model.TenantMember)
	pm := newProjectMember(t, s, pa1, user, model.ProjectEditor)
	newProjectMember(t, s, pa2, user, model.ProjectViewer)
	newProjectMember(t, s, pb, user, model.ProjectManager)
	newProjectMember(t, s, pa1, colleague, model.ProjectManager)

	grants := func(t *testing.T, u *model.User) *model.Grants {
		t.Helper()
		g, err := store.GrantsOf(ctx, s.Q(), u.ID)
		wantNoErr(t, "reading grants", err)
		return g
	}
	wantGrants := func(t *testing.T, got *model.Grants, tenants map[model.TenantID]model.TenantRole, projects map[model.ProjectID]model.ProjectRole) {
		t.Helper()
		if got.Tenants == nil || got.Projects == nil {
			t.Errorf("got nil maps in %+v, want empty ones", got)
		}
		if !maps.Equal(got.Tenants, tenants) {
			t.Errorf("tenant roles: got %v, want %v", got.Tenants, tenants)
		}
		if !maps.Equal(got.Projects, projects) {
			t.Errorf("project roles: got %v, want %v", got.Projects, projects)
		}
	}

	t.Run("GrantsOf", func(t *testing.T) {
		wantGrants(t, grants(t, user),
			map[model.TenantID]model.TenantRole{a.ID: model.TenantAdmin, b.ID: model.TenantMember},
			map[model.ProjectID]model.ProjectRole{pa1.ID: model.ProjectEditor, pa2.ID: model.ProjectViewer, pb.ID: model.ProjectManager})
		wantGrants(t, grants(t, loner), map[model.TenantID]model.TenantRole{}, map[model.ProjectID]model.ProjectRole{})
	})
	t.Run("UpdateMemberRole", func(t *testing.T) {
		wantNoErr(t, "updating the role", store.UpdateMemberRole(ctx, s.Q(), ma.ID, model.TenantMember))
		got := mustGet(t, s, store.Members, ma.ID)
		if got.Role != model.TenantMember {
			t.Errorf("role: got %s, want %s", got.Role, model.TenantMember)
		}
		wantErr(t, "updating a missing member",
			store.UpdateMemberRole(ctx, s.Q(), model.MemberID(newID()), model.TenantAdmin), store.ErrNotFound)
	})
	t.Run("UpdateProjectMemberRole", func(t *testing.T) {
		wantNoErr(t, "updating the role", store.UpdateProjectMemberRole(ctx, s.Q(), pm.ID, model.ProjectManager))
		got := mustGet(t, s, store.ProjectMembers, pm.ID)
		if got.Role != model.ProjectManager {
			t.Errorf("role: got %s, want %s", got.Role, model.ProjectManager)
		}
		wantErr(t, "updating a missing project member",
			store.UpdateProjectMemberRole(ctx, s.Q(), model.ProjectMemberID(newID()), model.ProjectViewer), store.ErrNotFound)
	})
	t.Run("DeleteProjectGrantsInTenant", func(t *testing.T) {
		wantNoErr(t, "deleting grants", store.DeleteProjectGrantsInTenant(ctx, s.Q(), a.ID, user.ID))
		// The user keeps tenant roles and the project role in tenant b; the
		// colleague keeps theirs in tenant a.
		wantGrants(t, grants(t, user),
			map[model.TenantID]model.TenantRole{a.ID: model.TenantMember, b.ID: model.TenantMember},
			map[model.ProjectID]model.ProjectRole{pb.ID: model.ProjectManager})
		wantGrants(t, grants(t, colleague),
			map[model.TenantID]model.TenantRole{a.ID: model.TenantMember},
			map[model.ProjectID]model.ProjectRole{pa1.ID: model.ProjectManager})
		wantNoErr(t, "deleting grants that are gone", store.DeleteProjectGrantsInTenant(ctx, s.Q(), a.ID, user.ID))
	})
}

func testTokens(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant, user := newTenant(t, s), newUser(t, s)
	newMember(t, s, tenant, user, model.TenantAdmin)
	t.Run("TokenByHash", func(t *testing.T) {
		tok := newToken(t, s, tenant, user)
		newToken(t, s, tenant, user)
		got, u, err := store.TokenByHash(ctx, s.Q(), tok.Hash)
		wantNoErr(t, "reading by hash", err)
		assertEqual(t, "token", got, tok)
		known, err := store.UserAsKnownIn(ctx, s.Q(), tenant.ID, user.ID)
		wantNoErr(t, "reading the user", err)
		assertEqual(t, "the token's user", u, known)
		_, _, err = store.TokenByHash(ctx, s.Q(), []byte("no such hash"))
		wantErr(t, "reading an unknown hash", err, store.ErrNotFound)
	})
	t.Run("TouchToken", func(t *testing.T) {
		tok := newToken(t, s, tenant, user)
		base := store.Now()
		steps := []struct {
			name string
			now  time.Time
			want time.Time // last_used_at afterwards
		}{
			{"first use", base, base},
			{"within the interval", base.Add(30 * time.Second), base},
			{"after the interval", base.Add(2 * time.Minute), base.Add(2 * time.Minute)},
			{"within the new interval", base.Add(2*time.Minute + 59*time.Second), base.Add(2 * time.Minute)},
		}
		for _, st := range steps {
			wantNoErr(t, st.name, store.TouchToken(ctx, s.Q(), tok.ID, st.now, time.Minute))
			got := mustGet(t, s, store.Tokens, tok.ID).LastUsedAt
			if got == nil || !got.Equal(st.want) {
				t.Errorf("%s: got last used %v, want %s", st.name, got, st.want)
			}
		}
		wantNoErr(t, "touching a missing token", store.TouchToken(ctx, s.Q(), model.TokenID(newID()), base, time.Minute))
	})
	t.Run("RevokeToken", func(t *testing.T) {
		tok := newToken(t, s, tenant, user)
		first := store.Now()
		wantNoErr(t, "revoking", store.RevokeToken(ctx, s.Q(), tok.ID, first))
		wantErr(t, "revoking again", store.RevokeToken(ctx, s.Q(), tok.ID, first.Add(time.Hour)), store.ErrNotFound)
		want := *tok
		want.RevokedAt = &first
		assertEqual(t, "revoked token", mustGet(t, s, store.Tokens, tok.ID), &want)
		wantErr(t, "revoking a missing token", store.RevokeToken(ctx, s.Q(), model.TokenID(newID()), first), store.ErrNotFound)
	})
	t.Run("RevokeUserTokens", func(t *testing.T) {
		other, colleague := newTenant(t, s), newUser(t, s)
		live1, live2 := newToken(t, s, tenant, user), newToken(t, s, tenant, user)
		earlier := store.Now().Add(-time.Hour)
		already := newToken(t, s, tenant, user)
		wantNoErr(t, "revoking one early", store.RevokeToken(ctx, s.Q(), already.ID, earlier))
		elsewhere := newToken(t, s, other, user)        // same user, other tenant
		colleagues := newToken(t, s, tenant, colleague) // same tenant, other user

		now := store.Now()
		wantNoErr(t, "revoking the user's tokens", store.RevokeUserTokens(ctx, s.Q(), tenant.ID, user.ID, now))
		for _, tc := range []struct {
			name string
			tok  *model.APIToken
			want *time.Time
		}{
			{"live token", live1, &now},
			{"another live token", live2, &now},
			{"token revoked before", already, &earlier},
			{"token in another tenant", elsewhere, nil},
			{"colleague's token", colleagues, nil},
		} {
			want := *tc.tok
			want.RevokedAt = tc.want
			assertEqual(t, tc.name, mustGet(t, s, store.Tokens, tc.tok.ID), &want)
		}
		wantNoErr(t, "revoking again", store.RevokeUserTokens(ctx, s.Q(), tenant.ID, user.ID, now.Add(time.Hour)))
		if got := mustGet(t, s, store.Tokens, live1.ID).RevokedAt; got == nil || !got.Equal(now) {
			t.Errorf("revoked_at after a second RevokeUserTokens: got %v, want %s", got, now)
		}
	})
}

// testTokenCounts: a user's tokens in one tenant, listed, counted while
// they work, and those not revoked yet.
func testTokenCounts(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant, other, user, colleague := newTenant(t, s), newTenant(t, s), newUser(t, s), newUser(t, s)
	now := store.Now()
	live := newToken(t, s, tenant, user)
	later := mustInsert(t, s, store.Tokens, &model.APIToken{ID: model.TokenID(newID()), TenantID: tenant.ID, UserID: user.ID,
		Name: "expires later", Prefix: "nbt_later000", Hash: []byte("hash of a token expiring later " + newID()), CreatedAt: now,
		ExpiresAt: ptr(now.Add(time.Hour))})
	expired := mustInsert(t, s, store.Tokens, &model.APIToken{ID: model.TokenID(newID()), TenantID: tenant.ID, UserID: user.ID,
		Name: "expired", Prefix: "nbt_expired0", Hash: []byte("hash of an expired token " + newID()), CreatedAt: now.Add(-2 * time.Hour),
		ExpiresAt: ptr(now)}) // expires at now: no longer works at now
	revoked := newToken(t, s, tenant, user)
	wantNoErr(t, "revoking", store.RevokeToken(ctx, s.Q(), revoked.ID, now))
	newToken(t, s, other, user)       // another tenant
	newToken(t, s, tenant, colleague) // another user

	t.Run("CountLiveTokens", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			at   time.Time
			want int
		}{
			{"now", now, 2},
			{"before the expired one ended", now.Add(-time.Minute), 3},
			{"after the later one ended", now.Add(time.Hour), 1},
		} {
			n, err := store.CountLiveTokens(ctx, s.Q(), tenant.ID, user.ID, tc.at)
			wantNoErr(t, tc.name, err)
			if n != tc.want {
				t.Errorf("%s: got %d, want %d", tc.name, n, tc.want)
			}
		}
		n, err := store.CountLiveTokens(ctx, s.Q(), tenant.ID, newUser(t, s).ID, now)
		wantNoErr(t, "a user without tokens", err)
		if n != 0 {
			t.Errorf("a user without tokens: got %d, want 0", n)
		}
	})
	t.Run("UnrevokedTokens", func(t *testing.T) {
		got, err := store.UnrevokedTokens(ctx, s.Q(), tenant.ID, user.ID)
		wantNoErr(t, "listing", err)
		want := ids([]*model.APIToken{live, later, expired}, func(t *model.APIToken) model.TokenID { return t.ID })
		if g := ids(got, func(t *model.APIToken) model.TokenID { return t.ID }); !slices.Equal(g, want) {
			t.Errorf("got %v, want %v", g, want)
		}
	})
	t.Run("TokensOf", func(t *testing.T) {
		all := ids([]*model.APIToken{live, later, expired, revoked}, func(t *model.APIToken) model.TokenID { return t.ID })
		first, err := store.TokensOf(ctx, s.Q(), tenant.ID, user.ID, store.PageArgs{First: 3})
		wantNoErr(t, "listing", err)
		rest, err := store.TokensOf(ctx, s.Q(), tenant.ID, user.ID, store.PageArgs{First: 3, After: string(first.Items[2].ID)})
		wantNoErr(t, "listing the rest", err)
		got := append(ids(first.Items, func(t *model.APIToken) model.TokenID { return t.ID }),
			ids(rest.Items, func(t *model.APIToken) model.TokenID { return t.ID })...)
		if !slices.Equal(got, all) || !first.HasNext || rest.HasNext {
			t.Errorf("got %v (hasNext %v, %v), want %v in two pages", got, first.HasNext, rest.HasNext, all)
		}
		assertEqual(t, "first token", first.Items[0], live)
	})
}

func testProjectQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	p, sibling := newProject(t, s, tenant), newProject(t, s, tenant)
	t.Run("UpdateProject", func(t *testing.T) {
		want := *p
		want.Name, want.Description = "renamed", "new description"
		wantNoErr(t, "updating", store.UpdateProject(ctx, s.Q(), &want))
		assertEqual(t, "project", mustGet(t, s, store.Projects, p.ID), &want)
		assertEqual(t, "sibling", mustGet(t, s, store.Projects, sibling.ID), sibling)
	})
	t.Run("UpdateProject to a taken name", func(t *testing.T) {
		dup := *p
		dup.Name = sibling.Name
		wantConflict(t, "renaming onto a sibling", store.UpdateProject(ctx, s.Q(), &dup), false)
	})
	t.Run("UpdateProject missing", func(t *testing.T) {
		err := store.UpdateProject(ctx, s.Q(), &model.Project{ID: model.ProjectID(newID()), Name: "x"})
		wantErr(t, "updating a missing project", err, store.ErrNotFound)
	})
}

func testEnvironmentQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	p := newProject(t, s, tenant)
	e, sibling := newEnvironment(t, s, p, false), newEnvironment(t, s, p, false)
	t.Run("UpdateEnvironment", func(t *testing.T) {
		want := *e
		want.Name, want.Protected = "production", true
		want.ClusterSelector = model.Labels{{Key: "env", Value: "prod"}, {Key: "region", Value: "us"}}
		want.NamespaceSelector = model.Labels{{Key: "team", Value: "a"}}
		wantNoErr(t, "updating", store.UpdateEnvironment(ctx, s.Q(), &want))
		assertEqual(t, "environment", mustGet(t, s, store.Environments, e.ID), &want)

		want.Protected, want.ClusterSelector, want.NamespaceSelector = false, model.Labels{}, nil
		wantNoErr(t, "updating back", store.UpdateEnvironment(ctx, s.Q(), &want))
		assertEqual(t, "environment", mustGet(t, s, store.Environments, e.ID), &want)
		assertEqual(t, "sibling", mustGet(t, s, store.Environments, sibling.ID), sibling)
	})
	t.Run("UpdateEnvironment to a taken name", func(t *testing.T) {
		dup := *mustGet(t, s, store.Environments, e.ID)
		dup.Name = sibling.Name
		wantConflict(t, "renaming onto a sibling", store.UpdateEnvironment(ctx, s.Q(), &dup), false)
	})
	t.Run("UpdateEnvironment missing", func(t *testing.T) {
		err := store.UpdateEnvironment(ctx, s.Q(), &model.Environment{ID: model.EnvironmentID(newID()), Name: "x"})
		wantErr(t, "updating a missing environment", err, store.ErrNotFound)
	})
}

func testLabelQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	c, otherCluster := newCluster(t, s, tenant), newCluster(t, s, tenant)
	nt := newNamespaceTarget(t, s, c)
	labels := model.Labels{{Key: "a", Value: "1"}, {Key: "b", Value: "x=y, z"}}
	tests := []struct {
		name   string
		labels model.Labels
	}{
		{"set", labels},
		{"clear", model.Labels{}},
		{"nil", nil},
	}
	for _, tc := range tests {
		t.Run("SetClusterLabels "+tc.name, func(t *testing.T) {
			wantNoErr(t, "setting labels", store.SetClusterLabels(ctx, s.Q(), c.ID, tc.labels))
			want := *c
			want.Labels = tc.labels
			assertEqual(t, "cluster", mustGet(t, s, store.Clusters, c.ID), &want)
		})
		t.Run("SetNamespaceTargetLabels "+tc.name, func(t *testing.T) {
			wantNoErr(t, "setting labels", store.SetNamespaceTargetLabels(ctx, s.Q(), nt.ID, tc.labels))
			want := *nt
			want.Labels = tc.labels
			assertEqual(t, "namespace target", mustGet(t, s, store.NamespaceTargets, nt.ID), &want)
		})
	}
	assertEqual(t, "other cluster", mustGet(t, s, store.Clusters, otherCluster.ID), otherCluster)
	wantErr(t, "labelling a missing cluster",
		store.SetClusterLabels(ctx, s.Q(), model.ClusterID(newID()), labels), store.ErrNotFound)
	wantErr(t, "labelling a missing namespace target",
		store.SetNamespaceTargetLabels(ctx, s.Q(), model.NamespaceTargetID(newID()), labels), store.ErrNotFound)
}

func testServiceQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	p := newProject(t, s, tenant)
	svc := newService(t, s, p)
	t.Run("UpdateService", func(t *testing.T) {
		want := *svc
		// Name, project and creation time are not the update's to change.
		want.Image = "ghcr.io/acme/web:v2"
		want.ServiceConfig = model.ServiceConfig{
			Processes: []model.Process{{Name: "web", Command: []string{"serve"}, Replicas: 2, Port: ptr(80)}},
		}
		want.UpdatedAt = svc.UpdatedAt.Add(time.Hour + time.Microsecond)
		changed := want
		changed.Name, changed.CreatedAt = "ignored", at
		wantNoErr(t, "updating", store.UpdateService(ctx, s.Q(), &changed))
		assertEqual(t, "service", mustGet(t, s, store.Services, svc.ID), &want)
	})
	t.Run("UpdateService missing", func(t *testing.T) {
		err := store.UpdateService(ctx, s.Q(), &model.Service{ID: model.ServiceID(newID()), UpdatedAt: store.Now()})
		wantErr(t, "updating a missing service", err, store.ErrNotFound)
	})
}

func testNextReleaseNumber(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	p := newProject(t, s, tenant)
	svc, otherSvc := newService(t, s, p), newService(t, s, p)
	env, otherEnv := newEnvironment(t, s, p, false), newEnvironment(t, s, p, true)
	next := func(t *testing.T, svc *model.Service, env *model.Environment) int {
		t.Helper()
		n, err := store.NextReleaseNumber(ctx, s.Q(), svc.ID, env.ID)
		wantNoErr(t, "reading the next release number", err)
		return n
	}
	if got := next(t, svc, env); got != 1 {
		t.Errorf("with no releases: got %d, want 1", got)
	}
	// The next number follows the highest, not the count.
	for _, n := range []int{1, 2, 5} {
		newRelease(t, s, svc, env, n)
	}
	newRelease(t, s, otherSvc, otherEnv, 9)
	tests := []struct {
		name string
		svc  *model.Service
		env  *model.Environment
		want int
	}{
		{"after 1, 2, 5", svc, env, 6},
		{"same service, other environment", svc, otherEnv, 1},
		{"other service, same environment", otherSvc, env, 1},
		{"other service and environment", otherSvc, otherEnv, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := next(t, tc.svc, tc.env); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
	// All of a project's highest numbers at once: the same numbers, none
	// for a pair without releases, none of another project's.
	newRelease(t, s, newService(t, s, newProject(t, s, tenant)), env, 3)
	nums, err := store.ReleaseNumbers(ctx, s.Q(), p.ID)
	wantNoErr(t, "reading the project's release numbers", err)
	want := map[[2]string]int{{string(svc.ID), string(env.ID)}: 5, {string(otherSvc.ID), string(otherEnv.ID)}: 9}
	if len(nums) != len(want) {
		t.Fatalf("the project's release numbers: %v, want %v", nums, want)
	}
	for k, n := range want {
		if nums[k] != n {
			t.Errorf("the project's release numbers: %v, want %v", nums, want)
		}
	}
}

func testUsage(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b, empty := newTenant(t, s), newTenant(t, s), newTenant(t, s)
	for range 2 {
		newCluster(t, s, a)
	}
	pa1, pa2 := newProject(t, s, a), newProject(t, s, a)
	newEnvironment(t, s, pa1, true)
	newEnvironment(t, s, pa1, false)
	newEnvironment(t, s, pa2, true)
	newEnvironment(t, s, pa2, false)
	newEnvironment(t, s, pa2, true)
	for range 3 {
		newMember(t, s, a, newUser(t, s), model.TenantMember)
	}
	sa := newService(t, s, pa1)
	newService(t, s, pa2)
	envA := newEnvironment(t, s, pa1, false)
	for i, st := range []model.BuildStatus{model.BuildRunning, model.BuildRunning, model.BuildQueued, model.BuildSucceeded} {
		mustInsert(t, s, store.Builds, &model.Build{ID: model.BuildID(newID()), TenantID: a.ID, ProjectID: pa1.ID,
			ServiceID: sa.ID, EnvironmentID: envA.ID, Repository: "r", Branch: "main", Commit: fmt.Sprintf("%040d", i),
			Status: st, CreatedAt: store.Now()})
	}

	// Tenant b has one of each, which must not count for a.
	newCluster(t, s, b)
	pb := newProject(t, s, b)
	newEnvironment(t, s, pb, true)
	newMember(t, s, b, newUser(t, s), model.TenantAdmin)
	newService(t, s, pb)

	tests := []struct {
		name   string
		tenant *model.Tenant
		want   model.Usage
	}{
		{"a", a, model.Usage{model.LimitClusters: 2, model.LimitProjects: 2, model.LimitProtectedEnvironments: 3,
			model.LimitMembers: 3, model.LimitServices: 2, model.LimitConcurrentBuilds: 2}},
		{"b", b, model.Usage{model.LimitClusters: 1, model.LimitProjects: 1, model.LimitProtectedEnvironments: 1,
			model.LimitMembers: 1, model.LimitServices: 1, model.LimitConcurrentBuilds: 0}},
		{"empty", empty, model.Usage{model.LimitClusters: 0, model.LimitProjects: 0, model.LimitProtectedEnvironments: 0,
			model.LimitMembers: 0, model.LimitServices: 0, model.LimitConcurrentBuilds: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.Usage(ctx, s.Q(), tc.tenant.ID)
			wantNoErr(t, "reading usage", err)
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
