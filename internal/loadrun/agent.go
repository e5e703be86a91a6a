//go:build linux

package loadrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// agentCaps are the capabilities a simulated agent announces: it applies
// desired states, acknowledges them, reports its inventory and the stages
// of rollouts. It runs no commands, builds or log shipping.
var agentCaps = []string{protocol.CapDesiredState, protocol.CapAcks, protocol.CapInventory, protocol.CapStages}

// loadVariable is the environment variable the setVariable mutations set;
// an agent finds the value it got in its service's env.
const loadVariable = "LOAD_LEVEL"

var agentInventory = protocol.Inventory{AgentVersion: "loadrun", AgentImage: "loadrun", Capabilities: agentCaps,
	KubernetesVersion: "v1.31.0", Nodes: []protocol.Node{{Name: "node-1", Ready: true}},
	Workloads: []protocol.Workload{{Namespace: "app", Name: "api", Replicas: 2, ReadyReplicas: 2}}}

// agent is one simulated cluster agent: it speaks the real protocol over
// its own websocket, acknowledges every desired state as applied,
// heartbeats at the interval the control plane asks for and reports each
// new deployment STARTING at once and SUCCEEDED stageDelay later.
type agent struct {
	d     *driver
	index int
	conn  *websocket.Conn
	wmu   sync.Mutex // one writer at a time

	mu       sync.Mutex
	current  map[model.ServiceID]model.DeploymentID // the deployment each service's state names
	value    string                                 // loadVariable as last received
	revision int64                                  // newest revision received and acknowledged
	timers   []*time.Timer                          // SUCCEEDED reports to come
	beat     *time.Timer                            // the next heartbeat
	ended    bool                                   // the session is over: schedule nothing more
}

// connect dials the replica, says hello and reads the welcome.
func (a *agent) connect(ctx context.Context, base, token string) (heartbeat time.Duration, err error) {
	url := "ws" + strings.TrimPrefix(base, "http") + "/agent/v1/connect"
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	c, resp, err := dialer.DialContext(ctx, url, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			err = fmt.Errorf("%w: %s %s", err, resp.Status, bytes.TrimSpace(body))
		}
		return 0, fmt.Errorf("dialing the agent endpoint: %w", err)
	}
	a.conn = c
	if err := a.send(protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version}, Capabilities: agentCaps,
		Inventory: agentInventory, Agent: fmt.Sprintf("loadrun-agent-%d", a.index)}); err != nil {
		c.Close()
		return 0, fmt.Errorf("saying hello: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var w protocol.Welcome
	_, frame, err := c.ReadMessage()
	if err == nil {
		err = decodeFrame(frame, protocol.TypeWelcome, &w)
	}
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return 0, fmt.Errorf("waiting for the welcome: %w", err)
	}
	return time.Duration(w.HeartbeatSeconds) * time.Second, nil
}

func (a *agent) send(typ string, body any) error {
	frame, err := protocol.Encode(typ, body)
	if err != nil {
		return err
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_ = a.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return a.conn.WriteMessage(websocket.TextMessage, frame)
}

// fail counts an error of the session unless the run is shutting down.
func (a *agent) fail(ctx context.Context, err error) {
	if ctx.Err() == nil {
		a.d.rec.fail(kindAgentSession, fmt.Errorf("agent %d: %w", a.index, err))
	}
}

// run reads the session until ctx ends or the connection fails, and
// heartbeats meanwhile (on timers). The connection is closed when it returns.
func (a *agent) run(ctx context.Context, heartbeat time.Duration) {
	stop := context.AfterFunc(ctx, func() { _ = a.conn.Close() })
	defer stop()
	defer a.conn.Close()
	defer a.stopTimers()
	// The first heartbeat at a random point of the first interval, as
	// agents started at different times would send theirs.
	a.beatAfter(ctx, rand.N(heartbeat), heartbeat)
	for {
		_, frame, err := a.conn.ReadMessage()
		at := time.Now()
		if err != nil {
			a.fail(ctx, fmt.Errorf("reading: %w", err))
			return
		}
		// The agent announced no capability under which anything but
		// desired states would come.
		var ds protocol.Desired
		if err := decodeFrame(frame, protocol.TypeDesired, &ds); err != nil {
			a.fail(ctx, err)
			return
		}
		a.apply(ctx, ds, at)
		if err := a.send(protocol.TypeAck, protocol.Ack{Revision: ds.Revision, Result: protocol.ResultApplied}); err != nil {
			a.fail(ctx, fmt.Errorf("acknowledging revision %d: %w", ds.Revision, err))
			return
		}
		a.d.countIn(kindAgentAck, at)
	}
}

// apply notes what a desired state brought (new deployments, a new value
// of loadVariable) and starts the rollouts of the new deployments.
func (a *agent) apply(ctx context.Context, ds protocol.Desired, at time.Time) {
	var fresh []model.DeploymentID
	value := ""
	a.mu.Lock()
	if ds.Revision <= a.revision {
		a.mu.Unlock()
		return // older than what was applied: an agent ignores it
	}
	a.revision = ds.Revision
	for _, svc := range services(ds.State) {
		if svc.Deployment != "" && a.current[svc.ID] != svc.Deployment {
			a.current[svc.ID] = svc.Deployment
			fresh = append(fresh, svc.Deployment)
		}
		for _, e := range svc.Env {
			if e.Name == loadVariable {
				value = e.Value
			}
		}
	}
	newValue := value != "" && value != a.value
	a.value = value
	a.mu.Unlock()

	a.d.track.agentGot(fresh, value, newValue, at)
	for _, dep := range fresh {
		if err := a.send(protocol.TypeStage, protocol.Stage{Deployment: string(dep), Stage: string(model.StageStarting),
			Message: "rolling out", At: time.Now()}); err != nil {
			a.fail(ctx, fmt.Errorf("reporting STARTING: %w", err))
			return
		}
		a.d.countIn(kindAgentStage, at)
		a.later(ctx, dep)
	}
}

// later reports dep SUCCEEDED after the stage delay, if it is still the
// deployment its service should run: a newer one replaced it otherwise,
// and the control plane would refuse the report.
func (a *agent) later(ctx context.Context, dep model.DeploymentID) {
	t := time.AfterFunc(a.d.scale.StageDelay, func() {
		if ctx.Err() != nil || !a.isCurrent(dep) {
			return
		}
		sent := time.Now()
		if err := a.send(protocol.TypeStage, protocol.Stage{Deployment: string(dep), Stage: string(model.StageSucceeded),
			Message: "every process is ready", At: sent}); err != nil {
			a.fail(ctx, fmt.Errorf("reporting SUCCEEDED: %w", err))
			return
		}
		a.d.countIn(kindAgentStage, sent)
		a.d.track.stageSent(dep, sent)
	})
	a.mu.Lock()
	if a.ended {
		t.Stop()
	}
	a.timers = append(a.timers, t)
	if len(a.timers) > 64 { // keep only timers that may still fire
		a.timers = a.timers[len(a.timers)-32:]
	}
	a.mu.Unlock()
}

func (a *agent) isCurrent(dep model.DeploymentID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range a.current {
		if d == dep {
			return true
		}
	}
	return false
}

func (a *agent) stopTimers() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	for _, t := range a.timers {
		t.Stop()
	}
	if a.beat != nil {
		a.beat.Stop()
	}
}

// beatAfter schedules the next heartbeat; each one schedules the one
// after it, interval later, until the session ends.
func (a *agent) beatAfter(ctx context.Context, after, interval time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return
	}
	a.beat = time.AfterFunc(after, func() {
		a.mu.Lock()
		rev := a.revision
		a.mu.Unlock()
		sent := time.Now()
		if err := a.send(protocol.TypeHeartbeat, protocol.Heartbeat{Inventory: agentInventory, AppliedRevision: rev, SentAt: sent}); err != nil {
			a.fail(ctx, fmt.Errorf("heartbeating: %w", err))
			return // the reader ends the session
		}
		a.d.countIn(kindAgentHeartbeat, sent)
		a.beatAfter(ctx, interval, interval)
	})
}

// applied is the newest revision the agent acknowledged.
func (a *agent) applied() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.revision
}

// decodeFrame decodes a frame from the control plane that must be of type
// typ into body.
func decodeFrame(frame []byte, typ string, body any) error {
	var env protocol.Envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return fmt.Errorf("decoding a frame: %w", err)
	}
	if env.Type != typ {
		return fmt.Errorf("got a %q frame, want %q", env.Type, typ)
	}
	if err := json.Unmarshal(env.Body, body); err != nil {
		return fmt.Errorf("decoding a %q frame: %w", typ, err)
	}
	return nil
}

// services lists every service of a state.
func services(st desired.State) []desired.Service {
	var out []desired.Service
	for _, ns := range st.Namespaces {
		out = append(out, ns.Services...)
	}
	return out
}
