package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
)

// What a frontend team's client sees of the nested query and the
// console's dashboard (issue 33): time to the first byte with @defer, and
// bytes on the wire with compression. See docs/benchmarks.md.

// deferredNested is nestedQuery with each project's environments deferred:
// the first part is the projects, then one part per project.
const deferredNested = `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes { id name
	... @defer { environments(first: 10) { nodes { id name protected deployments(first: 1) { nodes { id stage createdAt release { number imageDigest } } } } } } } } } } }`

// streamedNested is nestedQuery with the projects after the first ten
// streamed (@stream): the first part holds ten projects, the others
// follow as items.
const streamedNested = `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes @stream(initialCount: 10) { id name
	environments(first: 10) { nodes { id name protected deployments(first: 1) { nodes { id stage createdAt release { number imageDigest } } } } } } } } } }`

// consoleOverview is the console's overview query (web/src/console/overview.ts,
// ConsoleOverview with its fragments spelt out).
const consoleOverview = `query($t: ID!) { viewer { user { email name }
	tenants(first: 5) { nodes { id name viewerRole
		clusters(first: 25) { nodes { id name status lastHeartbeatAge desiredRevision appliedRevision activeRevision { number confirmed } } pageInfo { hasNextPage endCursor } }
		projects(first: 10) { nodes { id name viewerRole
			services(first: 20) { nodes { id name git { branch } } }
			environments(first: 10) { nodes { id name protected
				deployments(first: 3) { nodes { id stage createdAt release { number service { name } } } } }
				pageInfo { hasNextPage } } } pageInfo { hasNextPage endCursor } } } pageInfo { hasNextPage endCursor } } }
	node(id: $t) { id } }`

// firstByte posts body with the headers and returns the time to the
// response's first body byte, the time to its end and the bytes read.
func (f *fixture) firstByte(tb testing.TB, body []byte, header map[string]string) (first, total time.Duration, n int64) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, f.graphQL, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.seed.Secret)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := f.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.Peek(1); err != nil {
		tb.Fatal(err)
	}
	first = time.Since(start)
	n, err = io.Copy(io.Discard, r)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return first, time.Since(start), n
}

// BenchmarkDeferredFirstByte sends the nested query (100 projects × 10
// environments) undeferred, with each project's environments deferred, and
// with the projects after the first ten streamed (multipart/mixed),
// interleaved, and reports each one's time to the first byte and to the
// end.
func BenchmarkDeferredFirstByte(b *testing.B) {
	f := newFixture(b, mainSize)
	plain, deferred := f.request(b, nestedQuery), f.request(b, deferredNested)
	multipart := map[string]string{"Accept": "multipart/mixed;deferSpec=20220824, application/json"}
	// Both answer in full: the undeferred one checked as the nested
	// query, the deferred one to its closing boundary.
	checkNested(b, func() nestedResponse { r, _ := f.fetch(b, f.graphQL, plain); return r }(), f.seed)
	var last bytes.Buffer
	req, _ := http.NewRequest(http.MethodPost, f.graphQL, bytes.NewReader(deferred))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.seed.Secret)
	req.Header.Set("Accept", multipart["Accept"])
	resp, err := f.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(&last, resp.Body)
	resp.Body.Close()
	if parts := strings.Count(last.String(), "--graphql\r\n"); parts != f.seed.Size.Projects+1 || !strings.HasSuffix(last.String(), "--graphql--\r\n") {
		b.Fatalf("the deferred answer has %d parts, want %d and a closing boundary", parts, f.seed.Size.Projects+1)
	}
	streamed := f.request(b, streamedNested)
	r, parts := f.streamedAnswer(b, streamed)
	checkNested(b, r, f.seed)
	if parts < 2 {
		b.Fatalf("the streamed answer came in %d parts, want the first and parts of items", parts)
	}
	var plainFirst, plainTotal, defFirst, defTotal, strFirst, strTotal time.Duration
	for b.Loop() {
		pf, pt, _ := f.firstByte(b, plain, nil)
		df, dt, _ := f.firstByte(b, deferred, multipart)
		sf, st, _ := f.firstByte(b, streamed, multipart)
		plainFirst, plainTotal, defFirst, defTotal = plainFirst+pf, plainTotal+pt, defFirst+df, defTotal+dt
		strFirst, strTotal = strFirst+sf, strTotal+st
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainFirst.Microseconds())/n/1000, "plain-first-byte-ms")
	b.ReportMetric(float64(plainTotal.Microseconds())/n/1000, "plain-total-ms")
	b.ReportMetric(float64(defFirst.Microseconds())/n/1000, "deferred-first-byte-ms")
	b.ReportMetric(float64(defTotal.Microseconds())/n/1000, "deferred-total-ms")
	b.ReportMetric(float64(strFirst.Microseconds())/n/1000, "streamed-first-byte-ms")
	b.ReportMetric(float64(strTotal.Microseconds())/n/1000, "streamed-total-ms")
}

// BenchmarkCompressedDashboard sends the console's overview query as it
// is, with gzip and with br, interleaved, and reports the bytes on the
// wire and the time of each; each compressed answer is checked to
// decompress to the uncompressed one.
func BenchmarkCompressedDashboard(b *testing.B) {
	f := newFixture(b, mainSize)
	body := f.request(b, consoleOverview)
	encodings := []string{"identity", "gzip", "br"}
	wire := map[string][]byte{}
	sizes := map[string]int{}
	for _, enc := range encodings {
		req, _ := http.NewRequest(http.MethodPost, f.graphQL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+f.seed.Secret)
		req.Header.Set("Accept-Encoding", enc)
		resp, err := f.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Encoding"); got != strings.TrimPrefix(enc, "identity") {
			b.Fatalf("%s: Content-Encoding %q", enc, got)
		}
		var r io.Reader = bytes.NewReader(raw)
		switch enc {
		case "gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				b.Fatal(err)
			}
			r = zr
		case "br":
			r = brotli.NewReader(r)
		}
		plain, _ := io.ReadAll(r)
		wire[enc] = plain
		if enc != "identity" && !bytes.Equal(plain, wire["identity"]) {
			b.Fatalf("%s does not decompress to the uncompressed answer", enc)
		}
		sizes[enc] = len(raw)
	}
	times := map[string]time.Duration{}
	for b.Loop() {
		for _, enc := range encodings {
			_, total, _ := f.firstByte(b, body, map[string]string{"Accept-Encoding": enc})
			times[enc] += total
		}
	}
	for _, enc := range encodings {
		b.ReportMetric(float64(times[enc].Microseconds())/float64(b.N)/1000, enc+"-ms")
		b.ReportMetric(float64(sizes[enc]), enc+"-wire-B")
	}
}

// streamedAnswer posts a query with @stream asking for multipart/mixed and
// returns its parts added up (each part of items appended to the projects
// of the nested query), and how many parts came.
func (f *fixture) streamedAnswer(tb testing.TB, body []byte) (nestedResponse, int) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.graphQL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.seed.Secret)
	req.Header.Set("Accept", "multipart/mixed;deferSpec=20220824")
	resp, err := f.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		tb.Fatalf("Content-Type %q, want multipart/mixed", resp.Header.Get("Content-Type"))
	}
	type node = struct {
		Projects struct {
			Nodes []json.RawMessage `json:"nodes"`
		} `json:"projects"`
	}
	var first struct {
		Data struct {
			Node node `json:"node"`
		} `json:"data"`
		Errors []any `json:"errors"`
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	parts := 0
	for ; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		if parts == 0 {
			if err := json.NewDecoder(p).Decode(&first); err != nil || len(first.Errors) > 0 {
				tb.Fatalf("the first part: %v %v", err, first.Errors)
			}
			continue
		}
		var next struct {
			Incremental []struct {
				Items  []json.RawMessage `json:"items"`
				Path   []any             `json:"path"`
				Errors []any             `json:"errors"`
			} `json:"incremental"`
		}
		if err := json.NewDecoder(p).Decode(&next); err != nil {
			tb.Fatal(err)
		}
		for _, inc := range next.Incremental {
			at, _ := inc.Path[len(inc.Path)-1].(float64)
			if len(inc.Errors) > 0 || int(at) != len(first.Data.Node.Projects.Nodes) {
				tb.Fatalf("part %d: items at %v (errors %v) after %d projects", parts, inc.Path, inc.Errors, len(first.Data.Node.Projects.Nodes))
			}
			first.Data.Node.Projects.Nodes = append(first.Data.Node.Projects.Nodes, inc.Items...)
		}
	}
	whole, _ := json.Marshal(map[string]any{"data": first.Data})
	var r nestedResponse
	if err := json.Unmarshal(whole, &r); err != nil {
		tb.Fatal(err)
	}
	return r, parts
}

// incrementalStatements sends the plain nested query, then the query
// given, three times, each answer checked by answer, and returns the plain
// query's statements and the fewest the other sent (a dataloader batch a
// loaded machine splits in two is timing, not a statement per item).
func incrementalStatements(t *testing.T, query string, answer func(f *fixture, body []byte) nestedResponse) (plain int, fewest []statement) {
	f := newFixture(t, mainSize)
	f.fetch(t, f.graphQL, f.nested) // the token's use recorded: the steady state below
	plain = len(f.queries.record(func() { f.fetch(t, f.graphQL, f.nested) }))
	body := f.request(t, query)
	for try := range 3 {
		var r nestedResponse
		got := f.queries.record(func() { r = answer(f, body) })
		checkNested(t, r, f.seed)
		if try == 0 || len(got) < len(fewest) {
			fewest = got
		}
	}
	t.Logf("plain: %d statements; this query: %d", plain, len(fewest))
	for j, q := range fewest {
		t.Logf("  %d. %s", j+1, clip(q.sql, 150))
	}
	return plain, fewest
}

// TestStreamedNestedQueryCount: the nested query with the projects after
// the first ten streamed answers with every item, and reads the children
// of the streamed projects in one batch, not one statement per project:
// at most two statements more than the plain query's (environments and
// deployments, once for the first ten and once for the others).
func TestStreamedNestedQueryCount(t *testing.T) {
	plain, sql := incrementalStatements(t, streamedNested, func(f *fixture, body []byte) nestedResponse {
		r, parts := f.streamedAnswer(t, body)
		if parts < 2 {
			t.Fatalf("the streamed answer came in %d parts, want the first and parts of items", parts)
		}
		return r
	})
	if len(sql) > plain+2 {
		t.Errorf("the streamed nested query sent %d SQL statements, want at most the plain one's %d + 2", len(sql), plain)
	}
}

// TestDeferredNestedQueryCount: the nested query with each project's
// environments deferred answers with every item, and reads the deferred
// environments and their deployments in one batch after the first part,
// not one statement per project: no more statements than the plain
// query.
func TestDeferredNestedQueryCount(t *testing.T) {
	plain, sql := incrementalStatements(t, deferredNested, func(f *fixture, body []byte) nestedResponse {
		r, _ := f.fetch(t, f.graphQL, body) // JSON: the parts merged by the server
		return r
	})
	if len(sql) > plain {
		t.Errorf("the deferred nested query sent %d SQL statements, want at most the plain one's %d", len(sql), plain)
	}
}
