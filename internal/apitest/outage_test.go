package apitest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

// What clients see when the database goes away: subscriptions keep their
// place and carry on, and "unavailable" is never told as "bad token".

// outageEnv is one replica on a PostgreSQL of the test's own, which the
// test stops and starts.
func outageEnv(t *testing.T) (*Env, *pgtest.Server) {
	t.Helper()
	pg := pgtest.Private(t)
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	env := startReplica(t, pg.URL, "a", key, &Clock{})
	bootstrapReplicas(t, env)
	return env, pg
}

// stageWhenUp reports a stage as the fixture cluster's agent, retrying
// while the database is still coming back.
func stageWhenUp(t *testing.T, f *Fixture, dep model.DeploymentID, stage string) {
	t.Helper()
	cl, err := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		side, err := f.Env.Plane.Agents.AgentSideOf(context.Background(), cl)
		if err == nil {
			err = side.Stage(context.Background(), hub.StageOf(&protocol.Stage{
				Deployment: string(dep), Stage: stage, Message: "agent: " + strings.ToLower(stage), At: time.Now()}))
		}
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("reporting stage %s: %v", stage, err)
		}
		time.Sleep(50 * time.Millisecond) // the database is starting: nothing to wait on but time
	}
}

// After `pg_ctl restart -m immediate` every subscription of a deployment
// under way carries on: each gets every later event exactly once, and none
// completes before its documented end.
func TestSubscriptionsSurviveDatabaseRestart(t *testing.T) {
	env, pg := outageEnv(t)
	f := env.NewFixture(t)
	dep, raw := wsDeploy(t, f)
	viewer := f.Users[Viewer].Token

	type eventsSub struct {
		name string
		l    live
	}
	var events []eventsSub
	var envSubs []eventsSub
	for _, transport := range liveTransports {
		events = append(events, eventsSub{transport, liveSubscribe(t, env, transport, viewer,
			`subscription($d: ID!) { deploymentEvents(deploymentId: $d) { sequence stage } }`, map[string]any{"d": dep})})
		envSubs = append(envSubs, eventsSub{transport, liveSubscribe(t, env, transport, viewer,
			`subscription($e: ID!) { environmentDeployments(environmentId: $e) { id stage } }`, map[string]any{"e": f.EnvironmentID})})
	}
	seqs := make([][]int, len(events))
	read := func(i int) string {
		t.Helper()
		data, errs, end := events[i].l.next()
		if end != "" || len(errs) > 0 {
			return fmt.Sprintf("end %q errors %v", end, codesOf(errs))
		}
		seq, _ := dig(data, "deploymentEvents.sequence").(float64)
		seqs[i] = append(seqs[i], int(seq))
		return ""
	}
	for i := range events {
		for range 2 { // QUEUED, DELIVERING
			if bad := read(i); bad != "" {
				t.Fatalf("%s before the restart: %s", events[i].name, bad)
			}
		}
	}
	for _, s := range envSubs {
		if _, errs, end := s.l.next(); end != "" || len(errs) > 0 {
			t.Fatalf("%s environmentDeployments before the restart: end %q errors %v", s.name, end, errs)
		}
	}

	// The database goes away; while it is away, the subscriptions are told
	// to look again (as when the notification listener reconnects first):
	// they wait, keeping their place, and none ends.
	pg.Stop()
	env.Plane.Bus().Resync()
	for _, s := range append(slices.Clone(events), envSubs...) {
		s.l.quiet(s.name+" while the database is down", 300*time.Millisecond)
	}
	pg.Start()
	stages := []string{"STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"}
	for _, stage := range stages {
		stageWhenUp(t, f, raw, stage)
	}
	want := []int{1, 2, 3, 4, 5, 6, 7}
	for i, s := range events {
		for len(seqs[i]) < len(want) {
			if bad := read(i); bad != "" {
				t.Fatalf("%s: after events %v the subscription ended early: %s", s.name, seqs[i], bad)
			}
		}
		if !slices.Equal(seqs[i], want) {
			t.Errorf("%s: events %v, want %v", s.name, seqs[i], want)
		}
		if _, errs, end := s.l.next(); end != "complete" || len(errs) > 0 {
			t.Errorf("%s: after SUCCEEDED got end %q errors %v, want complete", s.name, end, errs)
		}
	}
	for _, s := range envSubs {
		var got []string
		for !slices.Contains(got, "SUCCEEDED") {
			data, errs, end := s.l.next()
			if end != "" || len(errs) > 0 {
				t.Fatalf("%s environmentDeployments ended after %v: end %q errors %v", s.name, got, end, codesOf(errs))
			}
			if d, _ := dig(data, "environmentDeployments.id").(string); d == dep {
				got = append(got, dig(data, "environmentDeployments.stage").(string))
			}
		}
	}
}

// While the database is down, a valid token is not refused as a bad one:
// a websocket's connection_init is closed with 1013 (try again later, which
// clients retry) and the agent handshake answers 503 with Retry-After.
// Once the database is back, both work again.
func TestUnavailableIsNotUnauthorized(t *testing.T) {
	env, pg := outageEnv(t)
	f := env.NewFixture(t)
	reg := f.MustDo(t, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "outage", labels: [{key: "x", value: "y"}]}) {
		connectToken userErrors { code } } }`, map[string]any{"t": f.TenantID})
	connect := reg.Str("registerCluster.connectToken")
	agentDial := func() (*http.Response, error) {
		d := websocket.Dialer{HandshakeTimeout: wsWait}
		c, resp, err := d.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/agent/v1/connect",
			http.Header{"Authorization": {"Bearer " + connect}})
		if c != nil {
			c.Close()
		}
		return resp, err
	}
	token := f.Users[Viewer].Token

	pg.Stop()
	for _, proto := range wsProtocols {
		w := wsDial(t, env, proto)
		w.send("connection_init", "", map[string]any{"Authorization": "Bearer " + token})
		w.expectClose(1013, wsWait)
	}
	resp, err := agentDial()
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		status, retry := 0, ""
		if resp != nil {
			status, retry = resp.StatusCode, resp.Header.Get("Retry-After")
		}
		t.Errorf("agent handshake while the database is down: HTTP %d, Retry-After %q (%v), want 503 with Retry-After", status, retry, err)
	}

	pg.Start()
	// The pool finds its old connections dead and opens new ones: a try or
	// two may still be told to come back; none is told the token is bad.
	deadline := time.Now().Add(30 * time.Second)
	for _, proto := range wsProtocols {
		for {
			w := wsDial(t, env, proto)
			w.send("connection_init", "", map[string]any{"Authorization": "Bearer " + token})
			m, err := w.readFrame(wsWait)
			if err == nil && m.Type == "connection_ack" {
				break
			}
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != 1013 || time.Now().After(deadline) {
				t.Fatalf("%s connection_init after the restart: %v %v", proto, m, err)
			}
		}
	}
	for {
		resp, err := agentDial()
		if err == nil {
			break
		}
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("agent handshake after the restart: %v", err)
		}
	}
}
