package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

// The fault test: two `nebula serve` processes on one PostgreSQL behind a
// load balancer, a simulated agent, a writer deploying with idempotency
// keys, and a subscriber for every deployment, while PostgreSQL restarts
// twice (immediate mode), one replica is killed with SIGKILL and started
// again, and the other is restarted the way an orchestrator does it
// (SIGTERM). At the end every subscriber has every event of its deployment
// exactly once, none completed before its deployment ended, every
// acknowledged deployment exists, and every client whose replica went away
// with 1001 came back within a second.

// follower is a client that follows one subscription through whatever
// happens, reconnecting through the load balancer as a client library
// does: at once after 1001 or 1013 (jittered), shortly after a broken
// connection, resuming deploymentEvents from its last cursor.
type follower struct {
	name, transport, query string
	vars                   map[string]any
	// events: a deploymentEvents follower checks sequences and expects
	// its documented end; otherwise it must never end.
	events bool

	mu        sync.Mutex
	seqs      []int
	last      string // the last stage seen
	cursor    string
	completed bool
	problems  []string
	gaps      []reconnect
	done      chan struct{}
}

func (f *follower) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

// update takes one result of the subscription.
func (f *follower) update(data map[string]any) {
	if !f.events {
		return
	}
	e, _ := data["deploymentEvents"].(map[string]any)
	seq, _ := e["sequence"].(float64)
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.seqs); n > 0 && int(seq) != f.seqs[n-1]+1 {
		f.problems = append(f.problems, fmt.Sprintf("event %v after %d: a gap or a duplicate", seq, f.seqs[n-1]))
	}
	f.seqs = append(f.seqs, int(seq))
	f.last, _ = e["stage"].(string)
	f.cursor, _ = e["cursor"].(string)
}

var terminalStages = []string{"SUCCEEDED", "FAILED", "ROLLED_BACK", "SUPERSEDED", "CANCELLED"}

// run follows until the documented end (events) or until ctx ends.
func (f *follower) run(ctx context.Context, base, token string) {
	defer close(f.done)
	var lost time.Time
	lostCode := 0
	established := func() {
		if !lost.IsZero() {
			f.mu.Lock()
			f.gaps = append(f.gaps, reconnect{lostCode, time.Since(lost)})
			f.mu.Unlock()
		}
	}
	for ctx.Err() == nil {
		vars := map[string]any{}
		for k, v := range f.vars {
			vars[k] = v
		}
		f.mu.Lock()
		if f.cursor != "" {
			vars["after"] = f.cursor
		}
		f.mu.Unlock()
		var end string
		var code int
		if f.transport == "sse" {
			end, code = f.sseOnce(ctx, base, token, vars, established)
		} else {
			end, code = f.wsOnce(ctx, base, token, vars, established)
		}
		if ctx.Err() != nil {
			return
		}
		switch end {
		case "complete":
			f.mu.Lock()
			last := f.last
			f.mu.Unlock()
			if !f.events || !slices.Contains(terminalStages, last) {
				f.problem("completed after stage %q: before its end", last)
			}
			f.mu.Lock()
			f.completed = true
			f.mu.Unlock()
			return
		case "fatal":
			return
		}
		lost, lostCode = time.Now(), code
		wait := 100 * time.Millisecond
		if code == websocket.CloseGoingAway || code == 1013 {
			wait = rand.N(250 * time.Millisecond)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// wsOnce runs one connection; end is "complete", "fatal" (a problem was
// recorded) or "lost" with the close code (0 for a broken connection).
func (f *follower) wsOnce(ctx context.Context, base, token string, vars map[string]any, established func()) (string, int) {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, Subprotocols: []string{f.transport}}
	c, _, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", nil)
	if err != nil {
		return "lost", 0
	}
	defer c.Close()
	context.AfterFunc(ctx, func() { c.Close() })
	if c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}) != nil {
		return "lost", 0
	}
	start := "subscribe"
	if f.transport == wsLegacyWS {
		start = "start"
	}
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var m wsFrame
		err := c.ReadJSON(&m)
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code == 4403 || ce.Code == 4400 || ce.Code == 4401 {
				f.problem("closed with %d %q", ce.Code, ce.Text)
				return "fatal", ce.Code
			}
			return "lost", ce.Code
		}
		if err != nil {
			return "lost", 0
		}
		switch m.Type {
		case "connection_ack":
			established()
			if c.WriteJSON(map[string]any{"id": "1", "type": start, "payload": map[string]any{"query": f.query, "variables": vars}}) != nil {
				return "lost", 0
			}
		case "next", "data":
			var p struct {
				Data   map[string]any `json:"data"`
				Errors []GraphQLError `json:"errors"`
			}
			_ = json.Unmarshal(m.Payload, &p)
			if len(p.Errors) > 0 {
				f.problem("an update with errors %v", codesOf(p.Errors))
				return "fatal", 0
			}
			f.update(p.Data)
		case "error":
			var list []GraphQLError
			_ = json.Unmarshal(m.Payload, &list)
			if len(list) > 0 && list[0].Code() == "UNAVAILABLE" {
				return "lost", 1013 // retryable, as the error says
			}
			f.problem("ended with the error %v", list)
			return "fatal", 0
		case "complete":
			return "complete", 0
		}
	}
}

// sseOnce runs one SSE stream; the same ends as wsOnce.
func (f *follower) sseOnce(ctx context.Context, base, token string, vars map[string]any, established func()) (string, int) {
	body, _ := json.Marshal(map[string]any{"query": f.query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return "lost", 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "lost", 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode >= 500 {
		return "lost", 1013
	}
	if resp.StatusCode != http.StatusOK {
		f.problem("SSE answered HTTP %d", resp.StatusCode)
		return "fatal", 0
	}
	established()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && name == "next":
			var p struct {
				Data   map[string]any `json:"data"`
				Errors []GraphQLError `json:"errors"`
			}
			_ = json.Unmarshal([]byte(data), &p)
			switch {
			case len(p.Errors) > 0 && p.Errors[0].Code() == "UNAVAILABLE":
				return "lost", 1013
			case len(p.Errors) > 0:
				f.problem("an SSE event with errors %v", p.Errors)
				return "fatal", 0
			}
			f.update(p.Data)
			name, data = "", ""
		case line == "" && name == "complete":
			return "complete", 0
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	return "lost", 0 // the stream ended without complete: resume elsewhere
}

// keyedPost sends a mutation with an Idempotency-Key and retries it, with
// the same key, until its outcome is known: the data, or the id of the
// object of a change whose response was lost.
func keyedPost(ctx context.Context, base, token, key, query string, vars map[string]any, path string) (string, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var out struct {
				Data   map[string]any `json:"data"`
				Errors []GraphQLError `json:"errors"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && len(out.Errors) == 0 {
				if id, _ := dig(out.Data, path).(string); id != "" {
					return id, nil
				}
				return "", fmt.Errorf("%s: no %s in %v", key, path, out.Data)
			}
			if len(out.Errors) > 0 {
				ext := out.Errors[0].Extensions
				switch {
				case ext["idempotency"] == "RESPONSE_LOST":
					id, _ := ext["targetId"].(string)
					return id, nil
				case ext["retryable"] == true, out.Errors[0].Code() == "UNAVAILABLE", out.Errors[0].Code() == "INTERNAL":
				default:
					return "", fmt.Errorf("%s: HTTP %d %v", key, resp.StatusCode, out.Errors)
				}
			}
		}
		if attempt > 600 {
			return "", fmt.Errorf("%s: no outcome after %d attempts (%v)", key, attempt, err)
		}
		select { // a client's backoff
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestFaultsTwoReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault test runs two control plane processes for a minute")
	}
	pg := pgtest.Private(t)
	settings := []string{"NEBULA_DATABASE_URL=" + pg.URL, "NEBULA_MASTER_KEY=" + seal.GenerateKey(),
		"NEBULA_AGENT_HEARTBEAT=1s", "NEBULA_JOB_INTERVAL=500ms", "NEBULA_LOG_LEVEL=info", "NEBULA_SHUTDOWN_GRACE=10s"}
	a := startServe(t, "a", settings...)
	b := startServe(t, "b", settings...)
	token := regexp.MustCompile(`nbt_[A-Za-z0-9]+`).FindString(a.output())
	if token == "" {
		t.Fatalf("replica a printed no admin token:\n%s", a.output())
	}
	lb := newTCPProxy(t, a.addr, b.addr)
	client := &Env{Server: &httptest.Server{URL: lb.base()}}

	// A tenant with one cluster, two environments and three services.
	tenant := client.MustDo(t, token, `{ viewer { tenants { nodes { id } } } }`, nil).Str("viewer.tenants.nodes.0.id")
	connect := client.MustDo(t, token, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "faulty", labels: [{key: "env", value: "fault"}]}) {
		connectToken } }`, map[string]any{"t": tenant}).Str("registerCluster.connectToken")
	project := client.MustDo(t, token, `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "faults"}) { project { id } } }`,
		map[string]any{"t": tenant}).Str("createProject.project.id")
	var envs, services []string
	for _, name := range []string{"blue", "green"} {
		envs = append(envs, client.MustDo(t, token, `mutation($p: ID!, $n: String!) { createEnvironment(input: {projectId: $p, name: $n,
			clusterSelector: [{key: "env", value: "fault"}]}) { environment { id } } }`, map[string]any{"p": project, "n": name}).Str("createEnvironment.environment.id"))
	}
	for _, name := range []string{"api", "web", "worker"} {
		services = append(services, client.MustDo(t, token, `mutation($p: ID!, $n: String!) { createService(input: {projectId: $p, name: $n,
			image: "registry.example.com/faults/app", processes: [{name: "main", command: ["./app"], replicas: 1}]}) { service { id } } }`,
			map[string]any{"p": project, "n": name}).Str("createService.service.id"))
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	agent := &simAgent{url: lb.base(), token: connect, step: 300 * time.Millisecond}
	var bg sync.WaitGroup
	defer bg.Wait()
	defer stop()
	bg.Go(func() { agent.run(ctx) })

	// Watchers of every environment: they must never end.
	var watchers []*follower
	for i, e := range envs {
		w := &follower{name: "environmentDeployments " + e, transport: liveTransports[i%len(liveTransports)],
			query: `subscription($e: ID!) { environmentDeployments(environmentId: $e) { id stage } }`,
			vars:  map[string]any{"e": e}, done: make(chan struct{})}
		watchers = append(watchers, w)
		bg.Go(func() { w.run(ctx, lb.base(), token) })
	}

	// The writer: deploy after deploy, each with its key, retried until
	// acknowledged; a follower for each deployment it made.
	const deploys = 16
	var (
		mu        sync.Mutex
		acked     []string
		followers []*follower
		writerErr error
	)
	progress := make(chan int, deploys)
	bg.Go(func() {
		defer close(progress)
		for i := range deploys {
			id, err := keyedPost(ctx, lb.base(), token, fmt.Sprintf("fault-deploy-%d", i),
				`mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } userErrors { code message } } }`,
				map[string]any{"s": services[i%len(services)], "e": envs[i%len(envs)], "d": Digest(int64(7_000_000 + i))}, "deploy.deployment.id")
			if err != nil {
				mu.Lock()
				writerErr = err
				mu.Unlock()
				return
			}
			f := &follower{name: "deploymentEvents " + id, transport: liveTransports[i%len(liveTransports)], events: true,
				query: `subscription($d: ID!, $after: String) { deploymentEvents(deploymentId: $d, after: $after) { sequence stage cursor } }`,
				vars:  map[string]any{"d": id}, done: make(chan struct{})}
			mu.Lock()
			acked = append(acked, id)
			followers = append(followers, f)
			mu.Unlock()
			bg.Go(func() { f.run(ctx, lb.base(), token) })
			progress <- i + 1
			select {
			case <-ctx.Done():
				return
			case <-time.After(150 * time.Millisecond):
			}
		}
	})
	waitFor := func(n int) {
		t.Helper()
		for got := range progress {
			if got >= n {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the writer stopped after %d deployments: %v", len(acked), writerErr)
	}

	waitFor(3)
	t.Log("restarting PostgreSQL (immediate)")
	pg.Restart()
	waitFor(6)
	t.Log("killing replica a (SIGKILL) and starting it again")
	a.kill()
	a.start()
	waitFor(9)
	t.Log("restarting PostgreSQL (immediate) again")
	pg.Restart()
	waitFor(12)
	t.Log("rolling restart of replica b (SIGTERM, then start)")
	b.term()
	b.start()
	waitFor(deploys)

	// Every follower reaches its deployment's end.
	mu.Lock()
	all := slices.Clone(followers)
	ids := slices.Clone(acked)
	mu.Unlock()
	if len(ids) != deploys {
		t.Fatalf("%d deployments acknowledged, want %d", len(ids), deploys)
	}
	deadline := time.After(90 * time.Second)
	for _, f := range all {
		select {
		case <-f.done:
		case <-deadline:
			f.mu.Lock()
			t.Fatalf("%s (%s) did not reach its end: events %v, last %q, problems %v", f.name, f.transport, f.seqs, f.last, f.problems)
		}
	}

	for i, f := range all {
		r := client.MustDo(t, token, `query($d: ID!) { node(id: $d) { ... on Deployment { stage events { nodes { sequence } } } } }`, map[string]any{"d": ids[i]})
		n := len(r.List("node.events.nodes"))
		if n == 0 {
			t.Errorf("acknowledged deployment %s is missing", ids[i])
			continue
		}
		want := make([]int, n)
		for j := range want {
			want[j] = j + 1
		}
		f.mu.Lock()
		if !slices.Equal(f.seqs, want) || !f.completed || len(f.problems) > 0 {
			t.Errorf("%s over %s: events %v (want %v), completed %v, problems %v", f.name, f.transport, f.seqs, want, f.completed, f.problems)
		}
		if !slices.Contains(terminalStages, r.Str("node.stage")) {
			t.Errorf("deployment %s ended at %s", ids[i], r.Str("node.stage"))
		}
		f.mu.Unlock()
	}
	for _, w := range watchers {
		w.mu.Lock()
		if w.completed || len(w.problems) > 0 {
			t.Errorf("%s over %s: completed %v, problems %v", w.name, w.transport, w.completed, w.problems)
		}
		w.mu.Unlock()
	}

	// Clients that a replica sent away with 1001 were back within a second.
	var gaps []reconnect
	for _, f := range append(all, watchers...) {
		f.mu.Lock()
		gaps = append(gaps, f.gaps...)
		f.mu.Unlock()
	}
	agent.mu.Lock()
	agentGaps := slices.Clone(agent.gaps)
	agent.mu.Unlock()
	goingAway, worst := 0, time.Duration(0)
	for _, g := range append(gaps, agentGaps...) {
		if g.code == websocket.CloseGoingAway {
			goingAway++
			worst = max(worst, g.took)
			if g.took > time.Second {
				t.Errorf("a client sent away with 1001 came back after %v, want within a second", g.took)
			}
		}
	}
	if goingAway == 0 {
		t.Error("no client was sent away with 1001 during the rolling restart")
	}
	t.Logf("%d deployments, %d subscribers, %d reconnections (%d after 1001, the slowest %v), the agent reconnected %d times",
		deploys, len(all)+len(watchers), len(gaps)+len(agentGaps), goingAway, worst, len(agentGaps))
}
