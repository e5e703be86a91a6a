package storetest

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The cases below cover the named queries outside lists.go that the other
// files leave alone: users, variables, connect tokens, commands, agents'
// reports and revisions, deployments and their events, the background
// jobs' reads, the compiler's LoadTenantRows, migration files and Close.

func newVariable(t testing.TB, s *store.Store, p *model.Project, env *model.EnvironmentID, svc *model.ServiceID,
	name string, secret bool, value string) *model.Variable {
	t.Helper()
	now := store.Now()
	return mustInsert(t, s, store.Variables, &model.Variable{ID: model.VariableID(newID()), TenantID: p.TenantID,
		ProjectID: p.ID, EnvironmentID: env, ServiceID: svc, Name: name, Secret: secret, Value: value,
		CreatedAt: now, UpdatedAt: now})
}

func newConnectToken(t testing.TB, s *store.Store, c *model.Cluster, edit func(*model.ConnectToken)) *model.ConnectToken {
	t.Helper()
	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	tok := &model.ConnectToken{ID: model.ConnectTokenID(newID()), TenantID: c.TenantID, ClusterID: c.ID,
		Prefix: "nbc_" + newID()[:8], Hash: hash, CreatedAt: store.Now()}
	if edit != nil {
		edit(tok)
	}
	return mustInsert(t, s, store.ConnectTokens, tok)
}

func newCommand(t testing.TB, s *store.Store, c *model.Cluster, status model.CommandStatus) *model.Command {
	t.Helper()
	now := store.Now()
	return mustInsert(t, s, store.Commands, &model.Command{ID: model.CommandID(newID()), TenantID: c.TenantID,
		ClusterID: c.ID, Kind: model.CommandResync, Args: map[string]string{"reason": "test"}, Status: status,
		CreatedAt: now, UpdatedAt: now})
}

// newDeploymentWith is newDeployment with its fields edited before the
// insert.
func newDeploymentWith(t testing.TB, s *store.Store, r *model.Release, c *model.Cluster, edit func(*model.Deployment)) *model.Deployment {
	t.Helper()
	now := store.Now()
	d := &model.Deployment{ID: model.DeploymentID(newID()), TenantID: r.TenantID, ProjectID: r.ProjectID,
		ServiceID: r.ServiceID, EnvironmentID: r.EnvironmentID, ReleaseID: r.ID, ClusterID: c.ID, Stage: model.StageQueued,
		CreatedAt: now, UpdatedAt: now}
	edit(d)
	return mustInsert(t, s, store.Deployments, d)
}

func inStage(stage model.DeploymentStage) func(*model.Deployment) {
	return func(d *model.Deployment) { d.Stage = stage }
}

func sortedIDs[T any, K ~string](items []*T, id func(*T) K) []*T {
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b *T) int { return compareIDs(id(a), id(b)) })
	return out
}

func testUsers(t *testing.T, s *store.Store) {
	ctx := t.Context()
	want := &model.User{ID: model.UserID(newID()), Email: newID() + "@example.com", Name: "First", Kind: model.UserHuman,
		CreatedAt: store.Now()}
	got, err := store.InsertUserIfAbsent(ctx, s.Q(), want)
	wantNoErr(t, "inserting a new user", err)
	assertEqual(t, "inserted user", got, want)
	assertEqual(t, "stored user", mustGet(t, s, store.Users, want.ID), want)

	// The same email again (a concurrent sign-up): the stored user comes
	// back, unchanged, and no second row is made.
	twin := &model.User{ID: model.UserID(newID()), Email: want.Email, Name: "Second", Kind: model.UserIntegration,
		CreatedAt: store.Now().Add(time.Hour)}
	got, err = store.InsertUserIfAbsent(ctx, s.Q(), twin)
	wantNoErr(t, "inserting a user whose email exists", err)
	assertEqual(t, "user returned for a taken email", got, want)
	_, err = store.Users.Get(ctx, s.Q(), twin.ID)
	wantErr(t, "reading the twin's id", err, store.ErrNotFound)
	if n := mustCount(t, s, "users", "email = $1", want.Email); n != 1 {
		t.Errorf("users with the email: got %d, want 1", n)
	}
}

func testVariables(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	env2 := newEnvironment(t, s, g.project, true)
	svc2 := newService(t, s, g.project)
	p2 := newProject(t, s, g.tenant)
	otherTenant := newProject(t, s, newTenant(t, s))

	projVar := newVariable(t, s, g.project, nil, nil, "LOG_LEVEL", false, "info")
	projSecret := newVariable(t, s, g.project, nil, nil, "API_KEY", true, "v1:key1:sealed-api-key")
	envVar := newVariable(t, s, g.project, &g.env.ID, nil, "LOG_LEVEL", false, "debug") // same name, narrower scope
	envSecret := newVariable(t, s, g.project, &env2.ID, nil, "DB_PASSWORD", true, "v1:key1:sealed-db")
	svcVar := newVariable(t, s, g.project, nil, &g.service.ID, "PORT", false, "8080")
	svcSecret := newVariable(t, s, g.project, nil, &g.service.ID, "TOKEN", true, "v1:key1:sealed-token")
	svc2Var := newVariable(t, s, g.project, nil, &svc2.ID, "PORT", false, "9090")
	p2Var := newVariable(t, s, p2, nil, nil, "LOG_LEVEL", false, "warn")
	foreignSecret := newVariable(t, s, otherTenant, nil, nil, "API_KEY", true, "v1:key1:sealed-elsewhere")

	t.Run("VariablesOfService", func(t *testing.T) {
		got, err := store.VariablesOfService(ctx, s.Q(), g.service.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "variables of the service", got, []*model.Variable{svcVar, svcSecret})
		got, err = store.VariablesOfService(ctx, s.Q(), svc2.ID)
		wantNoErr(t, "reading", err)
		wantIDs(t, "variables of the other service", got, []*model.Variable{svc2Var}, variableID)
	})
	t.Run("VariablesInScope", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			project  model.ProjectID
			scopeKey string
			want     []*model.Variable
		}{
			{"project", g.project.ID, "project", []*model.Variable{projVar, projSecret}},
			{"environment", g.project.ID, "environment:" + string(g.env.ID), []*model.Variable{envVar}},
			{"other environment", g.project.ID, "environment:" + string(env2.ID), []*model.Variable{envSecret}},
			{"service", g.project.ID, "service:" + string(svc2.ID), []*model.Variable{svc2Var}},
			{"other project", p2.ID, "project", []*model.Variable{p2Var}},
			{"a scope of another project", p2.ID, "service:" + string(g.service.ID), nil},
		} {
			got, err := store.VariablesInScope(ctx, s.Q(), tc.project, tc.scopeKey)
			wantNoErr(t, tc.name, err)
			wantIDs(t, tc.name, got, tc.want, variableID)
			if len(got) == len(tc.want) && len(got) > 0 {
				assertEqual(t, tc.name, got, tc.want)
			}
		}
	})
	t.Run("SecretVariables", func(t *testing.T) {
		got, err := store.SecretVariables(ctx, s.Q())
		wantNoErr(t, "reading", err)
		assertEqual(t, "secrets of every tenant", got, []*model.Variable{projSecret, envSecret, svcSecret, foreignSecret})
	})
	t.Run("VariableIn", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			project  model.ProjectID
			scopeKey string
			want     *model.Variable
		}{
			{"project scope", g.project.ID, "project", projVar},
			{"environment scope", g.project.ID, "environment:" + string(g.env.ID), envVar},
			{"service scope", g.project.ID, "service:" + string(svc2.ID), svc2Var},
			{"other project", p2.ID, "project", p2Var},
		} {
			got, err := store.VariableIn(ctx, s.Q(), tc.project, tc.scopeKey, tc.want.Name)
			wantNoErr(t, tc.name, err)
			assertEqual(t, tc.name, got, tc.want)
		}
		_, err := store.VariableIn(ctx, s.Q(), g.project.ID, "project", "PORT") // only set on services
		wantErr(t, "a name set in narrower scopes only", err, store.ErrNotFound)
	})
	t.Run("UpdateVariable", func(t *testing.T) {
		want := *envVar
		want.Secret, want.Value, want.UpdatedAt = true, "v1:key1:now-sealed", envVar.UpdatedAt.Add(time.Hour)
		changed := want
		changed.Name, changed.CreatedAt = "IGNORED", at // not the update's to change
		wantNoErr(t, "updating", store.UpdateVariable(ctx, s.Q(), &changed))
		assertEqual(t, "updated variable", mustGet(t, s, store.Variables, envVar.ID), &want)
		assertEqual(t, "variable of the wider scope", mustGet(t, s, store.Variables, projVar.ID), projVar)
		wantErr(t, "updating a missing variable",
			store.UpdateVariable(ctx, s.Q(), &model.Variable{ID: model.VariableID(newID()), UpdatedAt: store.Now()}), store.ErrNotFound)
	})
	t.Run("ReplaceSealed", func(t *testing.T) {
		swap := func(id model.VariableID, old, sealed string) bool {
			t.Helper()
			ok, err := store.ReplaceSealed(ctx, s.Q(), id, old, sealed)
			wantNoErr(t, "resealing", err)
			return ok
		}
		if swap(projSecret.ID, "v1:key1:something else", "v2:key2:x") {
			t.Error("resealing a value that changed meanwhile: got true, want false")
		}
		assertEqual(t, "secret after a refused reseal", mustGet(t, s, store.Variables, projSecret.ID), projSecret)
		if !swap(projSecret.ID, projSecret.Value, "v2:key2:sealed-api-key") {
			t.Error("resealing: got false, want true")
		}
		want := *projSecret
		want.Value = "v2:key2:sealed-api-key" // and the updated time stays
		assertEqual(t, "resealed secret", mustGet(t, s, store.Variables, projSecret.ID), &want)
		if swap(projSecret.ID, projSecret.Value, "v3:key3:x") {
			t.Error("resealing from the value replaced: got true, want false")
		}
		if swap(projVar.ID, projVar.Value, "v2:key2:x") {
			t.Error("resealing a plain variable: got true, want false")
		}
		assertEqual(t, "plain variable", mustGet(t, s, store.Variables, projVar.ID), projVar)
		if swap(model.VariableID(newID()), "a", "b") {
			t.Error("resealing a missing variable: got true, want false")
		}
	})
}

func testConnectTokens(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	c, other := newCluster(t, s, tenant), newCluster(t, s, tenant)
	now := store.Now()
	live := newConnectToken(t, s, c, nil)
	soon := newConnectToken(t, s, c, func(k *model.ConnectToken) { k.ExpiresAt = ptr(now.Add(time.Minute)) })
	later := newConnectToken(t, s, c, func(k *model.ConnectToken) { k.ExpiresAt = ptr(now.Add(2 * time.Hour)) })
	revoked := newConnectToken(t, s, c, func(k *model.ConnectToken) { k.RevokedAt = ptr(now.Add(-time.Hour)) })
	onOther := newConnectToken(t, s, other, nil)

	t.Run("ConnectTokensOf", func(t *testing.T) {
		got, err := store.ConnectTokensOf(ctx, s.Q(), c.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "tokens of the cluster", got, []*model.ConnectToken{live, soon, later, revoked})
		got, err = store.ConnectTokensOf(ctx, s.Q(), other.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "tokens of the other cluster", got, []*model.ConnectToken{onOther})
	})
	t.Run("ConnectTokenByHash", func(t *testing.T) {
		for _, want := range []*model.ConnectToken{soon, revoked, onOther} {
			got, err := store.ConnectTokenByHash(ctx, s.Q(), want.Hash)
			wantNoErr(t, "reading by hash", err)
			assertEqual(t, "token "+string(want.ID), got, want)
		}
	})
	t.Run("ExpireConnectTokens", func(t *testing.T) {
		end := now.Add(time.Hour)
		wantNoErr(t, "expiring", store.ExpireConnectTokens(ctx, s.Q(), c.ID, end))
		for _, tc := range []struct {
			name string
			tok  *model.ConnectToken
			want *time.Time
		}{
			{"live token", live, &end},
			{"token ending sooner", soon, soon.ExpiresAt},
			{"token ending later", later, &end},
			{"revoked token", revoked, nil},
			{"other cluster's token", onOther, nil},
		} {
			want := *tc.tok
			want.ExpiresAt = tc.want
			assertEqual(t, tc.name, mustGet(t, s, store.ConnectTokens, tc.tok.ID), &want)
		}
	})
	t.Run("RevokeConnectToken", func(t *testing.T) {
		when := now.Add(time.Minute)
		wantNoErr(t, "revoking", store.RevokeConnectToken(ctx, s.Q(), onOther.ID, when))
		wantErr(t, "revoking again", store.RevokeConnectToken(ctx, s.Q(), onOther.ID, when.Add(time.Hour)), store.ErrNotFound)
		wantErr(t, "revoking a token revoked before", store.RevokeConnectToken(ctx, s.Q(), revoked.ID, when), store.ErrNotFound)
		wantErr(t, "revoking a missing token",
			store.RevokeConnectToken(ctx, s.Q(), model.ConnectTokenID(newID()), when), store.ErrNotFound)
		want := *onOther
		want.RevokedAt = &when
		assertEqual(t, "revoked token", mustGet(t, s, store.ConnectTokens, onOther.ID), &want)
		if got := mustGet(t, s, store.ConnectTokens, revoked.ID).RevokedAt; got == nil || !got.Equal(*revoked.RevokedAt) {
			t.Errorf("token revoked before: got revoked at %v, want %s kept", got, *revoked.RevokedAt)
		}
	})
	t.Run("TouchConnectToken", func(t *testing.T) {
		for _, when := range []time.Time{now.Add(time.Second), now.Add(2 * time.Second)} {
			wantNoErr(t, "touching", store.TouchConnectToken(ctx, s.Q(), later.ID, when))
			if got := mustGet(t, s, store.ConnectTokens, later.ID).LastUsedAt; got == nil || !got.Equal(when) {
				t.Errorf("last used: got %v, want %s", got, when)
			}
		}
		if got := mustGet(t, s, store.ConnectTokens, soon.ID).LastUsedAt; got != nil {
			t.Errorf("another token's last use: got %s, want none", got)
		}
		wantNoErr(t, "touching a missing token", store.TouchConnectToken(ctx, s.Q(), model.ConnectTokenID(newID()), now))
	})
}

func testCommands(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	c, other := newCluster(t, s, tenant), newCluster(t, s, tenant)
	queued := newCommand(t, s, c, model.CommandQueued)
	delivered := newCommand(t, s, c, model.CommandDelivered)
	newCommand(t, s, c, model.CommandApplied)
	newCommand(t, s, c, model.CommandFailed)
	queued2 := newCommand(t, s, c, model.CommandQueued)
	elsewhere := newCommand(t, s, other, model.CommandQueued)
	pending := func(t *testing.T, c *model.Cluster) []*model.Command {
		t.Helper()
		got, err := store.PendingCommands(ctx, s.Q(), c.ID)
		wantNoErr(t, "reading pending commands", err)
		return got
	}

	t.Run("PendingCommands", func(t *testing.T) {
		assertEqual(t, "pending commands", pending(t, c), []*model.Command{queued, delivered, queued2})
		assertEqual(t, "the other cluster's", pending(t, other), []*model.Command{elsewhere})
	})
	t.Run("MarkCommand", func(t *testing.T) {
		base := store.Now()
		steps := []struct {
			name    string
			cluster *model.Cluster
			cmd     *model.Command
			status  model.CommandStatus
			result  string
			moved   bool
			want    *model.Command // read back afterwards
		}{
			{"deliver", c, queued, model.CommandDelivered, "", true,
				&model.Command{Status: model.CommandDelivered, UpdatedAt: base.Add(1 * time.Second)}},
			{"apply", c, queued, model.CommandApplied, "restarted 3 pods", true,
				&model.Command{Status: model.CommandApplied, Result: "restarted 3 pods", UpdatedAt: base.Add(2 * time.Second)}},
			{"an acknowledged command never moves", c, queued, model.CommandFailed, "late", false,
				&model.Command{Status: model.CommandApplied, Result: "restarted 3 pods", UpdatedAt: base.Add(2 * time.Second)}},
			{"through another cluster", other, queued2, model.CommandApplied, "", false,
				&model.Command{Status: model.CommandQueued, UpdatedAt: queued2.UpdatedAt}},
			{"fail a delivered one", c, delivered, model.CommandFailed, "image pull error", true,
				&model.Command{Status: model.CommandFailed, Result: "image pull error", UpdatedAt: base.Add(5 * time.Second)}},
		}
		for i, st := range steps {
			moved, err := store.MarkCommand(ctx, s.Q(), st.cluster.ID, st.cmd.ID, st.status, st.result, base.Add(time.Duration(i+1)*time.Second))
			wantNoErr(t, st.name, err)
			if moved != st.moved {
				t.Errorf("%s: got moved %v, want %v", st.name, moved, st.moved)
			}
			want := *st.cmd
			want.Status, want.Result, want.UpdatedAt = st.want.Status, st.want.Result, st.want.UpdatedAt
			assertEqual(t, st.name, mustGet(t, s, store.Commands, st.cmd.ID), &want)
		}
		moved, err := store.MarkCommand(ctx, s.Q(), c.ID, model.CommandID(newID()), model.CommandApplied, "", base)
		wantNoErr(t, "marking a missing command", err)
		if moved {
			t.Error("marking a missing command: got true, want false")
		}
		wantIDs(t, "pending commands after marking", pending(t, c), []*model.Command{queued2},
			func(c *model.Command) model.CommandID { return c.ID })
	})
}

func testRevisions(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	c, other := newCluster(t, s, tenant), newCluster(t, s, tenant)
	t1, t2 := store.Now(), store.Now().Add(time.Minute)
	bump := func(t *testing.T, c *model.Cluster, hash, state string, at time.Time) int64 {
		t.Helper()
		n, err := store.BumpRevision(ctx, s.Q(), c.ID, hash, state, "", at)
		wantNoErr(t, "bumping", err)
		return n
	}
	latest := func(t *testing.T, c *model.Cluster) *store.Revision {
		t.Helper()
		r, err := store.LatestRevision(ctx, s.Q(), c.ID)
		wantNoErr(t, "reading the latest revision", err)
		return r
	}

	if n := bump(t, c, "hash-1", `{"objects":1}`, t1); n != 1 {
		t.Errorf("first revision: got %d, want 1", n)
	}
	assertEqual(t, "latest revision", latest(t, c), &store.Revision{Cluster: c.ID, Number: 1, Hash: "hash-1", State: `{"objects":1}`, CreatedAt: t1})
	if n := bump(t, c, "hash-2", `{"objects":2}`, t2); n != 2 {
		t.Errorf("second revision: got %d, want 2", n)
	}
	assertEqual(t, "latest revision", latest(t, c), &store.Revision{Cluster: c.ID, Number: 2, Hash: "hash-2", State: `{"objects":2}`, CreatedAt: t2})
	want := *c
	want.DesiredRevision, want.DesiredHash = 2, "hash-2"
	assertEqual(t, "cluster", mustGet(t, s, store.Clusters, c.ID), &want)

	// Numbers are per cluster.
	assertEqual(t, "untouched cluster", mustGet(t, s, store.Clusters, other.ID), other)
	_, err := store.LatestRevision(ctx, s.Q(), other.ID)
	wantErr(t, "latest revision of a cluster never bumped", err, store.ErrNotFound)
	if n := bump(t, other, "hash-o", "{}", t1); n != 1 {
		t.Errorf("other cluster's first revision: got %d, want 1", n)
	}
	if r := latest(t, c); r.Number != 2 {
		t.Errorf("after bumping another cluster: got latest revision %d, want 2", r.Number)
	}

	missing := model.ClusterID(newID())
	_, err = store.BumpRevision(ctx, s.Q(), missing, "h", "{}", "", t1)
	wantErr(t, "bumping a missing cluster", err, store.ErrNotFound)
	if n := mustCount(t, s, "cluster_revisions", "cluster_id = $1", string(missing)); n != 0 {
		t.Errorf("revisions of a missing cluster: got %d, want 0", n)
	}
	// In a transaction that rolls back, neither the number nor the
	// revision stays.
	err = s.Tx(ctx, func(q store.Querier) error {
		if _, err := store.BumpRevision(ctx, q, c.ID, "hash-3", "{}", "", t2); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "a rolled back bump", err, errRollback)
	if r := latest(t, c); r.Number != 2 || mustGet(t, s, store.Clusters, c.ID).DesiredRevision != 2 {
		t.Errorf("after a rolled back bump: got revision %d, want 2", r.Number)
	}

	t.Run("history", func(t *testing.T) { testRevisionHistory(t, s) })
}

// testRevisionHistory: causes, pages, single revisions and agents'
// outcomes.
func testRevisionHistory(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	c, other := newCluster(t, s, tenant), newCluster(t, s, tenant)
	t1 := store.Now()
	ev := &model.AuditEvent{TenantID: tenant.ID, Action: "service.update", TargetType: "Service", ClientAddress: "198.51.100.7",
		Details: map[string]any{}, CreatedAt: t1}
	wantNoErr(t, "inserting the cause", store.InsertAudit(ctx, s.Q(), ev))
	if ev.ID == "" {
		t.Fatal("InsertAudit gave the event no id")
	}
	if got, err := store.AuditEventByID(ctx, s.Q(), ev.ID); err != nil || got.Action != "service.update" {
		t.Fatalf("reading the cause by the id InsertAudit gave: %v, %v", got, err)
	}
	for i, cause := range []model.AuditEventID{"", ev.ID, ev.ID} {
		if _, err := store.BumpRevision(ctx, s.Q(), c.ID, fmt.Sprintf("hash-%d", i+1), fmt.Sprintf(`{"n":%d}`, i+1), cause, t1); err != nil {
			t.Fatalf("bumping: %v", err)
		}
	}
	_, err := store.BumpRevision(ctx, s.Q(), c.ID, "h", "{}", "not-a-number", t1)
	if err == nil {
		t.Error("bumping with a cause that is no audit event's id: no error")
	}
	wantNoErr(t, "bumping another cluster", func() error { _, err := store.BumpRevision(ctx, s.Q(), other.ID, "o", "{}", "", t1); return err }())

	r, err := store.RevisionByNumber(ctx, s.Q(), c.ID, 2)
	wantNoErr(t, "reading revision 2", err)
	assertEqual(t, "revision 2", r, &store.Revision{Cluster: c.ID, Number: 2, Hash: "hash-2", State: `{"n":2}`, Cause: ev.ID, CreatedAt: t1})
	_, err = store.RevisionByNumber(ctx, s.Q(), c.ID, 4)
	wantErr(t, "a revision the cluster never had", err, store.ErrNotFound)
	_, err = store.RevisionByNumber(ctx, s.Q(), other.ID, 2)
	wantErr(t, "revision 2 of a cluster with one", err, store.ErrNotFound)

	page, more, err := store.RevisionHistory(ctx, s.Q(), c.ID, 0, 2)
	wantNoErr(t, "first page", err)
	assertEqual(t, "first page", page, []*store.Revision{
		{Cluster: c.ID, Number: 3, Hash: "hash-3", Cause: ev.ID, CreatedAt: t1},
		{Cluster: c.ID, Number: 2, Hash: "hash-2", Cause: ev.ID, CreatedAt: t1}})
	if !more {
		t.Error("first page of 2 of 3: hasMore false")
	}
	page, more, err = store.RevisionHistory(ctx, s.Q(), c.ID, 2, 2)
	wantNoErr(t, "second page", err)
	assertEqual(t, "second page", page, []*store.Revision{{Cluster: c.ID, Number: 1, Hash: "hash-1", CreatedAt: t1}})
	if more {
		t.Error("last page: hasMore true")
	}
	// Oldest first, from the first or after a number.
	page, more, err = store.RevisionsAfter(ctx, s.Q(), c.ID, 0, 2)
	wantNoErr(t, "the oldest two", err)
	if len(page) != 2 || page[0].Number != 1 || page[1].Number != 2 || !more {
		t.Errorf("the oldest two: %v (more %v), want 1 and 2, and more", page, more)
	}
	page, more, err = store.RevisionsAfter(ctx, s.Q(), c.ID, 2, 2)
	wantNoErr(t, "after 2", err)
	if len(page) != 1 || page[0].Number != 3 || more {
		t.Errorf("after 2: %v (more %v), want 3 alone", page, more)
	}

	t2 := t1.Add(time.Second)
	failure := []model.ObjectError{{Object: "Deployment shop-prod/api-web-r3", Message: "quota exceeded"}}
	for _, o := range []store.RevisionOutcome{
		{Revision: 2, Agent: "agent-a", At: t1},
		{Revision: 2, Agent: "agent-a", At: t2}, // reported again: the first stays
		{Revision: 3, Agent: "agent-a", Failed: true, Errors: failure, At: t1},
		{Revision: 3, Agent: "agent-b", At: t2},
		{Revision: 9, Agent: "agent-a", At: t1}, // no such revision: not kept
	} {
		wantNoErr(t, "recording an outcome", store.RecordOutcome(ctx, s.Q(), c.ID, o))
	}
	wantNoErr(t, "recording another cluster's outcome", store.RecordOutcome(ctx, s.Q(), other.ID, store.RevisionOutcome{Revision: 1, Agent: "agent-o", At: t1}))
	got, err := store.RevisionOutcomes(ctx, s.Q(), c.ID, []int64{1, 2, 3, 9})
	wantNoErr(t, "reading outcomes", err)
	assertEqual(t, "outcomes", got, map[int64][]store.RevisionOutcome{
		2: {{Revision: 2, Agent: "agent-a", At: t1}},
		3: {{Revision: 3, Agent: "agent-a", Failed: true, Errors: failure, At: t1}, {Revision: 3, Agent: "agent-b", At: t2}},
	})
	none, err := store.RevisionOutcomes(ctx, s.Q(), c.ID, nil)
	wantNoErr(t, "reading no outcomes", err)
	if len(none) != 0 {
		t.Errorf("outcomes of no revisions: %v", none)
	}
}

func testAgentReports(t *testing.T, s *store.Store) {
	ctx := t.Context()
	tenant := newTenant(t, s)
	c, other := newCluster(t, s, tenant), newCluster(t, s, tenant)
	for range 3 {
		if _, err := store.BumpRevision(ctx, s.Q(), c.ID, "h", "{}", "", store.Now()); err != nil {
			t.Fatalf("bumping: %v", err)
		}
	}
	want := *mustGet(t, s, store.Clusters, c.ID) // desired revision 3

	t.Run("RecordHeartbeat", func(t *testing.T) {
		base := store.Now()
		for i, st := range []struct {
			name        string
			applied     int64
			wantApplied int64
		}{
			{"applied 2", 2, 2},
			{"a stale report", 1, 2},
			{"beyond the desired revision", 5, 2},
			{"applied 3", 3, 3},
		} {
			when := base.Add(time.Duration(i) * time.Second)
			inventory := `{"report":` + string(rune('0'+i)) + `}`
			hash := fmt.Sprintf("hash-%d", i) // kept as said, with the revision it was said of
			wantNoErr(t, st.name, store.RecordHeartbeat(ctx, s.Q(), c.ID, when, &inventory, st.applied, hash))
			want.LastHeartbeatAt, want.Inventory, want.AppliedRevision = &when, inventory, st.wantApplied
			want.ReportedRevision, want.ReportedHash = st.applied, hash
			assertEqual(t, st.name, mustGet(t, s, store.Clusters, c.ID), &want)
		}
		// A report without an inventory keeps the stored one and records
		// the rest.
		when := base.Add(time.Minute)
		wantNoErr(t, "a report keeping the inventory", store.RecordHeartbeat(ctx, s.Q(), c.ID, when, nil, 3, "hash-same"))
		want.LastHeartbeatAt, want.ReportedHash = &when, "hash-same"
		assertEqual(t, "a report keeping the inventory", mustGet(t, s, store.Clusters, c.ID), &want)
		assertEqual(t, "other cluster", mustGet(t, s, store.Clusters, other.ID), other)
		wantErr(t, "a heartbeat of a missing cluster",
			store.RecordHeartbeat(ctx, s.Q(), model.ClusterID(newID()), base, new("{}"), 0, ""), store.ErrNotFound)
		wantErr(t, "a heartbeat of a missing cluster, inventory kept",
			store.RecordHeartbeat(ctx, s.Q(), model.ClusterID(newID()), base, nil, 0, ""), store.ErrNotFound)
	})

	t.Run("RecordHeartbeats", func(t *testing.T) {
		// Three clusters in one write: one keeps its inventory, one reports
		// a revision beyond its desired one, and a missing one is passed over.
		a, b, c := newCluster(t, s, tenant), newCluster(t, s, tenant), newCluster(t, s, tenant)
		if _, err := store.BumpRevision(ctx, s.Q(), a.ID, "h", "{}", "", store.Now()); err != nil {
			t.Fatalf("bumping: %v", err)
		}
		a = mustGet(t, s, store.Clusters, a.ID) // desired revision 1
		first := store.Now()
		wantNoErr(t, "b's first report", store.RecordHeartbeat(ctx, s.Q(), b.ID, first, new(`{"b":1}`), 0, ""))
		wantB := *mustGet(t, s, store.Clusters, b.ID)
		at := first.Add(time.Second)
		n, err := store.RecordHeartbeats(ctx, s.Q(), []store.Heartbeat{
			{Cluster: a.ID, At: at, Inventory: new(`{"a":1}`), Applied: 1, Hash: "ha"},
			{Cluster: model.ClusterID(newID()), At: at, Inventory: new(`{}`)},
			{Cluster: b.ID, At: at.Add(time.Second), Applied: 0, Hash: "hb"},
			{Cluster: c.ID, At: at, Inventory: new(`{"c":1}`), Applied: 4, Hash: "hc"},
		})
		wantNoErr(t, "recording three", err)
		if n != 3 {
			t.Errorf("recorded %d clusters, want the 3 that exist", n)
		}
		wantA, wantC := *a, *c
		wantA.AppliedRevision, wantA.LastHeartbeatAt, wantA.Inventory = 1, &at, `{"a":1}`
		wantA.ReportedRevision, wantA.ReportedHash = 1, "ha"
		bAt := at.Add(time.Second)
		wantB.LastHeartbeatAt, wantB.ReportedHash = &bAt, "hb" // the inventory of the first report
		wantC.LastHeartbeatAt, wantC.Inventory, wantC.ReportedRevision, wantC.ReportedHash = &at, `{"c":1}`, 4, "hc"
		assertEqual(t, "a: applied 1 of 1", mustGet(t, s, store.Clusters, a.ID), &wantA)
		assertEqual(t, "b: the inventory kept", mustGet(t, s, store.Clusters, b.ID), &wantB)
		assertEqual(t, "c: 4 is beyond its desired revision, not applied", mustGet(t, s, store.Clusters, c.ID), &wantC)
		none, err := store.RecordHeartbeats(ctx, s.Q(), nil)
		if err != nil || none != 0 {
			t.Errorf("recording none: %d, %v", none, err)
		}
	})

	t.Run("RecordHeartbeats beside a recompile", func(t *testing.T) {
		if s.Q().Dialect().Name != "postgres" {
			t.Skip("SQLite runs one writer at a time: nothing to interleave")
		}
		// A change bumps its clusters in id order inside its transaction
		// while a round of reports names them in the other order: the round
		// waits for the change, and neither is chosen as a deadlock victim.
		a, b := newCluster(t, s, tenant), newCluster(t, s, tenant) // a's id sorts first
		// a's row written again: its live version now lies after b's, so
		// a scan of the table meets b first.
		wantNoErr(t, "a's first report", store.RecordHeartbeat(ctx, s.Q(), a.ID, store.Now(), new("{}"), 0, ""))
		round := make(chan error, 1)
		err := s.Tx(ctx, func(q store.Querier) error {
			if _, err := store.BumpRevision(ctx, q, a.ID, "h", "{}", "", store.Now()); err != nil {
				return err
			}
			go func() {
				_, err := store.RecordHeartbeats(ctx, s.Q(), []store.Heartbeat{
					{Cluster: b.ID, At: store.Now(), Inventory: new("{}")}, {Cluster: a.ID, At: store.Now(), Inventory: new("{}")}})
				round <- err
			}()
			time.Sleep(300 * time.Millisecond) // the round is under way, waiting for a
			_, err := store.BumpRevision(ctx, q, b.ID, "h", "{}", "", store.Now())
			return err
		})
		wantNoErr(t, "the change", err)
		wantNoErr(t, "the round of reports", <-round)
	})

	t.Run("RecordHeartbeats waits for no row while holding others", func(t *testing.T) {
		if s.Q().Dialect().Name != "postgres" {
			t.Skip("SQLite runs one writer at a time: nothing to interleave")
		}
		// A job holds cluster b and then waits for the tenant; a change
		// holds the tenant and then bumps cluster a. A round of a and b
		// that held a while it waited for b would close the cycle.
		owner := newTenant(t, s)
		a, b := newCluster(t, s, owner), newCluster(t, s, owner)
		jobHolds, changeLocked := make(chan struct{}), make(chan struct{})
		round, job, change := make(chan error, 1), make(chan error, 1), make(chan error, 1)
		go func() {
			change <- s.Tx(ctx, func(q store.Querier) error {
				if _, err := store.LockTenant(ctx, q, owner.ID); err != nil {
					return err
				}
				close(changeLocked)
				<-jobHolds
				time.Sleep(300 * time.Millisecond) // the round and the job are under way
				_, err := store.BumpRevision(ctx, q, a.ID, "h", "{}", "", store.Now())
				return err
			})
		}()
		<-changeLocked
		go func() {
			job <- s.Tx(ctx, func(q store.Querier) error {
				if err := store.RecordHeartbeat(ctx, q, b.ID, store.Now(), nil, 0, ""); err != nil {
					return err
				}
				close(jobHolds)
				time.Sleep(100 * time.Millisecond) // the round starts
				_, err := store.LockTenant(ctx, q, owner.ID)
				return err
			})
		}()
		<-jobHolds
		go func() {
			n, err := store.RecordHeartbeats(ctx, s.Q(), []store.Heartbeat{
				{Cluster: a.ID, At: store.Now(), Inventory: new(`{"a":1}`)}, {Cluster: b.ID, At: store.Now(), Inventory: new(`{"b":1}`)}})
			if err == nil && n != 2 {
				err = fmt.Errorf("recorded %d, want 2", n)
			}
			round <- err
		}()
		wantNoErr(t, "the change", <-change)
		wantNoErr(t, "the job", <-job)
		wantNoErr(t, "the round of reports", <-round)
		if got := mustGet(t, s, store.Clusters, b.ID).Inventory; got != `{"b":1}` {
			t.Errorf("b's inventory after the round: %q", got)
		}
	})

	t.Run("RecordAck", func(t *testing.T) {
		a := newCluster(t, s, tenant)
		for range 2 {
			if _, err := store.BumpRevision(ctx, s.Q(), a.ID, "h", "{}", "", store.Now()); err != nil {
				t.Fatalf("bumping: %v", err)
			}
		}
		want := *mustGet(t, s, store.Clusters, a.ID) // desired revision 2
		failed := &model.ApplyFailure{Revision: 1, Errors: []model.ObjectError{{Object: "Deployment/web", Message: "image not found"}}}
		errs := `{"revision":1,"errors":[{"object":"Deployment/web","message":"image not found"}]}`

		wantNoErr(t, "a failed ack", store.RecordAck(ctx, s.Q(), a.ID, 1, failed))
		want.ApplyErrors = errs
		assertEqual(t, "after a failed revision", mustGet(t, s, store.Clusters, a.ID), &want)

		wantNoErr(t, "an ack beyond the desired revision", store.RecordAck(ctx, s.Q(), a.ID, 3, nil))
		assertEqual(t, "after an ack beyond the desired revision (nothing moves, errors stay)", mustGet(t, s, store.Clusters, a.ID), &want)

		wantNoErr(t, "an applied ack", store.RecordAck(ctx, s.Q(), a.ID, 2, nil))
		want.AppliedRevision, want.ApplyErrors = 2, ""
		assertEqual(t, "after applying revision 2", mustGet(t, s, store.Clusters, a.ID), &want)

		// Revision 2 fails on a later pass, then a stale ack of revision 1
		// arrives: the newer failure stays.
		failed2 := &model.ApplyFailure{Revision: 2, Errors: []model.ObjectError{{Object: "Service/web", Message: "quota"}}}
		wantNoErr(t, "a failed ack of the applied revision", store.RecordAck(ctx, s.Q(), a.ID, 2, failed2))
		want.ApplyErrors = `{"revision":2,"errors":[{"object":"Service/web","message":"quota"}]}`
		wantNoErr(t, "a stale applied ack", store.RecordAck(ctx, s.Q(), a.ID, 1, nil))
		assertEqual(t, "after a stale ack", mustGet(t, s, store.Clusters, a.ID), &want)

		wantErr(t, "an applied ack of a missing cluster",
			store.RecordAck(ctx, s.Q(), model.ClusterID(newID()), 1, nil), store.ErrNotFound)
		wantErr(t, "a failed ack of a missing cluster",
			store.RecordAck(ctx, s.Q(), model.ClusterID(newID()), 1, failed), store.ErrNotFound)
	})
}

func testDeploymentQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	sibling := newDeployment(t, s, g.release, g.cluster)

	t.Run("UpdateDeploymentStage", func(t *testing.T) {
		now := store.Now()
		want := *g.deployment
		want.Stage, want.Blocker, want.Message, want.LastSeq = model.StageAwaitingApproval, ptr(model.BlockerApproval), "waiting for a reviewer", 3
		want.ApprovalExpiresAt, want.UpdatedAt, want.DeliveredAt = ptr(now.Add(24*time.Hour)), now.Add(time.Second), ptr(now)
		changed := want
		// Not the update's to change.
		changed.ReleaseID, changed.ClusterID, changed.CreatedAt, changed.RequestedBy = sibling.ReleaseID, model.ClusterID(newID()), at, ptr(g.user.ID)
		wantNoErr(t, "updating", store.UpdateDeploymentStage(ctx, s.Q(), &changed))
		assertEqual(t, "deployment", mustGet(t, s, store.Deployments, g.deployment.ID), &want)

		want.Stage, want.Blocker, want.Message, want.LastSeq = model.StageSucceeded, nil, "", 4
		want.ApprovalExpiresAt, want.DeliveredAt, want.UpdatedAt = nil, nil, now.Add(2*time.Second)
		wantNoErr(t, "updating again", store.UpdateDeploymentStage(ctx, s.Q(), &want))
		assertEqual(t, "deployment", mustGet(t, s, store.Deployments, g.deployment.ID), &want)
		assertEqual(t, "sibling", mustGet(t, s, store.Deployments, sibling.ID), sibling)

		missing := *sibling
		missing.ID = model.DeploymentID(newID())
		wantErr(t, "updating a missing deployment", store.UpdateDeploymentStage(ctx, s.Q(), &missing), store.ErrNotFound)
	})

	t.Run("DeploymentEvents", func(t *testing.T) {
		base := store.Now()
		event := func(d *model.Deployment, seq int64, stage model.DeploymentStage, blocker *model.Blocker) *model.DeploymentEvent {
			return &model.DeploymentEvent{DeploymentID: d.ID, Seq: seq, TenantID: d.TenantID, Stage: stage, Blocker: blocker,
				Message: "stage " + string(stage), CreatedAt: base.Add(time.Duration(seq) * time.Second)}
		}
		var events []*model.DeploymentEvent
		for i, stage := range []model.DeploymentStage{model.StageQueued, model.StageDelivering, model.StageDelivering,
			model.StageStarting, model.StageSucceeded} {
			var blocker *model.Blocker
			if i == 2 {
				blocker = ptr(model.BlockerDelivery)
			}
			events = append(events, event(g.deployment, int64(i+1), stage, blocker))
		}
		// Inserted out of order, with another deployment's in between.
		for _, i := range []int{0, 2, 1, 4, 3} {
			wantNoErr(t, "inserting an event", store.InsertDeploymentEvent(ctx, s.Q(), events[i]))
			if i == 2 {
				wantNoErr(t, "inserting another deployment's event",
					store.InsertDeploymentEvent(ctx, s.Q(), event(sibling, 1, model.StageQueued, nil)))
			}
		}
		for _, tc := range []struct {
			name  string
			d     *model.Deployment
			after int64
			limit int
			want  []*model.DeploymentEvent
		}{
			{"all", g.deployment, 0, 10, events},
			{"after 2, at most 2", g.deployment, 2, 2, events[2:4]},
			{"after the last", g.deployment, 5, 10, nil},
			{"another deployment's", sibling, 0, 10, []*model.DeploymentEvent{event(sibling, 1, model.StageQueued, nil)}},
		} {
			got, err := store.DeploymentEventsAfter(ctx, s.Q(), tc.d.ID, tc.after, tc.limit)
			wantNoErr(t, tc.name, err)
			assertEqual(t, tc.name, got, tc.want)
			// The same events with the deployment, in one read.
			d, got, err := store.DeploymentAndEventsAfter(ctx, s.Q(), tc.d.ID, tc.after, tc.limit)
			wantNoErr(t, tc.name+", with the deployment", err)
			assertEqual(t, tc.name+", with the deployment", got, tc.want)
			assertEqual(t, tc.name+", the deployment", d, mustGet(t, s, store.Deployments, tc.d.ID))
		}
		// Paged by event number, oldest first: forwards, backwards (from
		// the last without a cursor), and between two numbers.
		for _, tc := range []struct {
			name string
			pg   store.PageArgs
			want store.Page[model.DeploymentEvent]
		}{
			{"the first two", store.PageArgs{First: 2}, store.Page[model.DeploymentEvent]{Items: events[:2], HasNext: true}},
			{"after 2", store.PageArgs{First: 10, After: "2"}, store.Page[model.DeploymentEvent]{Items: events[2:]}},
			{"after 2, two", store.PageArgs{First: 2, After: "2"}, store.Page[model.DeploymentEvent]{Items: events[2:4], HasNext: true}},
			{"the last two", store.PageArgs{First: 2, FromEnd: true}, store.Page[model.DeploymentEvent]{Items: events[3:], HasPrevious: true}},
			{"the two before 4", store.PageArgs{First: 2, Before: "4", FromEnd: true}, store.Page[model.DeploymentEvent]{Items: events[1:3], HasPrevious: true}},
			{"the three before 4", store.PageArgs{First: 3, Before: "4", FromEnd: true}, store.Page[model.DeploymentEvent]{Items: events[:3]}},
			{"between 1 and 5", store.PageArgs{First: 10, After: "1", Before: "5"}, store.Page[model.DeploymentEvent]{Items: events[1:4]}},
			{"between 1 and 5, the last two", store.PageArgs{First: 2, After: "1", Before: "5", FromEnd: true},
				store.Page[model.DeploymentEvent]{Items: events[2:4], HasPrevious: true}},
			{"without the row past the page", store.PageArgs{First: 1, NoNext: true}, store.Page[model.DeploymentEvent]{Items: events[:1]}},
		} {
			got, err := store.DeploymentEventsPage(ctx, s.Q(), g.deployment.ID, tc.pg)
			wantNoErr(t, tc.name, err)
			assertEqual(t, tc.name, got, tc.want)
		}
		if _, err := store.DeploymentEventsPage(ctx, s.Q(), g.deployment.ID, store.PageArgs{First: 1, After: "event:1"}); err == nil {
			t.Error("a cursor that is not an event number: no error")
		}
		_, _, err := store.DeploymentAndEventsAfter(ctx, s.Q(), model.DeploymentID(newID()), 0, 10)
		wantErr(t, "the events of a missing deployment", err, store.ErrNotFound)
		wantConflict(t, "inserting an event number twice", store.InsertDeploymentEvent(ctx, s.Q(), event(g.deployment, 3, model.StageFailed, nil)), false)
		orphan := event(g.deployment, 1, model.StageQueued, nil)
		orphan.DeploymentID = model.DeploymentID(newID())
		wantConflict(t, "an event of a missing deployment", store.InsertDeploymentEvent(ctx, s.Q(), orphan), true)
	})

	t.Run("OpenDeployments", func(t *testing.T) {
		// A service and environment of their own, a deployment in every
		// stage, and open ones of the same service elsewhere and of
		// another service here.
		svc := newService(t, s, g.project)
		env, otherEnv := newEnvironment(t, s, g.project, false), newEnvironment(t, s, g.project, false)
		r := newRelease(t, s, svc, env, 1)
		var want []*model.Deployment
		for _, stage := range []model.DeploymentStage{
			model.StageQueued, model.StageBuilding, model.StageAwaitingApproval, model.StageDelivering, model.StageStarting,
			model.StageProbing, model.StageSwitchingTraffic, model.StageRetiring, model.StageSucceeded, model.StageFailed,
			model.StageRolledBack, model.StageSuperseded, model.StageCancelled,
		} {
			d := newDeploymentWith(t, s, r, g.cluster, inStage(stage))
			if !stage.Terminal() {
				want = append(want, d)
			}
		}
		newDeploymentWith(t, s, newRelease(t, s, svc, otherEnv, 1), g.cluster, inStage(model.StageQueued))
		newDeploymentWith(t, s, newRelease(t, s, g.service, env, 1), g.cluster, inStage(model.StageQueued))
		got, err := store.OpenDeployments(ctx, s.Q(), svc.ID, env.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "open deployments", got, want)
	})

	t.Run("UnderWay", func(t *testing.T) {
		// A tenant of its own: every stage, newest first those not ended,
		// at most limit; another tenant's are not listed.
		own := newGraph(t, s)
		var want []*model.Deployment
		base := store.Now()
		for i, stage := range []model.DeploymentStage{model.StageQueued, model.StageSucceeded, model.StageBuilding,
			model.StageAwaitingApproval, model.StageFailed, model.StageProbing, model.StageCancelled} {
			d := newDeploymentWith(t, s, own.release, own.cluster, func(d *model.Deployment) {
				d.Stage, d.CreatedAt = stage, base.Add(time.Duration(i)*time.Second)
			})
			if !stage.Terminal() {
				want = append([]*model.Deployment{d}, want...)
			}
		}
		got, err := store.UnderWay(ctx, s.Q(), own.tenant.ID, true, nil, store.PageArgs{First: 10})
		wantNoErr(t, "reading", err)
		// own.deployment (QUEUED, made first) is the oldest under way.
		want = append(want, own.deployment)
		wantIDs(t, "under way", got.Items, want, deploymentID)
		got, err = store.UnderWay(ctx, s.Q(), own.tenant.ID, true, nil, store.PageArgs{First: 2})
		wantNoErr(t, "reading two", err)
		wantIDs(t, "the newest two", got.Items, want[:2], deploymentID)
		got, err = store.UnderWay(ctx, s.Q(), own.tenant.ID, true, nil, store.PageArgs{First: 2, After: string(want[1].ID)})
		wantNoErr(t, "reading after two", err)
		wantIDs(t, "the next two", got.Items, want[2:4], deploymentID)
		got, err = store.UnderWay(ctx, s.Q(), own.tenant.ID, false, []model.ProjectID{own.project.ID}, store.PageArgs{First: 10})
		wantNoErr(t, "reading its project's", err)
		wantIDs(t, "of its project", got.Items, want, deploymentID)
	})
}

func testExpiredApprovals(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newGraph(t, s), newGraph(t, s)
	now := store.Now()
	awaiting := func(g *graph, expires *time.Time) *model.Deployment {
		return newDeploymentWith(t, s, g.release, g.cluster, func(d *model.Deployment) {
			d.Stage, d.Blocker, d.ApprovalExpiresAt = model.StageAwaitingApproval, ptr(model.BlockerApproval), expires
		})
	}
	expired := awaiting(a, ptr(now.Add(-time.Minute)))
	awaiting(a, ptr(now.Add(time.Minute))) // still open
	awaiting(a, ptr(now))                  // closes at now: still open at now
	awaiting(a, nil)                       // no window
	expiredInB := awaiting(b, ptr(now.Add(-time.Hour)))
	newDeploymentWith(t, s, a.release, a.cluster, func(d *model.Deployment) { // approved: no longer waiting
		d.Stage, d.ApprovalExpiresAt = model.StageDelivering, ptr(now.Add(-time.Hour))
	})
	want := sortedIDs([]*model.Deployment{expired, expiredInB}, deploymentID)
	for name, when := range map[string]time.Time{"now": now, "now in another zone": now.In(time.FixedZone("UTC-3", -3*3600))} {
		got, err := store.ExpiredApprovals(ctx, s.Q(), when)
		wantNoErr(t, name, err)
		assertEqual(t, name, got, want)
	}
	got, err := store.ExpiredApprovals(ctx, s.Q(), now.Add(-2*time.Hour))
	wantNoErr(t, "two hours ago", err)
	wantIDs(t, "two hours ago", got, nil, deploymentID)
}

func testJobQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	t.Run("TryJobLock", func(t *testing.T) {
		err := s.Tx(ctx, func(q store.Querier) error {
			for _, job := range []string{"expire-approvals", "expire-approvals", "mark-silent"} {
				ok, err := store.TryJobLock(ctx, q, job)
				if err != nil {
					return err
				}
				if !ok {
					t.Errorf("locking job %s in a transaction that may hold it: got false, want true", job)
				}
			}
			if s.Kind() != "postgres" {
				return nil // one replica: its write transaction excludes every other
			}
			// Another replica's transaction finds the job taken, and other
			// jobs free.
			return s.Tx(ctx, func(w store.Querier) error {
				ok, err := store.TryJobLock(ctx, w, "expire-approvals")
				if err == nil && ok {
					t.Error("locking a job another transaction holds: got true, want false")
				}
				if err != nil {
					return err
				}
				ok, err = store.TryJobLock(ctx, w, "stalled-deployments")
				if err == nil && !ok {
					t.Error("locking a free job: got false, want true")
				}
				return err
			})
		})
		wantNoErr(t, "locking jobs", err)
		// The lock ends with its transaction.
		err = s.Tx(ctx, func(q store.Querier) error {
			ok, err := store.TryJobLock(ctx, q, "expire-approvals")
			if err == nil && !ok {
				t.Error("locking a job after the holder committed: got false, want true")
			}
			return err
		})
		wantNoErr(t, "locking the job again", err)
	})

	g, other := newGraph(t, s), newGraph(t, s)
	t.Run("StalledDeployments", func(t *testing.T) {
		before := store.Now()
		old := before.Add(-time.Minute)
		dep := func(g *graph, stage model.DeploymentStage, blocker *model.Blocker, updated time.Time) *model.Deployment {
			return newDeploymentWith(t, s, g.release, g.cluster, func(d *model.Deployment) {
				d.Stage, d.Blocker, d.UpdatedAt = stage, blocker, updated
			})
		}
		var want []*model.Deployment
		for _, stage := range []model.DeploymentStage{model.StageDelivering, model.StageStarting, model.StageProbing,
			model.StageSwitchingTraffic, model.StageRetiring} {
			want = append(want, dep(g, stage, nil, old))
		}
		want = append(want, dep(other, model.StageProbing, nil, before.Add(-time.Hour))) // another tenant's
		dep(g, model.StageStarting, ptr(model.BlockerStalled), old)                      // already flagged
		dep(g, model.StageDelivering, ptr(model.BlockerDelivery), old)                   // waits for its agent
		dep(g, model.StageProbing, nil, before)                                          // moved at before
		dep(g, model.StageProbing, nil, before.Add(time.Second))                         // moved since
		for _, stage := range []model.DeploymentStage{model.StageQueued, model.StageAwaitingApproval, model.StageSucceeded,
			model.StageFailed, model.StageCancelled} {
			dep(g, stage, nil, old) // not being rolled out
		}
		got, err := store.StalledDeployments(ctx, s.Q(), before)
		wantNoErr(t, "reading", err)
		assertEqual(t, "stalled deployments", got, sortedIDs(want, deploymentID))
	})

	t.Run("RolloutsOn", func(t *testing.T) {
		c := newCluster(t, s, g.tenant)
		var want []*model.Deployment
		for _, stage := range []model.DeploymentStage{model.StageQueued, model.StageDelivering, model.StageAwaitingApproval,
			model.StageStarting, model.StageProbing, model.StageSucceeded, model.StageSwitchingTraffic, model.StageFailed,
			model.StageRetiring, model.StageSuperseded} {
			d := newDeploymentWith(t, s, g.release, c, inStage(stage))
			if stage.Live() && stage != model.StageSucceeded {
				want = append(want, d)
			}
		}
		newDeploymentWith(t, s, g.release, g.cluster, inStage(model.StageDelivering)) // another cluster's
		got, err := store.RolloutsOn(ctx, s.Q(), c.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "rollouts", got, want)
	})

	t.Run("SilentClusters", func(t *testing.T) {
		before := store.Now()
		heard := func(tn *model.Tenant, at *time.Time) *model.Cluster {
			c := newCluster(t, s, tn)
			if at != nil {
				wantNoErr(t, "heartbeat", store.RecordHeartbeat(ctx, s.Q(), c.ID, *at, new("{}"), 0, ""))
			}
			return mustGet(t, s, store.Clusters, c.ID)
		}
		silent := heard(g.tenant, ptr(before.Add(-time.Hour)))
		silentElsewhere := heard(other.tenant, ptr(before.Add(-time.Minute)))
		heard(g.tenant, nil)                          // never heard from
		heard(g.tenant, ptr(before))                  // heard at before
		heard(g.tenant, ptr(before.Add(time.Second))) // heard since
		marked := heard(g.tenant, ptr(before.Add(-time.Hour)))
		wantNoErr(t, "marking", store.MarkDisconnected(ctx, s.Q(), marked.ID, before.Add(-30*time.Minute)))
		// Marked during an earlier silence, heard again, silent again.
		again := heard(g.tenant, ptr(before.Add(-2*time.Hour)))
		wantNoErr(t, "marking", store.MarkDisconnected(ctx, s.Q(), again.ID, before.Add(-90*time.Minute)))
		wantNoErr(t, "heartbeat", store.RecordHeartbeat(ctx, s.Q(), again.ID, before.Add(-time.Hour), new("{}"), 0, ""))
		again = mustGet(t, s, store.Clusters, again.ID)

		// g's own cluster and other's were never heard from either.
		got, err := store.SilentClusters(ctx, s.Q(), before)
		wantNoErr(t, "reading", err)
		assertEqual(t, "silent clusters", got, sortedIDs([]*model.Cluster{silent, silentElsewhere, again}, clusterID))

		wantNoErr(t, "marking", store.MarkDisconnected(ctx, s.Q(), silent.ID, before))
		got, err = store.SilentClusters(ctx, s.Q(), before)
		wantNoErr(t, "reading", err)
		wantIDs(t, "silent clusters after marking one", got, sortedIDs([]*model.Cluster{silentElsewhere, again}, clusterID), clusterID)
		assertEqual(t, "a marked cluster's row", mustGet(t, s, store.Clusters, silent.ID), silent)
		wantErr(t, "marking a missing cluster", store.MarkDisconnected(ctx, s.Q(), model.ClusterID(newID()), before), store.ErrNotFound)
	})
}

func testLoadTenantRows(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s) // its deployment is queued: not live
	target := newNamespaceTarget(t, s, g.cluster)
	p2 := newProject(t, s, g.tenant)
	env2 := newEnvironment(t, s, g.project, true)
	svc2 := newService(t, s, g.project)
	v1 := newVariable(t, s, g.project, nil, nil, "A", false, "1")
	v2 := newVariable(t, s, g.project, &env2.ID, nil, "B", true, "v1:k:sealed")
	dep := func(r *model.Release, stage model.DeploymentStage, delivered bool) *model.Deployment {
		return newDeploymentWith(t, s, r, g.cluster, func(d *model.Deployment) {
			d.Stage = stage
			if delivered {
				d.DeliveredAt = ptr(store.Now())
			}
		})
	}
	// Service 1 in environment 1: the newest live deployment wins; a newer
	// failed one does not count. (Its release and the next are frozen, with
	// no variables: a release cache keeps them; r5 is not, and is read
	// every time.)
	r2 := newFrozenRelease(t, s, g.service, g.env, 2)
	dep(g.release, model.StageSucceeded, true)
	newest := dep(r2, model.StageSucceeded, true)
	dep(g.release, model.StageFailed, true)
	// Service 1 in environment 2: delivering counts, a newer queued one
	// does not.
	r3 := newFrozenRelease(t, s, g.service, env2, 1)
	delivering := dep(r3, model.StageDelivering, true)
	dep(newRelease(t, s, g.service, env2, 2), model.StageQueued, false)
	// Service 2 in environment 1: superseded after delivery still counts;
	// superseded before delivery, cancelled and rolled back do not.
	r5 := newRelease(t, s, svc2, g.env, 1)
	superseded := dep(r5, model.StageSuperseded, true)
	dep(newRelease(t, s, svc2, g.env, 2), model.StageSuperseded, false)
	dep(newRelease(t, s, svc2, g.env, 3), model.StageCancelled, false)
	dep(newRelease(t, s, svc2, g.env, 4), model.StageRolledBack, true)
	// Service 2 in environment 2: awaiting approval only, nothing runs.
	dep(newRelease(t, s, svc2, env2, 1), model.StageAwaitingApproval, false)

	// Another tenant's rows never show.
	b := newGraph(t, s)
	newNamespaceTarget(t, s, b.cluster)
	newVariable(t, s, b.project, nil, nil, "A", false, "other")
	dep2 := newDeploymentWith(t, s, b.release, b.cluster, inStage(model.StageSucceeded))

	// No current release froze a secret: no versions (their reads are
	// testLoadTenantRowsVersions'), whether as a nil map or an empty one.
	noVersions := func(t *testing.T, what string, rows *store.TenantRows) {
		t.Helper()
		if len(rows.Versions) != 0 {
			t.Errorf("%s: got versions %v, want none", what, rows.Versions)
		}
		rows.Versions = nil
	}
	got, err := store.LoadTenantRows(ctx, s.Q(), g.tenant.ID, nil)
	wantNoErr(t, "loading", err)
	noVersions(t, "tenant rows", got)
	assertEqual(t, "tenant rows", got, &store.TenantRows{
		Clusters:     []*model.Cluster{g.cluster},
		Targets:      []*model.NamespaceTarget{target},
		Projects:     []*model.Project{g.project, p2},
		Environments: []*model.Environment{g.env, env2},
		Services:     []*model.Service{g.service, svc2},
		Variables:    []*model.Variable{v1, v2},
		Current:      []*model.Release{r2, r3, r5},
		Live:         []*model.Deployment{newest, delivering, superseded},
	})

	got, err = store.LoadTenantRows(ctx, s.Q(), b.tenant.ID, nil)
	wantNoErr(t, "loading b", err)
	wantIDs(t, "b's live deployments", got.Live, []*model.Deployment{dep2}, deploymentID)
	wantIDs(t, "b's current releases", got.Current, []*model.Release{b.release}, func(r *model.Release) model.ReleaseID { return r.ID })

	empty, err := store.LoadTenantRows(ctx, s.Q(), newTenant(t, s).ID, nil)
	wantNoErr(t, "loading an empty tenant", err)
	noVersions(t, "an empty tenant's rows", empty)
	assertEqual(t, "an empty tenant's rows", empty, &store.TenantRows{})

	// With a release cache: the same rows, the releases of a second load
	// the very ones the first read, and a cache too small for the tenant
	// (it starts again empty) still loads every release.
	cache := store.NewReleaseCache(10)
	first, err := store.LoadTenantRows(ctx, s.Q(), g.tenant.ID, cache)
	wantNoErr(t, "loading through a cache", err)
	second, err := store.LoadTenantRows(ctx, s.Q(), g.tenant.ID, cache)
	wantNoErr(t, "loading through a cache again", err)
	for _, rows := range []*store.TenantRows{first, second} {
		assertEqual(t, "current releases through a cache", rows.Current, []*model.Release{r2, r3, r5})
	}
	for i, r := range first.Current {
		switch held := r == second.Current[i]; {
		case r.Frozen() && !held:
			t.Errorf("release %s was read again though the cache held it", r.ID)
		case !r.Frozen() && held:
			t.Errorf("release %s, not frozen, was kept", r.ID)
		}
	}
	tiny := store.NewReleaseCache(1)
	for range 2 {
		rows, err := store.LoadTenantRows(ctx, s.Q(), g.tenant.ID, tiny)
		wantNoErr(t, "loading through a cache smaller than the tenant", err)
		assertEqual(t, "current releases through a small cache", rows.Current, []*model.Release{r2, r3, r5})
	}

	// By id through the same cache: the held ones are not read again; one
	// waiting for its build (no image yet) is read every time, though
	// frozen, and a missing id is simply absent.
	building := mustInsert(t, s, store.Releases, &model.Release{ID: model.ReleaseID(newID()), TenantID: svc2.TenantID,
		ProjectID: svc2.ProjectID, ServiceID: svc2.ID, EnvironmentID: env2.ID, Number: 9, Image: svc2.Image,
		ServiceConfig: svc2.ServiceConfig, Variables: []model.ReleaseVariable{}, CreatedAt: store.Now()})
	ids := []model.ReleaseID{r2.ID, building.ID, model.ReleaseID(newID()), r3.ID}
	var reads []map[model.ReleaseID]*model.Release
	for range 2 {
		got, err := cache.ByIDs(ctx, s.Q(), ids)
		wantNoErr(t, "reading by id through a cache", err)
		assertEqual(t, "releases by id through a cache", got, map[model.ReleaseID]*model.Release{r2.ID: r2, building.ID: building, r3.ID: r3})
		reads = append(reads, got)
	}
	if reads[0][r2.ID] != second.Current[0] || reads[1][r3.ID] != second.Current[1] {
		t.Error("a release the cache held was read again by id")
	}
	if reads[0][building.ID] == reads[1][building.ID] {
		t.Error("a release waiting for its build was kept")
	}
	digest := "sha256:" + strings.Repeat("9", 64)
	wantNoErr(t, "the build's image", store.SetReleaseDigest(ctx, s.Q(), building.ID, digest))
	built, err := cache.ByIDs(ctx, s.Q(), ids[1:2])
	wantNoErr(t, "reading a built release by id", err)
	if built[building.ID] == nil || built[building.ID].ImageDigest != digest {
		t.Errorf("a release read by id after its build: %+v, want digest %s", built[building.ID], digest)
	}
	again, err := cache.ByIDs(ctx, s.Q(), ids[1:2])
	wantNoErr(t, "reading a built release by id again", err)
	if again[building.ID] != built[building.ID] {
		t.Error("a built, frozen release was read again though the cache held it")
	}
	// One with its image but not frozen (made before releases froze their
	// variables) is read every time, until it is frozen: then it is kept.
	byID := func() *model.Release {
		t.Helper()
		got, err := cache.ByIDs(ctx, s.Q(), []model.ReleaseID{r5.ID})
		wantNoErr(t, "reading an unfrozen release by id", err)
		return got[r5.ID]
	}
	if a, b := byID(), byID(); a == b {
		t.Error("a release not frozen was kept")
	}
	frozen := *r5
	frozen.Variables = []model.ReleaseVariable{}
	ok, err := store.FreezeRelease(ctx, s.Q(), &frozen)
	wantNoErr(t, "freezing", err)
	if !ok {
		t.Fatal("freezing an unfrozen release: got false, want true")
	}
	if a, b := byID(), byID(); a != b || !a.Frozen() {
		t.Errorf("a release read by id once frozen: read again %v, frozen %v; want kept, frozen", a != b, a.Frozen())
	}
	var none *store.ReleaseCache
	uncached, err := none.ByIDs(ctx, s.Q(), ids[:1])
	wantNoErr(t, "reading by id without a cache", err)
	assertEqual(t, "a release by id without a cache", uncached, map[model.ReleaseID]*model.Release{r2.ID: r2})
}

func testMigrationFiles(t *testing.T, _ *store.Store) {
	file := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
	got, err := store.Migrations(fstest.MapFS{
		"0002_second.sql":     file("SELECT 2;"),
		"0001_first.sql":      file("SELECT 1;"),
		"10_tenth.sql":        file("SELECT 10;"),
		"9_ninth.sql":         file("SELECT 9;"), // after 10_ by name, before it by version
		"README.md":           file("not a migration"),
		"0003_notes.txt":      file("not a migration either"),
		"sub/0004_nested.sql": file("in a directory: skipped"),
	})
	wantNoErr(t, "listing migrations", err)
	assertEqual(t, "migrations", got, []store.Migration{
		{Version: 1, Name: "0001_first", SQL: "SELECT 1;"},
		{Version: 2, Name: "0002_second", SQL: "SELECT 2;"},
		{Version: 9, Name: "9_ninth", SQL: "SELECT 9;"},
		{Version: 10, Name: "10_tenth", SQL: "SELECT 10;"},
	})
	none, err := store.Migrations(fstest.MapFS{})
	wantNoErr(t, "listing no migrations", err)
	if len(none) != 0 {
		t.Errorf("no files: got %d migrations, want none", len(none))
	}
	for name, fsys := range map[string]fstest.MapFS{
		"version 0":              {"0000_zero.sql": file("")},
		"no version":             {"core.sql": file("")},
		"no underscore":          {"0001.sql": file("")},
		"not a number":           {"v1_core.sql": file("")},
		"negative":               {"-1_core.sql": file("")},
		"a version twice":        {"0001_core.sql": file(""), "1_again.sql": file("")},
		"a version twice, apart": {"0001_a.sql": file(""), "0002_b.sql": file(""), "02_c.sql": file("")},
	} {
		if got, err := store.Migrations(fsys); err == nil {
			t.Errorf("%s: got %v and no error, want an error", name, got)
		}
	}
}

// testClose: a closed store answers no more.
func testClose(t *testing.T, s *store.Store) {
	ctx := t.Context()
	newTenant(t, s)
	s.Close()
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping after Close: got no error, want one")
	}
	if _, err := store.CountTenants(ctx, s.Q()); err == nil {
		t.Error("a query after Close: got no error, want one")
	}
	s.Close() // again, as the driver's cleanup will: no panic
}
