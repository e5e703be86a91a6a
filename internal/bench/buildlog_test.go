package bench

import (
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
//	go test -run '^$' -bench BuildLog -benchtime 1x -count 6 ./internal/bench/ -args -buildlog.lines=10000
var (
	buildLogLines = flag.Int("buildlog.lines", 10000, "BuildLog: log lines the agent sends")
	buildLogBatch = flag.Int("buildlog.batch", 200, "BuildLog: lines per build report (the agent's own batch)")
	buildLogRate  = flag.Int("buildlog.rate", 0, "BuildLog: lines a second the agent sends; 0: as fast as the connection takes them")
)

// BenchmarkBuildLog measures a build's log on its way from the agent to a
// live subscriber and into the store, on PostgreSQL, one control plane:
// an agent session (a real websocket on loopback, builds.v1) sends
// -buildlog.lines lines of ~100 bytes in reports of -buildlog.batch lines,
// back to back (or paced at -buildlog.rate lines a second), each line
// carrying the time it was sent; a
// graphql-transport-ws subscriber of buildLog reads them. Reported per op:
// lines a second to the subscriber (first line sent to last line read),
// lines a second into the store (first sent to the last one readable
// through Build.log), the time from a line's sending to its reading,
// median, p99 and max, and how often the server cut the subscriber off as
// too slow (more than 256 messages behind) and it resumed after its last
// line, as clients are told to.
func BenchmarkBuildLog(b *testing.B) {
	for range b.N {
		env := apitest.NewEnv(b, pgtest.Open(b))
		f := env.NewFixture(b)
		svc := f.NewGitService(b, "shop-api", apitest.GitHubRepository, f.EnvironmentID)
		_, url, secret := f.NewWebhook(b, svc)
		agent := dialBuildAgent(b, f)
		a := env.Deliver(b, url, apitest.Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "bench", Secret: secret,
			Body: apitest.SamplePush(b, "github-push.json")})
		if len(a.Builds) != 1 {
			b.Fatalf("the push: %+v", a)
		}
		if _, err := env.Plane.RunJobsOnce(b.Context()); err != nil {
			b.Fatal(err)
		}
		agent.waitHanded(b, a.Builds[0])
		build := gid.Encode(gid.Build, a.Builds[0])
		sub := subscribeBuildLog(b, env, f.Owner.Token, build)

		n := *buildLogLines
		pad := strings.Repeat("x", 60)
		start := time.Now()
		for from := 0; from < n; from += *buildLogBatch {
			if *buildLogRate > 0 {
				// Paced: this batch goes when the rate says it is due.
				due := start.Add(time.Duration(float64(from) / float64(*buildLogRate) * float64(time.Second)))
				time.Sleep(time.Until(due))
			}
			r := protocol.BuildReport{ID: a.Builds[0], From: int64(from), Status: protocol.BuildRunning}
			for i := from; i < min(from+*buildLogBatch, n); i++ {
				r.Lines = append(r.Lines, protocol.LogLine{At: time.Now().UTC(),
					Text: fmt.Sprintf("#%d %d step output %s", i+1, time.Now().UnixNano(), pad)})
			}
			agent.send(b, protocol.TypeBuildReport, r)
		}
		sent := time.Since(start)
		var latencies []time.Duration
		var last time.Time
		deadline := time.After(5 * time.Minute)
		for len(latencies) < n {
			select {
			case l := <-sub.lines:
				fields := strings.Fields(l.text)
				ns, err := strconv.ParseInt(fields[1], 10, 64)
				if err != nil {
					b.Fatalf("line %q: %v", l.text, err)
				}
				latencies = append(latencies, l.at.Sub(time.Unix(0, ns)))
				last = l.at
			case <-deadline:
				b.Fatalf("the subscriber read %d of %d lines in 5 min", len(latencies), n)
			}
		}
		toSubscriber := last.Sub(start)
		// The store: every line readable through the API.
		var stored time.Duration
		for {
			r := env.MustDo(b, f.Owner.Token, `query($b: ID!) { node(id: $b) { ... on Build { log(last: 1) { nodes { number } } } } }`,
				map[string]any{"b": build})
			if r.Get("node.log.nodes.0.number") == float64(n) {
				stored = time.Since(start)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		slices.Sort(latencies)
		q := func(p float64) float64 {
			return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]) / float64(time.Millisecond)
		}
		b.ReportMetric(float64(n)/toSubscriber.Seconds(), "lines/s-subscriber")
		b.ReportMetric(float64(n)/stored.Seconds(), "lines/s-store")
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
		b.ReportMetric(q(1), "max-ms")
		b.ReportMetric(float64(sub.resumes.Load()), "resumes")
		b.Logf("%d lines sent in %s; the subscriber read the last after %s, the store held it after %s",
			n, sent.Round(time.Millisecond), toSubscriber.Round(time.Millisecond), stored.Round(time.Millisecond))
		agent.conn.Close()
	}
}

type buildAgent struct {
	conn *websocket.Conn
	// handed receives the id of each build the control plane hands the
	// agent; it reports on a build only after that, as an agent does.
	handed chan string
}

// dialBuildAgent connects as the fixture cluster's agent with builds.v1
// and reads what the control plane sends: the builds it is handed go to
// handed, the rest is dropped.
func dialBuildAgent(b *testing.B, f *apitest.Fixture) *buildAgent {
	r := f.MustDo(b, `mutation($c: ID!) { regenerateConnectToken(input: {clusterId: $c, confirmName: "prod-eu"}) { secret } }`,
		map[string]any{"c": f.ClusterID})
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.Env.Server.URL, "http")+"/agent/v1/connect",
		http.Header{"Authorization": {"Bearer " + r.Str("regenerateConnectToken.secret")}})
	if err != nil {
		b.Fatal(err)
	}
	a := &buildAgent{conn: conn, handed: make(chan string, 16)}
	a.send(b, protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version}, Capabilities: protocol.Known, Agent: "nebula-agent-bench"})
	// The welcome: the control plane knows the session, so the builds it
	// hands out from now on reach it.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, frame, err := conn.ReadMessage(); err != nil {
		b.Fatalf("reading the welcome: %v", err)
	} else if m, err := protocol.DecodeServer(frame); err != nil {
		b.Fatalf("decoding the welcome: %v", err)
	} else if _, ok := m.(*protocol.Welcome); !ok {
		b.Fatalf("got %s, want a welcome", frame)
	}
	_ = conn.SetReadDeadline(time.Time{})
	go func() {
		for {
			_, frame, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if m, err := protocol.DecodeServer(frame); err == nil {
				if builds, ok := m.(*protocol.Builds); ok {
					for _, j := range builds.Builds {
						select {
						case a.handed <- j.ID:
						default:
						}
					}
				}
			}
		}
	}()
	return a
}

// waitHanded waits until the control plane has handed the agent build id.
func (a *buildAgent) waitHanded(b *testing.B, id string) {
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-a.handed:
			if got == id {
				return
			}
		case <-deadline:
			b.Fatalf("the agent was not handed build %s in a minute", id)
		}
	}
}

func (a *buildAgent) send(b *testing.B, typ string, body any) {
	frame, err := protocol.Encode(typ, body)
	if err != nil {
		b.Fatal(err)
	}
	if err := a.conn.WriteMessage(websocket.TextMessage, frame); err != nil {
		b.Fatal(err)
	}
}

type readLine struct {
	text string
	at   time.Time
}

type logSub struct {
	lines chan readLine
	// resumes counts the times the server cut the subscriber off as too
	// slow (1013) and it subscribed again after its last line, as a
	// client does.
	resumes atomic.Int64
	stop    chan struct{}
}

// subscribeBuildLog subscribes to a build's log over graphql-transport-ws,
// and again after the last line it read whenever the server cuts it off.
func subscribeBuildLog(b *testing.B, env *apitest.Env, token, build string) *logSub {
	s := &logSub{lines: make(chan readLine, 1<<16), stop: make(chan struct{})}
	b.Cleanup(func() { close(s.stop) })
	var last int
	dial := func() *websocket.Conn {
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		c, _, err := d.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/graphql", nil)
		if err != nil {
			b.Error(err)
			return nil
		}
		if err := c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}); err != nil {
			b.Error(err)
			return nil
		}
		var ack map[string]any
		if err := c.ReadJSON(&ack); err != nil || ack["type"] != "connection_ack" {
			b.Errorf("connection_init: %v %v", ack, err)
			return nil
		}
		if err := c.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
			"query":     `subscription($b: ID!, $after: Int) { buildLog(buildId: $b, after: $after) { number text } }`,
			"variables": map[string]any{"b": build, "after": last}}}); err != nil {
			b.Error(err)
			return nil
		}
		return c
	}
	c := dial()
	if c == nil {
		b.FailNow()
	}
	go func() {
		for {
			var m struct {
				Type    string `json:"type"`
				Payload struct {
					Data struct {
						BuildLog struct {
							Number int    `json:"number"`
							Text   string `json:"text"`
						} `json:"buildLog"`
					} `json:"data"`
				} `json:"payload"`
			}
			if err := c.ReadJSON(&m); err != nil {
				c.Close()
				select {
				case <-s.stop:
					return
				default:
				}
				if c = dial(); c == nil {
					return
				}
				s.resumes.Add(1)
				continue
			}
			if m.Type == "next" {
				last = m.Payload.Data.BuildLog.Number
				s.lines <- readLine{m.Payload.Data.BuildLog.Text, time.Now()}
			}
			if m.Type == "complete" {
				c.Close()
				return
			}
		}
	}()
	return s
}
