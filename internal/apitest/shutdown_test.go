package apitest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// serveEnv runs a control plane with Server.Run on a loopback listener, as
// `nebula serve` does, and returns it with the function that stops it the
// way SIGTERM does (and waits for Run to return).
func serveEnv(t *testing.T, st *store.Store) (*Env, func() error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	plane, err := control.New(st, log, core.WithBox(seal.NewBox(&key)))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ShutdownGrace = 10 * time.Second
	boot, err := plane.People.Bootstrap(context.Background(), "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.New(plane, cfg, log).Run(ctx, ln) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	env := &Env{Store: st, Plane: plane, Server: &httptest.Server{URL: "http://" + ln.Addr().String()},
		Clock: &Clock{}, BootstrapToken: boot.Secret}
	r := env.MustDo(t, boot.Secret, `{ viewer { user { id } } }`, nil)
	env.BootstrapUserID = r.Str("viewer.user.id")
	return env, stop
}

// inFlight reads how many POST requests the server is serving.
func inFlight(t *testing.T, e *Env) int {
	t.Helper()
	resp, err := http.Get(e.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `nebula_http_requests_in_flight{method="POST"} `); ok {
			var n int
			_ = json.Unmarshal([]byte(v), &n)
			return n
		}
	}
	return 0
}

// SIGTERM: the server stops accepting, closes websockets (GraphQL and
// agents) with 1001 and ends SSE streams at once, lets a mutation in
// flight finish and answer, then returns.
func TestGracefulShutdown(t *testing.T) {
	env, stop := serveEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	viewer := f.Users[Viewer].Token
	dep, _ := wsDeploy(t, f)

	var subs []*wsClient
	for _, proto := range wsProtocols {
		w := wsDial(t, env, proto)
		w.init(viewer)
		w.subscribe("events", wsEventsSubscription, map[string]any{"d": dep})
		w.event("events")
		subs = append(subs, w)
	}
	sse := sseSubscribe(t, env, viewer, `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { sequence } }`, map[string]any{"d": dep})
	if ev := sse.next(); ev.Name != "next" {
		t.Fatalf("SSE: got %+v, want an event", ev)
	}
	reg := f.MustDo(t, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "going", labels: [{key: "a", value: "b"}]}) {
		connectToken userErrors { code } } }`, map[string]any{"t": f.TenantID})
	agent, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/agent/v1/connect",
		http.Header{"Authorization": {"Bearer " + reg.Str("registerCluster.connectToken")}})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	frame, err := protocol.Encode(protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version}, Capabilities: protocol.Known})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
	if _, b, err := agent.ReadMessage(); err != nil || !strings.Contains(string(b), "welcome") {
		t.Fatalf("agent hello: got %s %v, want a welcome", b, err)
	}

	// A mutation in flight: it waits for the store's write lock, which the
	// test holds until the shutdown has begun.
	release := make(chan struct{})
	locked := make(chan struct{})
	go func() {
		_ = env.Store.Tx(context.Background(), func(store.Querier) error {
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	baseline := inFlight(t, env)
	answered := make(chan Response, 1)
	go func() {
		answered <- env.Do(t, f.Owner.Token, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "late"}) { environment { id } userErrors { code } } }`,
			map[string]any{"p": f.ProjectID})
	}()
	testutil.Eventually(t, wsWait, "the mutation reaches the server", func() (bool, string) {
		n := inFlight(t, env)
		return n > baseline, fmt.Sprintf("%d requests in flight, %d before", n, baseline)
	})

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	for _, w := range subs {
		w.expectClose(websocket.CloseGoingAway, 2*time.Second)
	}
	_ = agent.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		_, _, err := agent.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code != websocket.CloseGoingAway {
				t.Errorf("agent session closed with %d, want 1001", ce.Code)
			}
			break
		}
		if err != nil {
			t.Fatalf("agent session: %v, want a close with 1001", err)
		}
	}
	for ev := sse.next(); ev.Name != ""; ev = sse.next() {
		if ev.Name == "complete" {
			t.Fatal("the SSE stream completed; want it to end without complete so the client resumes elsewhere")
		}
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(env.Server.URL, "http://"), time.Second); err == nil {
		t.Error("a new connection was accepted after the shutdown began")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while a mutation was in flight", err)
	default:
	}

	close(release)
	r := <-answered
	if r.Status != http.StatusOK || len(r.Errors) > 0 || r.Str("createEnvironment.environment.id") == "" {
		t.Errorf("the mutation in flight: HTTP %d %s, want its result", r.Status, r.Body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
	project := string(mustRaw[model.ProjectID](t, gid.Project, f.ProjectID))
	envs, err := store.EnvironmentsOfProjects(context.Background(), env.Store.Q(), []string{project}, store.PageArgs{First: store.MaxPage})
	n := countOf(envs[project].Items, func(e *model.Environment) bool { return e.Name == "late" })
	if err != nil || n != 1 {
		t.Errorf("the acknowledged environment: %d rows (%v), want 1", n, err)
	}
}
