package apitest

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

func (f *Fixture) revision(t *testing.T) int {
	t.Helper()
	return int(f.Node(t, f.ClusterID, "... on Cluster { desiredRevision }")["desiredRevision"].(float64))
}

// A change that alters a cluster's compiled state gives it the next
// revision; a change that compiles to the same state does not.
func TestDesiredRevisions(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		start := f.revision(t)
		if start < 1 {
			t.Fatalf("a cluster with deployments has revision %d, want at least 1", start)
		}
		steps := []struct {
			name  string
			query string
			vars  map[string]any
			bump  bool
		}{
			{"a member joins", `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "new@acme.test", name: "New", role: MEMBER}) { userErrors { message } } }`,
				map[string]any{"t": f.TenantID}, false},
			{"a deploy", `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { userErrors { message } } }`,
				map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9001)}, true},
			{"a variable changes", `mutation($s: ID!) { updateService(input: {serviceId: $s, variables: [{name: "LOG_LEVEL", value: "debug"}]}) { userErrors { message } } }`,
				map[string]any{"s": f.ServiceID}, true},
			{"the same variables again", `mutation($s: ID!) { updateService(input: {serviceId: $s, variables: [{name: "LOG_LEVEL", value: "debug"}]}) { userErrors { message } } }`,
				map[string]any{"s": f.ServiceID}, false},
			{"a project description", `mutation($p: ID!) { updateProject(input: {projectId: $p, description: "changed"}) { userErrors { message } } }`,
				map[string]any{"p": f.ProjectID}, false},
		}
		rev := start
		for _, st := range steps {
			r := f.MustDo(t, st.query, st.vars)
			if strings.Contains(string(r.Body), `"userErrors":[{`) {
				t.Fatalf("%s: %s", st.name, r.Body)
			}
			got := f.revision(t)
			want := rev
			if st.bump {
				want = rev + 1
			}
			if got != want {
				t.Errorf("after %s: revision %d, want %d", st.name, got, want)
			}
			rev = got
		}
		state := f.Node(t, f.ClusterID, "... on Cluster { desiredState }")["desiredState"].(map[string]any)
		if int(state["revision"].(float64)) != rev {
			t.Errorf("desiredState is of revision %v, want %d", state["revision"], rev)
		}
		if !strings.Contains(mustJSON(t, state), `"LOG_LEVEL","value":"debug"`) {
			t.Errorf("desired state lacks the new variable: %s", mustJSON(t, state))
		}
		// Only tenant admins see the desired state.
		r := env.Do(t, f.Users[Viewer].Token, `query($c: ID!) { node(id: $c) { ... on Cluster { desiredRevision desiredState } } }`, map[string]any{"c": f.ClusterID})
		if codes := r.ErrorCodes(); len(codes) == 0 || codes[0] != "FORBIDDEN" {
			t.Errorf("viewer reading desiredState: codes %v, want FORBIDDEN", codes)
		}
	})
}

// Many concurrent mutations against one cluster, through the API on
// PostgreSQL: revisions strictly increase, one per change, none lost, and
// the newest stored state is the one the newest revision names.
func TestConcurrentRevisions(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		st := env.Store
		f := env.NewFixture(t)
		start := f.revision(t)
		const n = 24
		resps := concurrently(n, func(i int) Response {
			return env.Do(t, f.Owner.Token, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } userErrors { message } } }`,
				map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(int64(10000 + i))})
		})
		for i, r := range resps {
			if r.Str("deploy.deployment.id") == "" {
				t.Fatalf("deploy %d failed: %s", i, r.Body)
			}
		}
		end := f.revision(t)
		if end != start+n {
			t.Errorf("revision went from %d to %d after %d deploys, want %d", start, end, n, start+n)
		}
		cid, err := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := st.Q().Query(context.Background(), `SELECT revision, hash FROM cluster_revisions WHERE cluster_id = $1 ORDER BY revision`, string(cid))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var prev int64
		hashes := map[string]bool{}
		for rows.Next() {
			var rev int64
			var h string
			if err := rows.Scan(&rev, &h); err != nil {
				t.Fatal(err)
			}
			if rev != prev+1 {
				t.Errorf("revision %d follows %d, want %d", rev, prev, prev+1)
			}
			if hashes[h] {
				t.Errorf("revision %d repeats an earlier state", rev)
			}
			hashes[h], prev = true, rev
		}
		if prev != int64(end) {
			t.Errorf("stored revisions end at %d, cluster says %d", prev, end)
		}
		latest, err := store.LatestRevision(context.Background(), st.Q(), cid)
		if err != nil {
			t.Fatal(err)
		}
		c, err := store.Clusters.Get(context.Background(), st.Q(), cid)
		if err != nil {
			t.Fatal(err)
		}
		if latest.Hash != c.DesiredHash || latest.Number != c.DesiredRevision {
			t.Errorf("newest stored revision %d/%s, cluster %d/%s", latest.Number, latest.Hash, c.DesiredRevision, c.DesiredHash)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A new cluster starts at revision 1 (its empty state), and the payload
// that registered it says so.
func TestRegisterClusterRevision(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	r := f.MustDo(t, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "fresh", labels: [{key: "scratch", value: "1"}]}) { cluster { desiredRevision } } }`,
		map[string]any{"t": f.TenantID})
	if got := r.Get("registerCluster.cluster.desiredRevision"); got != float64(1) {
		t.Errorf("desiredRevision in the payload = %v, want 1", got)
	}
}

// Two control plane replicas, each with its own connection pool, on one
// PostgreSQL: concurrent deploys through both give one revision each, in
// order, none lost and none repeated.
func TestRevisionsAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	open := func() *store.Store {
		db, err := postgres.Open(context.Background(), url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := store.New(db)
		t.Cleanup(st.Close)
		if _, err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	}
	a := NewEnv(t, open())
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	other := &Env{Store: open(), BootstrapToken: a.BootstrapToken, BootstrapUserID: a.BootstrapUserID}
	b := other.Reopen(t, seal.NewBox(&key), io.Discard)
	f := a.NewFixture(t)
	start := f.revision(t)
	const n = 30
	resps := concurrently(n, func(i int) Response {
		replica := a
		if i%2 == 1 {
			replica = b
		}
		return replica.Do(t, f.Owner.Token, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } userErrors { message } } }`,
			map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(int64(20000 + i))})
	})
	for i, r := range resps {
		if r.Str("deploy.deployment.id") == "" {
			t.Fatalf("deploy %d failed: %s", i, r.Body)
		}
	}
	if end := f.revision(t); end != start+n {
		t.Errorf("revision went from %d to %d after %d deploys on two replicas, want %d", start, end, n, start+n)
	}
	cid, err := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	var revs []int64
	rows, err := a.Store.Q().Query(context.Background(), `SELECT revision FROM cluster_revisions WHERE cluster_id = $1 ORDER BY revision`, string(cid))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		revs = append(revs, r)
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("stored revisions %v are not 1..%d without gaps", revs, len(revs))
		}
	}
}

// The state delivered to an agent is always its revision's, though the
// control plane keeps the tenant's rows from one delivery to the next: a
// change to the cluster's state is delivered, one that leaves it alone
// keeps the revision and the state.
func TestDeliveredStateFollowsRevisions(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ctx := context.Background()
		c, _ := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
		deliver := func() (int64, string) {
			t.Helper()
			rev, st, err := env.Hub.Desired(ctx, env.AgentSide(t, c), 0)
			if err != nil || st == nil {
				t.Fatalf("Desired: %v, %v", st, err)
			}
			b, _ := json.Marshal(st)
			return rev, string(b)
		}
		rev1, st1 := deliver()
		if again, st := deliver(); again != rev1 || st != st1 {
			t.Fatalf("a second delivery of revision %d differs: %d", rev1, again)
		}
		f.MustDo(t, `mutation($p: ID!) { setVariable(input: {projectId: $p, name: "DELIVERED", value: "v1"}) { variable { id } userErrors { message } } }`,
			map[string]any{"p": f.ProjectID})
		rev2, st2 := deliver()
		if rev2 != rev1+1 || !strings.Contains(st2, `"DELIVERED"`) || !strings.Contains(st2, `"v1"`) {
			t.Fatalf("after a change: revision %d (was %d), state has the new variable: %v", rev2, rev1, strings.Contains(st2, "DELIVERED"))
		}
		// Another cluster that no environment picks: this one's state
		// and revision stay.
		f.MustDo(t, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "elsewhere", labels: [{key: "region", value: "mars"}]}) {
			cluster { id } userErrors { message } } }`, map[string]any{"t": f.TenantID})
		if rev3, st3 := deliver(); rev3 != rev2 || st3 != st2 {
			t.Errorf("an unrelated change moved the delivery from %d to %d", rev2, rev3)
		}
		f.MustDo(t, `mutation($p: ID!) { setVariable(input: {projectId: $p, name: "DELIVERED", value: "v2"}) { variable { id } userErrors { message } } }`,
			map[string]any{"p": f.ProjectID})
		if rev4, st4 := deliver(); rev4 != rev2+1 || !strings.Contains(st4, `"v2"`) || strings.Contains(st4, `"v1"`) {
			t.Errorf("after the second change: revision %d, state %s", rev4, st4)
		}
	})
}
