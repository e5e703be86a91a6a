package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// streamedQuery streams a tenant's projects after the first, each
// project's environments (a stream in a streamed item), and defers the
// tenant's members, themselves streamed (a stream in a deferred fragment).
const streamedQuery = `query Streamed { viewer { tenants(first: 5) { edges { node { id name
	projects(first: 20) { edges @stream(initialCount: 1, label: "projects") { cursor node { id name
		environments(first: 10) { nodes @stream(label: "environments") { id name } } } } }
	... @defer(label: "people") { members(first: 20) { nodes @stream(initialCount: 2, label: "members") { id role user { id } } } } } } } } }`

// whole is a document without its @stream and @defer: what the parts of
// the streamed one must add up to.
func whole(query string) string {
	return regexp.MustCompile(`@(stream|defer)\([^)]*\)`).ReplaceAllString(query, "")
}

// streamFixture is a fixture whose tenant has five projects, the first
// two with two environments each and three without, and the fixture's
// members.
func streamFixture(t *testing.T, env *Env) *Fixture {
	f := env.NewFixture(t)
	for i := range 4 {
		p := f.NewProject(t)
		if i > 0 {
			continue
		}
		for range 2 {
			f.MustDo(t, `mutation($p: ID!, $name: String!) {
				createEnvironment(input: {projectId: $p, name: $name, clusterSelector: [{key: "env", value: "staging"}]}) {
					environment { id } userErrors { field message code } }
			}`, map[string]any{"p": p, "name": f.Unique("env")})
		}
	}
	return f
}

// readParts reads a multipart/mixed body of deferSpec=20220824.
func readParts(t *testing.T, resp *http.Response, raw []byte) []map[string]any {
	t.Helper()
	parts, err := parseParts(resp, raw)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func parseParts(resp *http.Response, raw []byte) ([]map[string]any, error) {
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" || params["deferspec"] != "20220824" {
		return nil, fmt.Errorf("Content-Type %q, want multipart/mixed with deferSpec=20220824\n%s", resp.Header.Get("Content-Type"), raw)
	}
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	var parts []map[string]any
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the parts: %v\n%s", err, raw)
		}
		var v map[string]any
		if err := json.NewDecoder(p).Decode(&v); err != nil {
			return nil, fmt.Errorf("a part is not JSON: %v", err)
		}
		parts = append(parts, v)
	}
}

// applyParts adds up the parts as a client does, failing on a part whose
// place is not there yet (it overtook the part that holds it) or whose
// items do not follow the list's last, and on hasNext false before the
// last part. It returns the data and every error in the parts.
func applyParts(parts []map[string]any) (any, []any, error) {
	if len(parts) == 0 {
		return nil, nil, errors.New("no parts")
	}
	data := parts[0]["data"]
	errs, _ := parts[0]["errors"].([]any)
	for i, p := range parts {
		want := i < len(parts)-1
		if p["hasNext"] != want {
			return nil, nil, fmt.Errorf("part %d: hasNext %v, want %v: %v", i, p["hasNext"], want, p)
		}
		if i == 0 {
			continue
		}
		incs, _ := p["incremental"].([]any)
		if len(incs) == 0 {
			return nil, nil, fmt.Errorf("part %d has no incremental entries: %v", i, p)
		}
		for _, inc := range incs {
			e := inc.(map[string]any)
			more, _ := e["errors"].([]any)
			errs = append(errs, more...)
			path, _ := e["path"].([]any)
			if items, ok := e["items"]; ok {
				if items == nil {
					continue
				}
				idx, isIndex := path[len(path)-1].(float64)
				parentPath, name := path[:len(path)-2], path[len(path)-2].(string)
				parent, ok := digPath(data, parentPath).(map[string]any)
				if !isIndex || !ok {
					return nil, nil, fmt.Errorf("part %d: items at %v, whose list is not there yet", i, path)
				}
				list, _ := parent[name].([]any)
				if int(idx) != len(list) {
					return nil, nil, fmt.Errorf("part %d: items at %v, but the list holds %d items", i, path, len(list))
				}
				parent[name] = append(list, items.([]any)...)
				continue
			}
			target, ok := digPath(data, path).(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("part %d: a deferred fragment at %v, which is not there yet", i, path)
			}
			if d, ok := e["data"].(map[string]any); ok {
				for k, v := range d {
					target[k] = v
				}
			}
		}
	}
	return data, errs, nil
}

func digPath(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case float64:
			l, _ := v.([]any)
			if int(k) < 0 || int(k) >= len(l) {
				return nil
			}
			v = l[int(k)]
		}
	}
	return v
}

func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var a, b any
	_ = json.Unmarshal(g, &a)
	_ = json.Unmarshal(w, &b)
	return reflect.DeepEqual(a, b)
}

// @stream over HTTP: the first part holds each streamed list's first
// items; the others follow as items at their index, never before the part
// that holds their list (a stream in a streamed item, a stream in a
// deferred fragment); all of it adds up to the answer of the same query
// without @stream and @defer. A client that takes only JSON gets that
// answer in one response.
func TestStreamOverHTTP(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := streamFixture(t, env)
	plain := f.MustDo(t, whole(streamedQuery), nil)
	if n := len(plain.List("viewer.tenants.edges.0.node.projects.edges")); n != 5 {
		t.Fatalf("the tenant has %d projects, want 5", n)
	}

	resp, raw := post(t, env, f.Owner.Token, streamedQuery, map[string]string{"Accept": "multipart/mixed;deferSpec=20220824,application/json"})
	parts := readParts(t, resp, raw)
	first := parts[0]
	if n := len(dig(first, "data.viewer.tenants.edges.0.node.projects.edges").([]any)); n != 1 {
		t.Errorf("the first part holds %d projects, want initialCount 1: %v", n, first)
	}
	if _, there := dig(first, "data.viewer.tenants.edges.0.node").(map[string]any)["members"]; there {
		t.Errorf("the first part holds the deferred members: %v", first)
	}
	if envs := dig(first, "data.viewer.tenants.edges.0.node.projects.edges.0.node.environments.nodes").([]any); len(envs) != 0 {
		t.Errorf("the first part holds environments %v, want none (initialCount 0)", envs)
	}
	if n := len(plain.List("viewer.tenants.edges.0.node.projects.edges.1.node.environments.nodes")); n != 2 {
		t.Fatalf("the second project has %d environments, want 2", n)
	}
	labels := map[string]int{}
	for _, p := range parts[1:] {
		for _, inc := range dig(p, "incremental").([]any) {
			labels[fmt.Sprint(dig(inc, "label"))]++
		}
	}
	for _, l := range []string{"projects", "environments", "people", "members"} {
		if labels[l] == 0 {
			t.Errorf("no part labelled %q: %v", l, labels)
		}
	}
	data, errs, err := applyParts(parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
	if !jsonEqual(t, data, plain.Data) {
		got, _ := json.Marshal(data)
		want, _ := json.Marshal(plain.Data)
		t.Errorf("the parts add up to\n%s\nwant the whole answer\n%s", got, want)
	}

	// JSON only: one body, the items merged in.
	resp, raw = post(t, env, f.Owner.Token, streamedQuery, map[string]string{"Accept": "application/json"})
	var one map[string]any
	if err := json.Unmarshal(raw, &one); err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("JSON only: %s %s", resp.Header.Get("Content-Type"), raw)
	}
	if _, ok := one["hasNext"]; ok || one["errors"] != nil || !jsonEqual(t, one["data"], plain.Data) {
		t.Errorf("JSON only: %s, want the whole answer in one response", raw)
	}

	// if: false, or an initialCount the list does not exceed: the list
	// comes whole in a plain answer.
	for _, q := range []string{
		`{ viewer { tenants(first: 5) { nodes @stream(if: false) { id } } } }`,
		`{ viewer { tenants(first: 5) { nodes @stream(initialCount: 5) { id } } } }`,
	} {
		resp, raw := post(t, env, f.Owner.Token, q, map[string]string{"Accept": "multipart/mixed;deferSpec=20220824,application/json"})
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || !bytes.Contains(raw, []byte(f.TenantID)) {
			t.Errorf("%s: %s %s, want the whole list as JSON", q, ct, raw)
		}
	}
}

// The same streamed query sixty times at once: each answer adds up to the
// whole one (run under -race by make test).
func TestStreamConcurrent(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := streamFixture(t, env)
	plain := f.MustDo(t, whole(streamedQuery), nil)
	body, _ := json.Marshal(map[string]any{"query": streamedQuery})
	header := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + f.Owner.Token,
		"Accept": "multipart/mixed;deferSpec=20220824"}
	var wg sync.WaitGroup
	results := make([]any, 60)
	for i := range results {
		wg.Go(func() {
			resp, raw := send(t, env, http.MethodPost, "/graphql", body, header)
			parts, err := parseParts(resp, raw)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			data, errs, err := applyParts(parts)
			if err != nil || len(errs) > 0 {
				t.Errorf("request %d: %v, errors %v", i, err, errs)
			}
			results[i] = data
		})
	}
	wg.Wait()
	for i, r := range results {
		if !jsonEqual(t, r, plain.Data) {
			t.Errorf("request %d added up to something else than the whole answer", i)
		}
	}
}

// What cannot be served incrementally is refused before it runs, with a
// BAD_USER_INPUT error at the directive; a refused mutation changes
// nothing.
func TestStreamRefused(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	projects := func() int {
		return len(f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes { id } } } } }`,
			map[string]any{"t": f.TenantID}).List("node.projects.nodes"))
	}
	before := projects()
	for _, c := range []struct {
		name, query string
		vars        map[string]any
		want        string
	}{
		{"not a list", `{ viewer @stream { tenants(first: 1) { nodes { id } } } }`, nil, "list fields only"},
		{"negative", `{ viewer { tenants(first: 1) { nodes @stream(initialCount: -1) { id } } } }`, nil, "0 or more"},
		{"negative variable", `query($n: Int) { viewer { tenants(first: 1) { nodes @stream(initialCount: $n) { id } } } }`, map[string]any{"n": -3}, "0 or more"},
		{"label twice", `{ viewer { tenants(first: 1) { nodes @stream(label: "x") { id } edges @stream(label: "x") { cursor } } } }`, nil, "used twice"},
		{"label twice, defer and stream", `{ viewer { tenants(first: 1) { nodes @stream(label: "x") { id ... @defer(label: "x") { name } } } } }`, nil, "used twice"},
		{"label variable", `query($l: String) { viewer { tenants(first: 1) { nodes @stream(label: $l) { id } } } }`, map[string]any{"l": "x"}, "not a variable"},
		{"stream in a mutation", `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "streamed"}) { userErrors @stream { message } } }`,
			map[string]any{"t": f.TenantID}, "queries only"},
		{"defer in a mutation", `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "deferred"}) { ... @defer { project { id } } } }`,
			map[string]any{"t": f.TenantID}, "queries only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := env.Do(t, f.Owner.Token, c.query, c.vars)
			if len(r.Errors) != 1 || r.Errors[0].Code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, c.want) ||
				len(r.Errors[0].Locations) == 0 || r.Data != nil {
				t.Errorf("got data %v, errors %s; want one BAD_USER_INPUT error with a location saying %q", r.Data, r.errorList(), c.want)
			}
		})
	}
	if after := projects(); after != before {
		t.Errorf("refused mutations changed the projects: %d, then %d", before, after)
	}
}
