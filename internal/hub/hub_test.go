package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/delivery"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
	"github.com/nebulactrl/nebula/internal/testutil"
)

type rig struct {
	srv    *httptest.Server
	st     *store.Store
	plane  *control.Plane
	clock  *controltest.Clock
	ctx    context.Context // acts as the tenant admin
	tenant model.TenantID
}

func newRig(t *testing.T, tune ...func(*config.Config)) *rig {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "nebula.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	clk := &controltest.Clock{At: time.Now().UTC().Truncate(time.Microsecond)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	plane, err := control.New(st, log, core.WithClock(clk.Now), core.WithConnectGrace(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	boot, err := plane.People.Bootstrap(ctx, "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	actor, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plane.People.SetTenantPlan(authz.WithActor(ctx, actor), boot.Tenant.ID, model.PlanTeam); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tune {
		f(&cfg)
	}
	srv := httptest.NewServer(server.New(plane, cfg, log).Handler())
	t.Cleanup(srv.Close)
	return &rig{srv: srv, st: st, plane: plane, clock: clk, ctx: authz.WithActor(ctx, actor), tenant: boot.Tenant.ID}
}

// cluster registers a cluster with an environment and a deployed service
// on it, so that its desired state has something in it.
func (r *rig) cluster(t *testing.T, name string) (model.ClusterID, string) {
	t.Helper()
	c, secret, err := r.plane.Clusters.RegisterCluster(r.ctx, r.tenant, name, []model.Label{{Key: "name", Value: name}})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID, secret
}

func (r *rig) deploy(t *testing.T, cluster string, digest byte) {
	t.Helper()
	p, err := r.plane.Delivery.CreateProject(r.ctx, r.tenant, "p-"+cluster+"-"+string(rune('a'+digest%26)), "")
	if err != nil {
		t.Fatal(err)
	}
	env, err := r.plane.Delivery.CreateEnvironment(r.ctx, p.ID, delivery.EnvironmentInput{Name: ptr("prod"),
		ClusterSelector: []model.Label{{Key: "name", Value: cluster}}})
	if err != nil {
		t.Fatal(err)
	}
	port := 8080
	svc, err := r.plane.Delivery.CreateService(r.ctx, p.ID, delivery.ServiceInput{Name: "api", Image: ptr("registry.example.com/api"),
		Processes: []model.Process{{Name: "web", Command: []string{"./api"}, Replicas: 1, Port: &port}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.plane.Delivery.Deploy(r.ctx, svc.ID, env.ID, "sha256:"+strings.Repeat(string(rune('a'+digest%6)), 64)); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func (r *rig) dial(t *testing.T, token string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	url := "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/agent/v1/connect"
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.DefaultDialer.Dial(url, h)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

func send(t *testing.T, c *websocket.Conn, typ string, body any) {
	t.Helper()
	frame, err := protocol.Encode(typ, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, c *websocket.Conn) protocol.Envelope {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, frame, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	var env protocol.Envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// closeCode reads until the control plane closes the connection.
func closeCode(t *testing.T, c *websocket.Conn) (int, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Text
		}
		if err != nil {
			t.Fatalf("read ended without a close frame: %v", err)
		}
	}
}

var inventory = protocol.Inventory{AgentVersion: "0.1.0", AgentImage: "registry.example.com/nebula-agent:0.1.0",
	Capabilities: protocol.Known, KubernetesVersion: "v1.37.2", Nodes: []protocol.Node{{Name: "node-1", Ready: true}}}

func hello(t *testing.T, c *websocket.Conn, applied int64) protocol.Welcome {
	t.Helper()
	send(t, c, protocol.TypeHello, protocol.Hello{Protocols: []int{1}, Capabilities: append([]string{"teleport.v9"}, protocol.Known...),
		AppliedRevision: applied, Inventory: inventory})
	env := recv(t, c)
	if env.Type != protocol.TypeWelcome {
		t.Fatalf("got %s, want welcome", env.Type)
	}
	var w protocol.Welcome
	if err := json.Unmarshal(env.Body, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func desiredOf(t *testing.T, env protocol.Envelope) protocol.Desired {
	t.Helper()
	if env.Type != protocol.TypeDesired {
		t.Fatalf("got %s, want desired", env.Type)
	}
	var d protocol.Desired
	if err := json.Unmarshal(env.Body, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func (r *rig) clusterRow(t *testing.T, id model.ClusterID) *model.Cluster {
	t.Helper()
	c, err := store.Clusters.Get(context.Background(), r.st.Q(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Tokens are checked before the upgrade: a wrong, unknown, revoked,
// expired-grace or missing token never gets a websocket.
func TestTokensRefusedBeforeUpgrade(t *testing.T) {
	r := newRig(t)
	a, tokA := r.cluster(t, "a")
	_, tokB := r.cluster(t, "b")
	regen, _, err := r.plane.Clusters.RegenerateConnectToken(r.ctx, a, "a")
	if err != nil {
		t.Fatal(err)
	}
	_ = regen

	// During the grace window the replaced token still works.
	if c, _, err := r.dial(t, tokA); err != nil {
		t.Fatalf("replaced token within its grace window: %v", err)
	} else {
		c.Close()
	}
	r.clock.Advance(time.Hour + time.Second)

	revoked := func() string {
		c, s, err := r.plane.Clusters.RegisterCluster(r.ctx, r.tenant, "c", nil)
		if err != nil {
			t.Fatal(err)
		}
		toks, _ := r.plane.Clusters.ConnectTokens(r.ctx, c)
		if _, err := r.plane.Clusters.RevokeConnectToken(r.ctx, toks[0].ID); err != nil {
			t.Fatal(err)
		}
		return s
	}()
	for name, tok := range map[string]string{
		"missing": "", "garbage": "hello", "unknown": "nbc_" + strings.Repeat("A", 43), "an API token": "nbt_" + strings.Repeat("A", 43),
		"revoked": revoked, "past its grace window": tokA,
	} {
		c, resp, err := r.dial(t, tok)
		if err == nil {
			c.Close()
			t.Errorf("%s token: connected, want refused", name)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: %v, want HTTP 401 before any upgrade", name, resp)
		}
	}
	// A token of cluster B connects as B, never as A.
	c, _, err := r.dial(t, tokB)
	if err != nil {
		t.Fatal(err)
	}
	if w := hello(t, c, 0); w.Cluster == string(a) {
		t.Errorf("cluster B's token was welcomed as cluster A")
	}
}

// The conversation: hello → welcome (negotiated), the state on connect,
// a new revision pushed when published, acks moving the applied revision
// forward only, heartbeats keeping the cluster CONNECTED.
func TestSession(t *testing.T) {
	r := newRig(t)
	id, tok := r.cluster(t, "edge")
	r.deploy(t, "edge", 1)
	want := r.clusterRow(t, id).DesiredRevision

	c, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	w := hello(t, c, 0)
	if w.Protocol != 1 || strings.Join(w.Capabilities, ",") != "acks.v1,builds.v1,commands.v1,desired-state.v1,drift.v1,events.v1,inventory.v1,log-resume.v1,logs.v1,stages.v1" || w.Cluster != string(id) {
		t.Errorf("welcome %+v: want protocol 1, the known capabilities only, this cluster", w)
	}
	d := desiredOf(t, recv(t, c))
	if d.Revision != want || len(d.State.Namespaces) != 1 || d.State.Namespaces[0].Services[0].Name != "api" {
		t.Fatalf("desired on connect: revision %d (want %d), state %+v", d.Revision, want, d.State)
	}
	row := r.clusterRow(t, id)
	if row.Status(r.clock.Now(), model.DisconnectedAfter) != model.ClusterConnected || !strings.Contains(row.Inventory, "v1.37.2") {
		t.Errorf("after hello: status %s, inventory %s", row.Status(r.clock.Now(), model.DisconnectedAfter), row.Inventory)
	}

	// Changes publish the newest revision to the live session (several
	// quick ones may arrive as one: the state is whole).
	r.deploy(t, "edge", 2)
	latest := r.clusterRow(t, id).DesiredRevision
	d2 := desiredOf(t, recv(t, c))
	for d2.Revision < latest {
		d2 = desiredOf(t, recv(t, c))
	}
	if d2.Revision != latest || latest <= want {
		t.Fatalf("published revision %d, want %d (after %d)", d2.Revision, latest, want)
	}

	send(t, c, protocol.TypeAck, protocol.Ack{Revision: d2.Revision, Result: protocol.ResultApplied})
	send(t, c, protocol.TypeAck, protocol.Ack{Revision: d.Revision, Result: protocol.ResultApplied})       // stale, reordered
	send(t, c, protocol.TypeAck, protocol.Ack{Revision: d2.Revision + 50, Result: protocol.ResultApplied}) // not issued
	send(t, c, protocol.TypeHeartbeat, protocol.Heartbeat{Inventory: inventory, AppliedRevision: d.Revision})
	waitFor(t, "the heartbeat's inventory and the ack of the newest revision are stored", func() bool {
		return strings.Contains(r.clusterRow(t, id).Inventory, "node-1") && r.clusterRow(t, id).AppliedRevision == d2.Revision
	})
	// Give the stale reports time to land, then check nothing moved back.
	send(t, c, protocol.TypeAck, protocol.Ack{Revision: d2.Revision, Result: protocol.ResultFailed,
		Errors: []protocol.ObjectError{{Object: "Deployment/x", Message: "quota exceeded"}}})
	waitFor(t, "the failed ack's errors are stored", func() bool { return strings.Contains(r.clusterRow(t, id).ApplyErrors, "quota exceeded") })
	if got := r.clusterRow(t, id).AppliedRevision; got != d2.Revision {
		t.Errorf("applied revision %d after stale and future acks, want %d", got, d2.Revision)
	}

	// Silence past 60 s reads as DISCONNECTED.
	r.clock.Advance(61 * time.Second)
	if s := r.clusterRow(t, id).Status(r.clock.Now(), model.DisconnectedAfter); s != model.ClusterDisconnected {
		t.Errorf("status after 61 s of silence: %s, want DISCONNECTED", s)
	}
}

// waitFor waits up to 10 s until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, func() (bool, string) { return cond(), "" })
}

// An agent that already applied the newest revision gets no state again.
func TestNoStaleDelivery(t *testing.T) {
	r := newRig(t)
	id, tok := r.cluster(t, "edge")
	r.deploy(t, "edge", 1)
	rev := r.clusterRow(t, id).DesiredRevision
	c, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, c, rev)
	r.deploy(t, "edge", 2)
	if d := desiredOf(t, recv(t, c)); d.Revision <= rev {
		t.Errorf("first state after hello at %d: revision %d, want a newer one", rev, d.Revision)
	}
}

// Malformed frames close the session with 4400 and change nothing.
func TestMalformed(t *testing.T) {
	r := newRig(t)
	id, tok := r.cluster(t, "edge")
	cases := map[string]func(c *websocket.Conn){
		"not JSON":          func(c *websocket.Conn) { _ = c.WriteMessage(websocket.TextMessage, []byte("{")) },
		"binary":            func(c *websocket.Conn) { _ = c.WriteMessage(websocket.BinaryMessage, []byte("{}")) },
		"unknown type":      func(c *websocket.Conn) { send(t, c, "teleport", map[string]int{"x": 1}) },
		"heartbeat first":   func(c *websocket.Conn) { send(t, c, protocol.TypeHeartbeat, protocol.Heartbeat{}) },
		"unknown field":     func(c *websocket.Conn) { send(t, c, protocol.TypeHello, map[string]any{"protocols": []int{1}, "x": 1}) },
		"no common version": func(c *websocket.Conn) { send(t, c, protocol.TypeHello, protocol.Hello{Protocols: []int{7}}) },
	}
	for name, do := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, err := r.dial(t, tok)
			if err != nil {
				t.Fatal(err)
			}
			do(c)
			code, reason := closeCode(t, c)
			want := protocol.CloseMalformed
			if name == "no common version" {
				want = protocol.CloseUnsupported
			}
			if code != want || reason == "" {
				t.Errorf("closed with %d %q, want %d and a reason", code, reason, want)
			}
		})
	}
	if row := r.clusterRow(t, id); row.LastHeartbeatAt != nil || row.AppliedRevision != 0 {
		t.Errorf("malformed sessions changed the cluster: %+v", row)
	}
	t.Run("logPositions without log-resume.v1", func(t *testing.T) {
		c, _, err := r.dial(t, tok)
		if err != nil {
			t.Fatal(err)
		}
		send(t, c, protocol.TypeHello, protocol.Hello{Protocols: []int{1}, Capabilities: []string{protocol.CapLogs}, Inventory: inventory})
		if env := recv(t, c); env.Type != protocol.TypeWelcome {
			t.Fatalf("got %s, want welcome", env.Type)
		}
		send(t, c, protocol.TypeLogPositions, protocol.LogPositions{ID: "1", Streams: []protocol.LogPosition{
			{Environment: "e", Service: "s", Pod: "p", Container: "c"}}})
		if code, reason := closeCode(t, c); code != protocol.CloseMalformed || !strings.Contains(reason, "log-resume.v1") {
			t.Errorf("closed with %d %q, want %d naming the capability", code, reason, protocol.CloseMalformed)
		}
	})
	t.Run("too big", func(t *testing.T) {
		c, _, err := r.dial(t, tok)
		if err != nil {
			t.Fatal(err)
		}
		hello(t, c, 0)
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"heartbeat","body":"`+strings.Repeat("x", protocol.MaxMessageBytes)+`"}`))
		if code, _ := closeCode(t, c); code != websocket.CloseMessageTooBig {
			t.Errorf("closed with %d, want %d", code, websocket.CloseMessageTooBig)
		}
	})
}

// A session whose token was regenerated ends when the grace window does:
// the regeneration is noted, the session reads the new expiry, and its
// tick closes it once the clock passes it, with no further note.
func TestSessionEndsWithItsGraceWindow(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.AgentHeartbeat = time.Second })
	id, tok := r.cluster(t, "edge")
	c, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, c, 0)
	if _, _, err := r.plane.Clusters.RegenerateConnectToken(r.ctx, id, "edge"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()
	// The agent's heartbeats, as a live agent sends them (a silent one is
	// closed with 4408 after three intervals).
	beat, err := protocol.Encode(protocol.TypeHeartbeat, protocol.Heartbeat{Inventory: inventory})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(d time.Duration) (ended bool, err error) {
		t.Helper()
		deadline := time.After(d)
		for {
			_ = c.WriteMessage(websocket.TextMessage, beat) // fails once closed
			select {
			case err := <-closed:
				return true, err
			case <-deadline:
				return false, nil
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	// Within the window the session stays: two ticks pass.
	if ended, err := wait(2500 * time.Millisecond); ended {
		t.Fatalf("the session ended within its token's grace window: %v", err)
	}
	r.clock.Advance(time.Hour + time.Second)
	ended, err := wait(10 * time.Second)
	if !ended {
		t.Fatal("the session outlived its token's grace window")
	}
	if !websocket.IsCloseError(err, protocol.CloseUnauthorized) {
		t.Errorf("session past its token's grace window ended with %v, want close %d", err, protocol.CloseUnauthorized)
	}
}

// Revoking a token closes its live session; a second session of the same
// cluster supersedes the first.
func TestRevokeAndSupersede(t *testing.T) {
	r := newRig(t)
	id, tok := r.cluster(t, "edge")
	first, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, first, 0)
	second, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, second, 0)
	if code, _ := closeCode(t, first); code != protocol.CloseSuperseded {
		t.Errorf("first session closed with %d, want %d", code, protocol.CloseSuperseded)
	}
	cl := r.clusterRow(t, id)
	toks, err := r.plane.Clusters.ConnectTokens(r.ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.plane.Clusters.RevokeConnectToken(r.ctx, toks[0].ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := closeCode(t, second); code != protocol.CloseUnauthorized {
		t.Errorf("session of a revoked token closed with %d, want %d", code, protocol.CloseUnauthorized)
	}
}
