package apitest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// logStream is a stream of a service's pod in a test: the ids its lines
// are sent under (the agent takes them from its desired state).
type logStream struct {
	env, svc    string // GraphQL ids
	release     int    // its number
	pod, stream string
}

// newLogStream names the stream of the service's current release in the
// environment (deployed before).
func newLogStream(t *testing.T, f *Fixture, svc, env, pod string) logStream {
	t.Helper()
	r := f.MustDo(t, `query($s: ID!, $e: ID!) { node(id: $s) { ... on Service { releases(first: 1, environmentId: $e) { nodes { number } } } } }`,
		map[string]any{"s": svc, "e": env})
	n, _ := r.Get("node.releases.nodes.0.number").(float64)
	rel := int(n)
	if rel == 0 {
		t.Fatalf("service %s has no release in %s: %s", svc, env, r.Body)
	}
	return logStream{env: env, svc: svc, release: rel, pod: pod, stream: "stdout"}
}

// sent is what a logs message carries of one stream.
type sent struct {
	s     logStream
	lines []protocol.LogLine
	gap   string
}

// logs sends lines of streams as the agent does (logs.v1), one message.
func (a *stageAgent) logs(streams ...sent) {
	a.t.Helper()
	var m protocol.Logs
	for _, x := range streams {
		s := x.s
		m.Streams = append(m.Streams, protocol.LogStream{Environment: rawID(a.t, gid.Environment, s.env),
			Service: rawID(a.t, gid.Service, s.svc), Release: s.release, Process: "web",
			Namespace: "ns", Pod: s.pod, Container: "app", Stream: s.stream, Lines: x.lines, Gap: x.gap})
	}
	a.send(protocol.TypeLogs, m)
	a.handled()
}

// printed makes lines printed one millisecond apart from at.
func printed(at time.Time, texts ...string) []protocol.LogLine {
	out := make([]protocol.LogLine, len(texts))
	for i, s := range texts {
		out[i] = protocol.LogLine{At: at.Add(time.Duration(i) * time.Millisecond).UTC(), Text: s}
	}
	return out
}

type shownLine struct {
	Number int    `json:"number"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
	Pod    string `json:"pod"`
}

const logQuery = `query($s: ID!, $e: ID!, $f: LogFilter, $first: Int, $after: String, $last: Int, $before: String) { node(id: $s) { ... on Service {
	logs(environmentId: $e, filter: $f, first: $first, after: $after, last: $last, before: $before) {
		edges { cursor node { number } } nodes { number stream text pod container process release { id } }
		pageInfo { hasPreviousPage hasNextPage startCursor endCursor } } } } }`

func readLogs(t *testing.T, f *Fixture, token, svc, env string, vars map[string]any) ([]shownLine, Response) {
	t.Helper()
	v := map[string]any{"s": svc, "e": env}
	for k, x := range vars {
		v[k] = x
	}
	r := f.Env.MustDo(t, token, logQuery, v)
	lines := decodeInto[[]shownLine](t, r.Get("node.logs.nodes"))
	edges := r.List("node.logs.edges")
	if len(edges) != len(lines) {
		t.Fatalf("%d edges for %d lines", len(edges), len(lines))
	}
	for i, e := range edges {
		if dig(e, "node.number") != float64(lines[i].Number) || dig(e, "cursor") == "" {
			t.Fatalf("edge %d: %v, want line %d with a cursor", i, e, lines[i].Number)
		}
	}
	return lines, r
}

// lineCursors are the cursors of a page's lines by line number.
func lineCursors(r Response) map[int]string {
	out := map[int]string{}
	for _, e := range r.List("node.logs.edges") {
		out[int(dig(e, "node.number").(float64))] = dig(e, "cursor").(string)
	}
	return out
}

func texts(ls []shownLine) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

// An agent's lines of a service are stored and read back through the
// API: the tail, pages both ways, the filters; a resend stores nothing
// twice; a gap is a marker line; lines of a service the cluster does not
// run are dropped; viewers read them, a subscription replays from a
// cursor and follows live.
func TestServiceLogs(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		wsDeploy(t, f)
		agent, _ := connectStageAgent(t, f, "prod-eu")
		web := newLogStream(t, f, f.ServiceID, f.EnvironmentID, "api-web-1")
		errs := web
		errs.stream = "stderr"
		at := time.Now().Add(-time.Minute)
		agent.logs(sent{s: web, lines: printed(at, "listening on :8080", "GET /items 200", "GET /items/7 404")},
			sent{s: errs, lines: printed(at.Add(10*time.Millisecond), "warning: slow query")})

		tail, _ := readLogs(t, f, f.Users[Viewer].Token, f.ServiceID, f.EnvironmentID, nil)
		if len(tail) != 4 || tail[0].Number != 1 || tail[3].Number != 4 {
			t.Fatalf("the tail: %+v", tail)
		}
		// A resend (a reconnect) stores nothing twice; new lines follow.
		agent.logs(sent{s: web, lines: append(printed(at, "listening on :8080", "GET /items 200", "GET /items/7 404"),
			printed(at.Add(20*time.Millisecond), "GET /health 200")...)})
		all, r := readLogs(t, f, f.Users[Viewer].Token, f.ServiceID, f.EnvironmentID, map[string]any{"first": 100})
		if got := texts(all); !slices.Equal(got, []string{"listening on :8080", "GET /items 200", "GET /items/7 404", "warning: slow query", "GET /health 200"}) {
			t.Errorf("after a resend: %q", got)
		}
		cursors := lineCursors(r)
		// A gap: a marker before the lines after it.
		agent.logs(sent{s: web, lines: printed(at.Add(time.Second), "back"), gap: "the log was rotated"})
		last, r := readLogs(t, f, f.Users[Viewer].Token, f.ServiceID, f.EnvironmentID, map[string]any{"last": 2})
		if len(last) != 2 || last[0].Stream != "MARKER" || !strings.Contains(last[0].Text, "the log was rotated") || last[1].Text != "back" ||
			r.Get("node.logs.pageInfo.hasPreviousPage") != true || r.Get("node.logs.pageInfo.hasNextPage") != false {
			t.Errorf("the gap: %+v %s", last, r.Body)
		}
		// Pages both ways, by the lines' cursors, and filters.
		page, r := readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"first": 2, "after": cursors[1]})
		if got := texts(page); !slices.Equal(got, []string{"GET /items 200", "GET /items/7 404"}) || r.Get("node.logs.pageInfo.hasNextPage") != true ||
			r.Str("node.logs.pageInfo.endCursor") != cursors[3] {
			t.Errorf("first 2 after line 1: %q %s", got, r.Body)
		}
		page, r = readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"last": 2, "before": cursors[4]})
		if got := texts(page); !slices.Equal(got, []string{"GET /items 200", "GET /items/7 404"}) || r.Get("node.logs.pageInfo.hasPreviousPage") != true ||
			r.Get("node.logs.pageInfo.hasNextPage") != false || r.Str("node.logs.pageInfo.startCursor") != cursors[2] {
			t.Errorf("last 2 before line 4: %q %s", got, r.Body)
		}
		page, _ = readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"first": 10, "after": cursors[1], "before": cursors[5]})
		if got := texts(page); !slices.Equal(got, []string{"GET /items 200", "GET /items/7 404", "warning: slow query"}) {
			t.Errorf("between lines 1 and 5: %q", got)
		}
		page, _ = readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"after": cursors[5]})
		if len(page) != 2 || page[0].Stream != "MARKER" || page[1].Text != "back" {
			t.Errorf("after line 5 without first: %+v, want the 2 lines after it", page)
		}
		page, _ = readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"f": map[string]any{"text": "GET"}, "last": 1, "before": cursors[5]})
		if got := texts(page); !slices.Equal(got, []string{"GET /items/7 404"}) {
			t.Errorf("the last line with GET before line 5: %q", got)
		}
		for _, c := range []struct {
			filter map[string]any
			want   []string
		}{
			{map[string]any{"text": "/items"}, []string{"GET /items 200", "GET /items/7 404"}},
			{map[string]any{"stream": "STDERR"}, []string{"warning: slow query"}},
			{map[string]any{"pod": "api-web-9"}, []string{}},
			{map[string]any{"since": at.Add(500 * time.Millisecond).Format(time.RFC3339Nano)}, []string{"[marker]", "back"}},
		} {
			got, _ := readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"f": c.filter, "first": 100})
			shown := texts(got)
			for i, l := range got {
				if l.Stream == "MARKER" {
					shown[i] = "[marker]"
				}
			}
			if !slices.Equal(shown, c.want) && !(len(shown) == 0 && len(c.want) == 0) {
				t.Errorf("filter %v: %q, want %q", c.filter, shown, c.want)
			}
		}
		// The largest page the docs give works, both ways (issue 30: it
		// was refused); bad input is a clear error.
		for _, dir := range []string{"first", "last"} {
			if page, _ := readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{dir: 1000}); len(page) != 7 {
				t.Errorf("%s: 1000: %d lines, want the 7 stored", dir, len(page))
			}
		}
		for name, vars := range map[string]map[string]any{
			"first: 1001":         {"first": 1001},
			"first: 5000":         {"first": 5000},
			"last: 1001":          {"last": 1001},
			"first: -1":           {"first": -1},
			"first and last":      {"first": 1, "last": 1},
			"a cursor not issued": {"after": "bm90IGEgbGluZQ"},
			"a line number":       {"before": "4"},
		} {
			vars["s"], vars["e"] = f.ServiceID, f.EnvironmentID
			bad := env.Do(t, f.Owner.Token, logQuery, vars)
			if codes := bad.ErrorCodes(); !slices.Equal(codes, []string{"BAD_USER_INPUT"}) || bad.Get("node") != nil {
				t.Errorf("%s: %v %s, want BAD_USER_INPUT", name, codes, bad.Body)
			}
		}
		// Another tenant's admin: the service is not there.
		outsider := env.NewFixture(t)
		res := env.Do(t, outsider.Owner.Token, logQuery, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
		if codes := res.ErrorCodes(); !slices.Equal(codes, []string{"NOT_FOUND"}) {
			t.Errorf("another tenant reads the logs: %v %s", codes, res.Body)
		}
		sub := subscribeOn(t, env, outsider.Owner.Token, `subscription($s: ID!, $e: ID!) { serviceLogs(serviceId: $s, environmentId: $e) { number } }`,
			map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
		testutil.Eventually(t, 10*time.Second, "another tenant's subscription is refused", func() (bool, string) {
			sub.mu.Lock()
			defer sub.mu.Unlock()
			return len(sub.msgs) > 0 && sub.msgs[0]["type"] == "error" && strings.Contains(fmt.Sprint(sub.msgs[0]), "NOT_FOUND"), fmt.Sprint(sub.msgs)
		})
		// A service the cluster does not run: dropped, nothing stored.
		other := f.NewService(t, f.ProjectID, "other")
		stray := web
		stray.svc = other
		agent.logs(sent{s: stray, lines: printed(at, "not mine")})
		if got, _ := readLogs(t, f, f.Owner.Token, other, f.EnvironmentID, nil); len(got) != 0 {
			t.Errorf("lines of a service the cluster does not run were stored: %+v", got)
		}
		// A release the service does not have: dropped too.
		unknown := web
		unknown.release = 99
		agent.logs(sent{s: unknown, lines: printed(at.Add(3*time.Second), "from nowhere")})
		if got, _ := readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"f": map[string]any{"text": "nowhere"}}); len(got) != 0 {
			t.Errorf("lines of an unknown release were stored: %+v", got)
		}

		// A subscription replays after a line and follows live.
		s := subscribeOn(t, env, f.Users[Viewer].Token, `subscription($s: ID!, $e: ID!, $a: Int) { serviceLogs(serviceId: $s, environmentId: $e, after: $a) { number text } }`,
			map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "a": 5})
		marker := "[nebula] lines of api-web-1/app are missing here: the log was rotated"
		s.waitValues(t, "serviceLogs.text", []string{marker, "back"})
		agent.logs(sent{s: web, lines: printed(at.Add(2*time.Second), "live 1", "live 2")})
		s.waitValues(t, "serviceLogs.text", []string{marker, "back", "live 1", "live 2"})

		// The viewer leaves the project: the subscription ends before the
		// next line.
		f.MustDo(t, `mutation($m: ID!) { removeProjectMember(input: {projectMemberId: $m}) { removedProjectMemberId userErrors { message } } }`,
			map[string]any{"m": f.Users[Viewer].ProjectMemberID})
		agent.logs(sent{s: web, lines: printed(at.Add(4*time.Second), "after the removal")})
		testutil.Eventually(t, 10*time.Second, "the removed member's subscription ends", func() (bool, string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			last := s.msgs[len(s.msgs)-1]
			return last["type"] == "complete" || last["type"] == "error", fmt.Sprint(last)
		})
		if got := s.values("serviceLogs.text"); slices.Contains(got, "after the removal") {
			t.Errorf("a removed member was sent a line: %q", got)
		}
	})
}

// An agent that starts following containers again learns where the stored
// log of each ends (log-resume.v1): the time of the last line its cluster
// sent, for the services it runs; nothing for a container never sent, for
// another tenant's service or another cluster's lines. A request answered
// 60 times in a row is answered 60 times, in order; one over the bounds
// ends the session with 4400 and changes nothing.
func TestLogPositions(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		wsDeploy(t, f)
		agent, _ := connectStageAgent(t, f, "prod-eu")
		web := newLogStream(t, f, f.ServiceID, f.EnvironmentID, "api-web-1")
		at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		lines := printed(at, "one", "two", "three")
		agent.logs(sent{s: web, lines: lines})

		// Another tenant's agent stores lines of a pod of the same name.
		outsider := env.NewFixture(t)
		wsDeploy(t, outsider)
		theirs, _ := connectStageAgent(t, outsider, "prod-eu")
		theirWeb := newLogStream(t, outsider, outsider.ServiceID, outsider.EnvironmentID, "api-web-1")
		theirs.logs(sent{s: theirWeb, lines: printed(at.Add(time.Hour), "theirs")})

		pos := func(s logStream, pod string) protocol.LogPosition {
			return protocol.LogPosition{Environment: rawID(t, gid.Environment, s.env), Service: rawID(t, gid.Service, s.svc), Pod: pod, Container: "app"}
		}
		ask := protocol.LogPositions{ID: "q-1", Streams: []protocol.LogPosition{pos(web, "api-web-1"), pos(web, "api-web-2"),
			pos(theirWeb, "api-web-1")}}
		answers := func(n int) []protocol.LogPositions {
			t.Helper()
			testutil.Eventually(t, 15*time.Second, fmt.Sprintf("%d answers", n), func() (bool, string) {
				agent.mu.Lock()
				defer agent.mu.Unlock()
				return len(agent.positions) >= n, fmt.Sprint(agent.positions)
			})
			agent.mu.Lock()
			defer agent.mu.Unlock()
			return slices.Clone(agent.positions)
		}
		agent.send(protocol.TypeLogPositions, ask)
		got := answers(1)[0]
		if got.ID != "q-1" || len(got.Streams) != 3 {
			t.Fatalf("the answer: %+v", got)
		}
		if a := got.Streams[0].At; a == nil || !a.Equal(lines[2].At) {
			t.Errorf("the stored stream ends at %v, want %v", a, lines[2].At)
		}
		for i, what := range []string{"", "a container never sent", "another tenant's service"} {
			if i > 0 && got.Streams[i].At != nil {
				t.Errorf("%s ends at %v, want nothing", what, got.Streams[i].At)
			}
		}
		if got.Streams[0].Pod != "api-web-1" || got.Streams[1].Pod != "api-web-2" {
			t.Errorf("the answer's streams are not the request's, in order: %+v", got.Streams)
		}

		// The same request 60 times in a row: 60 answers, in order.
		for i := range 60 {
			q := ask
			q.ID = fmt.Sprintf("r-%d", i)
			agent.send(protocol.TypeLogPositions, q)
		}
		all := answers(61)
		for i, a := range all[1:] {
			if a.ID != fmt.Sprintf("r-%d", i) || a.Streams[0].At == nil || !a.Streams[0].At.Equal(lines[2].At) {
				t.Fatalf("answer %d: %+v", i, a)
			}
		}

		// Over the bounds: 4400, and the stored log is as it was.
		big := protocol.LogPositions{ID: "big"}
		for range protocol.MaxLogStreams + 1 {
			big.Streams = append(big.Streams, pos(web, "api-web-1"))
		}
		agent.send(protocol.TypeLogPositions, big)
		select {
		case <-agent.ended:
		case <-time.After(15 * time.Second):
			t.Fatal("a request over the bounds did not end the session")
		}
		if got, _ := readLogs(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID, map[string]any{"first": 100}); !slices.Equal(texts(got), []string{"one", "two", "three"}) {
			t.Errorf("after the bad request the log is %q", texts(got))
		}
	})
}
