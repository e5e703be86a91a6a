package apitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/delivery"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
)

// This file follows one secret value through a whole life (issue 3): set at
// every scope, deployed, read back every way the API allows, pushed through
// every error path; then tampered with in the database, served by planes
// with the wrong master key and with none, and finally rotated to a new key.
// At no point may the value appear in a response, a log line or a stored row
// other than sealed — and it must always reach the compiled state an agent
// gets, or hold the services that need it.

// NewEnvWithBox is NewEnv with the master keys and the log in the test's
// hands: every record, down to Debug, goes to logw, and wrap (if given)
// surrounds the whole HTTP handler, e.g. to record every response.
func NewEnvWithBox(t testing.TB, st *store.Store, box *seal.Box, logw io.Writer, wrap ...func(http.Handler) http.Handler) *Env {
	t.Helper()
	plane, srv := serveWithBox(t, st, box, logw, wrap)
	boot, err := plane.People.Bootstrap(context.Background(), "acme", "admin@acme.test")
	if err != nil {
		t.Fatalf("bootstrapping: %v", err)
	}
	return &Env{Store: st, Plane: plane, Server: srv,
		BootstrapToken: boot.Secret, BootstrapUserID: UserGID(t, st, boot.Tenant.ID, boot.User.ID)}
}

// Reopen starts another control plane and server over e's store, as if the
// binary restarted with other master keys. It does not bootstrap: e's
// tokens work against it.
func (e *Env) Reopen(t testing.TB, box *seal.Box, logw io.Writer, wrap ...func(http.Handler) http.Handler) *Env {
	t.Helper()
	plane, srv := serveWithBox(t, e.Store, box, logw, wrap)
	return &Env{Store: e.Store, Plane: plane, Server: srv,
		BootstrapToken: e.BootstrapToken, BootstrapUserID: e.BootstrapUserID}
}

func serveWithBox(t testing.TB, st *store.Store, box *seal.Box, logw io.Writer, wrap []func(http.Handler) http.Handler) (*control.Plane, *httptest.Server) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	plane, err := control.New(st, log, core.WithBox(box))
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("default configuration: %v", err)
	}
	h := server.New(plane, cfg, log).Handler()
	for _, w := range wrap {
		h = w(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return plane, srv
}

// syncBuffer is a log sink shared by the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
}

// responseRecorder keeps every response the servers it wraps send: status
// line, headers and body.
type responseRecorder struct {
	mu        sync.Mutex
	responses []string
}

func (r *responseRecorder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tw := &teeWriter{ResponseWriter: w}
		next.ServeHTTP(tw, req)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s -> %d\n", req.Method, req.URL.Path, tw.status)
		_ = w.Header().Write(&b)
		b.Write(tw.body.Bytes())
		r.mu.Lock()
		r.responses = append(r.responses, b.String())
		r.mu.Unlock()
	})
}

func (r *responseRecorder) All() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.responses)
}

type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// canaryRun is one store's run: the canary, everything captured, and the
// objects the scenario made.
type canaryRun struct {
	canary string
	rec    *responseRecorder
	logs   *syncBuffer
	key    seal.Key // the master key the secrets were set under
	env    *Env
	f      *Fixture

	workerID      string
	staticProject string
	staticID      string
	// secrets maps each secret's name to its value; ids maps every
	// variable's name (secret or plain) in the scenario to its global id.
	secrets map[string]string
	ids     map[string]string
}

// secretsNeeded names the secrets each deployed service gets, by scope merging.
var secretsNeeded = map[string][]string{
	"api":    {"API_TOKEN", "ENV_TOKEN", "PROJECT_TOKEN", "SVC_TOKEN"},
	"worker": {"ENV_TOKEN", "PROJECT_TOKEN", "WORKER_TOKEN"},
	"static": nil, // in another project: no secret applies
}

func newMasterKey(t testing.TB) seal.Key {
	t.Helper()
	k, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newCanary is a value found nowhere else: whatever contains it got it
// from the secret.
func newCanary() string { return "CANARY" + rand.Text() }

// TestSecretCanary is issue 3: a secret set at the start of a full scenario
// appears in no GraphQL response, log line or stored row (it is sealed),
// yet reaches the state compiled for the agent; a sealed value swapped into
// another row fails to open and holds the service needing it; and planes
// with the wrong master key or none keep serving, report each secret
// UNREADABLE and hold its services, until the key comes back as an old key
// and a reseal moves everything to the new one.
func TestSecretCanary(t *testing.T) {
	t.Parallel()
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			r := &canaryRun{canary: newCanary(), rec: &responseRecorder{}, logs: &syncBuffer{}, key: newMasterKey(t),
				secrets: map[string]string{}, ids: map[string]string{}}
			r.env = NewEnvWithBox(t, s.Open(t), seal.NewBox(&r.key), r.logs, r.rec.Wrap)
			steps := []struct {
				name string
				fn   func(*testing.T)
			}{
				{"set at every scope and deployed", r.setUp},
				{"read back every way", r.readBack},
				{"error paths", r.errorPaths},
				{"the agent gets it", r.agentGetsIt},
				{"a container prints it", r.containerPrintsIt},
				{"a value swapped into another row", r.swap},
				{"wrong master key", r.wrongKey},
				{"no master key", r.noKey},
				{"rotation", r.rotation},
			}
			for _, st := range steps {
				if !t.Run(st.name, st.fn) {
					break // later steps build on this one
				}
			}
			// Whatever happened above, nothing may have leaked.
			t.Run("nothing leaked", r.nothingLeaked)
			t.Run("a plain variable referencing a secret", func(t *testing.T) { referencedSecret(t, s) })
		})
	}
}

const varFields = `id name scope secret value status statusReason updatedAt`

// variableView is a Variable as the API shows it.
type variableView struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Scope        string  `json:"scope"`
	Secret       bool    `json:"secret"`
	Value        *string `json:"value"`
	Status       string  `json:"status"`
	StatusReason *string `json:"statusReason"`
	UpdatedAt    string  `json:"updatedAt"`
}

func decodeInto[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding into %T: %v\n%s", out, err, b)
	}
	return out
}

// setVariable sets a variable as the owner and returns it as the payload
// shows it. scope is "" (project), "env" or "svc:<service id>".
func (r *canaryRun) setVariable(t *testing.T, env *Env, scope, name, value string, secret bool) variableView {
	t.Helper()
	vars := map[string]any{"p": r.f.ProjectID, "name": name, "value": value, "secret": secret}
	switch {
	case scope == "env":
		vars["e"] = r.f.EnvironmentID
	case strings.HasPrefix(scope, "svc:"):
		vars["s"] = strings.TrimPrefix(scope, "svc:")
	}
	res := env.MustDo(t, r.f.Owner.Token, `mutation($p: ID!, $e: ID, $s: ID, $name: String!, $value: String!, $secret: Boolean) {
		setVariable(input: {projectId: $p, environmentId: $e, serviceId: $s, name: $name, value: $value, secret: $secret}) {
			variable { `+varFields+` } userErrors { field message code } } }`, vars)
	v := decodeInto[variableView](t, res.Get("setVariable.variable"))
	if v.ID == "" {
		t.Fatalf("setVariable %s: no variable in %s", name, res.Body)
	}
	if v.Secret != secret || (secret && v.Value != nil) || v.Status != "SET" || v.UpdatedAt == "" {
		t.Errorf("setVariable %s answers secret %v, value present %v, status %s, updatedAt %q; want secret %v, a value only if plain, SET, a time",
			name, v.Secret, v.Value != nil, v.Status, v.UpdatedAt, secret)
	}
	return v
}

func (r *canaryRun) setUp(t *testing.T) {
	r.f = r.env.NewFixture(t)
	c := r.canary
	r.secrets = map[string]string{
		"PROJECT_TOKEN": c + "-project", "ENV_TOKEN": c + "-env", "SVC_TOKEN": c + "-svc",
		"API_TOKEN": c + "-api", "WORKER_TOKEN": c + "-worker",
	}
	r.ids["PROJECT_TOKEN"] = r.setVariable(t, r.env, "", "PROJECT_TOKEN", r.secrets["PROJECT_TOKEN"], true).ID
	r.ids["REGION"] = r.setVariable(t, r.env, "", "REGION", "eu-west", false).ID
	r.ids["ENV_TOKEN"] = r.setVariable(t, r.env, "env", "ENV_TOKEN", r.secrets["ENV_TOKEN"], true).ID
	// updateService replaces the service-scope variables, so it comes
	// before setVariable at that scope.
	r.f.MustDo(t, `mutation($s: ID!, $v: String!) { updateService(input: {serviceId: $s, variables: [
		{name: "LOG_LEVEL", value: "info"}, {name: "SVC_TOKEN", value: $v, secret: true}]}) { service { id } userErrors { field message code } } }`,
		map[string]any{"s": r.f.ServiceID, "v": r.secrets["SVC_TOKEN"]})
	r.ids["API_TOKEN"] = r.setVariable(t, r.env, "svc:"+r.f.ServiceID, "API_TOKEN", r.secrets["API_TOKEN"], true).ID

	res := r.f.MustDo(t, `mutation($p: ID!, $v: String!) { createService(input: {projectId: $p, name: "worker",
		image: "registry.example.com/shop/worker", processes: [{name: "worker", command: ["./worker"], replicas: 1}],
		variables: [{name: "WORKER_TOKEN", value: $v, secret: true}]}) { service { id } userErrors { field message code } } }`,
		map[string]any{"p": r.f.ProjectID, "v": r.secrets["WORKER_TOKEN"]})
	r.workerID = res.Str("createService.service.id")
	r.deploy(t, r.workerID, r.f.EnvironmentID)

	// A project with no secret, on the same cluster: what a missing key
	// must leave alone.
	r.staticProject = r.f.NewProject(t)
	r.f.MustDo(t, `mutation($c: ID!) { createNamespaceTarget(input: {clusterId: $c, namespace: "static", labels: [{key: "tier", value: "static"}]}) {
		namespaceTarget { id } userErrors { field message code } } }`, map[string]any{"c": r.f.ClusterID})
	res = r.f.MustDo(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "live",
		clusterSelector: [{key: "env", value: "prod"}, {key: "region", value: "eu"}], namespaceSelector: [{key: "tier", value: "static"}]}) {
		environment { id } userErrors { field message code } } }`,
		map[string]any{"p": r.staticProject})
	staticEnv := res.Str("createEnvironment.environment.id")
	r.staticID = r.f.NewService(t, r.staticProject, "static")
	r.deploy(t, r.staticID, staticEnv)

	for name, vars := range map[string][]variableView{
		"api":    r.variablesOf(t, r.env, r.f.ServiceID),
		"worker": r.variablesOf(t, r.env, r.workerID),
	} {
		for _, v := range vars {
			r.ids[v.Name] = v.ID
		}
		if len(vars) == 0 {
			t.Fatalf("service %s has no variables", name)
		}
	}
	for name := range r.secrets {
		if r.ids[name] == "" {
			t.Fatalf("secret %s was not stored", name)
		}
	}
}

func (r *canaryRun) deploy(t *testing.T, svc, env string) {
	t.Helper()
	r.f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
		deployment { id } userErrors { field message code } } }`,
		map[string]any{"s": svc, "e": env, "d": Digest(r.env.Next() + 1000)})
}

// variablesOf reads the variables set at the scope of a project,
// environment or service.
func (r *canaryRun) variablesOf(t *testing.T, env *Env, id string) []variableView {
	t.Helper()
	res := env.MustDo(t, r.f.Owner.Token, `query($id: ID!) { node(id: $id) {
		... on Project { variables { `+varFields+` } }
		... on Environment { variables { `+varFields+` } }
		... on Service { variables { `+varFields+` } } } }`, map[string]any{"id": id})
	if res.Get("node") == nil {
		t.Fatalf("node(%s) is null: %s", id, res.Body)
	}
	return decodeInto[[]variableView](t, res.Get("node.variables"))
}

// everyVariable reads every variable of the scenario through the scopes
// and through node(id:), and checks both agree.
func (r *canaryRun) everyVariable(t *testing.T, env *Env) map[string]variableView {
	t.Helper()
	out := map[string]variableView{}
	for _, scope := range []string{r.f.ProjectID, r.f.EnvironmentID, r.f.ServiceID, r.workerID} {
		for _, v := range r.variablesOf(t, env, scope) {
			out[v.Name] = v
		}
	}
	for name, id := range r.ids {
		res := env.MustDo(t, r.f.Owner.Token, `query($id: ID!) { node(id: $id) { ... on Variable { `+varFields+` } } }`, map[string]any{"id": id})
		got := decodeInto[variableView](t, res.Get("node"))
		if !reflect.DeepEqual(got, out[name]) {
			t.Errorf("variable %s: node(id:) shows %+v, its scope shows %+v", name, got, out[name])
		}
	}
	if len(out) != len(r.ids) {
		t.Errorf("read %d variables, want the %d of the scenario", len(out), len(r.ids))
	}
	return out
}

func (r *canaryRun) readBack(t *testing.T) {
	for name, v := range r.everyVariable(t, r.env) {
		_, secret := r.secrets[name]
		switch {
		case v.Secret != secret:
			t.Errorf("%s: secret %v, want %v", name, v.Secret, secret)
		case secret && v.Value != nil:
			t.Errorf("%s: a secret shows a value (%d bytes), want null", name, len(*v.Value))
		case !secret && v.Value == nil:
			t.Errorf("%s: a plain variable shows no value", name)
		}
		if v.Status != "SET" || v.StatusReason != nil {
			t.Errorf("%s: status %s (%s), want SET with no reason", name, v.Status, orNull(v.StatusReason))
		}
		if v.UpdatedAt == "" {
			t.Errorf("%s: no updatedAt", name)
		}
	}

	// The redacted desired state, as a tenant admin sees it.
	st := r.shownState(t, r.env)
	svcs, held := servicesOf(st.State), heldOf(st.State)
	if len(held) != 0 {
		t.Errorf("held services %v, want none", held)
	}
	for svc, secrets := range secretsNeeded {
		got, ok := svcs[svc]
		if !ok {
			t.Errorf("desired state lacks service %s", svc)
			continue
		}
		for _, name := range secrets {
			ev, ok := envVar(got, name)
			switch {
			case !ok:
				t.Errorf("desired state of %s lacks variable %s", svc, name)
			case ev.Value != desired.Redacted || !ev.Secret || ev.Version == "":
				t.Errorf("desired state of %s shows %s as value %d bytes, secret %v, version %q; want %q, secret, a version",
					svc, name, len(ev.Value), ev.Secret, ev.Version, desired.Redacted)
			}
		}
	}
	if ev, _ := envVar(svcs["api"], "REGION"); ev.Value != "eu-west" {
		t.Errorf("desired state shows plain REGION as %q, want %q", ev.Value, "eu-west")
	}
	// Only admins read it at all.
	res := r.env.Do(t, r.f.Users[Viewer].Token, `query($c: ID!) { node(id: $c) { ... on Cluster { desiredState } } }`, map[string]any{"c": r.f.ClusterID})
	if codes := res.ErrorCodes(); !slices.Equal(codes, []string{"FORBIDDEN"}) {
		t.Errorf("viewer reading desiredState: codes %v, want [FORBIDDEN]", codes)
	}

	// The audit trail names the secrets without their values.
	res = r.f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 100) { nodes { action targetId details } } } } }`,
		map[string]any{"t": r.f.TenantID})
	events := decodeInto[[]auditEvent](t, res.Get("node.auditEvents.nodes"))
	named := map[string]bool{}
	for _, e := range events {
		switch e.Action {
		case "variable.set":
			if e.Details["secret"] == true {
				named[fmt.Sprint(e.Details["name"])] = true
			}
		case "service.update", "service.create":
			names, _ := e.Details["variableNames"].([]any)
			for _, n := range names {
				named[fmt.Sprint(n)] = true
			}
		}
	}
	for name := range r.secrets {
		if !named[name] {
			t.Errorf("no audit event names secret %s", name)
		}
	}

	// A project viewer reads the variables too, and no more of them.
	res = r.env.MustDo(t, r.f.Users[Viewer].Token, `query($id: ID!) { node(id: $id) { ... on Service { variables { `+varFields+` } } } }`,
		map[string]any{"id": r.f.ServiceID})
	for _, v := range decodeInto[[]variableView](t, res.Get("node.variables")) {
		if v.Secret && (v.Value != nil || v.Status != "SET") {
			t.Errorf("viewer reads secret %s as status %s, value present %v; want SET, null", v.Name, v.Status, v.Value != nil)
		}
	}
}

// orNull shows an optional string.
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// errorPaths feeds the canary to every refusal: each must refuse, and
// none may quote it (checked with everything else in nothingLeaked).
func (r *canaryRun) errorPaths(t *testing.T) {
	c := r.canary
	before := r.f.AuditCount(t)
	setVar := `mutation($p: ID!, $e: ID, $s: ID, $name: String!, $value: String!) {
		setVariable(input: {projectId: $p, environmentId: $e, serviceId: $s, name: $name, value: $value, secret: true}) {
			variable { id } userErrors { field message code } } }`
	cases := []struct {
		name  string
		token string
		query string
		vars  map[string]any
		field string // the payload whose userErrors count; "" when an error is wanted
		code  string
	}{
		{"an invalid name", r.f.Owner.Token, setVar, map[string]any{"p": r.f.ProjectID, "name": "1-BAD", "value": c}, "setVariable", "BAD_USER_INPUT"},
		{"a value too long", r.f.Owner.Token, setVar, map[string]any{"p": r.f.ProjectID, "name": "LONG", "value": strings.Repeat(c, 40<<10/len(c))}, "setVariable", "BAD_USER_INPUT"},
		{"two scopes at once", r.f.Owner.Token, setVar, map[string]any{"p": r.f.ProjectID, "e": r.f.EnvironmentID, "s": r.f.ServiceID, "name": "BOTH", "value": c}, "setVariable", "BAD_USER_INPUT"},
		{"a service of another project", r.f.Owner.Token, setVar, map[string]any{"p": r.f.ProjectID, "s": r.staticID, "name": "ELSEWHERE", "value": c}, "setVariable", "BAD_USER_INPUT"},
		{"a viewer", r.f.Users[Viewer].Token, setVar, map[string]any{"p": r.f.ProjectID, "name": "PROJECT_TOKEN", "value": c}, "", "FORBIDDEN"},
		{"an editor at project scope", r.f.Users[Editor].Token, setVar, map[string]any{"p": r.f.ProjectID, "name": "PROJECT_TOKEN", "value": c}, "", "FORBIDDEN"},
		{"a member outside the project", r.f.Users[Member].Token, setVar, map[string]any{"p": r.f.ProjectID, "s": r.f.ServiceID, "name": "API_TOKEN", "value": c}, "", "NOT_FOUND"},
		{"no token", "", setVar, map[string]any{"p": r.f.ProjectID, "name": "PROJECT_TOKEN", "value": c}, "", "UNAUTHENTICATED"},
		{"a name given twice", r.f.Owner.Token, `mutation($s: ID!, $v: String!) { updateService(input: {serviceId: $s, variables: [
			{name: "TWICE", value: $v, secret: true}, {name: "TWICE", value: $v, secret: true}]}) { service { id } userErrors { field message code } } }`,
			map[string]any{"s": r.f.ServiceID, "v": c}, "updateService", "BAD_USER_INPUT"},
		{"a duplicate service", r.f.Owner.Token, `mutation($p: ID!, $v: String!) { createService(input: {projectId: $p, name: "worker",
			image: "registry.example.com/shop/worker", processes: [{name: "worker"}],
			variables: [{name: "WORKER_TOKEN", value: $v, secret: true}]}) { service { id } userErrors { field message code } } }`,
			map[string]any{"p": r.f.ProjectID, "v": c}, "createService", "CONFLICT"},
		{"a viewer updating a service", r.f.Users[Viewer].Token, `mutation($s: ID!, $v: String!) { updateService(input: {serviceId: $s,
			variables: [{name: "API_TOKEN", value: $v, secret: true}]}) { service { id } userErrors { field message code } } }`,
			map[string]any{"s": r.f.ServiceID, "v": c}, "", "FORBIDDEN"},
	}
	for _, tc := range cases {
		res := r.env.Do(t, tc.token, tc.query, tc.vars)
		var got []string
		if tc.field != "" {
			for _, ue := range res.UserErrors(tc.field) {
				got = append(got, ue.Code)
			}
		} else {
			got = res.ErrorCodes()
		}
		if len(got) == 0 || got[0] != tc.code {
			t.Errorf("%s: codes %v (errors %v), want %s first", tc.name, got, res.ErrorCodes(), tc.code)
		}
	}
	if after := r.f.AuditCount(t); after != before {
		t.Errorf("refused changes wrote %d audit events, want none", after-before)
	}
	if got := r.everyVariable(t, r.env); len(got) != len(r.ids) {
		t.Errorf("after refused changes: %d variables, want %d", len(got), len(r.ids))
	}
}

// shownState is Cluster.desiredState as a tenant admin reads it.
type shownState struct {
	desired.State
	Revision int64  `json:"revision"`
	Hash     string `json:"hash"`
}

func (r *canaryRun) shownState(t *testing.T, env *Env) shownState {
	t.Helper()
	res := env.MustDo(t, r.f.Owner.Token, `query($c: ID!) { node(id: $c) { ... on Cluster { desiredState } } }`, map[string]any{"c": r.f.ClusterID})
	return decodeInto[shownState](t, res.Get("node.desiredState"))
}

func servicesOf(st desired.State) map[string]desired.Service {
	out := map[string]desired.Service{}
	for _, ns := range st.Namespaces {
		for _, s := range ns.Services {
			out[s.Name] = s
		}
	}
	return out
}

func heldOf(st desired.State) map[string]desired.Held {
	out := map[string]desired.Held{}
	for _, ns := range st.Namespaces {
		for _, h := range ns.Held {
			out[h.Name] = h
		}
	}
	return out
}

func envVar(s desired.Service, name string) (desired.EnvVar, bool) {
	for _, ev := range s.Env {
		if ev.Name == name {
			return ev, true
		}
	}
	return desired.EnvVar{}, false
}

// agentState compiles the fixture cluster's desired state unredacted, as
// delivery to its agent does (core.AgentSide.State), with secrets
// opened by box; checkHash compares its hash with the one the plane stored
// at its last recompile.
func (r *canaryRun) agentState(t *testing.T, box *seal.Box, checkHash bool) desired.State {
	t.Helper()
	ctx := t.Context()
	cid, err := gid.Decode[model.ClusterID](gid.Cluster, r.f.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	plane, err := control.New(r.env.Store, slog.New(slog.NewTextHandler(io.Discard, nil)), core.WithBox(box))
	if err != nil {
		t.Fatal(err)
	}
	side, err := plane.Agents.AgentSideOf(ctx, cid)
	if err != nil {
		t.Fatal(err)
	}
	_, stp, err := side.State(ctx)
	if err != nil {
		t.Fatalf("compiling the delivery state: %v", err)
	}
	st := *stp
	cluster, err := store.Clusters.Get(ctx, r.env.Store.Q(), cid)
	if err != nil {
		t.Fatal(err)
	}
	if checkHash && st.Hash() != cluster.DesiredHash {
		t.Errorf("the delivery state hashes to %s, the plane stored %s", st.Hash(), cluster.DesiredHash)
	}
	return st
}

// checkDelivered checks the agent gets every secret opened, in the
// services that need it and only there.
func (r *canaryRun) checkDelivered(t *testing.T, st desired.State) {
	t.Helper()
	svcs := servicesOf(st)
	if held := heldOf(st); len(held) != 0 {
		t.Errorf("agent state holds %v, want nothing held", held)
	}
	for svc, secrets := range secretsNeeded {
		s, ok := svcs[svc]
		if !ok {
			t.Errorf("agent state lacks service %s", svc)
			continue
		}
		for name, want := range r.secrets {
			ev, ok := envVar(s, name)
			switch {
			case slices.Contains(secrets, name) && (!ok || ev.Value != want):
				t.Errorf("agent state of %s: %s present %v, %d bytes; want the secret's value (%d bytes)", svc, name, ok, len(ev.Value), len(want))
			case !slices.Contains(secrets, name) && ok:
				t.Errorf("agent state of %s has %s, which is not its secret", svc, name)
			}
		}
	}
}

func (r *canaryRun) agentGetsIt(t *testing.T) {
	st := r.agentState(t, seal.NewBox(&r.key), true)
	r.checkDelivered(t, st)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), r.canary) {
		t.Errorf("the canary is nowhere in the state an agent gets")
	}
}

// containerPrintsIt has the worker print its secrets (its own, the
// environment's and the project's): the lines are stored with each value
// replaced, and show so; "nothing leaked" then finds the canary in no
// table.
func (r *canaryRun) containerPrintsIt(t *testing.T) {
	agent, _ := connectStageAgent(t, r.f, "prod-eu")
	s := newLogStream(t, r.f, r.workerID, r.f.EnvironmentID, "worker-worker-1")
	agent.logs(sent{s: s, lines: printed(time.Now().Add(-time.Second),
		"starting with token="+r.secrets["WORKER_TOKEN"],
		"project "+r.secrets["PROJECT_TOKEN"]+", env "+r.secrets["ENV_TOKEN"]+".")})
	lines, _ := readLogs(t, r.f, r.f.Owner.Token, r.workerID, r.f.EnvironmentID, nil)
	want := []string{"starting with token=[redacted]", "project [redacted], env [redacted]."}
	if got := texts(lines); !slices.Equal(got, want) {
		t.Errorf("the worker's lines show %q, want %q", got, want)
	}
}

// touch makes a change in the tenant, so that every cluster recompiles.
func (r *canaryRun) touch(t *testing.T, env *Env) {
	t.Helper()
	r.ids["TOUCHED"] = r.setVariable(t, env, "", "TOUCHED", fmt.Sprint(r.env.Next()), false).ID
}

// sealed reads a variable's stored value.
func (r *canaryRun) sealed(t *testing.T, name string) string {
	t.Helper()
	id, err := gid.Decode[model.VariableID](gid.Variable, r.ids[name])
	if err != nil {
		t.Fatal(err)
	}
	v, err := store.Variables.Get(t.Context(), r.env.Store.Q(), id)
	if err != nil {
		t.Fatalf("reading variable %s: %v", name, err)
	}
	return v.Value
}

// storeSealed writes a secret variable's stored value, as an attacker with
// the database would, into its row and every version of it.
func (r *canaryRun) storeSealed(t *testing.T, name, value string) {
	t.Helper()
	id, err := gid.Decode[model.VariableID](gid.Variable, r.ids[name])
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.env.Store.Q().Exec(t.Context(), `UPDATE variables SET value = $1 WHERE id = $2`, value, string(id))
	if err != nil || n != 1 {
		t.Fatalf("writing variable %s: %d rows, %v", name, n, err)
	}
	// And the versions of it releases froze, which is what they run.
	if n, err = r.env.Store.Q().Exec(t.Context(), `UPDATE secret_versions SET sealed = $1 WHERE variable_id = $2`, value, string(id)); err != nil || n == 0 {
		t.Fatalf("writing the versions of variable %s: %d rows, %v", name, n, err)
	}
}

func (r *canaryRun) swap(t *testing.T) {
	own := r.sealed(t, "WORKER_TOKEN")
	r.storeSealed(t, "WORKER_TOKEN", r.sealed(t, "API_TOKEN"))

	vars := r.everyVariable(t, r.env)
	for name, v := range vars {
		wantStatus := "SET"
		if name == "WORKER_TOKEN" {
			wantStatus = "UNREADABLE"
		}
		if v.Status != wantStatus {
			t.Errorf("%s: status %s, want %s", name, v.Status, wantStatus)
		}
	}
	if w := vars["WORKER_TOKEN"]; w.StatusReason == nil || *w.StatusReason != seal.ErrUnreadable.Error() || w.Value != nil {
		t.Errorf("swapped WORKER_TOKEN: reason %s, value present %v; want %q and no value", orNull(w.StatusReason), w.Value != nil, seal.ErrUnreadable)
	}

	r.touch(t, r.env)
	st := r.shownState(t, r.env)
	held, svcs := heldOf(st.State), servicesOf(st.State)
	if h, ok := held["worker"]; !ok || !strings.Contains(h.Reason, "WORKER_TOKEN") || !strings.Contains(h.Reason, seal.ErrUnreadable.Error()) {
		t.Errorf("worker held %v with reason %q; want held for WORKER_TOKEN not opening", ok, h.Reason)
	}
	if _, ok := svcs["worker"]; ok {
		t.Errorf("worker still runs in the desired state although its secret does not open")
	}
	for _, name := range []string{"api", "static"} {
		if _, ok := svcs[name]; !ok {
			t.Errorf("%s is gone from the desired state; only worker secretsNeeded the swapped secret", name)
		}
		if h, ok := held[name]; ok {
			t.Errorf("%s is held (%s); only worker secretsNeeded the swapped secret", name, h.Reason)
		}
	}
	agent := r.agentState(t, seal.NewBox(&r.key), true)
	if _, ok := servicesOf(agent)["worker"]; ok {
		t.Errorf("the agent would run worker with a secret that does not open")
	}
	if ev, _ := envVar(servicesOf(agent)["api"], "API_TOKEN"); ev.Value != r.secrets["API_TOKEN"] {
		t.Errorf("api lost its own API_TOKEN to the swap")
	}

	// Putting the row's own value back heals it: the binding was the only
	// thing wrong.
	r.storeSealed(t, "WORKER_TOKEN", own)
	r.touch(t, r.env)
	if held := heldOf(r.shownState(t, r.env).State); len(held) != 0 {
		t.Errorf("after restoring the value, held %v, want none", held)
	}
	r.checkDelivered(t, r.agentState(t, seal.NewBox(&r.key), true))
}

// checkUnreadable checks a plane that cannot open the secrets: it serves,
// shows plain values, reports each secret UNREADABLE with reason, and
// holds exactly the services needing one after a recompile.
func (r *canaryRun) checkUnreadable(t *testing.T, env *Env, box *seal.Box) {
	t.Helper()
	if _, ok := env.Authenticates(t, r.f.Owner.Token); !ok {
		t.Fatalf("the owner's token no longer works")
	}
	for name, v := range r.everyVariable(t, env) {
		if _, secret := r.secrets[name]; !secret {
			if v.Status != "SET" || v.Value == nil || *v.Value == "" {
				t.Errorf("plain %s: status %s, value %s; want SET with its value", name, v.Status, orNull(v.Value))
			}
			continue
		}
		if v.Status != "UNREADABLE" || v.StatusReason == nil || *v.StatusReason != seal.ErrUnknownKey.Error() {
			t.Errorf("secret %s: status %s, reason %s; want UNREADABLE, %q", name, v.Status, orNull(v.StatusReason), seal.ErrUnknownKey)
		}
		if v.Value != nil {
			t.Errorf("secret %s shows a value (%d bytes), want null", name, len(*v.Value))
		}
	}

	r.touch(t, env)
	st := r.shownState(t, env)
	held, svcs := heldOf(st.State), servicesOf(st.State)
	for svc, secrets := range secretsNeeded {
		h, isHeld := held[svc]
		_, runs := svcs[svc]
		if len(secrets) == 0 {
			if isHeld || !runs {
				t.Errorf("%s secretsNeeded no secret: held %v (%s), runs %v; want it running", svc, isHeld, h.Reason, runs)
			}
			continue
		}
		if !isHeld || runs {
			t.Errorf("%s secretsNeeded a secret: held %v, runs %v; want held", svc, isHeld, runs)
			continue
		}
		named := slices.ContainsFunc(secrets, func(n string) bool { return strings.Contains(h.Reason, "secret "+n+" ") })
		if !named || !strings.Contains(h.Reason, seal.ErrUnknownKey.Error()) {
			t.Errorf("%s held for %q; want the reason to name one of its secrets %v and the missing master key", svc, h.Reason, secrets)
		}
	}
	agent := r.agentState(t, box, true)
	for _, svc := range servicesOf(agent) {
		for _, ev := range svc.Env {
			if ev.Secret {
				t.Errorf("the agent would get secret %s of %s (%d bytes) from a plane that cannot open it", ev.Name, svc.Name, len(ev.Value))
			}
		}
	}
}

func (r *canaryRun) wrongKey(t *testing.T) {
	wrong := newMasterKey(t)
	box := seal.NewBox(&wrong)
	env := r.env.Reopen(t, box, r.logs, r.rec.Wrap)
	r.checkUnreadable(t, env, box)

	// A reseal under the wrong key counts the values and touches none.
	before := map[string]string{}
	for name := range r.secrets {
		before[name] = r.sealed(t, name)
	}
	rep, err := env.Plane.Delivery.Reseal(t.Context())
	if err != nil {
		t.Fatalf("Reseal under the wrong key: %v", err)
	}
	if want := (delivery.ResealReport{Unreadable: len(r.secrets)}); rep.Resealed != want.Resealed || rep.Current != want.Current ||
		rep.Unreadable != want.Unreadable || rep.Versions.Unreadable < len(r.secrets) || rep.Versions != (delivery.ResealCount{Unreadable: rep.Versions.Unreadable}) {
		t.Errorf("Reseal under the wrong key: %+v, want %+v", rep, want)
	}
	for name, v := range before {
		if got := r.sealed(t, name); got != v {
			t.Errorf("Reseal under the wrong key rewrote %s", name)
		}
	}
}

func (r *canaryRun) noKey(t *testing.T) {
	box := seal.NewBox(nil)
	env := r.env.Reopen(t, box, r.logs, r.rec.Wrap)
	r.checkUnreadable(t, env, box)

	// Setting a secret secretsNeeded the key; the caller is told why.
	for _, tc := range []struct {
		field, query string
		vars         map[string]any
	}{
		{"setVariable", `mutation($p: ID!, $v: String!) { setVariable(input: {projectId: $p, name: "NEW_TOKEN", value: $v, secret: true}) {
			variable { id } userErrors { field message code } } }`, map[string]any{"p": r.f.ProjectID, "v": r.canary}},
		{"updateService", `mutation($s: ID!, $v: String!) { updateService(input: {serviceId: $s, variables: [
			{name: "LOG_LEVEL", value: "info"}, {name: "SVC_TOKEN", value: $v, secret: true}]}) { service { id } userErrors { field message code } } }`,
			map[string]any{"s": r.f.ServiceID, "v": r.canary}},
	} {
		res := env.Do(t, r.f.Owner.Token, tc.query, tc.vars)
		ue := res.UserErrors(tc.field)
		if len(res.Errors) > 0 || len(ue) != 1 || ue[0].Code != "BAD_USER_INPUT" || !strings.Contains(ue[0].Message, "master key") {
			t.Errorf("%s of a secret with no master key: errors %v, userErrors %+v; want one BAD_USER_INPUT about the master key",
				tc.field, res.ErrorCodes(), ue)
		}
	}
	if _, err := env.Plane.Delivery.Reseal(t.Context()); !errors.Is(err, seal.ErrNoKey) {
		t.Errorf("Reseal with no master key: %v, want %v", err, seal.ErrNoKey)
	}
	if got := r.everyVariable(t, env); len(got) != len(r.ids) {
		t.Errorf("after refused secrets: %d variables, want %d", len(got), len(r.ids))
	}
}

func (r *canaryRun) rotation(t *testing.T) {
	next := newMasterKey(t)
	rotating := seal.NewBox(&next, r.key) // NEBULA_MASTER_KEYS_OLD holds the first key
	env := r.env.Reopen(t, rotating, r.logs, r.rec.Wrap)
	for name, v := range r.everyVariable(t, env) {
		if v.Status != "SET" {
			t.Errorf("%s with the old key kept for opening: status %s (%s), want SET", name, v.Status, orNull(v.StatusReason))
		}
	}
	r.touch(t, env)
	if held := heldOf(r.shownState(t, env).State); len(held) != 0 {
		t.Errorf("with the old key kept for opening, held %v, want none", held)
	}
	r.checkDelivered(t, r.agentState(t, rotating, true))

	rep, err := env.Plane.Delivery.Reseal(t.Context())
	if err != nil {
		t.Fatalf("Reseal: %v", err)
	}
	if want := (delivery.ResealReport{Resealed: len(r.secrets)}); rep.Resealed != want.Resealed || rep.Current != want.Current ||
		rep.Unreadable != want.Unreadable || rep.Versions.Resealed < len(r.secrets) || rep.Versions != (delivery.ResealCount{Resealed: rep.Versions.Resealed}) {
		t.Errorf("first Reseal: %+v, want %+v", rep, want)
	}
	for name := range r.secrets {
		sealed := r.sealed(t, name)
		if id, err := seal.KeyOf(sealed); err != nil || id != next.ID() {
			t.Errorf("%s after Reseal is under key %q (%v), want the new primary %q", name, id, err, next.ID())
		}
	}
	rep, err = env.Plane.Delivery.Reseal(t.Context())
	if err != nil {
		t.Fatalf("second Reseal: %v", err)
	}
	if want := (delivery.ResealReport{Current: len(r.secrets)}); rep.Resealed != want.Resealed || rep.Current != want.Current ||
		rep.Unreadable != want.Unreadable || rep.Versions.Current < len(r.secrets) || rep.Versions != (delivery.ResealCount{Current: rep.Versions.Current}) {
		t.Errorf("second Reseal: %+v, want %+v", rep, want)
	}
	res := env.MustDo(t, r.f.Owner.Token, `query($t: ID!) { node(id: $t) { ... on Tenant {
		auditEvents(first: 10, filter: {action: "secrets.reseal"}) { nodes { action details } } } } }`, map[string]any{"t": r.f.TenantID})
	events := decodeInto[[]auditEvent](t, res.Get("node.auditEvents.nodes"))
	if len(events) != 1 || fmt.Sprint(events[0].Details["resealed"]) != fmt.Sprint(len(r.secrets)) || events[0].Details["primaryKey"] != next.ID() {
		t.Errorf("reseal audit events %+v, want one with resealed %d, primaryKey %s", events, len(r.secrets), next.ID())
	}

	// The old key can go now.
	only := seal.NewBox(&next)
	env = r.env.Reopen(t, only, r.logs, r.rec.Wrap)
	for name, v := range r.everyVariable(t, env) {
		if v.Status != "SET" {
			t.Errorf("%s with only the new key: status %s (%s), want SET", name, v.Status, orNull(v.StatusReason))
		}
	}
	r.touch(t, env)
	if held := heldOf(r.shownState(t, env).State); len(held) != 0 {
		t.Errorf("with only the new key, held %v, want none", held)
	}
	r.checkDelivered(t, r.agentState(t, only, true))
	if held := heldOf(r.agentState(t, seal.NewBox(&r.key), false)); len(held) != 2 {
		t.Errorf("the retired key alone still opens the resealed secrets: held %v, want api and worker", held)
	}
}

// hideCanary shows where the canary sits in s without showing it.
func hideCanary(s, canary string) string {
	i := strings.Index(s, canary)
	lo, hi := max(0, i-120), min(len(s), i+len(canary)+120)
	return strings.ReplaceAll(s[lo:hi], canary, "<CANARY>")
}

func (r *canaryRun) nothingLeaked(t *testing.T) {
	c := r.canary
	responses := r.rec.All()
	if len(responses) < 20 {
		t.Errorf("recorded %d responses; the recorder is not wired", len(responses))
	}
	for i, body := range responses {
		if strings.Contains(body, c) {
			t.Errorf("response %d carries the canary: …%s…", i, hideCanary(body, c))
		}
		if strings.Contains(body, `"code":"INTERNAL"`) {
			t.Errorf("response %d is an internal error: %s", i, body)
		}
	}
	lines := r.logs.Lines()
	requests := 0
	for _, l := range lines {
		if strings.Contains(l, c) {
			t.Errorf("log line carries the canary: %s", hideCanary(l, c))
		}
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("error logged: %s", l)
		}
		if strings.Contains(l, "msg=request") {
			requests++
		}
	}
	if requests < len(responses)/2 {
		t.Errorf("%d request log lines for %d responses; the Debug log is not captured", requests, len(responses))
	}

	// The rows named in issue 3, then every text in every table.
	ctx := t.Context()
	q := r.env.Store.Q()
	scan := func(what, sql string, fn func(string)) {
		t.Helper()
		rows, err := q.Query(ctx, sql)
		if err != nil {
			t.Fatalf("reading %s: %v", what, err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatalf("reading %s: %v", what, err)
			}
			n++
			if strings.Contains(s, c) {
				t.Errorf("%s carries the canary: …%s…", what, hideCanary(s, c))
			}
			if fn != nil {
				fn(s)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("reading %s: %v", what, err)
		}
		if n == 0 {
			t.Errorf("no rows in %s", what)
		}
	}
	scan("audit_events.details", `SELECT details FROM audit_events`, nil)
	scan("cluster_revisions.state", `SELECT state FROM cluster_revisions`, nil)
	scan("variables.value of secrets", `SELECT value FROM variables WHERE secret`, func(v string) {
		if !strings.HasPrefix(v, "v1:") {
			t.Errorf("a secret is stored unsealed (%d bytes, not starting with v1:)", len(v))
		}
	})

	for _, where := range columnsCarrying(t, r.env, c) {
		t.Errorf("%s carries the canary", where)
	}
}

// columnsCarrying names every column of every table of the env's store
// (as text) that holds needle, with how many rows do.
func columnsCarrying(t *testing.T, env *Env, needle string) []string {
	t.Helper()
	ctx := t.Context()
	q := env.Store.Q()
	columns := `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`
	if q.Dialect().Name == "sqlite" {
		columns = `SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`
	}
	rows, err := q.Query(ctx, columns)
	if err != nil {
		t.Fatalf("listing columns: %v", err)
	}
	var cols [][2]string
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatalf("listing columns: %v", err)
		}
		cols = append(cols, [2]string{tbl, col})
	}
	rows.Close()
	if len(cols) < 20 {
		t.Fatalf("found %d columns; the listing is wrong", len(cols))
	}
	var out []string
	for _, tc := range cols {
		var n int64
		rows, err := q.Query(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %q WHERE CAST(%q AS TEXT) LIKE $1`, tc[0], tc[1]), "%"+needle+"%")
		if err != nil {
			t.Fatalf("searching %s.%s: %v", tc[0], tc[1], err)
		}
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				t.Fatalf("searching %s.%s: %v", tc[0], tc[1], err)
			}
		}
		rows.Close()
		if n > 0 {
			out = append(out, fmt.Sprintf("%d rows of %s.%s", n, tc[0], tc[1]))
		}
	}
	return out
}

// referencedSecret: a plain variable may take a secret in by reference
// (${{ services.api.variables.DB_PASSWORD }}); the value it expands to is
// then as secret as the secret, in the shown state as everywhere.
func referencedSecret(t *testing.T, s StoreOpener) {
	r := &canaryRun{canary: newCanary(), rec: &responseRecorder{}, logs: &syncBuffer{}, key: newMasterKey(t),
		secrets: map[string]string{}, ids: map[string]string{}}
	r.env = NewEnvWithBox(t, s.Open(t), seal.NewBox(&r.key), r.logs, r.rec.Wrap)
	r.f = r.env.NewFixture(t)
	r.secrets["DB_PASSWORD"] = r.canary
	r.setVariable(t, r.env, "svc:"+r.f.ServiceID, "DB_PASSWORD", r.canary, true)
	res := r.f.MustDo(t, `mutation($p: ID!) { createService(input: {projectId: $p, name: "web",
		image: "registry.example.com/shop/web", processes: [{name: "web", port: 8080}],
		variables: [{name: "DSN", value: "postgres://app:${{ services.api.variables.DB_PASSWORD }}@db/shop"}]}) {
			service { id } userErrors { field message code } } }`, map[string]any{"p": r.f.ProjectID})
	r.deploy(t, res.Str("createService.service.id"), r.f.EnvironmentID)

	st := r.shownState(t, r.env)
	dsn, ok := envVar(servicesOf(st.State)["web"], "DSN")
	if !ok {
		t.Fatalf("the desired state lacks web's DSN: held %v", heldOf(st.State))
	}
	if dsn.Value != desired.Redacted || !dsn.Secret {
		t.Errorf("web's DSN shows as secret %v, %d bytes; it takes in a secret, want it %q like one", dsn.Secret, len(dsn.Value), desired.Redacted)
	}
	agent := r.agentState(t, seal.NewBox(&r.key), true)
	if got, _ := envVar(servicesOf(agent)["web"], "DSN"); got.Value != "postgres://app:"+r.canary+"@db/shop" {
		t.Errorf("the agent gets web's DSN without the secret in it (%d bytes)", len(got.Value))
	}
	r.nothingLeaked(t)
}
