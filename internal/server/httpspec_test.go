package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// httpAnswer is a response as GraphQL over HTTP describes it.
type httpAnswer struct {
	status  int
	header  http.Header
	media   string // Content-Type without parameters
	body    []byte
	hasData bool
	codes   []string // extensions.code of each error; "" when missing
}

func (e *env) send(t *testing.T, method, target, contentType, accept, token, body string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return decodeAnswer(t, resp.StatusCode, resp.Header, raw)
}

func decodeAnswer(t *testing.T, status int, h http.Header, raw []byte) httpAnswer {
	t.Helper()
	a := httpAnswer{status: status, header: h, body: raw}
	a.media, _, _ = mime.ParseMediaType(h.Get("Content-Type"))
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("HTTP %d: the body is not a JSON object: %v\n%s", status, err, raw)
	}
	_ = json.Unmarshal(raw, &out)
	_, a.hasData = keys["data"]
	for _, e := range out.Errors {
		c, _ := e.Extensions["code"].(string)
		a.codes = append(a.codes, c)
	}
	return a
}

// The GraphQL over HTTP specification: status codes, media types and
// bodies of requests that are not well-formed, that fail before they run,
// and that run; every error has a code.
func TestGraphQLOverHTTP(t *testing.T) {
	e := setup(t, nil)
	const ok = `{ viewer { user { email } } }`
	post := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	get := func(params url.Values) string { return "/graphql?" + params.Encode() }
	type want struct {
		json, gql int    // status with application/json and with application/graphql-response+json
		data      bool   // the body has a data key
		code      string // the first error's code; "" for no error
	}
	notWellFormed := want{400, 400, false, "BAD_USER_INPUT"}
	requestError := want{200, 400, false, "BAD_USER_INPUT"}
	cases := []struct {
		name, method, target, contentType, body string
		noToken                                 bool
		want                                    want
	}{
		{name: "bad JSON", body: `{"query": "{ viewer `, want: notWellFormed},
		{name: "not an object", body: `[{"query": "{ viewer { user { email } } }"}]`, want: notWellFormed},
		{name: "two objects", body: post(map[string]any{"query": ok}) + "{}", want: notWellFormed},
		{name: "empty body", body: ``, want: notWellFormed},
		{name: "missing query", body: `{"qeury": "{ viewer { user { email } } }"}`, want: notWellFormed},
		{name: "query not a string", body: `{"query": {"viewer": true}}`, want: notWellFormed},
		{name: "query a number", body: `{"query": 5}`, want: notWellFormed},
		{name: "variables not an object", body: post(map[string]any{"query": ok, "variables": []int{7}}), want: notWellFormed},
		{name: "extensions not an object", body: post(map[string]any{"query": ok, "extensions": "x"}), want: notWellFormed},
		{name: "operationName not a string", body: post(map[string]any{"query": ok, "operationName": 1}), want: notWellFormed},
		{name: "wrong method", method: http.MethodPut, body: post(map[string]any{"query": ok}), want: want{405, 405, false, "BAD_USER_INPUT"}},
		{name: "not JSON", contentType: "text/plain", body: ok, want: want{415, 415, false, "BAD_USER_INPUT"}},
		{name: "no content type", contentType: "-", body: post(map[string]any{"query": ok}), want: want{415, 415, false, "BAD_USER_INPUT"}},
		{name: "GET without query", method: http.MethodGet, target: get(url.Values{"operationName": {"Q"}}), want: notWellFormed},
		{name: "GET variables not JSON", method: http.MethodGet, target: get(url.Values{"query": {ok}, "variables": {"{x"}}), want: notWellFormed},
		{name: "GET mutation", method: http.MethodGet, target: get(url.Values{"query": {`mutation { revokeApiToken(input: {apiTokenId: "x"}) { userErrors { code } } }`}}),
			want: want{405, 405, false, "BAD_USER_INPUT"}},
		{name: "subscription without a stream", body: post(map[string]any{"query": `subscription { clusterStatus(clusterId: "x") { id } }`}), want: notWellFormed},
		{name: "document does not parse", body: post(map[string]any{"query": "{"}), want: requestError},
		{name: "document does not validate", body: post(map[string]any{"query": "{ viewer { nope } }"}), want: requestError},
		{name: "unknown operation", body: post(map[string]any{"query": "query A { viewer { user { email } } }", "operationName": "B"}), want: requestError},
		{name: "variables do not fit", body: post(map[string]any{"query": "query($n: Int) { viewer { tenants(first: $n) { nodes { id } } } }", "variables": map[string]any{"n": "ten"}}),
			want: requestError},
		{name: "over a limit", body: post(map[string]any{"query": fragmentBomb(30)}), want: requestError},
		{name: "no token", body: post(map[string]any{"query": ok}), noToken: true, want: want{401, 401, false, "UNAUTHENTICATED"}},
		{name: "runs", body: post(map[string]any{"query": ok}), want: want{200, 200, true, ""}},
		{name: "runs with GET", method: http.MethodGet, target: get(url.Values{"query": {ok}}), want: want{200, 200, true, ""}},
		{name: "runs with a field error", body: post(map[string]any{"query": "{ viewer { tenants(first: 500) { nodes { id } } } }"}),
			want: want{200, 200, true, "BAD_USER_INPUT"}},
	}
	for _, media := range []string{mediaJSON, mediaGraphQLResponse} {
		for _, c := range cases {
			t.Run(label(media)+"/"+c.name, func(t *testing.T) {
				method, target, ct, token := c.method, c.target, c.contentType, e.token
				if method == "" {
					method = http.MethodPost
				}
				if target == "" {
					target = "/graphql"
				}
				switch ct {
				case "":
					if method == http.MethodPost || method == http.MethodPut {
						ct = "application/json"
					}
				case "-":
					ct = ""
				}
				if c.noToken {
					token = ""
				}
				got := e.send(t, method, target, ct, media, token, c.body)
				status := c.want.json
				if media == mediaGraphQLResponse {
					status = c.want.gql
				}
				if got.status != status {
					t.Errorf("status %d, want %d\n%s", got.status, status, got.body)
				}
				if got.media != media {
					t.Errorf("Content-Type %q, want %s", got.header.Get("Content-Type"), media)
				}
				if got.hasData != c.want.data {
					t.Errorf("data key present: %v, want %v\n%s", got.hasData, c.want.data, got.body)
				}
				switch {
				case c.want.code == "" && len(got.codes) > 0:
					t.Errorf("errors with codes %v, want none\n%s", got.codes, got.body)
				case c.want.code != "" && (len(got.codes) == 0 || got.codes[0] != c.want.code):
					t.Errorf("error codes %v, want %s first\n%s", got.codes, c.want.code, got.body)
				}
				for _, code := range got.codes {
					if code == "" {
						t.Errorf("an error without extensions.code: %s", got.body)
					}
				}
				if got.status == http.StatusMethodNotAllowed && got.header.Get("Allow") == "" {
					t.Error("405 without an Allow header")
				}
			})
		}
	}
	t.Run("unacceptable Accept", func(t *testing.T) {
		for _, accept := range []string{"text/html", "application/xml, text/plain;q=0.5", "application/json;q=0"} {
			got := e.send(t, http.MethodPost, "/graphql", "application/json", accept, e.token, post(map[string]any{"query": ok}))
			if got.status != http.StatusNotAcceptable || got.media != mediaJSON || got.hasData ||
				len(got.codes) != 1 || got.codes[0] != "BAD_USER_INPUT" {
				t.Errorf("Accept %q: got %d %s %s, want 406 application/json with one BAD_USER_INPUT error and no data",
					accept, got.status, got.media, got.body)
			}
		}
	})
}

// label names a media type in a subtest name (which must not hold '/').
func label(media string) string { return strings.TrimPrefix(media, "application/") }

func TestNegotiate(t *testing.T) {
	cases := map[string]string{
		"":                                  mediaJSON,
		"*/*":                               mediaJSON,
		"application/*":                     mediaJSON,
		"application/json":                  mediaJSON,
		"application/graphql-response+json": mediaGraphQLResponse,
		"application/graphql-response+json; charset=utf-8, application/json; charset=utf-8": mediaGraphQLResponse,
		"application/json, application/graphql-response+json":                               mediaJSON,
		"application/json;q=0.5, application/graphql-response+json":                         mediaGraphQLResponse,
		"*/*, application/graphql-response+json":                                            mediaGraphQLResponse,
		"text/html, */*;q=0.1":                                                              mediaJSON,
		"text/html":                                                                         "",
		"application/json;q=0":                                                              "",
	}
	for accept, want := range cases {
		got, ok := negotiate(accept)
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("Accept %q: got %q, want %q", accept, got, want)
		}
	}
}

// proxy forwards TCP connections to a PostgreSQL server until it is cut,
// which the control plane sees as the database going down.
type proxy struct {
	ln    net.Listener
	dial  func() (net.Conn, error)
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newProxy(t *testing.T, dial func() (net.Conn, error)) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, dial: dial}
	t.Cleanup(p.Cut)
	go p.serve()
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := p.dial()
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

// Cut closes the listener and every connection through it.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// unreachableStore is a migrated PostgreSQL store reached through a proxy
// that the test cuts to take the database away.
func unreachableStore(t *testing.T) (*store.Store, *proxy) {
	t.Helper()
	dsn := pgtest.URL(t)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal("parsing the test database URL failed")
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	p := newProxy(t, func() (net.Conn, error) { return net.Dial(network, addr) })
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	via := dsn + " host=" + host + " port=" + port
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Del("host")
		q.Del("port")
		u.RawQuery, u.Host = q.Encode(), p.ln.Addr().String()
		via = u.String()
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, via, postgres.Options{})
	if err != nil {
		t.Fatalf("opening PostgreSQL through the proxy: %v", err)
	}
	st := store.New(db)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st, p
}

// A database that cannot be reached answers 503 with Retry-After and
// UNAVAILABLE: when authentication cannot reach it, and when the operation
// failed as a whole because of it; an operation with data stays 200.
func TestUnavailableDatabase(t *testing.T) {
	st, p := unreachableStore(t)
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	plane, err := control.New(st, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	boot, err := plane.People.Bootstrap(ctx, "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	actor, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s := New(plane, cfg, log)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	e := &env{srv: srv, st: st, token: boot.Secret, logs: logs}
	// The operation alone, the actor already known: what authenticate
	// would have put in the context.
	op := s.observe(httpSpec(s.graphQL()))
	runAs := func(t *testing.T, accept, query string) httpAnswer {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query})
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		req = req.WithContext(authz.WithActor(req.Context(), actor))
		rec := httptest.NewRecorder()
		op.ServeHTTP(rec, req)
		return decodeAnswer(t, rec.Code, rec.Header(), rec.Body.Bytes())
	}
	if got := e.send(t, http.MethodPost, "/graphql", "application/json", "", e.token, `{"query": "{ viewer { user { email } } }"}`); got.status != http.StatusOK {
		t.Fatalf("before the outage: HTTP %d %s", got.status, got.body)
	}
	// A token that has not authenticated yet: one that has is kept for a
	// moment (control/tokencache.go) and would not need the database.
	minted := e.send(t, http.MethodPost, "/graphql", "application/json", "", e.token,
		`{"query": "mutation { createApiToken(input: {name: \"second\"}) { secret } }"}`)
	var fresh struct {
		Data struct {
			CreateAPIToken struct{ Secret string } `json:"createApiToken"`
		}
	}
	if err := json.Unmarshal(minted.body, &fresh); err != nil || fresh.Data.CreateAPIToken.Secret == "" {
		t.Fatalf("minting a second token: HTTP %d %s (%v)", minted.status, minted.body, err)
	}

	p.Cut()
	for _, media := range []string{mediaJSON, mediaGraphQLResponse} {
		check := func(t *testing.T, got httpAnswer) {
			t.Helper()
			if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") == "" || got.media != media ||
				len(got.codes) == 0 || got.codes[0] != "UNAVAILABLE" {
				t.Errorf("got HTTP %d, Retry-After %q, %s: %s; want 503 with Retry-After and UNAVAILABLE in %s",
					got.status, got.header.Get("Retry-After"), got.media, got.body, media)
			}
		}
		t.Run(label(media)+"/authentication", func(t *testing.T) {
			check(t, e.send(t, http.MethodPost, "/graphql", "application/json", media, fresh.Data.CreateAPIToken.Secret, `{"query": "{ viewer { user { email } } }"}`))
		})
		t.Run(label(media)+"/operation", func(t *testing.T) {
			check(t, runAs(t, media, `{ viewer { tenants { nodes { id name } } } }`))
		})
		t.Run(label(media)+"/partial data", func(t *testing.T) {
			// The tenant's name needs its row (its id alone would be
			// answered from the grants, which are in memory).
			got := runAs(t, media, `{ __typename node(id: "VGVuYW50OnQ") { id ... on Tenant { name } } }`)
			if got.status != http.StatusOK || !got.hasData || len(got.codes) == 0 || got.codes[0] != "UNAVAILABLE" {
				t.Errorf("got HTTP %d %s, want 200 with data and an UNAVAILABLE error", got.status, got.body)
			}
		})
	}
	if strings.Contains(logs.String(), boot.Secret) {
		t.Error("the log holds the token")
	}
}

// The envelope is written by hand around gqlgen's data; it must be the
// JSON the encoding/json version wrote (the same members, in the same
// order, data as gqlgen wrote it).
func TestAppendResponse(t *testing.T) {
	errs := gqlerror.List{{Message: `bad "input" <here>`, Extensions: map[string]any{"code": "BAD_USER_INPUT"}}}
	ext := map[string]any{"cost": map[string]int{"complexity": 3, "limit": 100}}
	cases := []struct {
		name string
		resp graphql.Response
		ran  bool
		want string
	}{
		{"data", graphql.Response{Data: []byte(`{"a":"<b>&"}`)}, true, `{"data":{"a":"<b>&"}}`},
		{"no data", graphql.Response{}, true, `{"data":null}`},
		{"not run", graphql.Response{Errors: errs}, false, `{"errors":[{"message":"bad \"input\" \u003chere\u003e","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{"all", graphql.Response{Errors: errs, Data: []byte(`null`), Extensions: ext}, true,
			`{"errors":[{"message":"bad \"input\" \u003chere\u003e","extensions":{"code":"BAD_USER_INPUT"}}],"data":null,"extensions":{"cost":{"complexity":3,"limit":100}}}`},
		{"nothing", graphql.Response{}, false, `{}`},
	}
	for _, c := range cases {
		got, err := appendResponse(nil, &c.resp, c.ran)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.name, got, err, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: %s is not JSON", c.name, got)
		}
	}
}
