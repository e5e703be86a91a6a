package apitest

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/web"
)

// A shared dashboard query with fields only a tenant admin may read,
// asked by a member: each such field is null with one FORBIDDEN error at
// its own path, and every other field of the response stands.
func TestForbiddenFieldsArePartial(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		const dashboard = `query($c: ID!) {
			viewer { tenants(first: 5) { edges { node { id name viewerRole
				projects(first: 5) { edges { node { id name } } }
				clusters(first: 5) { edges { node { id name } } }
				invitations { nodes { id } }
				webhookEndpoints { nodes { id } }
				auditEvents(first: 5) { edges { node { id action } } } } } } }
			cluster: node(id: $c) { ... on Cluster { id name connectTokens { nodes { id } } desiredState
				events { pageInfo { hasNextPage } } drift { nodes { kind } } } } }`
		vars := map[string]any{"c": f.ClusterID}
		admin := env.MustDo(t, f.Owner.Token, dashboard, vars)
		if n := len(admin.List("viewer.tenants.edges.0.node.auditEvents.edges")); n == 0 {
			t.Fatalf("the tenant admin sees no audit events: %v", admin.Data)
		}
		gated := []string{
			"viewer.tenants.edges.0.node.invitations",
			"viewer.tenants.edges.0.node.webhookEndpoints",
			"viewer.tenants.edges.0.node.auditEvents",
			"cluster.connectTokens", "cluster.desiredState", "cluster.events", "cluster.drift",
		}
		for _, r := range []Role{Member, Viewer, Editor, ProjectManager} {
			t.Run(r.slug(), func(t *testing.T) {
				res := f.Users[r].Do(t, env, dashboard, vars)
				if res.Data == nil {
					t.Fatalf("data: null for the whole response: %s", res.errorList())
				}
				if got := res.Str("viewer.tenants.edges.0.node.name"); got == "" {
					t.Errorf("the tenant's name is gone: %v", res.Data)
				}
				if got := res.List("viewer.tenants.edges.0.node.projects.edges"); len(got) == 0 && r != Member {
					t.Errorf("the tenant's projects are gone: %v", res.Data)
				}
				if got := res.Str("cluster.name"); got == "" {
					t.Errorf("the cluster's name is gone: %v", res.Data)
				}
				var paths []string
				for _, e := range res.Errors {
					if e.Code() != "FORBIDDEN" {
						t.Errorf("error %q at %s: code %s, want FORBIDDEN", e.Message, e.PathString(), e.Code())
					}
					paths = append(paths, e.PathString())
				}
				for _, g := range gated {
					if v := res.Get(g); v != nil {
						t.Errorf("%s: got %v, want null", g, v)
					}
					if !slices.Contains(paths, strings.ReplaceAll(g, ".", "/")) && !slices.Contains(paths, g) {
						t.Errorf("no error at %s; errors at %v", g, paths)
					}
				}
				if len(res.Errors) != len(gated) {
					t.Errorf("got %d errors (%v), want one per gated field (%d)", len(res.Errors), paths, len(gated))
				}
			})
		}
	})
}

// The dashboard query as Relay and Apollo shape it, connections spelt
// edges { node }, is within the depth limit: a connection's edges and
// node do not count as levels of their own. A document nested deeper in
// fields is still refused.
func TestDepthCountsConnectionsAsClientsShapeThem(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	const dashboard = `{ viewer { tenants(first: 5) { edges { cursor node { id name
		projects(first: 5) { edges { node { id name
			environments(first: 5) { edges { node { id name
				deployments(first: 5) { edges { node { id stage release { id number } } } pageInfo { hasNextPage endCursor } } } } } } } }
		clusters(first: 5) { edges { node { id name } } } } } } } }`
	res := env.MustDo(t, f.Owner.Token, dashboard, nil)
	if len(res.List("viewer.tenants.edges")) == 0 {
		t.Fatalf("the dashboard query read no tenants: %s", res.Body)
	}
	// Thirteen fields deep, each a level: refused before it runs.
	deep := `{ viewer { tenants { nodes { projects { nodes { environments { nodes { project { environments { nodes { project { tenant { name } } } } } } } } } } } } }`
	r := env.Do(t, f.Owner.Token, deep, nil)
	if r.Data != nil || len(r.Errors) != 1 || r.Errors[0].Code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "exceeds the limit of 12") {
		t.Errorf("a document 13 fields deep: got %s %s, want it refused for its depth", r.Body, r.errorList())
	}
}

// deferredQuery defers each tenant's projects.
const deferredQuery = `query Dash { viewer { tenants(first: 5) { edges { node { id name
	... @defer(label: "projects") { projects(first: 5) { edges { node { id name } } } } } } } } }`

// post sends a GraphQL request with the headers given and returns the
// response with its body read.
func post(t *testing.T, env *Env, token, query string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}
	for k, v := range header {
		h[k] = v
	}
	return send(t, env, http.MethodPost, "/graphql", body, h)
}

// @defer over HTTP: a client that takes multipart/mixed gets the tenants
// first, with hasNext, then each tenant's projects as an incremental part
// at its path; one that takes only JSON gets the whole answer at once.
func TestDeferOverHTTP(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)

	resp, raw := post(t, env, f.Owner.Token, deferredQuery, map[string]string{"Accept": "multipart/mixed;deferSpec=20220824,application/json"})
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" || params["deferspec"] != "20220824" {
		t.Fatalf("Content-Type %q, want multipart/mixed with deferSpec=20220824\n%s", resp.Header.Get("Content-Type"), raw)
	}
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	var parts []map[string]any
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the parts: %v\n%s", err, raw)
		}
		var v map[string]any
		if err := json.NewDecoder(p).Decode(&v); err != nil {
			t.Fatalf("a part is not JSON: %v", err)
		}
		parts = append(parts, v)
	}
	if len(parts) < 2 {
		t.Fatalf("got %d parts, want the initial one and at least one incremental: %s", len(parts), raw)
	}
	if dig(parts[0], "hasNext") != true || dig(parts[0], "data.viewer.tenants.edges.0.node.name") == nil {
		t.Errorf("first part: %v, want the tenants and hasNext: true", parts[0])
	}
	if _, there := dig(parts[0], "data.viewer.tenants.edges.0.node").(map[string]any)["projects"]; there {
		t.Errorf("first part has the deferred projects (deferSpec=20220824 leaves them out): %v", parts[0])
	}
	if last := parts[len(parts)-1]; dig(last, "hasNext") != false {
		t.Errorf("last part: %v, want hasNext: false", last)
	}
	projects := 0
	for _, p := range parts[1:] {
		for _, inc := range dig(p, "incremental").([]any) {
			if dig(inc, "label") != "projects" || len(dig(inc, "path").([]any)) == 0 {
				t.Errorf("incremental %v: want the label and a path", inc)
			}
			if dig(inc, "data.projects.edges") != nil {
				projects++
			}
		}
	}
	tenants := len(dig(parts[0], "data.viewer.tenants.edges").([]any))
	if projects != tenants {
		t.Errorf("got the projects of %d tenants, want every one of %d", projects, tenants)
	}

	// JSON only: one body, the deferred fragments merged in.
	resp, raw = post(t, env, f.Owner.Token, deferredQuery, map[string]string{"Accept": "application/json"})
	var whole map[string]any
	if err := json.Unmarshal(raw, &whole); err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("JSON only: %s %s", resp.Header.Get("Content-Type"), raw)
	}
	if _, ok := whole["hasNext"]; ok || whole["errors"] != nil {
		t.Errorf("JSON only: %s, want one complete response", raw)
	}
	for i, e := range dig(whole, "data.viewer.tenants.edges").([]any) {
		if dig(e, "node.projects.edges") == nil {
			t.Errorf("JSON only: tenant %d has no projects: %s", i, raw)
		}
	}
}

// send makes a request to the server as it is, without the client's
// transparent decompression.
func send(t *testing.T, env *Env, method, path string, body []byte, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, env.Server.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := env.Server.Client().Transport.(*http.Transport).Clone()
	tr.DisableCompression = true
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// CORS: an origin listed in NEBULA_CORS_ORIGINS passes its preflight and
// reads its responses with an API token; another origin's preflight is
// refused and its responses carry no CORS headers; a session cookie is
// never accepted across origins, listed or not.
func TestCORS(t *testing.T) {
	t.Parallel()
	const dash = "https://dash.example.com"
	env := NewEnvWith(t, OpenSQLite(t), func(c *config.Config) { c.CORSOrigins = []string{dash} })
	f := env.NewFixture(t)
	preflight := func(origin, method, headers string) *http.Response {
		resp, _ := send(t, env, http.MethodOptions, "/graphql", nil, map[string]string{"Origin": origin,
			"Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers})
		return resp
	}
	ok := preflight(dash, "POST", "authorization, content-type, idempotency-key")
	if ok.StatusCode != http.StatusNoContent || ok.Header.Get("Access-Control-Allow-Origin") != dash ||
		!strings.Contains(ok.Header.Get("Access-Control-Allow-Headers"), "idempotency-key") || ok.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight from %s: %d %v, want 204 allowing it, without credentials", dash, ok.StatusCode, ok.Header)
	}
	for _, c := range []struct{ name, origin, method, headers string }{
		{"another origin", "https://evil.example.com", "POST", "authorization, content-type"},
		{"a lookalike of the listed origin", "https://dash.example.com.evil.example", "POST", "authorization"},
		{"the listed origin over http", "http://dash.example.com", "POST", "authorization"},
		{"a method other than GET and POST", dash, "DELETE", "authorization"},
		{"a header the API does not take", dash, "POST", "authorization, x-forwarded-for"},
	} {
		resp := preflight(c.origin, c.method, c.headers)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight, %s: %d %v, want 403 without Access-Control-Allow-Origin", c.name, resp.StatusCode, resp.Header)
		}
	}
	body, _ := json.Marshal(map[string]any{"query": `{ viewer { user { id } } }`})
	call := func(origin string, auth map[string]string) (*http.Response, []byte) {
		h := map[string]string{"Origin": origin, "Content-Type": "application/json"}
		for k, v := range auth {
			h[k] = v
		}
		return send(t, env, http.MethodPost, "/graphql", body, h)
	}
	bearer := map[string]string{"Authorization": "Bearer " + f.Owner.Token}
	resp, raw := call(dash, bearer)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != dash ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") || !strings.Contains(string(raw), `"user"`) {
		t.Errorf("a call from %s: %d %v %s", dash, resp.StatusCode, resp.Header, raw)
	}
	resp, _ = call("https://evil.example.com", bearer)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a call from another origin got Access-Control-Allow-Origin %q", resp.Header.Get("Access-Control-Allow-Origin"))
	}
	person := f.NewPerson(t, "cors", "MEMBER")
	for _, origin := range []string{dash, "https://evil.example.com"} {
		resp, raw := call(origin, map[string]string{"Cookie": person.Session.Name + "=" + person.Session.Value, "Sec-Fetch-Site": "cross-site"})
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(raw), `"data"`) {
			t.Errorf("a session cookie from %s: %d %s, want 403", origin, resp.StatusCode, raw)
		}
	}
}

// A large response is compressed as the client asks, gzip or br, and
// decompresses to the JSON sent uncompressed; a small one is not.
func TestCompression(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for range 20 {
		f.NewProject(t)
	}
	body, _ := json.Marshal(map[string]any{"query": `{ viewer { tenants { nodes { id name projects(first: 100) { nodes { id name createdAt environments { nodes { id name } } } } } } } }`})
	get := func(accept string) (*http.Response, []byte) {
		return send(t, env, http.MethodPost, "/graphql", body, map[string]string{"Content-Type": "application/json",
			"Authorization": "Bearer " + f.Owner.Token, "Accept-Encoding": accept})
	}
	plainResp, plain := get("")
	if plainResp.Header.Get("Content-Encoding") != "" || len(plain) < 2048 {
		t.Fatalf("uncompressed: %s encoding, %d bytes; want none and a large body", plainResp.Header.Get("Content-Encoding"), len(plain))
	}
	for _, c := range []struct{ accept, want string }{
		{"gzip", "gzip"}, {"br", "br"}, {"gzip, deflate, br", "br"}, {"br;q=0.5, gzip", "gzip"}, {"deflate", ""}, {"gzip;q=0", ""},
	} {
		resp, raw := get(c.accept)
		if got := resp.Header.Get("Content-Encoding"); got != c.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", c.accept, got, c.want)
			continue
		}
		if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: Vary %q", c.accept, resp.Header.Values("Vary"))
		}
		var r io.Reader = bytes.NewReader(raw)
		switch c.want {
		case "gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		case "br":
			r = brotli.NewReader(r)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("Accept-Encoding %q: decompressed %d bytes (%v), want the %d uncompressed", c.accept, len(got), err, len(plain))
		}
		if c.want != "" && len(raw)*3 > len(plain) {
			t.Errorf("Accept-Encoding %q: %d bytes for %d, want at least 3x smaller", c.accept, len(raw), len(plain))
		}
	}
	small, _ := json.Marshal(map[string]any{"query": `{ viewer { user { id } } }`})
	resp, _ := send(t, env, http.MethodPost, "/graphql", small, map[string]string{"Content-Type": "application/json",
		"Authorization": "Bearer " + f.Owner.Token, "Accept-Encoding": "gzip, br"})
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a small response was compressed (%s)", resp.Header.Get("Content-Encoding"))
	}
}

// A query sent with GET carries an ETag and Cache-Control: private; asked
// again with If-None-Match it is 304 without a body, until what it reads
// changes.
func TestGETQueriesRevalidate(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	q := "/graphql?query=" + url.QueryEscape(`{ viewer { tenants { nodes { id projects { nodes { id name } } } } } }`)
	auth := map[string]string{"Authorization": "Bearer " + f.Owner.Token}
	resp, raw := send(t, env, http.MethodGet, q, nil, auth)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "private") ||
		!strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Authorization") {
		t.Fatalf("GET: %d %v %s", resp.StatusCode, resp.Header, raw)
	}
	again, body := send(t, env, http.MethodGet, q, nil, map[string]string{"Authorization": auth["Authorization"], "If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified || len(body) != 0 || again.Header.Get("ETag") != etag {
		t.Errorf("GET with If-None-Match: %d, %d bytes, ETag %q; want 304, none, %q", again.StatusCode, len(body), again.Header.Get("ETag"), etag)
	}
	f.NewProject(t)
	changed, body := send(t, env, http.MethodGet, q, nil, map[string]string{"Authorization": auth["Authorization"], "If-None-Match": etag})
	if changed.StatusCode != http.StatusOK || changed.Header.Get("ETag") == etag || bytes.Equal(body, raw) {
		t.Errorf("after a change: %d, ETag %q; want 200 and a new ETag", changed.StatusCode, changed.Header.Get("ETag"))
	}
	// A POST is not cacheable.
	post, _ := send(t, env, http.MethodPost, "/graphql", []byte(`{"query":"{ viewer { user { id } } }"}`),
		map[string]string{"Authorization": auth["Authorization"], "Content-Type": "application/json"})
	if post.Header.Get("ETag") != "" {
		t.Errorf("a POST got an ETag")
	}
}

// persisted sends a request with extensions.persistedQuery: the query's
// text too when withText.
func persisted(t *testing.T, env *Env, token, query string, vars map[string]any, withText bool, keys ...string) Response {
	t.Helper()
	sum := sha256.Sum256([]byte(query))
	req := map[string]any{"variables": vars, "extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}}
	if withText {
		req["query"] = query
	}
	body, _ := json.Marshal(req)
	return env.keyedRaw(t, token, body, keys...)
}

// Persisted queries as Apollo's and urql's links use them: an unknown
// hash is PERSISTED_QUERY_NOT_FOUND; sent with its text the document runs
// and is kept in the database, so that the hash alone runs on another
// replica; a document that writes a string inline is run but not kept.
func TestPersistedQueries(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		other := env.frontendReplica(t)
		const q = `query Tenants($n: Int) { viewer { tenants(first: $n) { nodes { id name } } } }`
		vars := map[string]any{"n": 5}
		miss := persisted(t, env, f.Owner.Token, q, vars, false)
		if miss.Data != nil || len(miss.Errors) != 1 || miss.Errors[0].Code() != "PERSISTED_QUERY_NOT_FOUND" || miss.Errors[0].Message != "PersistedQueryNotFound" {
			t.Fatalf("an unknown hash: %s %s, want PERSISTED_QUERY_NOT_FOUND", miss.Body, miss.errorList())
		}
		if r := persisted(t, env, f.Owner.Token, q, vars, true); len(r.List("viewer.tenants.nodes")) == 0 {
			t.Fatalf("the hash with its text: %s", r.Body)
		}
		for name, e := range map[string]*Env{"this replica": env, "another replica": other} {
			if r := persisted(t, e, f.Owner.Token, q, vars, false); len(r.List("viewer.tenants.nodes")) == 0 || len(r.Errors) > 0 {
				t.Errorf("the hash alone, on %s: %s %s", name, r.Body, r.errorList())
			}
		}
		// A string literal could be a secret: run, not kept.
		inline := `{ viewer { tenants(first: 1) { nodes { name auditEvents(filter: {action: "project.create"}) { nodes { id } } } } } }`
		if r := persisted(t, env, f.Owner.Token, inline, nil, true); len(r.Errors) > 0 {
			t.Fatalf("a document with a string literal: %s", r.errorList())
		}
		if r := persisted(t, other, f.Owner.Token, inline, nil, false); len(r.Errors) != 1 || r.Errors[0].Code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Errorf("a document with a string literal was kept: %s", r.Body)
		}
		// A document that does not validate is not kept either.
		bad := `{ viewer { nosuchfield } }`
		persisted(t, env, f.Owner.Token, bad, nil, true)
		if r := persisted(t, other, f.Owner.Token, bad, nil, false); len(r.Errors) != 1 || r.Errors[0].Code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Errorf("a document that does not validate was kept: %s", r.Body)
		}
		// A hash that is not the text's, and hashes that are no SHA-256.
		body, _ := json.Marshal(map[string]any{"query": q, "extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": strings.Repeat("ab", 32)}}})
		if r := env.keyedRaw(t, f.Owner.Token, body); r.Data != nil || len(r.Errors) != 1 || r.Errors[0].Code() != "BAD_USER_INPUT" {
			t.Errorf("a hash that is not the text's: %s", r.Body)
		}
		for _, h := range []any{"short", strings.Repeat("AB", 32), 12} {
			body, _ := json.Marshal(map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": h}}})
			if r := env.keyedRaw(t, f.Owner.Token, body); len(r.Errors) != 1 || r.Errors[0].Code() != "BAD_USER_INPUT" {
				t.Errorf("hash %v: %s, want BAD_USER_INPUT", h, r.Body)
			}
		}
		// Without a token nothing is read or kept.
		if r := persisted(t, env, "", q, vars, false); r.Status != http.StatusUnauthorized {
			t.Errorf("no token: HTTP %d", r.Status)
		}
	})
}

// A mutation sent with an Idempotency-Key through the persisted-query
// link: the hash alone misses without claiming the key, the link's retry
// with the text runs it, and the same key sent by hash to another replica
// gets the first response again. One deployment.
func TestPersistedMutationWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		other := env.frontendReplica(t)
		vars := map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(env.Next())}
		key := "pq-" + f.Unique("deploy")
		miss := persisted(t, env, f.Owner.Token, deployMutation, vars, false, key)
		if len(miss.Errors) != 1 || miss.Errors[0].Code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Fatalf("the hash alone, first: %s", miss.Body)
		}
		first := persisted(t, env, f.Owner.Token, deployMutation, vars, true, key)
		id := first.Str("deploy.release.id")
		if id == "" {
			t.Fatalf("the link's retry with the text: %s %s", first.Body, first.errorList())
		}
		again := persisted(t, other, f.Owner.Token, deployMutation, vars, false, key)
		if again.Str("deploy.release.id") != id || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the same key by hash on another replica: %s (replayed %q), want the first response", again.Body, again.Header.Get("Idempotent-Replayed"))
		}
		n := len(env.MustDo(t, f.Owner.Token, `query($e: ID!) { node(id: $e) { ... on Environment { deployments(first: 100) { nodes { id } } } } }`,
			map[string]any{"e": f.EnvironmentID}).List("node.deployments.nodes"))
		if n != 2 { // the fixture's own, and this one
			t.Errorf("deployments: %d, want the fixture's and one more", n)
		}
	})
}

// A token made with trustedDocumentsOnly runs the operations of
// NEBULA_TRUSTED_DOCUMENTS (by their text or their hash) and of the
// console's build, over HTTP and websockets, and is refused anything else;
// a token it makes is bound too. Any caller may send a trusted document by
// its hash alone.
func TestTrustedDocumentsOnly(t *testing.T) {
	t.Parallel()
	const listed = `query Tenants { viewer { tenants(first: 5) { nodes { id name } } } }`
	const other = `query Other { viewer { user { email } } }`
	sum := sha256.Sum256([]byte(listed))
	listedHash := hex.EncodeToString(sum[:])
	for _, st := range Stores(t) {
		t.Run(st.Name, func(t *testing.T) {
			cs := sha256.Sum256([]byte(createToken))
			env := NewEnvWith(t, st.Open(t), func(c *config.Config) {
				c.TrustedDocuments = map[string]string{listedHash: listed, hex.EncodeToString(cs[:]): createToken}
			})
			trustedOnly(t, env, listed, other)
		})
	}
}

// createToken makes a token, bound to the trusted documents or not.
const createToken = `mutation($n: String!, $b: Boolean) { createApiToken(input: {name: $n, trustedDocumentsOnly: $b}) {
	apiToken { id trustedDocumentsOnly } secret userErrors { code } } }`

func trustedOnly(t *testing.T, env *Env, listed, other string) {
	{
		f := env.NewFixture(t)
		made := env.MustDo(t, f.Owner.Token, createToken, map[string]any{"n": "dashboard", "b": true})
		bound := made.Str("createApiToken.secret")
		if made.Get("createApiToken.apiToken.trustedDocumentsOnly") != true || bound == "" {
			t.Fatalf("createApiToken: %s", made.Body)
		}
		if r := env.Do(t, bound, listed, nil); len(r.List("viewer.tenants.nodes")) == 0 || len(r.Errors) > 0 {
			t.Errorf("a listed document by its text: %s", r.Body)
		}
		if r := persisted(t, env, bound, listed, nil, false); len(r.List("viewer.tenants.nodes")) == 0 {
			t.Errorf("a listed document by its hash: %s", r.Body)
		}
		refused := func(what string, r Response) {
			t.Helper()
			if r.Data != nil || len(r.Errors) != 1 || r.Errors[0].Code() != "FORBIDDEN" || !strings.Contains(r.Errors[0].Message, "trusted documents only") {
				t.Errorf("%s: %s, want FORBIDDEN and nothing run", what, r.Body)
			}
		}
		refused("another document", env.Do(t, bound, other, nil))
		refused("the listed document respelt", env.Do(t, bound, strings.ReplaceAll(listed, " ", "  "), nil))
		before := f.AuditCount(t)
		refused("a mutation", env.Do(t, bound, `mutation { createProject(input: {tenantId: "`+f.TenantID+`", name: "x"}) { project { id } } }`, nil))
		if f.AuditCount(t) != before {
			t.Error("a refused mutation wrote to the audit history")
		}
		// The console's own operations are trusted, and any caller may
		// send one by its hash.
		docs, err := server.ParseTrustedDocuments(web.TrustedDocuments())
		if err != nil {
			t.Fatal(err)
		}
		for hash, doc := range docs {
			if !strings.Contains(doc, "query ConsoleAccount") {
				continue
			}
			body, _ := json.Marshal(map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}})
			for name, token := range map[string]string{"the bound token": bound, "an unbound one": f.Owner.Token} {
				if r := env.keyedRaw(t, token, body); r.Get("viewer.tenants") == nil || len(r.Errors) > 0 {
					t.Errorf("the console's ConsoleAccount by its hash, %s: %s", name, r.Body)
				}
			}
		}
		// Over a websocket, as over HTTP.
		ws := wsDial(t, env, wsTransportWS)
		ws.init(bound)
		ws.subscribe("1", listed, nil)
		if data := ws.result("1"); dig(data, "viewer.tenants.nodes") == nil {
			t.Errorf("a listed document over the websocket: %v", data)
		}
		ws.complete("1")
		ws.subscribe("2", other, nil)
		if m := ws.next(); m.ID != "2" || !strings.Contains(string(m.Payload), "trusted documents only") {
			t.Errorf("another document over the websocket: %v", m)
		}
		// A token the bound one makes (it may: the mutation is listed) is
		// bound too, whatever it asks.
		if r := env.MustDo(t, bound, createToken, map[string]any{"n": "escape", "b": false}); r.Get("createApiToken.apiToken.trustedDocumentsOnly") != true {
			t.Errorf("a token made by a bound token: %s, want it bound", r.Body)
		}
		// Unbound tokens run anything, as before.
		if r := env.Do(t, f.Owner.Token, other, nil); r.Str("viewer.user.email") == "" {
			t.Errorf("an unbound token: %s", r.Body)
		}
	}
}

// The same persisted query sent with its text 60 times at once, on two
// replicas: every request runs, the document is kept once, and the hash
// alone then works on both.
func TestPersistedQueriesConcurrent(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		other := env.frontendReplica(t)
		q := `query Concurrent($n: Int) { viewer { tenants(first: $n) { nodes { id } } } }`
		var wg sync.WaitGroup
		errs := make(chan string, 60)
		for i := range 60 {
			e := env
			if i%2 == 1 {
				e = other
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := persisted(t, e, f.Owner.Token, q, map[string]any{"n": 5}, true); len(r.Errors) > 0 || len(r.List("viewer.tenants.nodes")) == 0 {
					errs <- string(r.Body)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("a concurrent request: %s", e)
		}
		if n, err := store.CountPersistedQueries(t.Context(), env.Store.Q()); err != nil || n != 1 {
			t.Errorf("persisted queries kept: %d (%v), want 1", n, err)
		}
		for name, e := range map[string]*Env{"this replica": env, "the other": other} {
			if r := persisted(t, e, f.Owner.Token, q, map[string]any{"n": 5}, false); len(r.Errors) > 0 {
				t.Errorf("the hash alone on %s: %s", name, r.Body)
			}
		}
	})
}
