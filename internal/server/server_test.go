package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

type env struct {
	srv   *httptest.Server
	st    *store.Store
	token string
	logs  *bytes.Buffer
}

func setup(t *testing.T, settings map[string]string) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "nebula.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	plane, err := control.New(st, log)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plane.People.Bootstrap(ctx, "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := settings[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(plane, cfg, log).Handler())
	t.Cleanup(srv.Close)
	return &env{srv: srv, st: st, token: b.Secret, logs: logs}
}

type gqlResponse struct {
	Status int
	Data   map[string]any
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	}
	Extensions map[string]any
}

func (e *env) post(t *testing.T, token string, body []byte) gqlResponse {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	out.Status = resp.StatusCode
	return out
}

func (e *env) query(t *testing.T, q string) gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q})
	return e.post(t, e.token, body)
}

func codeOf(t *testing.T, r gqlResponse) string {
	t.Helper()
	if len(r.Errors) == 0 {
		t.Fatalf("got no error, want one (data %v)", r.Data)
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

func TestHealthReadyMetrics(t *testing.T) {
	e := setup(t, nil)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: got %d, want 200", path, resp.StatusCode)
		}
	}
	e.query(t, `{ viewer { user { email } } }`)
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`nebula_http_requests_total{code="200",route="POST /graphql"}`, `nebula_graphql_operations_total{outcome="ok",type="query"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	e.st.Close()
	resp, err = http.Get(e.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with the database closed: got %d, want 503", resp.StatusCode)
	}
}

func TestUnauthenticated(t *testing.T) {
	e := setup(t, nil)
	body := []byte(`{"query":"{ viewer { user { email } } }"}`)
	for name, tok := range map[string]string{"missing": "", "garbage": "hello", "unknown": "nbt_0000000000000000000000000000000000000000000"} {
		r := e.post(t, tok, body)
		if r.Status != http.StatusUnauthorized || codeOf(t, r) != "UNAUTHENTICATED" {
			t.Errorf("%s token: got %d %v, want 401 UNAUTHENTICATED", name, r.Status, r.Errors)
		}
	}
	if strings.Contains(e.logs.String(), e.token) {
		t.Error("the log contains the admin token")
	}
}

func TestLimits(t *testing.T) {
	e := setup(t, map[string]string{"NEBULA_MAX_DEPTH": "6", "NEBULA_MAX_QUERY_TOKENS": "200", "NEBULA_MAX_COMPLEXITY": "5000", "NEBULA_MAX_BODY_BYTES": "4096"})
	t.Run("cost reported", func(t *testing.T) {
		r := e.query(t, `{ viewer { user { email } } }`)
		cost, ok := r.Extensions["cost"].(map[string]any)
		if !ok || cost["complexity"].(float64) < 1 || cost["limit"].(float64) != 5000 {
			t.Errorf("extensions.cost = %v, want complexity and limit 5000", r.Extensions)
		}
	})
	cases := []struct {
		name, query, want string
	}{
		{"depth", `{ viewer { tenants { nodes { projects { nodes { environments { nodes { id } } } } } } } }`, "depth"},
		{"complexity", `{ viewer { tenants(first: 100) { nodes { projects(first: 100) { nodes { id } } } } } }`, "complexity"},
		{"tokens", "{ viewer { user { " + strings.Repeat("email ", 300) + "} } }", "token limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.query(t, c.query)
			if got := codeOf(t, r); got != "BAD_USER_INPUT" {
				t.Errorf("code = %s, want BAD_USER_INPUT", got)
			}
			if !strings.Contains(strings.ToLower(r.Errors[0].Message), c.want) {
				t.Errorf("message %q does not mention %q", r.Errors[0].Message, c.want)
			}
			if r.Data["viewer"] != nil {
				t.Errorf("got data %v for a refused query", r.Data)
			}
		})
	}
	t.Run("body", func(t *testing.T) {
		big, _ := json.Marshal(map[string]any{"query": "{ viewer { user { email } } }", "variables": map[string]string{"pad": strings.Repeat("x", 8000)}})
		r := e.post(t, e.token, big)
		if r.Status != http.StatusRequestEntityTooLarge || codeOf(t, r) != "BAD_USER_INPUT" {
			t.Errorf("got %d %v, want 413 BAD_USER_INPUT", r.Status, r.Errors)
		}
	})
}

func TestIntrospectionSwitch(t *testing.T) {
	for _, on := range []string{"true", "false"} {
		e := setup(t, map[string]string{"NEBULA_INTROSPECTION": on})
		r := e.query(t, `{ __schema { queryType { name } } }`)
		if got := len(r.Errors) == 0; got != (on == "true") {
			t.Errorf("introspection %s: allowed = %v (errors %v)", on, got, r.Errors)
		}
		if on == "false" && codeOf(t, r) != "FORBIDDEN" {
			t.Errorf("introspection off: code %v, want FORBIDDEN", r.Errors)
		}
	}
}

// A panic in a resolver becomes INTERNAL with a request id; the panic
// value stays in the log.
func TestPanicRecovered(t *testing.T) {
	logs := &bytes.Buffer{}
	s := &Server{cfg: config.Config{MaxTokens: 1000, MaxDepth: 10, MaxComplexity: 1000}, metrics: newMetrics(),
		log: slog.New(slog.NewTextHandler(logs, nil))}
	// No plane: the node resolver dereferences it and panics.
	h := s.observe(s.graphQL())
	actor := &authz.Actor{User: &model.User{ID: "u"}, Token: &model.APIToken{TenantID: "t"}}
	req := httptest.NewRequest("POST", "/graphql", strings.NewReader(`{"query":"{ node(id: \"VGVuYW50OnQ\") { id } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(authz.WithActor(req.Context(), actor))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out gqlResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if codeOf(t, out) != "INTERNAL" {
		t.Fatalf("code = %v, want INTERNAL", out.Errors)
	}
	id := rec.Header().Get("X-Request-Id")
	if id == "" || out.Errors[0].Extensions["requestId"] != id || !strings.Contains(out.Errors[0].Message, id) {
		t.Errorf("error %v does not carry request id %q", out.Errors[0], id)
	}
	if strings.Contains(out.Errors[0].Message, "nil pointer") {
		t.Errorf("the panic leaked to the client: %q", out.Errors[0].Message)
	}
	if !strings.Contains(logs.String(), "panic") || !strings.Contains(logs.String(), id) {
		t.Errorf("log lacks the panic and request id: %s", logs)
	}
}

func TestGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{handler: http.NotFoundHandler(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after shutdown, want nil", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

// Requests gqlgen rejects before execution still carry a code.
func TestMalformedRequests(t *testing.T) {
	e := setup(t, nil)
	cases := []struct {
		name, contentType, body string
		status                  int
	}{
		{"invalid JSON", "application/json", `{bad json`, http.StatusBadRequest},
		{"wrong content type", "text/plain", `{ viewer { user { email } } }`, http.StatusUnsupportedMediaType},
		{"no query", "application/json", `{}`, http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.srv.URL+"/graphql", strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.contentType)
			req.Header.Set("Authorization", "Bearer "+e.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out gqlResponse
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			out.Status = resp.StatusCode
			if got := codeOf(t, out); got != "BAD_USER_INPUT" {
				t.Errorf("code = %q (%v), want BAD_USER_INPUT", got, out.Errors)
			}
			if out.Status != c.status {
				t.Errorf("status = %d, want %d", out.Status, c.status)
			}
		})
	}
}
