package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The seeds: the main one is the benchmark's (100 environment items), the
// small one only shows that the query count does not depend on the size.
var (
	smallSize = Size{Projects: 2, Environments: 5, Deployments: 3}
	mainSize  = Size{Projects: 20, Environments: 5, Deployments: 3}
)

// nestedQuery is the representative nested list read: every project of a
// tenant, their environments and each environment's latest deployment with
// its release. The baseline answers the same request with the same JSON.
const nestedQuery = `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes { id name environments(first: 10) { nodes { id name protected deployments(first: 1) { nodes { id stage createdAt release { number imageDigest } } } } } } } } } }`

// The response shape of nestedQuery. The baseline encodes these types, and
// both responses are decoded into them to be compared.
type (
	nestedResponse struct {
		Data       nestedData `json:"data"`
		Errors     []gqlError `json:"errors,omitempty"`
		Extensions any        `json:"extensions,omitempty"`
	}
	gqlError struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path,omitempty"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}
	nestedData struct {
		Node *tenantNode `json:"node"`
	}
	tenantNode struct {
		Projects connection[projectNode] `json:"projects"`
	}
	connection[T any] struct {
		Nodes []T `json:"nodes"`
	}
	projectNode struct {
		ID           string                      `json:"id"`
		Name         string                      `json:"name"`
		Environments connection[environmentNode] `json:"environments"`
	}
	environmentNode struct {
		ID          string                     `json:"id"`
		Name        string                     `json:"name"`
		Protected   bool                       `json:"protected"`
		Deployments connection[deploymentNode] `json:"deployments"`
	}
	deploymentNode struct {
		ID        string      `json:"id"`
		Stage     string      `json:"stage"`
		CreatedAt time.Time   `json:"createdAt"`
		Release   releaseNode `json:"release"`
	}
	releaseNode struct {
		Number      int    `json:"number"`
		ImageDigest string `json:"imageDigest"`
	}
)

// queryCounter is a pgx.QueryTracer counting the statements sent to
// PostgreSQL and the time they take, from sending one to closing its rows
// (so scanning them is included); while recording it also keeps each
// statement's text and time.
type queryCounter struct {
	n         atomic.Int64
	busy      atomic.Int64 // nanoseconds
	recording atomic.Bool

	mu      sync.Mutex
	running map[*pgx.Conn]running // a connection runs one statement at a time
	log     []statement
}

type running struct {
	start time.Time
	log   int // index in log, or -1
}

type statement struct {
	sql  string
	took time.Duration
}

var _ pgx.QueryTracer = (*queryCounter)(nil)

func (c *queryCounter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == nil {
		c.running = map[*pgx.Conn]running{}
	}
	r := running{start: time.Now(), log: -1}
	if c.recording.Load() {
		r.log = len(c.log)
		c.log = append(c.log, statement{sql: strings.Join(strings.Fields(d.SQL), " ")})
	}
	c.running[conn] = r
	return ctx
}

func (c *queryCounter) TraceQueryEnd(_ context.Context, conn *pgx.Conn, _ pgx.TraceQueryEndData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.running[conn]
	if !ok {
		return
	}
	delete(c.running, conn)
	took := time.Since(r.start)
	c.busy.Add(int64(took))
	if r.log >= 0 && r.log < len(c.log) {
		c.log[r.log].took = took
	}
}

// record runs fn and returns the statements it caused.
func (c *queryCounter) record(fn func()) []statement {
	c.mu.Lock()
	c.log = nil
	c.mu.Unlock()
	c.recording.Store(true)
	fn()
	c.recording.Store(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log
}

// fixture is a seeded PostgreSQL database served two ways over loopback
// HTTP: the whole GraphQL server, and the hand-written baseline.
type fixture struct {
	seed     *Seeded
	queries  *queryCounter
	graphQL  string // URL of POST /graphql
	baseline string // URL of the baseline handler
	client   *http.Client
	nested   []byte // the request body of nestedQuery, which both sides get
	db       *postgres.DB
}

func newFixture(tb testing.TB, size Size) *fixture {
	tb.Helper()
	ctx := context.Background()
	url := pgtest.URL(tb)
	queries := &queryCounter{}
	db, err := postgres.Open(ctx, url, postgres.Options{Tracer: queries})
	if err != nil {
		tb.Fatalf("opening PostgreSQL: %v", err)
	}
	st := store.New(db)
	tb.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		tb.Fatalf("migrating: %v", err)
	}
	log := slog.New(slog.DiscardHandler)
	plane, err := control.New(st, log)
	if err != nil {
		tb.Fatalf("building the plane: %v", err)
	}
	start := time.Now()
	seed, err := Seed(ctx, plane, size)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("seeded %d projects × %d environments × %d deployments in %s",
		size.Projects, size.Environments, size.Deployments, time.Since(start).Round(time.Millisecond))

	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		tb.Fatalf("default configuration: %v", err)
	}
	// Thousands of subscribers share one address and a few tokens here.
	cfg.MaxConnsPerToken, cfg.MaxConnsPerAddress = 1_000_000, 1_000_000
	gql := httptest.NewServer(server.New(plane, cfg, log).Handler())
	tb.Cleanup(gql.Close)
	base := httptest.NewServer(baselineHandler(db.Pool(), seed.Secret))
	tb.Cleanup(base.Close)
	// One keep-alive connection per server, reused by every request.
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	tb.Cleanup(tr.CloseIdleConnections)

	f := &fixture{seed: seed, queries: queries, graphQL: gql.URL + "/graphql", baseline: base.URL + "/nested",
		client: &http.Client{Transport: tr}, db: db}
	f.nested = f.request(tb, nestedQuery)
	return f
}

// request is the JSON body of a GraphQL request for query, with the seeded
// tenant's id as variable $t.
func (f *fixture) request(tb testing.TB, query string) []byte {
	tb.Helper()
	body, err := json.Marshal(map[string]any{
		"query":     query,
		"variables": map[string]string{"t": gid.Encode(gid.Tenant, f.seed.Tenant)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// post sends body to url as the seeded admin and copies the response body
// to w, returning its length.
func (f *fixture) post(url string, body []byte, w io.Writer) (int64, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.seed.Secret)
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Reading to the end lets the connection be reused.
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, err
	}
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("POST %s: got status %d, want 200", url, resp.StatusCode)
	}
	return n, nil
}

// fetch posts body to url and decodes the answer; it fails on any GraphQL
// error.
func (f *fixture) fetch(tb testing.TB, url string, body []byte) (nestedResponse, int64) {
	tb.Helper()
	var buf bytes.Buffer
	n, err := f.post(url, body, &buf)
	if err != nil {
		tb.Fatalf("%v: %s", err, buf.Bytes())
	}
	var out nestedResponse
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		tb.Fatalf("decoding the response of %s: %v: %s", url, err, buf.Bytes())
	}
	if len(out.Errors) > 0 {
		tb.Fatalf("%s answered with errors: %+v", url, out.Errors)
	}
	return out, n
}

// checkNested asserts that r holds every seeded environment, each with
// exactly its newest deployment and that deployment's release.
func checkNested(tb testing.TB, r nestedResponse, seed *Seeded) {
	tb.Helper()
	if r.Data.Node == nil {
		tb.Fatal("got node: null, want the tenant")
	}
	projects := r.Data.Node.Projects.Nodes
	if len(projects) != seed.Size.Projects {
		tb.Errorf("got %d projects, want %d", len(projects), seed.Size.Projects)
	}
	envs := 0
	for _, p := range projects {
		if got := len(p.Environments.Nodes); got != seed.Size.Environments {
			tb.Errorf("project %s: got %d environments, want %d", p.Name, got, seed.Size.Environments)
		}
		for _, e := range p.Environments.Nodes {
			envs++
			raw, err := gid.Decode[model.EnvironmentID](gid.Environment, e.ID)
			if err != nil {
				tb.Errorf("project %s environment %s: %v", p.Name, e.Name, err)
				continue
			}
			want, ok := seed.Latest[raw]
			if !ok {
				tb.Errorf("project %s: environment %s was not seeded", p.Name, e.Name)
				continue
			}
			deps := e.Deployments.Nodes
			if len(deps) != 1 {
				tb.Errorf("%s/%s: got %d deployments, want exactly 1", p.Name, e.Name, len(deps))
				continue
			}
			got := deps[0]
			if wantID := gid.Encode(gid.Deployment, want.Deployment.ID); got.ID != wantID {
				tb.Errorf("%s/%s: got deployment %s, want the newest, %s", p.Name, e.Name, got.ID, wantID)
			}
			if got.Release.Number != seed.Size.Deployments || got.Release.ImageDigest != want.Release.ImageDigest {
				tb.Errorf("%s/%s: got release %d %s, want %d %s", p.Name, e.Name, got.Release.Number,
					got.Release.ImageDigest, seed.Size.Deployments, want.Release.ImageDigest)
			}
			if !got.CreatedAt.Equal(want.Deployment.CreatedAt) || got.Stage != string(want.Deployment.Stage) {
				tb.Errorf("%s/%s: got %s at %s, want %s at %s", p.Name, e.Name, got.Stage, got.CreatedAt,
					want.Deployment.Stage, want.Deployment.CreatedAt)
			}
		}
	}
	if envs != seed.Size.Items() {
		tb.Errorf("got %d environments in all, want %d", envs, seed.Size.Items())
	}
}
