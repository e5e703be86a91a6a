// Package apitest tests the GraphQL API end to end: a real HTTP server over
// the real domain layer and a real store (SQLite file and PostgreSQL), driven
// only through HTTP the way a client drives it. Its tests pin down the role
// matrix, tenant isolation, input validation and the audit trail.
//
// It is test infrastructure only and must never be imported by production
// code (it imports pgtest, which starts database servers).
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/agents"
	"github.com/nebulactrl/nebula/internal/control/outbound"
	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// StoreOpener opens a fresh, migrated store of one kind for a test.
type StoreOpener struct {
	Name string
	Open func(t testing.TB) *store.Store
}

// Stores lists the stores every API test runs against: the embedded SQLite
// file and PostgreSQL (skipped, or failed under NEBULA_REQUIRE_POSTGRES=1,
// when no PostgreSQL can be had). The test binary's TestMain must call
// pgtest.Main.
func Stores(t testing.TB) []StoreOpener {
	t.Helper()
	return []StoreOpener{
		{Name: "sqlite", Open: OpenSQLite},
		{Name: "postgres", Open: func(t testing.TB) *store.Store { t.Helper(); return pgtest.Open(t) }},
	}
}

// EachStore runs fn in a subtest per store of Stores, one after the other,
// each on a control plane of its own.
func EachStore(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Helper()
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) { fn(t, NewEnv(t, s.Open(t))) })
	}
}

// EachStoreParallel is EachStore with subtests that run in parallel, their
// control planes started once they do.
func EachStoreParallel(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Helper()
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, NewEnv(t, s.Open(t)))
		})
	}
}

// OpenSQLite returns a migrated store on a new SQLite file in the test's
// temporary directory, closed when the test ends.
func OpenSQLite(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "nebula.db"))
	if err != nil {
		t.Fatalf("opening SQLite: %v", err)
	}
	st := store.New(db)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrating SQLite: %v", err)
	}
	return st
}

// Clock is real time plus an offset that Advance moves forward, for tests
// of time windows against a running control plane.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return store.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Env is a running control plane: the HTTP server of `nebula serve` (with
// the default configuration) over a bootstrapped store.
type Env struct {
	Store  *store.Store
	Plane  *control.Plane
	Server *httptest.Server
	// Hub is the server's agent hub.
	Hub *hub.Hub
	// BootstrapToken is the first admin's token secret; it acts in the
	// bootstrap tenant. Fixtures are tenants this admin creates.
	BootstrapToken string
	// BootstrapUserID is the global id of the first admin, as its tenant
	// knows them; BootstrapUser is the admin's store id, for reading how
	// the tenants the admin founds know them (UserGID).
	BootstrapUserID string
	BootstrapUser   model.UserID
	// Clock is the control plane's: real time, moved on by Advance.
	Clock *Clock

	seq atomic.Int64
	key *seal.Key // the master key the plane seals with
}

// NewEnv bootstraps st and serves it on a loopback port until the test ends.
func NewEnv(t testing.TB, st *store.Store) *Env {
	t.Helper()
	return NewEnvWith(t, st, nil)
}

// NewEnvWith is NewEnv with settings changed from the defaults by tune.
func NewEnvWith(t testing.TB, st *store.Store, tune func(*config.Config)) *Env {
	t.Helper()
	tw := &testWriter{t: t}
	log := slog.New(slog.NewTextHandler(tw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	clk := &Clock{}
	// The defaults of `nebula serve`: nothing is set in the environment.
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("default configuration: %v", err)
	}
	cfg.Version = "dev" // as `nebula serve` built without a version says
	// The server's own URL is its public one, as NEBULA_PUBLIC_URL says in
	// production: links and redirects are built from it.
	srv := httptest.NewUnstartedServer(nil)
	cfg.PublicURL = "http://" + srv.Listener.Addr().String()
	if tune != nil {
		tune(&cfg)
	}
	opts := []core.Option{core.WithBox(seal.NewBox(&key)), core.WithClock(clk.Now),
		core.WithBuildSettings(cfg.Builds), core.WithLogRetention(cfg.LogRetention),
		core.WithSessionTTL(cfg.SessionTTL), core.WithInvitationTTL(cfg.InvitationTTL),
		core.WithOutbound(outbound.SettingsFrom(cfg.Webhooks, cfg.Version))}
	if cfg.OIDC.Enabled() {
		opts = append(opts, core.WithOIDC(people.OIDCSettingsFrom(cfg.OIDC)))
	}
	plane, err := control.New(st, log, opts...)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	boot, err := plane.People.Bootstrap(context.Background(), "acme", "admin@acme.test")
	if err != nil {
		t.Fatalf("bootstrapping: %v", err)
	}
	served := server.New(plane, cfg, log)
	srv.Config.Handler = served.Handler()
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		tw.mu.Lock()
		tw.done = true
		tw.mu.Unlock()
	})
	return &Env{
		Store: st, Plane: plane, Server: srv, Hub: served.Hub(), key: &key,
		Clock:           clk,
		BootstrapToken:  boot.Secret,
		BootstrapUserID: UserGID(t, st, boot.Tenant.ID, boot.User.ID),
		BootstrapUser:   boot.User.ID,
	}
}

// UserGID is the global id a tenant's API shows for one of its users: of
// the tenant's own id for them.
func UserGID(t testing.TB, st *store.Store, tenant model.TenantID, user model.UserID) string {
	t.Helper()
	local, err := store.LocalIDOf(context.Background(), st.Q(), tenant, user)
	if err != nil {
		t.Fatalf("reading the tenant's id for user %s: %v", user, err)
	}
	return gid.Encode(gid.User, local)
}

// testWriter sends the server's warnings and errors to the test log, so that
// an INTERNAL error shows its cause. It goes quiet once the test is over.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Logf("server: %s", bytes.TrimRight(p, "\n"))
	}
	return len(p), nil
}

// SecondPlane is another control plane over the same database, sealing
// with the same key and reading the same clock: a second replica's, for
// the jobs they must not both do.
func (e *Env) SecondPlane(t testing.TB, opts ...core.Option) *control.Plane {
	t.Helper()
	log := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", "second")
	// Its notes reach this process's subscribers, as PostgreSQL's NOTIFY
	// carries a replica's to the others.
	b := e.Plane.Bus()
	p, err := control.New(e.Store, log, append([]core.Option{core.WithBox(seal.NewBox(e.key)), core.WithClock(e.Clock.Now),
		core.WithBus(b, bus.Memory{B: b})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// AgentSide opens the control plane's side of cluster c's agent, for tests
// that report as the agent without a session.
func (e *Env) AgentSide(t testing.TB, c model.ClusterID) *agents.AgentSide {
	t.Helper()
	a, err := e.Plane.Agents.AgentSideOf(context.Background(), c)
	if err != nil {
		t.Fatalf("opening cluster %s's agent side: %v", c, err)
	}
	return a
}

// Next returns a number unique within the environment, for names.
func (e *Env) Next() int64 { return e.seq.Add(1) }

// GraphQLError is one entry of a response's errors.
type GraphQLError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Locations  []any          `json:"locations"`
	Extensions map[string]any `json:"extensions"`
}

// Code is the error's extensions.code.
func (e GraphQLError) Code() string {
	s, _ := e.Extensions["code"].(string)
	return s
}

// PathString is the error path joined with dots.
func (e GraphQLError) PathString() string {
	parts := make([]string, len(e.Path))
	for i, p := range e.Path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// UserError is one entry of a mutation payload's userErrors.
type UserError struct {
	Field   []string `json:"field"`
	Message string   `json:"message"`
	Code    string   `json:"code"`
}

// Response is a decoded GraphQL response.
type Response struct {
	Status     int
	Header     http.Header
	Body       []byte
	Data       map[string]any
	Errors     []GraphQLError
	Extensions map[string]any
}

// Do posts a GraphQL request with the token as bearer credentials (none
// when token is empty) and decodes the answer.
func (e *Env) Do(t testing.TB, token, query string, vars map[string]any) Response {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	return e.DoAuth(t, auth, query, vars)
}

// DoAuth is Do with a raw Authorization header value (none when empty).
func (e *Env) DoAuth(t testing.TB, authorization, query string, vars map[string]any) Response {
	t.Helper()
	return e.do(t, query, vars, func(req *http.Request) {
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
	})
}

// DoSession runs a request as a browser signed in with the session cookie
// would, from a page of the control plane.
func (e *Env) DoSession(t testing.TB, cookie *http.Cookie, query string, vars map[string]any) Response {
	t.Helper()
	return e.do(t, query, vars, func(req *http.Request) {
		req.AddCookie(cookie)
		req.Header.Set("Origin", e.Server.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	})
}

func (e *Env) do(t testing.TB, query string, vars map[string]any, auth func(*http.Request)) Response {
	t.Helper()
	clean := map[string]any{}
	for k, v := range vars {
		// Keys starting with '_' carry test state beside the variables.
		if !strings.HasPrefix(k, "_") {
			clean[k] = v
		}
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": clean})
	if err != nil {
		t.Fatalf("encoding request: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Server.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("building request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	auth(req)
	client := e.Server.Client()
	if client == nil { // a server of another process: only its URL is known
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("posting to /graphql: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	out := Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	var dec struct {
		Data       map[string]any `json:"data"`
		Errors     []GraphQLError `json:"errors"`
		Extensions map[string]any `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &dec); err != nil {
		t.Fatalf("decoding response (HTTP %d): %v\n%s", resp.StatusCode, err, raw)
	}
	out.Data, out.Errors, out.Extensions = dec.Data, dec.Errors, dec.Extensions
	return out
}

// MustDo is Do that fails the test on any error or userError in the answer.
func (e *Env) MustDo(t testing.TB, token, query string, vars map[string]any) Response {
	t.Helper()
	r := e.Do(t, token, query, vars)
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("request failed: HTTP %d, errors %s\nquery: %s\nvars: %v", r.Status, r.errorList(), query, vars)
	}
	for field := range r.Data {
		if ue := r.UserErrors(field); len(ue) > 0 {
			t.Fatalf("%s: got userErrors %+v, want none\nvars: %v", field, ue, vars)
		}
	}
	return r
}

func (r Response) errorList() string {
	parts := make([]string, len(r.Errors))
	for i, e := range r.Errors {
		parts[i] = fmt.Sprintf("[%s at %s: %s]", e.Code(), e.PathString(), e.Message)
	}
	return strings.Join(parts, " ")
}

// Get follows a dotted path ("deploy.release.id", "nodes.0.id") through the
// data; nil when any step is missing.
func (r Response) Get(path string) any {
	return dig(r.Data, path)
}

func dig(v any, path string) any {
	if path == "" {
		return v
	}
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Str is Get for a string; "" when missing.
func (r Response) Str(path string) string {
	s, _ := r.Get(path).(string)
	return s
}

// List is Get for a list.
func (r Response) List(path string) []any {
	l, _ := r.Get(path).([]any)
	return l
}

// IDs returns the "id" of each item of the list at path.
func (r Response) IDs(path string) []string {
	var out []string
	for _, it := range r.List(path) {
		if s, ok := dig(it, "id").(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// UserErrors decodes data.<field>.userErrors.
func (r Response) UserErrors(field string) []UserError {
	raw, ok := dig(r.Data, field+".userErrors").([]any)
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	var out []UserError
	_ = json.Unmarshal(b, &out)
	return out
}

// ErrorCodes lists the codes of the response's errors.
func (r Response) ErrorCodes() []string {
	out := make([]string, len(r.Errors))
	for i, e := range r.Errors {
		out[i] = e.Code()
	}
	return out
}

// AuditCount counts a tenant's audit events straight from the store.
func (e *Env) AuditCount(t testing.TB, tenantID string) int {
	t.Helper()
	raw, err := gid.Decode[model.TenantID](gid.Tenant, tenantID)
	if err != nil {
		t.Fatalf("decoding tenant id: %v", err)
	}
	n, err := store.CountAudit(context.Background(), e.Store.Q(), raw)
	if err != nil {
		t.Fatalf("counting audit events: %v", err)
	}
	return n
}

// Digest returns a valid image digest, different for each n.
func Digest(n int64) string {
	return fmt.Sprintf("sha256:%064x", n)
}

// Role names a caller of the role matrix.
type Role string

const (
	Admin          Role = "admin"
	ProjectManager Role = "project_manager"
	Editor         Role = "editor"
	Viewer         Role = "viewer"
	Member         Role = "member"
)

// Roles lists the matrix's callers in order of decreasing power.
var Roles = []Role{Admin, ProjectManager, Editor, Viewer, Member}

// slug is a DNS-label form of the role, for names.
func (r Role) slug() string {
	if r == ProjectManager {
		return "pm"
	}
	return string(r)
}

// Caller is a user with a token acting in one fixture tenant. A person
// of a fixture of people (NewPeopleFixture) also holds the session their
// invitation signed them in with, and calls through it.
type Caller struct {
	Email    string
	UserID   string
	MemberID string
	// ProjectMemberID is the caller's role in the fixture project, if any.
	ProjectMemberID string
	Token           string
	TokenID         string
	Session         *http.Cookie
	SessionID       string
}

// Do runs a request as the caller: through its session when it has one,
// else with its token.
func (c *Caller) Do(t testing.TB, env *Env, query string, vars map[string]any) Response {
	t.Helper()
	if c.Session != nil {
		return env.DoSession(t, c.Session, query, vars)
	}
	return env.Do(t, c.Token, query, vars)
}

// Fixture is a tenant built through the API only: a cluster labelled
// env=prod, region=eu with a namespace target, a project with an
// environment selecting the cluster (and a protected one), a service, a
// release deployed to the environment, and a caller for every role.
type Fixture struct {
	Env  *Env
	Name string

	TenantID string
	// Owner created the tenant (the bootstrap admin, acting with the token
	// createTenant returned) and builds objects for the tests.
	Owner Caller
	// Users holds a caller per role of the matrix; all are integration
	// users whose tokens the owner minted.
	Users map[Role]*Caller
	// People says the callers are people signed in with sessions.
	People bool

	ClusterID              string
	NamespaceTargetID      string
	ProjectID              string
	EnvironmentID          string // unprotected
	ProtectedEnvironmentID string
	ServiceID              string
	ReleaseID              string
	DeploymentID           string

	// Secrets holds every token secret the fixture has seen.
	secretsMu sync.Mutex
	secrets   []string
}

// NewFixture builds a fresh tenant, through GraphQL only, on the TEAM plan
// (the FREE plan allows too few members for every role).
func (e *Env) NewFixture(t testing.TB) *Fixture {
	t.Helper()
	return e.newFixture(t, false)
}

// NewPeopleFixture is NewFixture whose callers are people: each accepted
// an invitation (setting a passphrase) and calls through the session it
// signed them in with; its token is a personal one it made itself.
func (e *Env) NewPeopleFixture(t testing.TB) *Fixture {
	t.Helper()
	return e.newFixture(t, true)
}

func (e *Env) newFixture(t testing.TB, people bool) *Fixture {
	t.Helper()
	n := e.Next()
	f := &Fixture{Env: e, Name: fmt.Sprintf("tenant-%d", n), Users: map[Role]*Caller{}, People: people}
	f.addSecret(e.BootstrapToken)

	r := e.MustDo(t, e.BootstrapToken, `mutation($name: String!) {
		createTenant(input: {name: $name}) { tenant { id } apiToken { id user { id } } secret userErrors { field message code } }
	}`, map[string]any{"name": f.Name})
	f.TenantID = r.Str("createTenant.tenant.id")
	// The new tenant knows its founder by an id of its own.
	f.Owner = Caller{Email: "admin@acme.test", UserID: r.Str("createTenant.apiToken.user.id"),
		Token: r.Str("createTenant.secret"), TokenID: r.Str("createTenant.apiToken.id")}
	f.addSecret(f.Owner.Token)
	f.MustDo(t, `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: TEAM}) { userErrors { field message code } } }`,
		map[string]any{"t": f.TenantID})

	for _, role := range Roles {
		tr := "MEMBER"
		if role == Admin {
			tr = "ADMIN"
		}
		if people {
			f.Users[role] = f.NewPerson(t, role.slug(), tr)
		} else {
			f.Users[role] = f.NewCaller(t, role.slug(), tr)
		}
	}

	r = f.MustDo(t, `mutation($t: ID!, $name: String!) {
		registerCluster(input: {tenantId: $t, name: $name, labels: [{key: "env", value: "prod"}, {key: "region", value: "eu"}]}) {
			cluster { id } userErrors { field message code } }
	}`, map[string]any{"t": f.TenantID, "name": "prod-eu"})
	f.ClusterID = r.Str("registerCluster.cluster.id")
	r = f.MustDo(t, `mutation($c: ID!) {
		createNamespaceTarget(input: {clusterId: $c, namespace: "shop", labels: [{key: "tier", value: "web"}]}) {
			namespaceTarget { id } userErrors { field message code } }
	}`, map[string]any{"c": f.ClusterID})
	f.NamespaceTargetID = r.Str("createNamespaceTarget.namespaceTarget.id")
	// The protected environment's own namespace: on a cluster with
	// targets, every environment takes one.
	f.MustDo(t, `mutation($c: ID!) {
		createNamespaceTarget(input: {clusterId: $c, namespace: "shop-gated", labels: [{key: "tier", value: "gated"}]}) {
			namespaceTarget { id } userErrors { field message code } }
	}`, map[string]any{"c": f.ClusterID})

	r = f.MustDo(t, `mutation($t: ID!) {
		createProject(input: {tenantId: $t, name: "shop", description: "the shop"}) { project { id } userErrors { field message code } }
	}`, map[string]any{"t": f.TenantID})
	f.ProjectID = r.Str("createProject.project.id")
	for role, pr := range map[Role]string{ProjectManager: "PROJECT_MANAGER", Editor: "EDITOR", Viewer: "VIEWER"} {
		f.Users[role].ProjectMemberID = f.GrantProjectRole(t, f.ProjectID, f.Users[role].UserID, pr)
	}

	r = f.MustDo(t, `mutation($p: ID!) {
		createEnvironment(input: {projectId: $p, name: "production",
			clusterSelector: [{key: "env", value: "prod"}, {key: "region", value: "eu"}],
			namespaceSelector: [{key: "tier", value: "web"}]}) { environment { id } userErrors { field message code } }
	}`, map[string]any{"p": f.ProjectID})
	f.EnvironmentID = r.Str("createEnvironment.environment.id")
	r = f.MustDo(t, `mutation($p: ID!) {
		createEnvironment(input: {projectId: $p, name: "production-gated", protected: true,
			clusterSelector: [{key: "env", value: "prod"}], namespaceSelector: [{key: "tier", value: "gated"}]}) { environment { id } userErrors { field message code } }
	}`, map[string]any{"p": f.ProjectID})
	f.ProtectedEnvironmentID = r.Str("createEnvironment.environment.id")

	f.ServiceID = f.NewService(t, f.ProjectID, "api")
	r = f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) {
		deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			release { id } deployment { id stage } userErrors { field message code } }
	}`, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(n)})
	f.ReleaseID = r.Str("deploy.release.id")
	f.DeploymentID = r.Str("deploy.deployment.id")
	return f
}

func (f *Fixture) addSecret(s string) {
	f.secretsMu.Lock()
	defer f.secretsMu.Unlock()
	f.secrets = append(f.secrets, s)
}

// Secrets returns every token secret the fixture has handed out.
func (f *Fixture) Secrets() []string {
	f.secretsMu.Lock()
	defer f.secretsMu.Unlock()
	return append([]string(nil), f.secrets...)
}

// MustDo runs a request as the owner and fails on any error.
func (f *Fixture) MustDo(t testing.TB, query string, vars map[string]any) Response {
	t.Helper()
	return f.Env.MustDo(t, f.Owner.Token, query, vars)
}

// AuditCount counts the fixture tenant's audit events.
func (f *Fixture) AuditCount(t testing.TB) int {
	t.Helper()
	return f.Env.AuditCount(t, f.TenantID)
}

// Unique returns name-N, unique within the environment.
func (f *Fixture) Unique(name string) string {
	return fmt.Sprintf("%s-%d", name, f.Env.Next())
}

// NewCaller adds an integration user with the tenant role (ADMIN or
// MEMBER) and mints a token for it as the owner.
func (f *Fixture) NewCaller(t testing.TB, name, tenantRole string) *Caller {
	t.Helper()
	c := &Caller{Email: fmt.Sprintf("%s@%s.test", f.Unique(name), f.Name)}
	r := f.MustDo(t, `mutation($t: ID!, $email: String!, $name: String!, $role: TenantRole!) {
		addMember(input: {tenantId: $t, email: $email, name: $name, role: $role, kind: INTEGRATION}) {
			member { id user { id } } userErrors { field message code } }
	}`, map[string]any{"t": f.TenantID, "email": c.Email, "name": name, "role": tenantRole})
	c.MemberID, c.UserID = r.Str("addMember.member.id"), r.Str("addMember.member.user.id")
	c.TokenID, c.Token = f.MintToken(t, c.UserID)
	return c
}

// NewPerson invites a person with the tenant role as the owner; the
// person accepts through the link, setting a passphrase, and with the
// session that signs them in makes a personal token.
func (f *Fixture) NewPerson(t testing.TB, name, tenantRole string) *Caller {
	t.Helper()
	return f.SignInByInvitation(t, fmt.Sprintf("%s@%s.people.test", f.Unique(name), f.Name), name, tenantRole)
}

// SignInByInvitation invites the email (a member already, or not yet)
// with the tenant role as the owner; the person accepts through the link,
// setting a passphrase for this tenant, and with the session that signs
// them in makes a personal token.
func (f *Fixture) SignInByInvitation(t testing.TB, email, name, tenantRole string) *Caller {
	t.Helper()
	c := &Caller{Email: email}
	r := f.MustDo(t, `mutation($t: ID!, $e: String!, $n: String!, $r: TenantRole) { inviteMember(input: {tenantId: $t, email: $e, name: $n, role: $r}) {
		member { id user { id } } link userErrors { field message code } } }`, map[string]any{"t": f.TenantID, "e": c.Email, "n": name, "r": tenantRole})
	c.MemberID, c.UserID = r.Str("inviteMember.member.id"), r.Str("inviteMember.member.user.id")
	link := r.Str("inviteMember.link")
	body, _ := json.Marshal(map[string]string{"invitation": link[strings.Index(link, "#")+1:], "passphrase": "the passphrase of " + c.Email})
	req, err := http.NewRequest(http.MethodPost, f.Env.Server.URL+"/auth/invitation", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", f.Env.Server.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := f.Env.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var accepted struct {
		Session struct{ ID string } `json:"session"`
	}
	_ = json.Unmarshal(raw, &accepted)
	for _, ck := range resp.Cookies() {
		if ck.Name == "nebula_session" && ck.Value != "" {
			c.Session = ck
		}
	}
	if resp.StatusCode != http.StatusOK || c.Session == nil || accepted.Session.ID == "" {
		t.Fatalf("%s accepting their invitation: HTTP %d %s", c.Email, resp.StatusCode, raw)
	}
	c.SessionID = accepted.Session.ID
	f.addSecret(c.Session.Value)
	tr := f.Env.DoSession(t, c.Session, `mutation($name: String!) { createApiToken(input: {name: $name}) { apiToken { id } secret userErrors { field message code } } }`,
		map[string]any{"name": f.Unique("personal")})
	c.TokenID, c.Token = tr.Str("createApiToken.apiToken.id"), tr.Str("createApiToken.secret")
	if c.Token == "" {
		t.Fatalf("%s making a personal token: %s", c.Email, tr.Body)
	}
	f.addSecret(c.Token)
	return c
}

// MintToken creates a token for an integration user as the owner.
func (f *Fixture) MintToken(t testing.TB, userID string) (id, secret string) {
	t.Helper()
	r := f.MustDo(t, `mutation($u: ID!, $name: String!) {
		createApiToken(input: {name: $name, userId: $u}) { apiToken { id } secret userErrors { field message code } }
	}`, map[string]any{"u": userID, "name": f.Unique("token")})
	secret = r.Str("createApiToken.secret")
	f.addSecret(secret)
	return r.Str("createApiToken.apiToken.id"), secret
}

// GrantProjectRole gives a tenant member a project role as the owner.
func (f *Fixture) GrantProjectRole(t testing.TB, projectID, userID, role string) string {
	t.Helper()
	r := f.MustDo(t, `mutation($p: ID!, $u: ID!, $role: ProjectRole!) {
		addProjectMember(input: {projectId: $p, userId: $u, role: $role}) { projectMember { id } userErrors { field message code } }
	}`, map[string]any{"p": projectID, "u": userID, "role": role})
	return r.Str("addProjectMember.projectMember.id")
}

// NewProject creates a project in which the pm, editor and viewer callers
// hold their roles, as in the fixture project.
func (f *Fixture) NewProject(t testing.TB) string {
	t.Helper()
	r := f.MustDo(t, `mutation($t: ID!, $name: String!) {
		createProject(input: {tenantId: $t, name: $name}) { project { id } userErrors { field message code } }
	}`, map[string]any{"t": f.TenantID, "name": f.Unique("proj")})
	id := r.Str("createProject.project.id")
	for role, pr := range map[Role]string{ProjectManager: "PROJECT_MANAGER", Editor: "EDITOR", Viewer: "VIEWER"} {
		f.GrantProjectRole(t, id, f.Users[role].UserID, pr)
	}
	return id
}

// NewEnvironment creates an unprotected environment in the fixture
// project that picks no cluster yet (env=staging): on the fixture's
// cluster, which has namespace targets, it would have to pick one.
func (f *Fixture) NewEnvironment(t testing.TB) string {
	t.Helper()
	r := f.MustDo(t, `mutation($p: ID!, $name: String!) {
		createEnvironment(input: {projectId: $p, name: $name, clusterSelector: [{key: "env", value: "staging"}]}) {
			environment { id } userErrors { field message code } }
	}`, map[string]any{"p": f.ProjectID, "name": f.Unique("env")})
	return r.Str("createEnvironment.environment.id")
}

// NewService creates a service with a web process serving a domain.
func (f *Fixture) NewService(t testing.TB, projectID, name string) string {
	t.Helper()
	r := f.MustDo(t, `mutation($p: ID!, $name: String!, $host: String!) {
		createService(input: {projectId: $p, name: $name, image: "registry.example.com/shop/api",
			processes: [{name: "web", command: ["./api", "serve"], replicas: 2, port: 8080,
				readinessProbe: {path: "/healthz", port: 8080}}],
			variables: [{name: "LOG_LEVEL", value: "info"}],
			domains: [{host: $host, process: "web"}]}) { service { id } userErrors { field message code } }
	}`, map[string]any{"p": projectID, "name": name, "host": f.Unique("api") + ".example.com"})
	return r.Str("createService.service.id")
}

// NewCluster registers a cluster whose labels no fixture environment
// selects.
func (f *Fixture) NewCluster(t testing.TB) string {
	t.Helper()
	r := f.MustDo(t, `mutation($t: ID!, $name: String!) {
		registerCluster(input: {tenantId: $t, name: $name, labels: [{key: "scratch", value: "yes"}]}) {
			cluster { id } userErrors { field message code } }
	}`, map[string]any{"t": f.TenantID, "name": f.Unique("scratch")})
	return r.Str("registerCluster.cluster.id")
}

// NewNamespaceTarget creates a namespace target on the fixture cluster.
func (f *Fixture) NewNamespaceTarget(t testing.TB) string {
	t.Helper()
	r := f.MustDo(t, `mutation($c: ID!, $ns: String!) {
		createNamespaceTarget(input: {clusterId: $c, namespace: $ns}) { namespaceTarget { id } userErrors { field message code } }
	}`, map[string]any{"c": f.ClusterID, "ns": f.Unique("ns")})
	return r.Str("createNamespaceTarget.namespaceTarget.id")
}

// Node reads node(id:) as the owner with the given selection on it.
func (f *Fixture) Node(t testing.TB, id, selection string) map[string]any {
	t.Helper()
	r := f.Env.Do(t, f.Owner.Token, `query($id: ID!) { node(id: $id) { id `+selection+` } }`, map[string]any{"id": id})
	n, _ := r.Get("node").(map[string]any)
	if n == nil {
		for _, e := range r.Errors {
			if e.Code() != "NOT_FOUND" {
				t.Fatalf("node(%s): unexpected error %s", id, r.errorList())
			}
		}
	}
	return n
}

// Values reads node(id:) as the owner with the selection and returns the
// string at itemPath of each element of the list at listPath (relative to
// the node).
func (f *Fixture) Values(t testing.TB, id, selection, listPath, itemPath string) []string {
	t.Helper()
	r := f.Env.MustDo(t, f.Owner.Token, `query($id: ID!) { node(id: $id) { id `+selection+` } }`, map[string]any{"id": id})
	var out []string
	for _, it := range r.List("node." + listPath) {
		if s, ok := dig(it, itemPath).(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Authenticates reports whether a token secret is accepted, and as whom.
func (e *Env) Authenticates(t testing.TB, secret string) (userID string, ok bool) {
	t.Helper()
	r := e.Do(t, secret, `{ viewer { user { id } } }`, nil)
	if r.Status == http.StatusUnauthorized {
		return "", false
	}
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("viewer query: HTTP %d, errors %s", r.Status, r.errorList())
	}
	return r.Str("viewer.user.id"), true
}
