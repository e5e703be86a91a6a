package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The cases below cover the named reads of lists.go that testList,
// testListByParents and testCount do not: what each selects, what it
// leaves out (other tenants, clusters, projects, scopes) and in which
// order.

func memberID(m *model.Member) model.MemberID                      { return m.ID }
func tenantID(t *model.Tenant) model.TenantID                      { return t.ID }
func clusterID(c *model.Cluster) model.ClusterID                   { return c.ID }
func targetID(n *model.NamespaceTarget) model.NamespaceTargetID    { return n.ID }
func connectTokenID(c *model.ConnectToken) model.ConnectTokenID    { return c.ID }
func variableID(v *model.Variable) model.VariableID                { return v.ID }
func deploymentID(d *model.Deployment) model.DeploymentID          { return d.ID }
func projectMemberID(m *model.ProjectMember) model.ProjectMemberID { return m.ID }

// wantIDs fails unless got holds exactly the rows of want, in that order.
func wantIDs[T any, K ~string](t testing.TB, what string, got, want []*T, id func(*T) K) {
	t.Helper()
	if g, w := ids(got, id), ids(want, id); !slices.Equal(g, w) && (len(g) != 0 || len(w) != 0) {
		t.Errorf("%s: got %v, want %v", what, g, w)
	}
}

func testTenantReads(t *testing.T, s *store.Store) {
	ctx := t.Context()
	t.Run("OldestTenant of an empty store", func(t *testing.T) {
		_, err := store.OldestTenant(ctx, s.Q())
		wantErr(t, "reading the oldest tenant of an empty store", err, store.ErrNotFound)
	})
	first := newTenant(t, s)
	var tenants []*model.Tenant
	tenants = append(tenants, first)
	for range 4 {
		tenants = append(tenants, newTenant(t, s))
	}
	t.Run("OldestTenant", func(t *testing.T) {
		got, err := store.OldestTenant(ctx, s.Q())
		wantNoErr(t, "reading the oldest tenant", err)
		assertEqual(t, "oldest tenant", got, first)
	})
	t.Run("TenantsIn", func(t *testing.T) {
		// Tenants 3, 0 and 4 in no order, an unknown id; 1 and 2 not asked.
		asked := []model.TenantID{tenants[3].ID, model.TenantID(newID()), tenants[0].ID, tenants[4].ID}
		want := ids([]*model.Tenant{tenants[0], tenants[3], tenants[4]}, tenantID)
		got, sizes, next := walk(t, 2, tenantID, func(pg store.PageArgs) (store.Page[model.Tenant], error) {
			return store.TenantsIn(ctx, s.Q(), asked, pg)
		})
		wantPages(t, got, sizes, next, want, []int{2, 1})
		pg, err := store.TenantsIn(ctx, s.Q(), asked, store.PageArgs{First: 1})
		wantNoErr(t, "listing", err)
		if len(pg.Items) == 1 {
			assertEqual(t, "tenant", pg.Items[0], tenants[0])
		}
		pg, err = store.TenantsIn(ctx, s.Q(), nil, store.PageArgs{First: 10})
		wantNoErr(t, "listing no ids", err)
		if len(pg.Items) != 0 || pg.HasNext {
			t.Errorf("no ids: got %d tenants, HasNext %v; want none", len(pg.Items), pg.HasNext)
		}
	})
	t.Run("ShareTenant", func(t *testing.T) {
		err := s.Tx(ctx, func(q store.Querier) error {
			got, err := store.ShareTenant(ctx, q, tenants[2].ID)
			if err == nil {
				assertEqual(t, "shared tenant", got, tenants[2])
			}
			return err
		})
		wantNoErr(t, "sharing a tenant", err)
		err = s.Tx(ctx, func(q store.Querier) error {
			_, err := store.ShareTenant(ctx, q, model.TenantID(newID()))
			return err
		})
		wantErr(t, "sharing a missing tenant", err, store.ErrNotFound)
	})
	t.Run("GetForUpdate", func(t *testing.T) {
		err := s.Tx(ctx, func(q store.Querier) error {
			got, err := store.Tenants.GetForUpdate(ctx, q, tenants[1].ID)
			if err == nil {
				assertEqual(t, "locked tenant", got, tenants[1])
			}
			return err
		})
		wantNoErr(t, "reading a tenant for update", err)
	})
	if s.Kind() == "postgres" {
		t.Run("ShareTenant lets writers of other rows on and holds LockTenant", func(t *testing.T) {
			testShareTenantLock(t, s, tenants[2])
		})
	}
}

// testShareTenantLock: while one transaction shares a tenant, another can
// still insert rows that refer to it, but LockTenant waits until the share
// ends. PostgreSQL only: SQLite runs one write transaction at a time.
func testShareTenantLock(t *testing.T, s *store.Store, tenant *model.Tenant) {
	ctx := t.Context()
	locked := make(chan error, 1)
	var lockedEarly bool
	err := s.Tx(ctx, func(q store.Querier) error {
		if _, err := store.ShareTenant(ctx, q, tenant.ID); err != nil {
			return err
		}
		// A writer of another row referring to the tenant goes on (on
		// another connection). Bounded, so that a wrong lock fails rather
		// than hangs.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := s.Tx(wctx, func(w store.Querier) error {
			return store.Projects.Insert(wctx, w, &model.Project{ID: model.ProjectID(newID()), TenantID: tenant.ID,
				Name: "written while shared " + newID(), CreatedAt: store.Now()})
		}); err != nil {
			t.Errorf("inserting a project of a shared tenant: %v", err)
		}
		// LockTenant waits: it must not return before the share ends.
		go func() {
			locked <- s.Tx(ctx, func(w store.Querier) error {
				_, err := store.LockTenant(ctx, w, tenant.ID)
				return err
			})
		}()
		waitForLockWait(t, s, locked)
		select {
		case err := <-locked:
			lockedEarly = true
			t.Errorf("LockTenant returned (%v) while the tenant was shared, want it to wait", err)
		default:
		}
		return nil
	})
	wantNoErr(t, "sharing the tenant", err)
	if !lockedEarly {
		select {
		case err := <-locked:
			wantNoErr(t, "locking the tenant once the share ended", err)
		case <-time.After(30 * time.Second):
			t.Error("LockTenant still waits 30s after the share ended")
		}
	}
}

// waitForLockWait waits until a session of the test's database waits for
// a row lock (PostgreSQL), up to 30s, or until done holds a result (the
// waiter did not wait).
func waitForLockWait(t *testing.T, s *store.Store, done chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && len(done) == 0 {
		n, err := countRows(t, s, "pg_stat_activity", "datname = current_database() AND wait_event_type = 'Lock'")
		wantNoErr(t, "reading pg_stat_activity", err)
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(done) == 0 {
		t.Error("no session waited for a lock within 30s")
	}
}

func testMemberReads(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newTenant(t, s), newTenant(t, s)
	users := make([]*model.User, 5)
	for i := range users {
		users[i] = newUser(t, s)
	}
	roles := []model.TenantRole{model.TenantAdmin, model.TenantMember, model.TenantAdmin, model.TenantMember, model.TenantMember}
	var inA []*model.Member
	for i, u := range users[:4] {
		inA = append(inA, newMember(t, s, a, u, roles[i]))
	}
	// users[4] is only in b; users[0] is in both, with another role in b.
	bOnly := newMember(t, s, b, users[4], model.TenantAdmin)
	inB0 := newMember(t, s, b, users[0], model.TenantMember)

	t.Run("MembersOf", func(t *testing.T) {
		got, sizes, next := walk(t, 3, memberID, func(pg store.PageArgs) (store.Page[model.Member], error) {
			return store.MembersOf(ctx, s.Q(), a.ID, pg)
		})
		wantPages(t, got, sizes, next, ids(inA, memberID), []int{3, 1})
		pg, err := store.MembersOf(ctx, s.Q(), b.ID, store.PageArgs{First: 10})
		wantNoErr(t, "listing b's members", err)
		assertEqual(t, "b's members", pg.Items, []*model.Member{bOnly, inB0})
	})
	t.Run("MemberOf", func(t *testing.T) {
		got, err := store.MemberOf(ctx, s.Q(), a.ID, users[2].ID)
		wantNoErr(t, "reading a membership", err)
		assertEqual(t, "member", got, inA[2])
		got, err = store.MemberOf(ctx, s.Q(), b.ID, users[0].ID)
		wantNoErr(t, "reading the membership in b", err)
		assertEqual(t, "member in b", got, inB0)
		_, err = store.MemberOf(ctx, s.Q(), a.ID, users[4].ID)
		wantErr(t, "reading the membership in a of a member of b only", err, store.ErrNotFound)
	})
	t.Run("MembersByUsers", func(t *testing.T) {
		got, err := store.MembersByUsers(ctx, s.Q(), a.ID,
			[]model.UserID{users[3].ID, users[4].ID, model.UserID(newID()), users[0].ID})
		wantNoErr(t, "reading memberships", err)
		slices.SortFunc(got, func(x, y *model.Member) int { return compareIDs(x.ID, y.ID) })
		assertEqual(t, "members", got, []*model.Member{inA[0], inA[3]})
		got, err = store.MembersByUsers(ctx, s.Q(), a.ID, nil)
		wantNoErr(t, "reading no memberships", err)
		if len(got) != 0 {
			t.Errorf("no users: got %d members, want none", len(got))
		}
	})
	t.Run("MembersWithRole", func(t *testing.T) {
		got, err := store.MembersWithRole(ctx, s.Q(), a.ID, model.TenantAdmin)
		wantNoErr(t, "reading admins", err)
		assertEqual(t, "admins of a", got, []*model.Member{inA[0], inA[2]})
		got, err = store.MembersWithRole(ctx, s.Q(), a.ID, model.TenantMember)
		wantNoErr(t, "reading members", err)
		wantIDs(t, "members of a", got, []*model.Member{inA[1], inA[3]}, memberID)
		got, err = store.MembersWithRole(ctx, s.Q(), b.ID, model.TenantAdmin)
		wantNoErr(t, "reading b's admins", err)
		wantIDs(t, "admins of b", got, []*model.Member{bOnly}, memberID)
		got, err = store.MembersWithRole(ctx, s.Q(), model.TenantID(newID()), model.TenantAdmin)
		wantNoErr(t, "reading admins of an unknown tenant", err)
		wantIDs(t, "admins of an unknown tenant", got, nil, memberID)
	})
	t.Run("ProjectMembersOf", func(t *testing.T) {
		p, other := newProject(t, s, a), newProject(t, s, a)
		var want []*model.ProjectMember
		for i, role := range []model.ProjectRole{model.ProjectManager, model.ProjectEditor, model.ProjectViewer} {
			want = append(want, newProjectMember(t, s, p, users[i], role))
		}
		newProjectMember(t, s, other, users[0], model.ProjectViewer)
		got, sizes, next := walk(t, 2, projectMemberID, func(pg store.PageArgs) (store.Page[model.ProjectMember], error) {
			return store.ProjectMembersOf(ctx, s.Q(), p.ID, pg)
		})
		wantPages(t, got, sizes, next, ids(want, projectMemberID), []int{2, 1})
		pg, err := store.ProjectMembersOf(ctx, s.Q(), p.ID, store.PageArgs{First: 10})
		wantNoErr(t, "listing", err)
		assertEqual(t, "project members", pg.Items, want)
	})
}

func compareIDs[K ~string](a, b K) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testClusterReads(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newTenant(t, s), newTenant(t, s)
	var clusters []*model.Cluster
	for range 5 {
		clusters = append(clusters, newCluster(t, s, a))
	}
	otherCluster := newCluster(t, s, b)
	// Targets: three on cluster 0, one on cluster 2, one on b's cluster.
	var on0 []*model.NamespaceTarget
	for range 3 {
		on0 = append(on0, newNamespaceTarget(t, s, clusters[0]))
	}
	on2 := newNamespaceTarget(t, s, clusters[2])
	elsewhere := newNamespaceTarget(t, s, otherCluster)

	t.Run("ClustersOf", func(t *testing.T) {
		got, sizes, next := walk(t, 2, clusterID, func(pg store.PageArgs) (store.Page[model.Cluster], error) {
			return store.ClustersOf(ctx, s.Q(), a.ID, pg)
		})
		wantPages(t, got, sizes, next, ids(clusters, clusterID), []int{2, 2, 1})
		pg, err := store.ClustersOf(ctx, s.Q(), b.ID, store.PageArgs{First: 10})
		wantNoErr(t, "listing b's clusters", err)
		assertEqual(t, "b's clusters", pg, store.Page[model.Cluster]{Items: []*model.Cluster{otherCluster}})
	})
	t.Run("AllClustersOf", func(t *testing.T) {
		got, err := store.AllClustersOf(ctx, s.Q(), a.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "clusters of a", got, clusters)
		got, err = store.AllClustersOf(ctx, s.Q(), model.TenantID(newID()))
		wantNoErr(t, "reading an unknown tenant's", err)
		wantIDs(t, "clusters of an unknown tenant", got, nil, clusterID)
	})
	t.Run("NamespaceTargetsOf", func(t *testing.T) {
		got, sizes, next := walk(t, 2, targetID, func(pg store.PageArgs) (store.Page[model.NamespaceTarget], error) {
			return store.NamespaceTargetsOf(ctx, s.Q(), clusters[0].ID, pg)
		})
		wantPages(t, got, sizes, next, ids(on0, targetID), []int{2, 1})
		pg, err := store.NamespaceTargetsOf(ctx, s.Q(), clusters[2].ID, store.PageArgs{First: 10})
		wantNoErr(t, "listing", err)
		assertEqual(t, "targets of cluster 2", pg, store.Page[model.NamespaceTarget]{Items: []*model.NamespaceTarget{on2}})
		pg, err = store.NamespaceTargetsOf(ctx, s.Q(), clusters[1].ID, store.PageArgs{First: 10})
		wantNoErr(t, "listing", err)
		if len(pg.Items) != 0 || pg.HasNext {
			t.Errorf("a cluster without targets: got %d, HasNext %v; want none", len(pg.Items), pg.HasNext)
		}
	})
	t.Run("AllNamespaceTargetsOf", func(t *testing.T) {
		got, err := store.AllNamespaceTargetsOf(ctx, s.Q(), a.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "targets of a", got, append(slices.Clone(on0), on2))
		got, err = store.AllNamespaceTargetsOf(ctx, s.Q(), b.ID)
		wantNoErr(t, "reading b's", err)
		assertEqual(t, "targets of b", got, []*model.NamespaceTarget{elsewhere})
	})
}

func testApprovals(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	other := newDeployment(t, s, g.release, g.cluster)
	approve := func(d *model.Deployment, user *model.UserID, decision model.ApprovalDecision, comment string) *model.Approval {
		return mustInsert(t, s, store.Approvals, &model.Approval{ID: model.ApprovalID(newID()), TenantID: d.TenantID,
			DeploymentID: d.ID, UserID: user, Decision: decision, Comment: comment, CreatedAt: store.Now()})
	}
	first := approve(g.deployment, ptr(g.user.ID), model.Approved, "looks good")
	approve(other, ptr(g.user.ID), model.Rejected, "not this one")
	second := approve(g.deployment, nil, model.Rejected, "by the system: expired")

	got, err := store.ApprovalsOf(ctx, s.Q(), g.deployment.ID)
	wantNoErr(t, "reading approvals", err)
	assertEqual(t, "approvals", got, []*model.Approval{first, second})
	got, err = store.ApprovalsOf(ctx, s.Q(), model.DeploymentID(newID()))
	wantNoErr(t, "reading approvals of an unknown deployment", err)
	if len(got) != 0 {
		t.Errorf("approvals of an unknown deployment: got %d, want none", len(got))
	}
}
