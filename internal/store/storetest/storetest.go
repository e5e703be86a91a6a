// Package storetest is the store's conformance suite: the behaviour every
// driver (PostgreSQL, SQLite) must show through package store — round trips
// of every table, translated errors, pagination, cascades, transactions, the
// named queries and the audit log. Every exported function and method of
// package store has a case: coverage_test.go fails on one without.
//
// Each driver's tests call Run with a function opening a fresh, migrated
// store. The suite only goes through package store; it must never import a
// driver, so that it describes what callers may rely on and nothing more.
package storetest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Run runs the suite. open must return a fresh, migrated store that the
// test's cleanup closes; it is called once per top-level case, and cases
// run in parallel.
func Run(t *testing.T, open func(t *testing.T) *store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *store.Store)
	}{
		{"Migrations", testMigrations},
		{"RoundTrip", testRoundTrip},
		{"NotFound", testNotFound},
		{"Conflict", testConflict},
		{"ForeignKey", testForeignKey},
		{"ByIDs", testByIDs},
		{"List", testList},
		{"ListByParents", testListByParents},
		{"Count", testCount},
		{"Delete", testDelete},
		{"Cascade", testCascade},
		{"Tx", testTx},
		{"TxPanic", testTxPanic},
		{"ReadTx", testReadTx},
		{"Refusing", testRefusing},
		{"LockTenant", testLockTenant},
		{"Rows", testRows},
		{"Tenants", testTenantQueries},
		{"Grants", testGrants},
		{"Tokens", testTokens},
		{"TokenCounts", testTokenCounts},
		{"MemberProfiles", testMemberProfiles},
		{"CommandProjects", testCommandProjects},
		{"Projects", testProjectQueries},
		{"Environments", testEnvironmentQueries},
		{"Labels", testLabelQueries},
		{"Services", testServiceQueries},
		{"NextReleaseNumber", testNextReleaseNumber},
		{"Builds", testBuildQueries},
		{"Logs", testLogQueries},
		{"Usage", testUsage},
		{"Audit", testAudit},
		{"IdempotencyKeys", testIdempotencyKeys},
		{"PersistedQueries", testPersistedQueries},
		{"TenantReads", testTenantReads},
		{"MemberReads", testMemberReads},
		{"ClusterReads", testClusterReads},
		{"Approvals", testApprovals},
		{"Users", testUsers},
		{"Variables", testVariables},
		{"ConnectTokens", testConnectTokens},
		{"Commands", testCommands},
		{"Revisions", testRevisions},
		{"People", testPeople},
		{"AgentReports", testAgentReports},
		{"DeploymentQueries", testDeploymentQueries},
		{"ExpiredApprovals", testExpiredApprovals},
		{"Jobs", testJobQueries},
		{"Outbound", testOutbound},
		{"CLILogins", testCLILogins},
		{"LoadTenantRows", testLoadTenantRows},
		{"LoadTenantRowsVersions", testLoadTenantRowsVersions},
		{"ReleaseConfig", testReleaseConfig},
		{"ChangeSets", testChangeSets},
		{"SecretVersions", testSecretVersions},
		{"ProjectReads", testProjectReads},
		{"MigrationFiles", testMigrationFiles},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// at is a fixed instant with microseconds, in a zone other than UTC, so that
// round trips show the driver keeps the instant (compared with Equal) and
// its full precision.
var at = time.Date(2024, 2, 29, 23, 59, 58, 123456000, time.FixedZone("UTC+5:30", 5*3600+1800))

func ptr[T any](v T) *T { return &v }

func mustInsert[K ~string, T any](t testing.TB, s *store.Store, table *store.Table[K, T], v *T) *T {
	t.Helper()
	if err := table.Insert(t.Context(), s.Q(), v); err != nil {
		t.Fatalf("inserting into %s: %v", table.Name, err)
	}
	return v
}

func mustGet[K ~string, T any](t testing.TB, s *store.Store, table *store.Table[K, T], id K) *T {
	t.Helper()
	v, err := table.Get(t.Context(), s.Q(), id)
	if err != nil {
		t.Fatalf("getting %s %s: %v", table.Name, id, err)
	}
	return v
}

// countRows counts the rows of table matching where ($1-style placeholders),
// with plain SQL: the suite counts rows the store has no named count for.
func countRows(t testing.TB, s *store.Store, table, where string, args ...any) (int, error) {
	t.Helper()
	rows, err := s.Q().Query(t.Context(), "SELECT COUNT(*) FROM "+table+" WHERE "+where, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("counting %s: no row", table)
	}
	if err := rows.Scan(&n); err != nil {
		return 0, err
	}
	return n, rows.Err()
}

func mustCount(t testing.TB, s *store.Store, table, where string, args ...any) int {
	t.Helper()
	n, err := countRows(t, s, table, where, args...)
	if err != nil {
		t.Fatalf("counting %s where %s: %v", table, where, err)
	}
	return n
}

// wantErr fails unless err matches target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

func wantNoErr(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantConflict fails unless err is a *store.ConflictError of the given kind.
func wantConflict(t testing.TB, what string, err error, reference bool) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("%s: got error %v, want store.ErrConflict", what, err)
		return
	}
	var ce *store.ConflictError
	if !errors.As(err, &ce) {
		t.Errorf("%s: got error %v (%T), want it to wrap a *store.ConflictError", what, err, err)
		return
	}
	if ce.Reference != reference {
		t.Errorf("%s: got ConflictError.Reference %v, want %v (%v)", what, ce.Reference, reference, err)
	}
	// The error names its kind, and matches ErrConflict and nothing else.
	prefix := "conflict: duplicate "
	if reference {
		prefix = "conflict: reference "
	}
	if msg := ce.Error(); !strings.HasPrefix(msg, prefix) {
		t.Errorf("%s: got message %q, want it to start with %q", what, msg, prefix)
	}
	if !ce.Is(store.ErrConflict) || ce.Is(store.ErrNotFound) || ce.Is(store.ErrUnavailable) {
		t.Errorf("%s: ConflictError.Is: got %v for ErrConflict, %v for ErrNotFound, %v for ErrUnavailable; want true, false, false",
			what, ce.Is(store.ErrConflict), ce.Is(store.ErrNotFound), ce.Is(store.ErrUnavailable))
	}
}

// The fixtures below insert one valid row each, with unique names, so that
// a test builds exactly the graph it needs.

func newTenant(t testing.TB, s *store.Store) *model.Tenant {
	t.Helper()
	id := newID()
	return mustInsert(t, s, store.Tenants, &model.Tenant{
		ID: model.TenantID(id), Name: "tenant " + id, PlanName: model.PlanTeam, CreatedAt: store.Now(),
	})
}

func newUser(t testing.TB, s *store.Store) *model.User {
	t.Helper()
	id := newID()
	return mustInsert(t, s, store.Users, &model.User{
		ID: model.UserID(id), Email: id + "@example.com", Name: "User " + id, Kind: model.UserHuman,
		CreatedAt: store.Now(),
	})
}

// newMember adds user to tenant with their profile there, as the control
// plane does.
func newMember(t testing.TB, s *store.Store, tenant *model.Tenant, user *model.User, role model.TenantRole) *model.Member {
	t.Helper()
	m := mustInsert(t, s, store.Members, &model.Member{
		ID: model.MemberID(newID()), TenantID: tenant.ID, UserID: user.ID, Role: role, CreatedAt: store.Now(),
	})
	if err := store.PutMemberProfile(t.Context(), s.Q(), tenant.ID, user); err != nil {
		t.Fatalf("recording the member's profile: %v", err)
	}
	return m
}

func newToken(t testing.TB, s *store.Store, tenant *model.Tenant, user *model.User) *model.APIToken {
	t.Helper()
	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	return mustInsert(t, s, store.Tokens, &model.APIToken{
		ID: model.TokenID(newID()), TenantID: tenant.ID, UserID: user.ID, Name: "ci", Prefix: "nbl_" + newID()[:8], Hash: hash,
		CreatedAt: store.Now(),
	})
}

func newProject(t testing.TB, s *store.Store, tenant *model.Tenant) *model.Project {
	t.Helper()
	id := newID()
	return mustInsert(t, s, store.Projects, &model.Project{
		ID: model.ProjectID(id), TenantID: tenant.ID, Name: "project " + id, Description: "a project",
		CreatedAt: store.Now(),
	})
}

func newProjectMember(t testing.TB, s *store.Store, p *model.Project, user *model.User, role model.ProjectRole) *model.ProjectMember {
	t.Helper()
	return mustInsert(t, s, store.ProjectMembers, &model.ProjectMember{
		ID: model.ProjectMemberID(newID()), TenantID: p.TenantID, ProjectID: p.ID, UserID: user.ID, Role: role,
		CreatedAt: store.Now(),
	})
}

func newEnvironment(t testing.TB, s *store.Store, p *model.Project, protected bool) *model.Environment {
	t.Helper()
	id := newID()
	return mustInsert(t, s, store.Environments, &model.Environment{
		ID: model.EnvironmentID(id), TenantID: p.TenantID, ProjectID: p.ID, Name: "env " + id, Protected: protected,
		ClusterSelector:   model.Labels{{Key: "region", Value: "eu"}},
		NamespaceSelector: model.Labels{},
		CreatedAt:         store.Now(),
	})
}

func newCluster(t testing.TB, s *store.Store, tenant *model.Tenant) *model.Cluster {
	t.Helper()
	id := newID()
	return mustInsert(t, s, store.Clusters, &model.Cluster{
		ID: model.ClusterID(id), TenantID: tenant.ID, Name: "cluster " + id,
		Labels: model.Labels{{Key: "region", Value: "eu"}}, CreatedAt: store.Now(),
	})
}

func newNamespaceTarget(t testing.TB, s *store.Store, c *model.Cluster) *model.NamespaceTarget {
	t.Helper()
	id := newID()
	return mustInsert(t, s, store.NamespaceTargets, &model.NamespaceTarget{
		ID: model.NamespaceTargetID(id), TenantID: c.TenantID, ClusterID: c.ID, Namespace: "ns-" + id,
		Labels: model.Labels{{Key: "tier", Value: "web"}}, CreatedAt: store.Now(),
	})
}

func newService(t testing.TB, s *store.Store, p *model.Project) *model.Service {
	t.Helper()
	id := newID()
	now := store.Now()
	return mustInsert(t, s, store.Services, &model.Service{
		ID: model.ServiceID(id), TenantID: p.TenantID, ProjectID: p.ID, Name: "svc-" + id,
		Image: "registry.example.com/web:1", ServiceConfig: fullConfig(), CreatedAt: now, UpdatedAt: now,
	})
}

func newRelease(t testing.TB, s *store.Store, svc *model.Service, env *model.Environment, number int) *model.Release {
	t.Helper()
	return mustInsert(t, s, store.Releases, &model.Release{
		ID: model.ReleaseID(newID()), TenantID: svc.TenantID, ProjectID: svc.ProjectID, ServiceID: svc.ID,
		EnvironmentID: env.ID, Number: number, Image: svc.Image, ImageDigest: "sha256:" + fmt.Sprintf("%064d", number),
		ServiceConfig: svc.ServiceConfig, CreatedAt: store.Now(),
	})
}

func newDeployment(t testing.TB, s *store.Store, r *model.Release, c *model.Cluster) *model.Deployment {
	t.Helper()
	now := store.Now()
	return mustInsert(t, s, store.Deployments, &model.Deployment{
		ID: model.DeploymentID(newID()), TenantID: r.TenantID, ProjectID: r.ProjectID, ServiceID: r.ServiceID,
		EnvironmentID: r.EnvironmentID, ReleaseID: r.ID, ClusterID: c.ID, Stage: model.StageQueued,
		CreatedAt: now, UpdatedAt: now,
	})
}

// fullConfig uses every optional field of a service's configuration, and
// leaves each unset somewhere.
func fullConfig() model.ServiceConfig {
	return model.ServiceConfig{
		Processes: []model.Process{
			{
				Name: "web", Command: []string{"./server", "--port", "8080"}, Replicas: 3, Port: ptr(8080),
				ReadinessProbe: &model.Probe{Path: ptr("/healthz"), Port: 8080, InitialDelaySeconds: 5, PeriodSeconds: 10},
			},
			{
				Name: "tcp", Command: []string{"./tcp"}, Replicas: 1, Port: ptr(9000),
				ReadinessProbe: &model.Probe{Port: 9000, PeriodSeconds: 3},
			},
			{Name: "worker", Command: []string{"./worker", "--queue", "émails ✓"}, Replicas: 0},
		},
		Domains: []model.Domain{{Host: "app.example.com", Process: "web"}},
	}
}

// graph is one of everything, linked together.
type graph struct {
	tenant     *model.Tenant
	user       *model.User
	project    *model.Project
	env        *model.Environment
	cluster    *model.Cluster
	service    *model.Service
	release    *model.Release
	deployment *model.Deployment
}

func newGraph(t testing.TB, s *store.Store) *graph {
	t.Helper()
	g := &graph{tenant: newTenant(t, s), user: newUser(t, s)}
	g.project = newProject(t, s, g.tenant)
	g.env = newEnvironment(t, s, g.project, false)
	g.cluster = newCluster(t, s, g.tenant)
	g.service = newService(t, s, g.project)
	g.release = newRelease(t, s, g.service, g.env, 1)
	g.deployment = newDeployment(t, s, g.release, g.cluster)
	return g
}

// ids returns the ids of items, in order.
func ids[T any, K ~string](items []*T, id func(*T) K) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(id(it))
	}
	return out
}
