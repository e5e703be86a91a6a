package bench

import (
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/apitest"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

// Flags, after -args:
//
//	go test -run '^$' -bench LogIngest -benchtime 1x -count 6 ./internal/bench/ -args -logingest.agents=100
var (
	logIngestAgents  = flag.Int("logingest.agents", 100, "LogIngest: simulated agents, one cluster and environment each")
	logIngestRate    = flag.Int("logingest.rate", 100, "LogIngest: lines a second each agent sends")
	logIngestSeconds = flag.Int("logingest.seconds", 10, "LogIngest: how long the agents send")
)

// BenchmarkLogIngest measures container logs on their way in: one control
// plane (`nebula serve`'s handler on loopback) on PostgreSQL, and
// -logingest.agents simulated agents, each the agent of a cluster of its
// own whose environment runs the service, connected over real websockets
// (logs.v1) and sending -logingest.rate lines a second (~110 bytes each,
// in a message every 100 ms, as the agent batches) for
// -logingest.seconds; a graphql-transport-ws subscriber follows the
// service's log in the first environment. Reported per op: lines a
// second stored (all lines sent, first sent to the last one readable
// through Service.logs), the time from a line's sending to the
// subscriber's reading it (median, p99, max; the subscriber's stream is
// one agent's), and the CPU seconds this process used per 1,000 lines
// (the control plane, the agents and the subscriber together: an upper
// bound of the control plane's).
func BenchmarkLogIngest(b *testing.B) {
	for range b.N {
		env := apitest.NewEnv(b, pgtest.Open(b))
		f := env.NewFixture(b)
		f.MustDo(b, `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: ENTERPRISE}) { tenant { id } } }`,
			map[string]any{"t": f.TenantID})
		n := *logIngestAgents
		type cluster struct {
			env, token string
			envRaw     string
			conn       *websocket.Conn
			mu         sync.Mutex
		}
		clusters := make([]*cluster, n)
		svcRaw, _ := gid.Decode[string](gid.Service, f.ServiceID)
		for i := range clusters {
			site := fmt.Sprintf("ingest-%d", i)
			reg := f.MustDo(b, `mutation($t: ID!, $n: String!, $s: String!) { registerCluster(input: {tenantId: $t, name: $n, labels: [{key: "site", value: $s}]}) {
				connectToken } }`, map[string]any{"t": f.TenantID, "n": site, "s": site})
			e := f.MustDo(b, `mutation($p: ID!, $n: String!, $s: String!) { createEnvironment(input: {projectId: $p, name: $n, clusterSelector: [{key: "site", value: $s}]}) {
				environment { id } } }`, map[string]any{"p": f.ProjectID, "n": site, "s": site}).Str("createEnvironment.environment.id")
			f.MustDo(b, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } } }`,
				map[string]any{"s": f.ServiceID, "e": e, "d": apitest.Digest(int64(i + 1))})
			raw, _ := gid.Decode[string](gid.Environment, e)
			clusters[i] = &cluster{env: e, envRaw: raw, token: reg.Str("registerCluster.connectToken")}
		}
		for _, c := range clusters {
			conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/agent/v1/connect",
				http.Header{"Authorization": {"Bearer " + c.token}})
			if err != nil {
				b.Fatal(err)
			}
			c.conn = conn
			hello, _ := protocol.Encode(protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version}, Capabilities: protocol.Known})
			if err := conn.WriteMessage(websocket.TextMessage, hello); err != nil {
				b.Fatal(err)
			}
			go func() {
				for {
					if _, _, err := conn.ReadMessage(); err != nil {
						return
					}
				}
			}()
		}
		sub := subscribeServiceLogs(b, env, f.Owner.Token, f.ServiceID, clusters[0].env)

		perBatch := max(1, *logIngestRate/10)
		batches := *logIngestSeconds * 10
		total := n * perBatch * batches
		pad := strings.Repeat("x", 50)
		cpu0, _ := processCPU()
		start := time.Now()
		var wg sync.WaitGroup
		for ci, c := range clusters {
			wg.Go(func() {
				for k := range batches {
					time.Sleep(time.Until(start.Add(time.Duration(k) * 100 * time.Millisecond)))
					m := protocol.Logs{Streams: []protocol.LogStream{{Environment: c.envRaw, Service: svcRaw, Release: 1,
						Process: "web", Namespace: "ns", Pod: fmt.Sprintf("api-web-r1-%d", ci), Container: "web", Stream: "stdout"}}}
					for j := range perBatch {
						now := time.Now()
						m.Streams[0].Lines = append(m.Streams[0].Lines, protocol.LogLine{At: now.UTC(),
							Text: fmt.Sprintf("%d GET /api/items/%d 200 %s", now.UnixNano(), k*perBatch+j, pad)})
					}
					frame, _ := protocol.Encode(protocol.TypeLogs, m)
					c.mu.Lock()
					err := c.conn.WriteMessage(websocket.TextMessage, frame)
					c.mu.Unlock()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		perEnv := perBatch * batches
		var latencies []time.Duration
		deadline := time.After(2 * time.Minute)
		for len(latencies) < perEnv {
			select {
			case l := <-sub.lines:
				ns, err := strconv.ParseInt(strings.Fields(l.text)[0], 10, 64)
				if err != nil {
					b.Fatalf("line %q: %v", l.text, err)
				}
				latencies = append(latencies, l.at.Sub(time.Unix(0, ns)))
			case <-deadline:
				b.Fatalf("the subscriber read %d of %d lines in 2 min", len(latencies), perEnv)
			}
		}
		// The store: every environment's last line readable.
		storeDeadline := time.Now().Add(2 * time.Minute)
		for _, c := range clusters {
			for {
				if time.Now().After(storeDeadline) {
					b.Fatalf("environment %s does not hold its %d lines after 2 min", c.env, perEnv)
				}
				r := env.MustDo(b, f.Owner.Token, `query($s: ID!, $e: ID!) { node(id: $s) { ... on Service { logs(environmentId: $e, last: 1) { nodes { number } } } } }`,
					map[string]any{"s": f.ServiceID, "e": c.env})
				if r.Get("node.logs.nodes.0.number") == float64(perEnv) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		stored := time.Since(start)
		cpu1, _ := processCPU()
		slices.Sort(latencies)
		q := func(p float64) float64 {
			return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]) / float64(time.Millisecond)
		}
		b.ReportMetric(float64(total)/stored.Seconds(), "lines/s-stored")
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
		b.ReportMetric(q(1), "max-ms")
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(total)*1000, "cpu-s/1000lines")
		b.Logf("%d agents sent %d lines in %s; all stored after %s", n, total, (time.Duration(batches) * 100 * time.Millisecond), stored.Round(time.Millisecond))
		for _, c := range clusters {
			c.conn.Close()
		}
	}
}

// subscribeServiceLogs follows a service's log in an environment from its
// start, recording when each line is read.
func subscribeServiceLogs(b *testing.B, env *apitest.Env, token, svc, envID string) *logSub {
	s := &logSub{lines: make(chan readLine, 1<<16), stop: make(chan struct{})}
	b.Cleanup(func() { close(s.stop) })
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/graphql", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}); err != nil {
		b.Fatal(err)
	}
	var ack map[string]any
	if err := c.ReadJSON(&ack); err != nil || ack["type"] != "connection_ack" {
		b.Fatalf("connection_init: %v %v", ack, err)
	}
	if err := c.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($s: ID!, $e: ID!) { serviceLogs(serviceId: $s, environmentId: $e, after: 0) { number text } }`,
		"variables": map[string]any{"s": svc, "e": envID}}}); err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			var m struct {
				Type    string `json:"type"`
				Payload struct {
					Data struct {
						ServiceLogs struct {
							Text string `json:"text"`
						} `json:"serviceLogs"`
					} `json:"data"`
				} `json:"payload"`
			}
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			if m.Type != "next" {
				continue
			}
			select {
			case s.lines <- readLine{text: m.Payload.Data.ServiceLogs.Text, at: time.Now()}:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}
