package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// Two control plane replicas on one PostgreSQL, each with its own pool,
// its own notification listener and its own HTTP server, as `nebula serve`
// runs them: what happens on one reaches the subscribers and agent
// sessions of the other through LISTEN/NOTIFY only.
type replicas struct {
	a, b *Env
	url  string
}

func newReplicas(t *testing.T) *replicas {
	t.Helper()
	url := pgtest.URL(t)
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	clk := &Clock{}
	r := &replicas{url: url}
	r.a, r.b = startReplica(t, url, "a", key, clk), startReplica(t, url, "b", key, clk)
	bootstrapReplicas(t, r.a, r.b)
	return r
}

// startReplica runs a control plane replica in this process on the
// PostgreSQL at url, as `nebula serve` does: its own pool, notification
// listener and HTTP server.
func startReplica(t *testing.T, url, name string, key seal.Key, clk *Clock) *Env {
	t.Helper()
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", name)
	b := bus.New()
	plane, err := control.New(st, log, core.WithBox(seal.NewBox(&key)), core.WithClock(clk.Now),
		core.WithBus(b, bus.Postgres{Q: st.Q(), B: b}))
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go bus.Listen(ctx, url, b, log, ready)
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	srv := httptest.NewServer(server.New(plane, cfg, log).Handler())
	t.Cleanup(srv.Close)
	return &Env{Store: st, Plane: plane, Server: srv, Clock: clk}
}

// bootstrapReplicas makes the first tenant and gives every replica's Env
// its admin token.
func bootstrapReplicas(t *testing.T, envs ...*Env) {
	t.Helper()
	boot, err := envs[0].Plane.People.Bootstrap(context.Background(), "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		e.BootstrapToken, e.BootstrapUserID = boot.Secret, UserGID(t, e.Store, boot.Tenant.ID, boot.User.ID)
	}
}

// repSub is a graphql-transport-ws subscription over a real websocket.
type repSub struct {
	mu   sync.Mutex
	msgs []map[string]any
	c    *websocket.Conn
	done chan struct{}
}

func subscribeOn(t *testing.T, e *Env, token, query string, vars map[string]any) *repSub {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(e.Server.URL, "http")+"/graphql", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	send := func(m map[string]any) {
		if err := c.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	var ack map[string]any
	if err := c.ReadJSON(&ack); err != nil || ack["type"] != "connection_ack" {
		t.Fatalf("connection_init: %v %v", ack, err)
	}
	send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
	s := &repSub{c: c, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			var m map[string]any
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			if m["type"] == "ping" {
				continue
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
		}
	}()
	return s
}

// values lists what the subscription's next messages carried at path.
func (s *repSub) values(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		if m["type"] != "next" {
			continue
		}
		if v, ok := dig(m["payload"], "data."+path).(string); ok {
			out = append(out, v)
		}
	}
	return out
}

func (s *repSub) waitValues(t *testing.T, path string, want []string) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, fmt.Sprintf("the subscription got %v at %s", want, path), func() (bool, string) {
		got := s.values(path)
		s.mu.Lock()
		defer s.mu.Unlock()
		return strings.Join(got, ",") == strings.Join(want, ","), fmt.Sprintf("%v; messages %v", got, s.msgs)
	})
}

func TestReplicasSubscribersFollowTheOtherReplica(t *testing.T) {
	t.Parallel()
	r := newReplicas(t)
	f := r.a.NewFixture(t)
	dep := f.deployAsOwner(t, f.EnvironmentID) // on replica a
	rawDep, _ := gid.Decode[model.DeploymentID](gid.Deployment, dep)
	rawCluster, _ := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)

	// Subscribers on replica b.
	events := subscribeOn(t, r.b, f.Owner.Token, `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { stage } }`,
		map[string]any{"d": dep})
	envSub := subscribeOn(t, r.b, f.Owner.Token, `subscription($e: ID!) { environmentDeployments(environmentId: $e) { id stage } }`,
		map[string]any{"e": f.EnvironmentID})
	events.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "DELIVERING"})
	// The environment's subscriber starts with the deployments under way.
	envSub.waitValues(t, "environmentDeployments.stage", []string{"DELIVERING"})

	// The deployment moves on replica a (the agent's session is there).
	for _, st := range []string{"STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"} {
		if err := r.a.AgentSide(t, rawCluster).Stage(context.Background(), hub.StageOf(&protocol.Stage{Deployment: string(rawDep), Stage: st})); err != nil {
			t.Fatal(err)
		}
	}
	events.waitValues(t, "deploymentEvents.stage",
		[]string{"QUEUED", "DELIVERING", "STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"})
	// The environment's subscriber sees the deployment as it is whenever
	// it looks: some stages may fold into one update, never out of order.
	var got []string
	testutil.Eventually(t, 15*time.Second, "the environment updates reach SUCCEEDED", func() (bool, string) {
		got = envSub.values("environmentDeployments.stage")
		return len(got) > 0 && got[len(got)-1] == "SUCCEEDED", fmt.Sprint(got)
	})
	order := "DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED"
	last := -1
	for _, g := range got {
		i := strings.Index(order, g)
		if i < last {
			t.Errorf("environment updates out of order: %v", got)
		}
		last = i
	}

	// A listener that loses its connection reconnects, and its
	// subscribers re-read what they missed meanwhile.
	second := f.deployAsOwner(t, f.EnvironmentID)
	later := subscribeOn(t, r.b, f.Owner.Token, `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { stage } }`,
		map[string]any{"d": second})
	later.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "DELIVERING"})
	killListeners(t, r.url)
	raw2, _ := gid.Decode[model.DeploymentID](gid.Deployment, second)
	if err := r.a.AgentSide(t, rawCluster).Stage(context.Background(), hub.StageOf(&protocol.Stage{Deployment: string(raw2), Stage: "STARTING"})); err != nil {
		t.Fatal(err)
	}
	later.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "DELIVERING", "STARTING"})
}

// killListeners ends every LISTENing backend, as a network failure would.
func killListeners(t *testing.T, url string) {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	defer st.Close()
	n, err := st.Q().Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	if err != nil || n == 0 {
		t.Fatalf("terminating the listeners: %d, %v", n, err)
	}
}

func TestReplicasAgentSessionFollowsTheOtherReplica(t *testing.T) {
	t.Parallel()
	r := newReplicas(t)
	f := r.a.NewFixture(t)
	// A fresh connect token, and an agent on replica b.
	res := f.MustDo(t, `mutation($c: ID!, $n: String!) { regenerateConnectToken(input: {clusterId: $c, confirmName: $n}) { secret userErrors { message } } }`,
		map[string]any{"c": f.ClusterID, "n": f.Node(t, f.ClusterID, "... on Cluster { name }")["name"]})
	token := res.Str("regenerateConnectToken.secret")
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.b.Server.URL, "http")+"/agent/v1/connect",
		http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello, _ := protocol.Encode(protocol.TypeHello, protocol.Hello{Protocols: []int{1}, Capabilities: protocol.Known})
	if err := c.WriteMessage(websocket.TextMessage, hello); err != nil {
		t.Fatal(err)
	}
	read := func() any {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, frame, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("agent on replica b: %v", err)
		}
		m, err := protocol.DecodeServer(frame)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if _, ok := read().(*protocol.Welcome); !ok {
		t.Fatal("no welcome")
	}
	first, ok := read().(*protocol.Desired)
	if !ok {
		t.Fatal("no desired state on connect")
	}
	// A deploy on replica a: the agent on b gets the new revision.
	dep := f.deployAsOwner(t, f.EnvironmentID)
	rawDep, _ := gid.Decode[model.DeploymentID](gid.Deployment, dep)
	for {
		m := read()
		d, ok := m.(*protocol.Desired)
		if !ok {
			continue
		}
		if d.Revision <= first.Revision {
			t.Fatalf("revision %d after %d", d.Revision, first.Revision)
		}
		if b, _ := json.Marshal(d.State); !strings.Contains(string(b), string(rawDep)) {
			t.Fatalf("the new state does not carry the deployment: %s", b)
		}
		break
	}
	// A command queued on a reaches the session on b too.
	f.MustDo(t, `mutation($c: ID!) { queueCommand(input: {clusterId: $c, kind: RESYNC}) { command { id } userErrors { message } } }`,
		map[string]any{"c": f.ClusterID})
	for {
		if cmd, ok := read().(*protocol.Command); ok {
			if cmd.Kind != "RESYNC" {
				t.Errorf("command %+v", cmd)
			}
			break
		}
	}
}

func TestReplicasJobsRunOnce(t *testing.T) {
	t.Parallel()
	r := newReplicas(t)
	f := r.a.NewFixture(t)
	pm := f.NewCaller(t, "pm", "MEMBER")
	f.GrantProjectRole(t, f.ProjectID, pm.UserID, "PROJECT_MANAGER")
	res := r.a.MustDo(t, pm.Token, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id stage } } }`,
		map[string]any{"s": f.ServiceID, "e": f.ProtectedEnvironmentID, "d": Digest(r.a.Next())})
	dep := res.Str("deploy.deployment.id")
	r.a.Clock.Advance(25 * time.Hour) // both replicas share the clock

	// Both replicas run their jobs at the same moment, several times.
	var mu sync.Mutex
	expired := 0
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		e := r.a
		if i%2 == 1 {
			e = r.b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := e.Plane.RunJobsOnce(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			expired += rep.Expired
			mu.Unlock()
		}()
	}
	wg.Wait()
	if expired != 1 {
		t.Errorf("the approval expired %d times across the runs, want once", expired)
	}
	d := f.Node(t, dep, `... on Deployment { stage message events { nodes { stage } } }`)
	if d["stage"] != "CANCELLED" || !strings.Contains(d["message"].(string), "approval window closed") {
		t.Errorf("after the jobs: %v", d)
	}
	if n := len(dig(d, "events.nodes").([]any)); n != 3 {
		t.Errorf("%d events, want QUEUED, AWAITING_APPROVAL and one CANCELLED", n)
	}
	evs, _, _ := auditPage(t, r.a, f.Owner.Token, f.TenantID, 100, "", map[string]any{"action": "deployment.approval_expired"})
	if len(evs) != 1 {
		t.Errorf("%d approval_expired audit events, want 1", len(evs))
	}
}

// A token that authenticated lately is kept on each replica for a moment
// (control/tokencache.go). Revoked on one replica, it stops working there
// at once and on the other as soon as the revocation's note arrives.
func TestReplicasRevokedTokenStopsOnBoth(t *testing.T) {
	t.Parallel()
	r := newReplicas(t)
	res := r.a.MustDo(t, r.a.BootstrapToken, `mutation { createApiToken(input: {name: "laptop"}) { apiToken { id } secret `+ue+` } }`, nil)
	id, secret := res.Str("createApiToken.apiToken.id"), res.Str("createApiToken.secret")
	const whoami = `{ viewer { user { id } } }`
	for _, e := range []*Env{r.a, r.b, r.a, r.b} { // twice each: the second is served from the cache
		if got := e.MustDo(t, secret, whoami, nil).Str("viewer.user.id"); got != r.a.BootstrapUserID {
			t.Fatalf("the new token is user %q, want %q", got, r.a.BootstrapUserID)
		}
	}
	r.a.MustDo(t, r.a.BootstrapToken, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id } `+ue+` } }`,
		map[string]any{"id": id})
	if got := r.a.Do(t, secret, whoami, nil).ErrorCodes(); !slices.Equal(got, []string{"UNAUTHENTICATED"}) {
		t.Errorf("on the replica that revoked it, the token got %v, want [UNAUTHENTICATED] at once", got)
	}
	testutil.Eventually(t, 15*time.Second, "the other replica refuses the revoked token", func() (bool, string) {
		got := r.b.Do(t, secret, whoami, nil).ErrorCodes()
		return slices.Equal(got, []string{"UNAUTHENTICATED"}), fmt.Sprintf("error codes %v", got)
	})
}
