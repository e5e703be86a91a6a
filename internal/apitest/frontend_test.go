package apitest

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/server"
)

// The GraphQL clients frontend teams use, pinned in jsfrontend (Relay's
// compiler and runtime, Apollo Client, urql with graphcache), against a
// live control plane (issue 33): each script prints JSON lines that these
// tests assert on. Without node they skip, unless NEBULA_REQUIRE_NODE=1.

// jsFrontend returns jsfrontend with its modules installed.
func jsFrontend(t *testing.T) string {
	t.Helper()
	return npmDir(t, "jsfrontend", "@apollo/client")
}

// lineAs converts a JSON line's value to T.
func lineAs[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return out
}

// mustEnd fails the test when the script did not end well.
func mustEnd(t *testing.T, what string, run *jsRun) {
	t.Helper()
	if run.err != nil {
		t.Fatalf("%s: %v", what, run.err)
	}
}

// TestRelayCompilerAndPaging compiles the dashboard's documents with
// relay-compiler against schema.graphqls as it is (no client-side schema
// extension), reads the dashboard through relay-runtime, and pages a
// tenant's eight clusters three at a time forwards (loadNext: first/after)
// and backwards (loadPrevious: last/before) through the refetch queries
// the compiler made, Relay's ConnectionHandler merging the pages.
func TestRelayCompilerAndPaging(t *testing.T) {
	dir := jsFrontend(t)
	cfg, err := os.ReadFile(filepath.Join(dir, "relay.config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), "schemaExtensions") {
		t.Fatalf("relay.config.json has a client-side schema extension: %s", cfg)
	}
	mustEnd(t, "relay-compiler", runNode(t, dir, 2*time.Minute, "relay.mjs", "compile"))

	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for range 7 {
		f.NewCluster(t)
	}
	want := env.MustDo(t, f.Owner.Token, `query($t: ID!) { node(id: $t) { ... on Tenant { clusters(first: 100) { nodes { id } } } } }`,
		map[string]any{"t": f.TenantID}).IDs("node.clusters.nodes")
	if len(want) != 8 {
		t.Fatalf("the tenant has %d clusters, want 8: %v", len(want), want)
	}

	t.Run("dashboard", func(t *testing.T) {
		run := runNode(t, dir, time.Minute, "relay.mjs", "dashboard", env.Server.URL, f.Owner.Token, "5")
		mustEnd(t, "relay.mjs dashboard", run)
		type environment struct {
			ID          string   `json:"id"`
			Deployments []string `json:"deployments"`
		}
		type project struct {
			ID           string        `json:"id"`
			Environments []environment `json:"environments"`
		}
		type tenant struct {
			ID       string    `json:"id"`
			Clusters []string  `json:"clusters"`
			Projects []project `json:"projects"`
		}
		tenants := run.values("tenant")
		if len(tenants) != 1 {
			t.Fatalf("the dashboard read %d tenants, want the fixture's", len(tenants))
		}
		got := lineAs[tenant](t, tenants[0])
		if got.ID != f.TenantID || !slices.Contains(got.Clusters, f.ClusterID) {
			t.Errorf("the dashboard's tenant %+v: want %s with cluster %s", got, f.TenantID, f.ClusterID)
		}
		found := false
		for _, p := range got.Projects {
			for _, e := range p.Environments {
				if p.ID == f.ProjectID && e.ID == f.EnvironmentID && slices.Contains(e.Deployments, f.DeploymentID) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("the dashboard lacks project %s → environment %s → deployment %s: %+v", f.ProjectID, f.EnvironmentID, f.DeploymentID, got.Projects)
		}
		if r := run.values("refetched"); len(r) != 1 || lineAs[map[string]any](t, r[0])["id"] != f.TenantID {
			t.Errorf("refetching the tenant by its @refetchable fragment: %v", r)
		}
	})

	t.Run("paging", func(t *testing.T) {
		run := runNode(t, dir, time.Minute, "relay.mjs", "page", env.Server.URL, f.Owner.Token, f.TenantID, "3")
		mustEnd(t, "relay.mjs page", run)
		type page struct {
			Direction string   `json:"direction"`
			IDs       []string `json:"ids"`
		}
		seen := map[string][]string{}
		trips := map[string]int{}
		for _, v := range run.values("page") {
			p := lineAs[page](t, v)
			trips[p.Direction]++
			if len(p.IDs) > 3 {
				t.Errorf("%s trip %d: %d clusters in a page of 3", p.Direction, trips[p.Direction], len(p.IDs))
			}
			ids := slices.Clone(p.IDs)
			if p.Direction == "backward" {
				// A backward page is in the list's order: it is seen from
				// its end.
				slices.Reverse(ids)
			}
			seen[p.Direction] = append(seen[p.Direction], ids...)
		}
		reversed := slices.Clone(want)
		slices.Reverse(reversed)
		if !slices.Equal(seen["forward"], want) {
			t.Errorf("forwards, the pages held %v, want every cluster once in order %v", seen["forward"], want)
		}
		if !slices.Equal(seen["backward"], reversed) {
			t.Errorf("backwards, the pages held %v (each page read from its end), want every cluster once in the opposite order %v", seen["backward"], reversed)
		}
		for _, d := range []string{"forward", "backward"} {
			if trips[d] != 3 {
				t.Errorf("%s: %d trips, want 3 for 8 clusters in pages of 3", d, trips[d])
			}
		}
		// The store's connection, pages appended (after) or prepended
		// (before) by ConnectionHandler: the whole list in order both ways.
		for _, v := range run.values("connection") {
			c := lineAs[struct {
				Direction string   `json:"direction"`
				IDs       []string `json:"ids"`
			}](t, v)
			if !slices.Equal(c.IDs, want) {
				t.Errorf("Relay's %s connection holds %v, want %v", c.Direction, c.IDs, want)
			}
		}
	})
}

// deferResult is a result line of apollo.mjs and urql.mjs: each tenant's
// projects, null while deferred.
type deferResult struct {
	N       int `json:"n"`
	Tenants []struct {
		ID       string    `json:"id"`
		Projects *[]string `json:"projects"`
	} `json:"tenants"`
	// Apollo's: loading while parts are to come; urql's: hasNext.
	Loading  bool `json:"loading"`
	HasNext  bool `json:"hasNext"`
	Complete bool `json:"complete"`
}

// pending tells whether a tenant of the result lacks its projects.
func (r deferResult) pending() bool {
	for _, tn := range r.Tenants {
		if tn.Projects == nil {
			return true
		}
	}
	return false
}

// checkDeferred asserts what a client saw of the deferred dashboard
// query: its last result holds every tenant's projects; the parts off the
// wire (Apollo's chunk lines) leave the deferred field out of the first
// part, as deferSpec=20220824 does (projects is non-null: a null there is
// no value a client may show); and, when the answer came in parts, a
// result before the last showed the tenants without their projects.
func checkDeferred(t *testing.T, run *jsRun, f *Fixture) {
	t.Helper()
	for _, v := range run.values("response") {
		t.Logf("response: %v", v)
	}
	finals := run.values("final")
	if run.err != nil || len(finals) != 1 {
		t.Fatalf("the client did not end with a result: %v", run.err)
	}
	final := lineAs[deferResult](t, finals[0])
	if !final.Complete || len(final.Tenants) != 1 || final.Tenants[0].ID != f.TenantID ||
		final.Tenants[0].Projects == nil || !slices.Contains(*final.Tenants[0].Projects, f.ProjectID) {
		t.Errorf("the last result %+v: want tenant %s with its project %s", final, f.TenantID, f.ProjectID)
	}
	chunks := run.values("chunk")
	for i, c := range chunks {
		if dig(c, "hasNext") != true {
			continue
		}
		for j, e := range lineAs[[]map[string]any](t, dig(c, "data.viewer.tenants.edges")) {
			if p, ok := dig(e, "node").(map[string]any)["projects"]; ok {
				b, _ := json.Marshal(p)
				t.Errorf("part %d off the wire (hasNext: true) has tenant %d's deferred field as \"projects\": %s, before its incremental part: "+
					"deferSpec=20220824 leaves a deferred fragment's fields out of the parts before it (and projects is non-null)", i+1, j, b)
			}
		}
	}
	results := run.values("result")
	streamed := len(chunks) > 1
	early := 0
	for _, v := range results[:max(len(results)-1, 0)] {
		r := lineAs[deferResult](t, v)
		streamed = streamed || r.HasNext
		if r.Tenants == nil {
			continue // Apollo's first: loading, no data yet
		}
		if r.pending() {
			early++
		} else if r.Loading || r.HasNext {
			b, _ := json.Marshal(v)
			t.Errorf("result %d, while the deferred part was still to come, showed every tenant's projects as if they had arrived "+
				"(Apollo: a null first part reads as an empty connection through relayStylePagination): %s", r.N, b)
		}
	}
	switch {
	case !streamed:
		t.Logf("NOT INCREMENTAL: the answer came in one part (%d results): nothing deferred is missing from it", len(results))
	case early == 0:
		t.Errorf("the answer came in parts, but no result showed the tenants before their deferred projects")
	default:
		t.Logf("incremental: %d result(s) showed the tenants before their deferred projects arrived", early)
	}
}

// TestApolloDefer watches the deferred dashboard query with Apollo Client
// over HTTP (multipart/mixed) and over graphql-transport-ws.
func TestApolloDefer(t *testing.T) {
	dir := jsFrontend(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for _, transport := range []string{"http", "ws"} {
		t.Run(transport, func(t *testing.T) {
			checkDeferred(t, runNode(t, dir, time.Minute, "apollo.mjs", "defer-"+transport, env.Server.URL, f.Owner.Token), f)
		})
	}
}

// TestUrqlDefer runs the deferred dashboard query with urql and graphcache
// over HTTP: with urql's own Accept header, and asking for multipart/mixed.
func TestUrqlDefer(t *testing.T) {
	dir := jsFrontend(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for _, mode := range []string{"defer", "defer-multipart"} {
		t.Run(mode, func(t *testing.T) {
			checkDeferred(t, runNode(t, dir, time.Minute, "urql.mjs", mode, env.Server.URL, f.Owner.Token), f)
		})
	}
}

// checkStreamed asserts what a client saw of the streamed query (common.mjs
// streamedQuery, each tenant's projects @stream(initialCount: 1)): the
// first part off the wire holds one project and says more follow, a later
// part holds the others as items, a result before the last showed the
// first project alone, and the last holds every project in order.
func checkStreamed(t *testing.T, run *jsRun, want []string) {
	t.Helper()
	finals := run.values("final")
	if run.err != nil || len(finals) != 1 {
		t.Fatalf("the client did not end with a result: %v", run.err)
	}
	final := lineAs[deferResult](t, finals[0])
	if !final.Complete || len(final.Tenants) != 1 || final.Tenants[0].Projects == nil || !slices.Equal(*final.Tenants[0].Projects, want) {
		t.Errorf("the last result %+v: want the projects %v in order", final, want)
	}
	chunks := run.values("chunk")
	if len(chunks) < 2 {
		t.Fatalf("%d parts off the wire, want the first and at least one of items", len(chunks))
	}
	if n := len(lineAs[[]any](t, dig(chunks[0], "data.viewer.tenants.edges.0.node.projects.edges"))); n != 1 || dig(chunks[0], "hasNext") != true {
		t.Errorf("the first part: %v, want one project (initialCount 1) and hasNext", chunks[0])
	}
	items := 0
	for _, c := range chunks[1:] {
		incs, _ := dig(c, "incremental").([]any)
		for _, inc := range incs {
			if l, ok := dig(inc, "items").([]any); ok && dig(inc, "label") == "projects" {
				items += len(l)
			}
		}
	}
	if items != len(want)-1 {
		t.Errorf("the parts after the first carry %d projects as items, want %d", items, len(want)-1)
	}
	early := 0
	for _, v := range run.values("result") {
		r := lineAs[deferResult](t, v)
		if len(r.Tenants) == 1 && r.Tenants[0].Projects != nil && len(*r.Tenants[0].Projects) == 1 && (r.Loading || r.HasNext) {
			early++
		}
	}
	if early == 0 {
		t.Errorf("no result showed the first project before the others arrived")
	}
}

// TestApolloStream watches the streamed query with Apollo Client over HTTP
// (multipart/mixed) and over graphql-transport-ws.
func TestApolloStream(t *testing.T) {
	dir := jsFrontend(t)
	env := NewEnv(t, OpenSQLite(t))
	f := streamFixture(t, env)
	want := f.MustDo(t, `{ viewer { tenants(first: 5) { nodes { projects(first: 20) { nodes { id } } } } } }`, nil).IDs("viewer.tenants.nodes.0.projects.nodes")
	for _, transport := range []string{"http", "ws"} {
		t.Run(transport, func(t *testing.T) {
			checkStreamed(t, runNode(t, dir, time.Minute, "apollo.mjs", "stream-"+transport, env.Server.URL, f.Owner.Token), want)
		})
	}
}

// TestUrqlStream runs the streamed query with urql and graphcache over
// HTTP: with urql's own Accept header (SSE), and asking for
// multipart/mixed.
func TestUrqlStream(t *testing.T) {
	dir := jsFrontend(t)
	env := NewEnv(t, OpenSQLite(t))
	f := streamFixture(t, env)
	want := f.MustDo(t, `{ viewer { tenants(first: 5) { nodes { projects(first: 20) { nodes { id } } } } } }`, nil).IDs("viewer.tenants.nodes.0.projects.nodes")
	for _, mode := range []string{"stream", "stream-multipart"} {
		t.Run(mode, func(t *testing.T) {
			checkStreamed(t, runNode(t, dir, time.Minute, "urql.mjs", mode, env.Server.URL, f.Owner.Token), want)
		})
	}
}

// TestApolloPersistedIdempotentDeploy sends one deploy through Apollo's
// PersistedQueryLink with one Idempotency-Key to each of two replicas on
// one store: the deployment is made once, and the second replica answers
// with the first's response, replayed.
func TestApolloPersistedIdempotentDeploy(t *testing.T) {
	dir := jsFrontend(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	second := env.frontendReplica(t)
	deployments := func() []string {
		return f.Values(t, f.EnvironmentID, `... on Environment { deployments(first: 100) { edges { node { id } } } }`, "deployments.edges", "node.id")
	}
	before := deployments()
	key := f.Unique("apollo-persisted-deploy")
	run := runNode(t, dir, time.Minute, "apollo.mjs", "deploy", f.Owner.Token, key, f.ServiceID, f.EnvironmentID,
		Digest(env.Next()), env.Server.URL, second.Server.URL)

	after := deployments()
	var made []string
	for _, id := range after {
		if !slices.Contains(before, id) {
			made = append(made, id)
		}
	}
	if len(made) != 1 {
		t.Errorf("the deploy sent to two replicas with one key made %d deployments (%v), want 1", len(made), made)
	}
	type mutation struct {
		Replica string `json:"replica"`
		Data    struct {
			Deploy struct {
				Deployment struct{ ID string } `json:"deployment"`
			} `json:"deploy"`
		} `json:"data"`
		Error *string `json:"error"`
	}
	results := run.values("mutation")
	if len(results) != 2 {
		t.Fatalf("%d mutation results, want one per replica: %v", len(results), run.err)
	}
	for i, v := range results {
		m := lineAs[mutation](t, v)
		if m.Error != nil || len(made) != 1 || m.Data.Deploy.Deployment.ID != made[0] {
			t.Errorf("replica %d (%s): deployment %q, error %v; want the one deployment %v", i+1, m.Replica, m.Data.Deploy.Deployment.ID, strOrNone(m.Error), made)
		}
	}
	// The exchanges, in order: the link sends the hash alone first; a
	// replica that does not know it answers PERSISTED_QUERY_NOT_FOUND and
	// gets the query. The second replica knows the hash the first
	// registered (the persisted queries are the store's, not a replica's).
	type exchange struct {
		URL            string  `json:"url"`
		HasQuery       bool    `json:"hasQuery"`
		PersistedQuery *string `json:"persistedQuery"`
		Status         int     `json:"status"`
		Replayed       *string `json:"replayed"`
		Body           string  `json:"body"`
	}
	var sent exchange
	var last exchange
	notFound := map[string]int{}
	for _, l := range run.snapshot() {
		if v, ok := l["request"]; ok {
			sent = lineAs[exchange](t, v)
			if sent.PersistedQuery == nil {
				t.Errorf("a request to %s without the persisted query's hash: PersistedQueryLink is not in the path", sent.URL)
			}
		}
		if v, ok := l["response"]; ok {
			r := lineAs[exchange](t, v)
			if strings.Contains(r.Body, "PERSISTED_QUERY_NOT_FOUND") {
				notFound[strings.TrimSuffix(sent.URL, "/graphql")]++
			}
			if r.Status == 200 {
				last = r
			}
		}
	}
	if notFound[env.Server.URL] > 1 || notFound[second.Server.URL] != 0 {
		t.Errorf("PERSISTED_QUERY_NOT_FOUND: %d from the first replica (want at most 1), %d from the second (want 0: the first registered the hash)",
			notFound[env.Server.URL], notFound[second.Server.URL])
	}
	if last.Replayed == nil || *last.Replayed != "true" {
		t.Errorf("the second replica's answer is not marked Idempotent-Replayed: true (got %v)", strOrNone(last.Replayed))
	}
	if run.err != nil {
		t.Errorf("apollo.mjs deploy: %v", run.err)
	}
}

func strOrNone(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

// frontendReplica serves a second control plane over e's store (sealing
// with its key, on its clock and bus), as another replica of `nebula
// serve` would: its own HTTP server, its own caches.
func (e *Env) frontendReplica(t *testing.T) *Env {
	t.Helper()
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	tw := &testWriter{t: t}
	log := slog.New(slog.NewTextHandler(tw, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", "second")
	plane := e.SecondPlane(t)
	srv := httptest.NewServer(server.New(plane, cfg, log).Handler())
	t.Cleanup(func() {
		srv.Close()
		tw.mu.Lock()
		tw.done = true
		tw.mu.Unlock()
	})
	return &Env{Store: e.Store, Plane: plane, Server: srv, Clock: e.Clock, BootstrapToken: e.BootstrapToken, BootstrapUserID: e.BootstrapUserID}
}
