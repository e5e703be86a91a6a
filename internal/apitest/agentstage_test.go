package apitest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/seal"
)

// stageAgent is an agent session on loopback, driven by hand: it reports
// stages and knows, by a ping answered after every frame sent before it,
// when the control plane has handled them.
type stageAgent struct {
	t     *testing.T
	conn  *websocket.Conn
	pongs chan struct{}
	ended chan struct{} // closed when the control plane ends the session

	mu        sync.Mutex
	desired   []protocol.Desired      // every state the control plane sent
	builds    []protocol.Builds       // every set of builds it sent
	positions []protocol.LogPositions // every answer to a logPositions
	newer     chan struct{}           // poked when a state, a set of builds or an answer arrives
}

// connectStageAgent connects as the cluster's agent with a fresh connect
// token and reads the welcome.
func connectStageAgent(t *testing.T, f *Fixture, clusterName string) (*stageAgent, string) {
	t.Helper()
	res := f.MustDo(t, `mutation($c: ID!, $n: String!) { regenerateConnectToken(input: {clusterId: $c, confirmName: $n}) { secret `+ue+` } }`,
		map[string]any{"c": f.ClusterID, "n": clusterName})
	secret := res.Str("regenerateConnectToken.secret")
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.Env.Server.URL, "http")+"/agent/v1/connect",
		http.Header{"Authorization": {"Bearer " + secret}})
	if err != nil {
		t.Fatalf("connecting the agent: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	a := &stageAgent{t: t, conn: conn, pongs: make(chan struct{}, 1), ended: make(chan struct{}), newer: make(chan struct{}, 1)}
	a.send(protocol.TypeHello, protocol.Hello{Protocols: []int{1}, Capabilities: protocol.Known, Agent: "nebula-agent-7f9c4-x2p"})
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, frame, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("reading the welcome: %v", err)
	}
	if m, err := protocol.DecodeServer(frame); err != nil {
		t.Fatalf("decoding the welcome: %v", err)
	} else if _, ok := m.(*protocol.Welcome); !ok {
		t.Fatalf("got %s, want a welcome", frame)
	}
	_ = conn.SetReadDeadline(time.Time{})
	conn.SetPongHandler(func(string) error { a.pongs <- struct{}{}; return nil })
	go a.read()
	return a, secret
}

// read keeps the connection read (so that pongs are seen) and the desired
// states; it ends with the connection.
func (a *stageAgent) read() {
	defer close(a.ended)
	for {
		_, frame, err := a.conn.ReadMessage()
		if err != nil {
			return
		}
		if m, err := protocol.DecodeServer(frame); err == nil {
			a.mu.Lock()
			switch m := m.(type) {
			case *protocol.Desired:
				a.desired = append(a.desired, *m)
			case *protocol.Builds:
				a.builds = append(a.builds, *m)
			case *protocol.LogPositions:
				a.positions = append(a.positions, *m)
			}
			a.mu.Unlock()
			select {
			case a.newer <- struct{}{}:
			default:
			}
		}
	}
}

func (a *stageAgent) send(typ string, body any) {
	a.t.Helper()
	frame, err := protocol.Encode(typ, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.conn.WriteMessage(websocket.TextMessage, frame); err != nil {
		a.t.Fatalf("sending %s: %v", typ, err)
	}
}

// report sends a stage report for a deployment (a raw id).
func (a *stageAgent) report(deployment string, stage model.DeploymentStage) {
	a.t.Helper()
	a.send(protocol.TypeStage, protocol.Stage{Deployment: deployment, Stage: string(stage),
		Message: "reported " + string(stage), At: time.Now().UTC()})
}

// handled waits until the control plane has handled every frame sent so
// far: it reads frames in order, and answers a ping only once it has
// handled those before it. A session that ended fails the test.
func (a *stageAgent) handled() {
	a.t.Helper()
	if err := a.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second)); err != nil {
		a.t.Fatalf("pinging: %v", err)
	}
	select {
	case <-a.pongs:
	case <-a.ended:
		a.t.Fatal("the control plane ended the session, want it to stay up")
	case <-time.After(15 * time.Second):
		a.t.Fatal("no pong within 15 s")
	}
}

// sawDeployment tells whether any desired state the agent got names the
// deployment (a raw id).
func (a *stageAgent) sawDeployment(deployment string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range a.desired {
		for _, ns := range d.State.Namespaces {
			for _, s := range ns.Services {
				if string(s.Deployment) == deployment {
					return true
				}
			}
		}
	}
	return false
}

// waitDeployment waits for a desired state that names the deployment.
func (a *stageAgent) waitDeployment(deployment string) {
	a.t.Helper()
	deadline := time.After(15 * time.Second)
	for !a.sawDeployment(deployment) {
		select {
		case <-a.newer:
		case <-a.ended:
			a.t.Fatal("the session ended before the state arrived")
		case <-deadline:
			a.t.Fatalf("no desired state naming deployment %s within 15 s", deployment)
		}
	}
}

func rawID(t *testing.T, kind, id string) string {
	t.Helper()
	raw, err := gid.Decode[string](kind, id)
	if err != nil {
		t.Fatalf("decoding %s id %q: %v", kind, id, err)
	}
	return raw
}

// An agent reports the stages of the deployments delivered to its own
// cluster, and only the moves a rollout can make from where each is. A
// deployment waiting for approval is not its to move; neither is another
// cluster's, one that ended, or one it reports backwards. Every refused
// report is logged and changes nothing, and the session stays up.
func TestAgentStageReports(t *testing.T) {
	t.Parallel()
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			logs := &syncBuffer{}
			key := newMasterKey(t)
			env := NewEnvWithBox(t, s.Open(t), seal.NewBox(&key), logs)
			f := env.NewFixture(t)
			other := env.NewFixture(t) // another tenant, with its own delivered deployment

			// A deployment of this tenant delivered to another of its clusters.
			f.NewCluster(t) // labelled scratch=yes
			scratchEnv := f.MustDo(t, `mutation($p: ID!, $n: String!) { createEnvironment(input: {projectId: $p, name: $n,
				clusterSelector: [{key: "scratch", value: "yes"}]}) { environment { id } `+ue+` } }`,
				map[string]any{"p": f.ProjectID, "n": f.Unique("scratch")}).Str("createEnvironment.environment.id")
			onScratch := deployTo(t, f, f.Owner.Token, f.ServiceID, scratchEnv)
			if onScratch.Stage != "DELIVERING" {
				t.Fatalf("the deployment to the scratch cluster is %s, want DELIVERING", onScratch.Stage)
			}

			agent, connectSecret := connectStageAgent(t, f, "prod-eu")
			rev := f.revision(t)

			// A deployment to the protected environment waits for approval.
			pending := deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
			if pending.Stage != "AWAITING_APPROVAL" {
				t.Fatalf("the deployment to the protected environment is %s, want AWAITING_APPROVAL", pending.Stage)
			}
			rawPending := rawID(t, gid.Deployment, pending.ID)
			rawDelivered := rawID(t, gid.Deployment, f.DeploymentID) // the fixture's, DELIVERING on this cluster

			type report struct {
				deployment string
				stage      model.DeploymentStage
			}
			// Each case sends its reports in order, then checks where the
			// deployment stands; refused reports must be logged.
			cases := []struct {
				name      string
				reports   []report
				check     string // the deployment (global id) to read afterwards
				wantStage string
				refused   []report // the reports that must be logged as refused
			}{
				{
					name:      "awaiting approval to STARTING",
					reports:   []report{{rawPending, model.StageStarting}},
					check:     pending.ID,
					wantStage: "AWAITING_APPROVAL",
					refused:   []report{{rawPending, model.StageStarting}},
				},
				{
					name:      "awaiting approval to SUCCEEDED",
					reports:   []report{{rawPending, model.StageSucceeded}},
					check:     pending.ID,
					wantStage: "AWAITING_APPROVAL",
					refused:   []report{{rawPending, model.StageSucceeded}},
				},
				{
					name:      "awaiting approval to FAILED",
					reports:   []report{{rawPending, model.StageFailed}},
					check:     pending.ID,
					wantStage: "AWAITING_APPROVAL",
					refused:   []report{{rawPending, model.StageFailed}},
				},
				{
					name:      "another tenant's deployment",
					reports:   []report{{rawID(t, gid.Deployment, other.DeploymentID), model.StageSucceeded}},
					check:     "", // read below, as the other tenant
					refused:   []report{{rawID(t, gid.Deployment, other.DeploymentID), model.StageSucceeded}},
					wantStage: "DELIVERING",
				},
				{
					name:      "another cluster of the tenant",
					reports:   []report{{rawID(t, gid.Deployment, onScratch.ID), model.StageStarting}},
					check:     onScratch.ID,
					wantStage: "DELIVERING",
					refused:   []report{{rawID(t, gid.Deployment, onScratch.ID), model.StageStarting}},
				},
				{
					name:    "no such deployment",
					reports: []report{{"01890000-0000-7000-8000-000000000000", model.StageStarting}},
					refused: []report{{"01890000-0000-7000-8000-000000000000", model.StageStarting}},
				},
				{
					// A lost report or a reconnect skips stages: forward
					// jumps are the rollout's.
					name:      "forward, with a jump",
					reports:   []report{{rawDelivered, model.StageProbing}, {rawDelivered, model.StageProbing}},
					check:     f.DeploymentID,
					wantStage: "PROBING",
				},
				{
					name:      "backwards",
					reports:   []report{{rawDelivered, model.StageStarting}},
					check:     f.DeploymentID,
					wantStage: "PROBING",
					refused:   []report{{rawDelivered, model.StageStarting}},
				},
				{
					name:      "to the end, reported twice after a reconnect",
					reports:   []report{{rawDelivered, model.StageSucceeded}, {rawDelivered, model.StageSucceeded}},
					check:     f.DeploymentID,
					wantStage: "SUCCEEDED",
				},
				{
					name:      "after the end",
					reports:   []report{{rawDelivered, model.StageFailed}},
					check:     f.DeploymentID,
					wantStage: "SUCCEEDED",
					refused:   []report{{rawDelivered, model.StageFailed}},
				},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					for _, r := range tc.reports {
						agent.report(r.deployment, r.stage)
					}
					agent.handled()
					switch {
					case tc.check != "":
						if got := readDep(t, f, tc.check).Stage; got != tc.wantStage {
							t.Errorf("stage: got %s, want %s", got, tc.wantStage)
						}
					case tc.wantStage != "":
						if got := other.Node(t, other.DeploymentID, `... on Deployment { stage }`)["stage"]; got != tc.wantStage {
							t.Errorf("the other tenant's deployment: got stage %v, want %s", got, tc.wantStage)
						}
					}
					for _, r := range tc.refused {
						if !loggedRefusal(logs.Lines(), r.deployment, string(r.stage)) {
							t.Errorf("no refusal logged for the report %s of %s\nwarnings:\n%s",
								r.stage, r.deployment, strings.Join(warnings(logs.Lines()), "\n"))
						}
					}
				})
			}

			t.Run("the approval is still the reviewers'", func(t *testing.T) {
				// A change that recompiles every cluster without altering
				// what they run: a moved deployment would show now.
				f.MustDo(t, `mutation($p: ID!) { updateProject(input: {projectId: $p, description: "recompiled"}) { project { id } `+ue+` } }`,
					map[string]any{"p": f.ProjectID})
				got := readDep(t, f, pending.ID)
				if got.Stage != "AWAITING_APPROVAL" || got.blocker() != "APPROVAL" {
					t.Errorf("got %s blocked on %s, want AWAITING_APPROVAL blocked on approval", got.Stage, got.blocker())
				}
				if stages := got.stages(); !slices.Equal(stages, []string{"QUEUED", "AWAITING_APPROVAL"}) {
					t.Errorf("events: got %v, want [QUEUED AWAITING_APPROVAL]", stages)
				}
				st := decodeInto[shownState](t, f.Node(t, f.ClusterID, `... on Cluster { desiredState }`)["desiredState"])
				b, _ := json.Marshal(st)
				if strings.Contains(string(b), rawPending) {
					t.Errorf("the desired state carries the deployment awaiting approval: %s", b)
				}
				if agent.sawDeployment(rawPending) {
					t.Error("the agent was sent a state carrying the deployment awaiting approval")
				}
				// The fixture's rollout succeeded (its release was already
				// the cluster's): nothing moved the revision.
				if got := f.revision(t); got != rev {
					t.Errorf("desired revision: got %d, want %d", got, rev)
				}
			})

			t.Run("no token in the log", func(t *testing.T) {
				for _, l := range logs.Lines() {
					for _, sec := range append(f.Secrets(), connectSecret) {
						if strings.Contains(l, sec) {
							t.Errorf("a log line holds a token: %s", l)
						}
					}
				}
			})

			// Once approved, the same session gets the release and may
			// report its rollout.
			t.Run("approved, then reported", func(t *testing.T) {
				pm := newPM(t, f, "reviewer")
				if res := decide(t, f, pm.Token, "approveDeployment", pending.ID, "ship it"); len(res.UserErrors("approveDeployment")) > 0 {
					t.Fatalf("approving: %s", res.Body)
				}
				agent.waitDeployment(rawPending)
				agent.report(rawPending, model.StageStarting)
				agent.handled()
				if got := readDep(t, f, pending.ID).Stage; got != "STARTING" {
					t.Errorf("stage after the approval and a STARTING report: got %s, want STARTING", got)
				}
			})
		})
	}
}

// loggedRefusal tells whether the log says that a report of stage for the
// deployment was refused, with where it was refused from and why: a
// warning, or (a late report of a rollout the cluster ran) an info line.
func loggedRefusal(lines []string, deployment, stage string) bool {
	for _, l := range lines {
		if (strings.Contains(l, "level=WARN") || strings.Contains(l, "level=INFO")) &&
			strings.Contains(l, "refused an agent's stage report") && strings.Contains(l, "deployment_id="+deployment) &&
			strings.Contains(l, "to="+stage) && strings.Contains(l, "cluster_id=") &&
			strings.Contains(l, "from=") && strings.Contains(l, "reason=") {
			return true
		}
	}
	return false
}

func warnings(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return !strings.Contains(l, "level=WARN") })
}
