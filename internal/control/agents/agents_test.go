package agents_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/agents"
	"github.com/nebulactrl/nebula/internal/control/clusters"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The rules of the agents' side, tested on the embedded store without the
// hub or the API: who a connect token lets in, that an agent acts for its
// own cluster only, how its acks, stage and build reports move things, and
// that its logs, events and drift are stored redacted and read back by its
// tenant only.

// authenticate opens the agent side of a connect token's cluster.
func authenticate(t *testing.T, s *controltest.Shop, secret string) *agents.AgentSide {
	t.Helper()
	side, err := s.P.Agents.AuthenticateAgent(context.Background(), secret)
	if err != nil {
		t.Fatalf("authenticating an agent with a good connect token: %v", err)
	}
	return side
}

// connect gives the shop's cluster a new connect token (controltest drops
// the first) and opens its agent side with it, the agent having said hello
// (a heartbeat: the cluster is connected from then on).
func connect(t *testing.T, s *controltest.Shop, cl *model.Cluster) (*agents.AgentSide, string) {
	t.Helper()
	_, secret, err := s.P.Clusters.RegenerateConnectToken(s.Admin, cl.ID, cl.Name)
	if err != nil {
		t.Fatal(err)
	}
	side := authenticate(t, s, secret)
	hello(t, side)
	return side, secret
}

// hello reports the agent's first heartbeat.
func hello(t *testing.T, side *agents.AgentSide) {
	t.Helper()
	if err := side.Report(context.Background(), []byte(`{"nodes":1}`), 0, ""); err != nil {
		t.Fatal(err)
	}
}

func deployment(t *testing.T, s *controltest.Shop, ctx context.Context, id model.DeploymentID) *model.Deployment {
	t.Helper()
	d, err := s.P.Delivery.Deployment(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stages are the stages a deployment's events went through, in order.
func stages(t *testing.T, s *controltest.Shop, ctx context.Context, id model.DeploymentID) []model.DeploymentStage {
	t.Helper()
	evs, err := s.P.Delivery.DeploymentEvents(ctx, deployment(t, s, ctx, id), store.PageArgs{First: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []model.DeploymentStage
	for _, e := range evs.Items {
		out = append(out, e.Stage)
	}
	return out
}

func cluster(t *testing.T, s *controltest.Shop, id model.ClusterID) *model.Cluster {
	t.Helper()
	c, err := s.P.Clusters.Cluster(s.Admin, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func stage(t *testing.T, side *agents.AgentSide, d model.DeploymentID, st model.DeploymentStage) {
	t.Helper()
	if err := side.Stage(context.Background(), agents.StageReport{Deployment: d, Stage: st, Message: "reported " + string(st)}); err != nil {
		t.Fatalf("reporting %s of %s: %v", st, d, err)
	}
}

// twoClusters places the shop's environment on its cluster by label and
// adds a second cluster, eu-2, with an environment "staging" placed on it.
// It returns eu-2, its connect token and staging.
func twoClusters(t *testing.T, s *controltest.Shop) (*model.Cluster, string, *model.Environment) {
	t.Helper()
	if _, err := s.P.Clusters.SetClusterLabels(s.Admin, s.Cluster.ID, []model.Label{{Key: "site", Value: "eu-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.P.Delivery.UpdateEnvironment(s.Admin, s.Env.ID, delivery.EnvironmentInput{
		ClusterSelector: []model.Label{{Key: "site", Value: "eu-1"}}}); err != nil {
		t.Fatal(err)
	}
	eu2, secret, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "eu-2", []model.Label{{Key: "site", Value: "eu-2"}})
	if err != nil {
		t.Fatal(err)
	}
	name := "staging"
	staging, err := s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &name,
		ClusterSelector: []model.Label{{Key: "site", Value: "eu-2"}}})
	if err != nil {
		t.Fatal(err)
	}
	return eu2, secret, staging
}

// outsider is another tenant with its own project, service, cluster and
// environment, and a deployment delivered there.
type outsider struct {
	admin   context.Context
	cluster *model.Cluster
	secret  string // the cluster's connect token
	env     *model.Environment
	svc     *model.Service
	dep     *model.Deployment
}

func newOutsider(t *testing.T, s *controltest.Shop) *outsider {
	t.Helper()
	ten, _, secret, err := s.P.People.CreateTenant(s.Admin, "globex")
	if err != nil {
		t.Fatal(err)
	}
	o := &outsider{admin: s.As(t, secret)}
	proj, err := s.P.Delivery.CreateProject(o.admin, ten.ID, "shop", "")
	if err != nil {
		t.Fatal(err)
	}
	image, name := "registry.example.com/globex/api", "prod"
	if o.svc, err = s.P.Delivery.CreateService(o.admin, proj.ID, delivery.ServiceInput{Name: "api", Image: &image,
		Processes: []model.Process{{Name: "web", Command: []string{"/api"}, Replicas: 1}}}); err != nil {
		t.Fatal(err)
	}
	if o.cluster, o.secret, err = s.P.Clusters.RegisterCluster(o.admin, ten.ID, "eu-1", nil); err != nil {
		t.Fatal(err)
	}
	if o.env, err = s.P.Delivery.CreateEnvironment(o.admin, proj.ID, delivery.EnvironmentInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if _, o.dep, err = s.P.Delivery.Deploy(o.admin, o.svc.ID, o.env.ID, controltest.Digest(9)); err != nil {
		t.Fatal(err)
	}
	if o.dep.Stage != model.StageDelivering {
		t.Fatalf("the other tenant's deployment is %s, want %s", o.dep.Stage, model.StageDelivering)
	}
	return o
}

// A connect token opens its cluster's side; a wrong one, a revoked one and
// one replaced longer ago than the grace window do not, and a session
// opened before learns its token stopped.
func TestAuthenticateAgent(t *testing.T) {
	c := &controltest.Clock{At: time.Now().UTC().Truncate(time.Second)}
	const grace = 10 * time.Minute
	s := controltest.New(t, core.WithClock(c.Now), core.WithConnectGrace(grace))
	// A deleted cluster's token opens nothing.
	gone, goneSecret, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "eu-3", nil)
	if err != nil {
		t.Fatal(err)
	}
	authenticate(t, s, goneSecret)
	if err := s.P.Clusters.DeleteCluster(s.Admin, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.P.Agents.AuthenticateAgent(context.Background(), goneSecret); !errors.Is(err, agents.ErrAgentUnauthorized) {
		t.Fatalf("the token of a deleted cluster: %v, want ErrAgentUnauthorized", err)
	}

	cl, first, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "eu-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	side := authenticate(t, s, first)
	if side.Cluster() != cl.ID || side.Tenant() != s.Boot.Tenant.ID || side.Token() == "" {
		t.Fatalf("the side opened acts for cluster %s of tenant %s with token %q, want %s of %s with its token",
			side.Cluster(), side.Tenant(), side.Token(), cl.ID, s.Boot.Tenant.ID)
	}

	flipped := first[:len(first)-1] + "a"
	if strings.HasSuffix(first, "a") {
		flipped = first[:len(first)-1] + "b"
	}
	for what, secret := range map[string]string{
		"no token":                   "",
		"the prefix alone":           core.ConnectTokenPrefix,
		"a token with a wrong digit": flipped,
		"the token and more":         first + "x",
		"a bearer header":            "Bearer " + first,
		"the admin's API token":      s.Boot.Secret,
		"a very long token":          first + strings.Repeat("a", 300),
	} {
		if got, err := s.P.Agents.AuthenticateAgent(context.Background(), secret); !errors.Is(err, agents.ErrAgentUnauthorized) || got != nil {
			t.Errorf("%s: %v, %v, want ErrAgentUnauthorized", what, got, err)
		}
	}

	// Replaced, the old token works through the grace window, then stops;
	// the session opened with it learns when.
	_, second, err := s.P.Clusters.RegenerateConnectToken(s.Admin, cl.ID, cl.Name)
	if err != nil {
		t.Fatal(err)
	}
	ok, expires, err := side.TokenStillValid(context.Background())
	if err != nil || !ok || expires == nil || !expires.Equal(c.Now().Add(grace)) {
		t.Fatalf("the replaced token's session: valid %v until %v (%v), want valid until %v", ok, expires, err, c.Now().Add(grace))
	}
	c.Advance(grace - time.Second)
	if old := authenticate(t, s, first); old.Cluster() != cl.ID || side.TokenExpired(expires) {
		t.Fatal("the replaced token stopped within its grace window")
	}
	c.Advance(time.Second)
	if _, err := s.P.Agents.AuthenticateAgent(context.Background(), first); !errors.Is(err, agents.ErrAgentUnauthorized) {
		t.Fatalf("the replaced token past its grace window: %v, want ErrAgentUnauthorized", err)
	}
	if ok, _, err := side.TokenStillValid(context.Background()); err != nil || ok || !side.TokenExpired(expires) {
		t.Fatalf("the session of the token past its grace window: still valid %v (%v), expired %v", ok, err, side.TokenExpired(expires))
	}
	newer := authenticate(t, s, second)
	if newer.Cluster() != cl.ID || newer.Token() == side.Token() {
		t.Fatalf("the new token opened cluster %s with token %s", newer.Cluster(), newer.Token())
	}

	// Revoked, the new one stops at once, for its open session too.
	if _, err := s.P.Clusters.RevokeConnectToken(s.Admin, newer.Token()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.P.Agents.AuthenticateAgent(context.Background(), second); !errors.Is(err, agents.ErrAgentUnauthorized) {
		t.Fatalf("a revoked token: %v, want ErrAgentUnauthorized", err)
	}
	if ok, _, err := newer.TokenStillValid(context.Background()); err != nil || ok {
		t.Fatalf("the session of a revoked token: still valid %v (%v)", ok, err)
	}
	// The shop's first cluster is none the worse.
	if side, _ := connect(t, s, s.Cluster); side.Cluster() != s.Cluster.ID {
		t.Fatalf("eu-1's token opened cluster %s", side.Cluster())
	}
}

// An agent's stage reports move the deployments delivered to its own
// cluster only: one of another cluster of the tenant, of another tenant,
// or none at all, changes nothing.
func TestStageReportsOfAnotherClusterRefused(t *testing.T) {
	s := controltest.New(t)
	eu2, eu2Secret, staging := twoClusters(t, s)
	eu1, _ := connect(t, s, s.Cluster)
	side2 := authenticate(t, s, eu2Secret)
	hello(t, side2)
	_, onEU1 := s.Deploy(t, 1)
	_, onEU2, err := s.P.Delivery.Deploy(s.Admin, s.Svc.ID, staging.ID, controltest.Digest(2))
	if err != nil {
		t.Fatal(err)
	}
	if onEU1.ClusterID != s.Cluster.ID || onEU2.ClusterID != eu2.ID || onEU1.Stage != model.StageDelivering || onEU2.Stage != model.StageDelivering {
		t.Fatalf("deployments on %s (%s) and %s (%s), want DELIVERING on eu-1 and eu-2",
			onEU1.ClusterID, onEU1.Stage, onEU2.ClusterID, onEU2.Stage)
	}
	other := newOutsider(t, s)

	for _, st := range []model.DeploymentStage{model.StageStarting, model.StageSucceeded, model.StageFailed, model.StageRolledBack} {
		stage(t, eu1, onEU2.ID, st)
		stage(t, eu1, other.dep.ID, st)
	}
	stage(t, eu1, "01890000-0000-7000-8000-000000000000", model.StageStarting)
	if d := deployment(t, s, s.Admin, onEU2.ID); d.Stage != model.StageDelivering || d.LastSeq != onEU2.LastSeq {
		t.Errorf("eu-1's agent moved eu-2's deployment: %s (event %d), want %s (event %d)", d.Stage, d.LastSeq, onEU2.Stage, onEU2.LastSeq)
	}
	if d := deployment(t, s, other.admin, other.dep.ID); d.Stage != model.StageDelivering || d.LastSeq != other.dep.LastSeq {
		t.Errorf("an agent moved another tenant's deployment: %s (event %d)", d.Stage, d.LastSeq)
	}
	if d := deployment(t, s, s.Admin, onEU1.ID); d.Stage != model.StageDelivering || d.LastSeq != onEU1.LastSeq {
		t.Errorf("reports of other deployments moved eu-1's own: %s", d.Stage)
	}

	// The same reports from the right agent move each.
	stage(t, side2, onEU2.ID, model.StageStarting)
	if d := deployment(t, s, s.Admin, onEU2.ID); d.Stage != model.StageStarting {
		t.Errorf("eu-2's agent reported STARTING of its deployment: %s, want STARTING", d.Stage)
	}
	outside := authenticate(t, s, other.secret)
	stage(t, outside, other.dep.ID, model.StageSucceeded)
	if d := deployment(t, s, other.admin, other.dep.ID); d.Stage != model.StageSucceeded {
		t.Errorf("the other tenant's agent reported SUCCEEDED of its deployment: %s", d.Stage)
	}
}

// Commands are the agent's of the cluster they were queued for: another
// cluster's agent neither gets nor acknowledges them.
func TestCommandsOfAnotherClusterRefused(t *testing.T) {
	s := controltest.New(t)
	_, eu2Secret, _ := twoClusters(t, s)
	eu1, _ := connect(t, s, s.Cluster)
	side2 := authenticate(t, s, eu2Secret)
	cmd, err := s.P.Clusters.QueueCommand(s.Admin, clusters.CommandInput{Cluster: s.Cluster.ID, Kind: model.CommandResync})
	if err != nil {
		t.Fatal(err)
	}
	pending := func(side *agents.AgentSide) []model.CommandID {
		t.Helper()
		cs, err := side.PendingCommands(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ids []model.CommandID
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		return ids
	}
	if got := pending(eu1); !slices.Equal(got, []model.CommandID{cmd.ID}) {
		t.Fatalf("eu-1's pending commands: %v, want [%s]", got, cmd.ID)
	}
	if got := pending(side2); len(got) != 0 {
		t.Fatalf("eu-2's agent gets eu-1's commands: %v", got)
	}
	status := func() model.CommandStatus {
		t.Helper()
		c, err := s.P.Clusters.Command(s.Admin, cmd.ID)
		if err != nil {
			t.Fatal(err)
		}
		return c.Status
	}
	if err := side2.CommandDelivered(context.Background(), cmd.ID); err != nil {
		t.Fatal(err)
	}
	if err := side2.CommandAck(context.Background(), agents.CommandDone{ID: cmd.ID, Failed: true, Message: "not mine"}); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != model.CommandQueued {
		t.Fatalf("eu-2's agent moved eu-1's command to %s", got)
	}
	if err := eu1.CommandDelivered(context.Background(), cmd.ID); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != model.CommandDelivered {
		t.Fatalf("after delivery the command is %s", got)
	}
	if err := eu1.CommandAck(context.Background(), agents.CommandDone{ID: cmd.ID, Message: "resynced"}); err != nil {
		t.Fatal(err)
	}
	// A second answer changes nothing.
	if err := eu1.CommandAck(context.Background(), agents.CommandDone{ID: cmd.ID, Failed: true, Message: "late"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.P.Clusters.Command(s.Admin, cmd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != model.CommandApplied || c.Result != "resynced" {
		t.Fatalf("the command after its ack and a late one: %s %q, want APPLIED \"resynced\"", c.Status, c.Result)
	}
	if got := pending(eu1); len(got) != 0 {
		t.Fatalf("an acknowledged command is still pending: %v", got)
	}
}

// A heartbeat records what the agent reports; an ack records the revision
// applied, never one ahead of the desired revision nor going backwards;
// a failed apply keeps its errors until a newer revision applies.
func TestReportAndAck(t *testing.T) {
	s := controltest.New(t)
	side, _ := connect(t, s, s.Cluster)
	ctx := context.Background()
	hash := strings.Repeat("ab", 32)
	if err := side.Report(ctx, []byte(`{"nodes":3}`), 0, hash); err != nil {
		t.Fatal(err)
	}
	cl := cluster(t, s, s.Cluster.ID)
	if cl.LastHeartbeatAt == nil || cl.Inventory != `{"nodes":3}` || cl.ReportedHash != hash ||
		s.P.Clusters.ClusterStatus(cl) != model.ClusterConnected {
		t.Fatalf("after a heartbeat: seen %v, inventory %q, hash %q, %s", cl.LastHeartbeatAt, cl.Inventory, cl.ReportedHash,
			s.P.Clusters.ClusterStatus(cl))
	}
	// A hash that is not one is not kept.
	if err := side.Report(ctx, []byte(`{"nodes":3}`), 0, "<script>"); err != nil {
		t.Fatal(err)
	}
	if cl := cluster(t, s, s.Cluster.ID); cl.ReportedHash != "" || cl.Inventory != `{"nodes":3}` {
		t.Fatalf("after a heartbeat with a bad hash: hash %q, inventory %q", cl.ReportedHash, cl.Inventory)
	}

	s.Deploy(t, 1)
	rev, err := side.DesiredRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev < 1 {
		t.Fatalf("desired revision after a deploy: %d", rev)
	}
	if err := side.Ack(ctx, agents.Applied{Revision: rev + 1, OK: true}); err != nil {
		t.Fatal(err)
	}
	if got := cluster(t, s, s.Cluster.ID).AppliedRevision; got >= rev+1 {
		t.Fatalf("an ack ahead of the desired revision %d recorded %d", rev, got)
	}
	errs := []model.ObjectError{{Object: "Deployment shop-prod/api-web", Message: "quota exceeded"}}
	if err := side.Ack(ctx, agents.Applied{Revision: rev, Errors: errs}); err != nil {
		t.Fatal(err)
	}
	cl = cluster(t, s, s.Cluster.ID)
	if cl.AppliedRevision == rev || !strings.Contains(cl.ApplyErrors, "quota exceeded") {
		t.Fatalf("a failed apply of %d: applied %d, errors %q", rev, cl.AppliedRevision, cl.ApplyErrors)
	}
	if err := side.Ack(ctx, agents.Applied{Revision: rev, OK: true}); err != nil {
		t.Fatal(err)
	}
	cl = cluster(t, s, s.Cluster.ID)
	if cl.AppliedRevision != rev || cl.ApplyErrors != "" {
		t.Fatalf("an ack of %d: applied %d, errors %q", rev, cl.AppliedRevision, cl.ApplyErrors)
	}
	r, err := s.P.Delivery.Revision(s.Admin, cl, rev)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, o := range r.Outcomes {
		results = append(results, o.Agent+":"+map[bool]string{true: "failed", false: "applied"}[o.Failed])
	}
	if !slices.Contains(results, "unnamed agent:applied") || !slices.Contains(results, "unnamed agent:failed") {
		t.Errorf("the outcomes of revision %d: %v, want a failure and an application", rev, results)
	}

	// A stale ack (of an older revision) leaves it.
	s.Deploy(t, 2)
	next, err := side.DesiredRevision(ctx)
	if err != nil || next <= rev {
		t.Fatalf("desired revision after a second deploy: %d (%v), want past %d", next, err, rev)
	}
	side.Named("nebula-agent-7f9c4-x2p")
	if err := side.Ack(ctx, agents.Applied{Revision: next, OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := side.Ack(ctx, agents.Applied{Revision: rev, OK: true}); err != nil {
		t.Fatal(err)
	}
	if got := cluster(t, s, s.Cluster.ID).AppliedRevision; got != next {
		t.Fatalf("after an ack of %d and a stale one of %d: applied %d", next, rev, got)
	}
	r, err = s.P.Delivery.Revision(s.Admin, cl, next)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Outcomes) != 1 || r.Outcomes[0].Agent != "nebula-agent-7f9c4-x2p" || r.Outcomes[0].Failed {
		t.Errorf("the outcomes of revision %d: %+v, want one applied by the named agent", next, r.Outcomes)
	}
}

// Stage reports move a delivered deployment forward as its rollout can;
// a stage an agent does not report, or one backwards, or after the end,
// changes nothing, and a repeat adds no event.
func TestStageReportsMoveDeployment(t *testing.T) {
	s := controltest.New(t)
	side, _ := connect(t, s, s.Cluster)
	_, d := s.Deploy(t, 1)
	if d.Stage != model.StageDelivering || d.Blocker != nil {
		t.Fatalf("a deploy to a connected cluster is %s (blocker %v), want DELIVERING unblocked", d.Stage, d.Blocker)
	}
	check := func(what string, want model.DeploymentStage, events ...model.DeploymentStage) {
		t.Helper()
		if got := deployment(t, s, s.Admin, d.ID).Stage; got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
		if got := stages(t, s, s.Admin, d.ID); !slices.Equal(got, events) {
			t.Errorf("%s: events %v, want %v", what, got, events)
		}
	}
	delivered := []model.DeploymentStage{model.StageQueued, model.StageDelivering}
	for _, bad := range []model.DeploymentStage{model.StageQueued, model.StageDelivering, model.StageSuperseded,
		model.StageCancelled, model.StageAwaitingApproval, "EXPLODED", ""} {
		stage(t, side, d.ID, bad)
	}
	check("stages an agent does not report", model.StageDelivering, delivered...)

	stage(t, side, d.ID, model.StageStarting)
	stage(t, side, d.ID, model.StageSwitchingTraffic) // a lost PROBING
	stage(t, side, d.ID, model.StageSwitchingTraffic) // again, after a reconnect
	moved := append(slices.Clone(delivered), model.StageStarting, model.StageSwitchingTraffic)
	check("forward, with a jump and a repeat", model.StageSwitchingTraffic, moved...)
	stage(t, side, d.ID, model.StageProbing)
	stage(t, side, d.ID, model.StageStarting)
	check("backwards", model.StageSwitchingTraffic, moved...)
	stage(t, side, d.ID, model.StageSucceeded)
	stage(t, side, d.ID, model.StageSucceeded)
	done := append(moved, model.StageSucceeded)
	check("to the end, twice", model.StageSucceeded, done...)
	stage(t, side, d.ID, model.StageFailed)
	stage(t, side, d.ID, model.StageRolledBack)
	check("after the end", model.StageSucceeded, done...)

	// A failed rollout takes its release out of the desired state: the
	// cluster goes back to the release that succeeded.
	_, d2 := s.Deploy(t, 2)
	if got := runningRelease(t, side, s.Svc.ID); got != 2 {
		t.Fatalf("the desired state runs release %d of the service, want 2", got)
	}
	stage(t, side, d2.ID, model.StageStarting)
	before := desiredRevision(t, side)
	stage(t, side, d2.ID, model.StageFailed)
	if got := deployment(t, s, s.Admin, d2.ID).Stage; got != model.StageFailed {
		t.Fatalf("the second deployment after FAILED: %s", got)
	}
	if got := runningRelease(t, side, s.Svc.ID); got != 1 {
		t.Fatalf("after the failed rollout the desired state runs release %d, want 1", got)
	}
	// The cluster's agent hears of it: a new revision.
	failedAt := desiredRevision(t, side)
	if failedAt <= before {
		t.Fatalf("the desired revision after a failed rollout: %d, want past %d", failedAt, before)
	}

	// A deployment waiting for approval is not delivered: no agent moves it.
	prot, name := true, "prod-eu"
	protected, err := s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &name, Protected: &prot})
	if err != nil {
		t.Fatal(err)
	}
	_, waiting, err := s.P.Delivery.Deploy(s.Admin, s.Svc.ID, protected.ID, controltest.Digest(3))
	if err != nil {
		t.Fatal(err)
	}
	rev := desiredRevision(t, side)
	for _, st := range []model.DeploymentStage{model.StageStarting, model.StageSucceeded, model.StageFailed} {
		stage(t, side, waiting.ID, st)
	}
	if got := deployment(t, s, s.Admin, waiting.ID); got.Stage != model.StageAwaitingApproval || got.LastSeq != waiting.LastSeq {
		t.Fatalf("a deployment awaiting approval after agent reports: %s", got.Stage)
	}
	if got := desiredRevision(t, side); got != rev {
		t.Fatalf("refused reports moved the desired revision from %d to %d", rev, got)
	}
}

func desiredRevision(t *testing.T, side *agents.AgentSide) int64 {
	t.Helper()
	rev, err := side.DesiredRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// runningRelease is the release number of the service in the cluster's
// desired state (0: not there).
func runningRelease(t *testing.T, side *agents.AgentSide, svc model.ServiceID) int {
	t.Helper()
	_, st, err := side.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range st.Namespaces {
		for _, sv := range ns.Services {
			if sv.ID == svc {
				return sv.Release
			}
		}
	}
	return 0
}

// A build is its cluster's agent's: another cluster's agent, or another
// tenant's, is not handed it and its reports of it change nothing. Its own
// agent's lines are stored once, redacted, without gaps, and its success
// gives the release its image and sends the deployment on.
func TestBuildReportsOfAnotherClusterRefused(t *testing.T) {
	s := controltest.Sealed(t)
	_, eu2Secret, _ := twoClusters(t, s)
	const credential = "ghp_TheDeployTokenOfShopAPI0123456789"
	cred := credential
	image := "registry.nebula-build.svc:5000/shop/builder"
	git, err := s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: "builder", Image: &image,
		Processes: []model.Process{{Name: "web", Command: []string{"/web"}, Replicas: 1}},
		Git:       &delivery.GitInput{Repository: "https://github.com/acme/shop-api.git", Branch: "main", Credential: &cred}})
	if err != nil {
		t.Fatal(err)
	}
	eu1, _ := connect(t, s, s.Cluster)
	side2 := authenticate(t, s, eu2Secret)
	hello(t, side2)
	other := newOutsider(t, s)
	outside := authenticate(t, s, other.secret)
	hello(t, outside)

	rel, dep, err := s.P.Delivery.DeployCommit(s.Admin, git.ID, s.Env.ID, strings.Repeat("c", 40))
	if err != nil {
		t.Fatal(err)
	}
	if dep.Stage != model.StageBuilding || dep.ClusterID != s.Cluster.ID {
		t.Fatalf("a deploy of a commit: %s on %s, want BUILDING on eu-1", dep.Stage, dep.ClusterID)
	}
	if _, err := s.P.RunJobsOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := s.P.Builds.BuildOf(s.Admin, dep)
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != model.BuildRunning {
		t.Fatalf("the build after the scheduler ran: %s, want RUNNING", b.Status)
	}
	jobs := func(side *agents.AgentSide) []agents.BuildJob {
		t.Helper()
		js, err := side.Builds(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	if js := jobs(eu1); len(js) != 1 || js[0].ID != b.ID || js[0].Credential != credential || js[0].LogFrom != 0 {
		t.Fatalf("eu-1's agent gets builds %+v, want its build with the credential", js)
	}
	for what, side := range map[string]*agents.AgentSide{"eu-2": side2, "another tenant's": outside} {
		if js := jobs(side); len(js) != 0 {
			t.Errorf("%s agent gets builds %+v", what, js)
		}
		stored, err := side.BuildReport(context.Background(), agents.BuildReport{ID: b.ID, Succeeded: true, Digest: controltest.Digest(4),
			Lines: []agents.LogLine{{At: time.Now(), Text: "pushed by " + what}}})
		if err != nil || stored != 0 {
			t.Errorf("%s agent's report of eu-1's build: %d lines stored (%v), want 0", what, stored, err)
		}
	}
	if got, err := s.P.Builds.Build(s.Admin, b.ID); err != nil || got.Status != model.BuildRunning || got.LogLines != 0 || got.ImageDigest != "" {
		t.Fatalf("reports of other agents changed the build: %+v (%v)", got, err)
	}
	if got := deployment(t, s, s.Admin, dep.ID).Stage; got != model.StageBuilding {
		t.Fatalf("reports of other agents moved the deployment to %s", got)
	}

	report := func(r agents.BuildReport) int64 {
		t.Helper()
		r.ID = b.ID
		stored, err := eu1.BuildReport(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return stored
	}
	line := func(texts ...string) []agents.LogLine {
		var out []agents.LogLine
		for _, x := range texts {
			out = append(out, agents.LogLine{At: time.Now(), Text: x})
		}
		return out
	}
	if n := report(agents.BuildReport{Running: true, Lines: line("#1 clone", "#2 using "+credential)}); n != 2 {
		t.Fatalf("%d lines stored, want 2", n)
	}
	// Sent again after a reconnect, with one more: stored once.
	if n := report(agents.BuildReport{Running: true, Lines: line("#1 clone", "#2 using "+credential, "#3 build")}); n != 3 {
		t.Fatalf("after a resend %d lines stored, want 3", n)
	}
	if _, err := eu1.BuildReport(context.Background(), agents.BuildReport{ID: b.ID, From: 5, Running: true, Lines: line("#6 lost")}); !errors.Is(err, agents.ErrBuildLogGap) {
		t.Fatalf("a report after a gap: %v, want ErrBuildLogGap", err)
	}
	if n := report(agents.BuildReport{From: 3, Succeeded: true, Digest: controltest.Digest(5), Lines: line("#4 pushed")}); n != 4 {
		t.Fatalf("%d lines stored with the success, want 4", n)
	}
	b, err = s.P.Builds.Build(s.Admin, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	logLines, err := s.P.Builds.BuildLog(s.Admin, b, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, l := range logLines {
		texts = append(texts, l.Line)
	}
	if want := []string{"#1 clone", "#2 using " + agents.Redacted, "#3 build", "#4 pushed"}; !slices.Equal(texts, want) {
		t.Errorf("the build's log: %q, want %q", texts, want)
	}
	if b.Status != model.BuildSucceeded || b.ImageDigest != controltest.Digest(5) {
		t.Errorf("the build after its success: %s %q", b.Status, b.ImageDigest)
	}
	if r, err := s.P.Delivery.Release(s.Admin, rel.ID); err != nil || r.ImageDigest != controltest.Digest(5) {
		t.Errorf("the release after the build: %+v (%v), want digest %s", r, err, controltest.Digest(5))
	}
	if got := deployment(t, s, s.Admin, dep.ID).Stage; got != model.StageDelivering {
		t.Errorf("the deployment after the build: %s, want DELIVERING", got)
	}
	// A report after the end is late: nothing more is stored.
	if n := report(agents.BuildReport{From: 4, Failed: true, Message: "late", Lines: line("#5 late")}); n != 4 {
		t.Errorf("a report after the end: %d lines, want the 4 stored", n)
	}
	if b, _ := s.P.Builds.Build(s.Admin, b.ID); b.Status != model.BuildSucceeded {
		t.Errorf("a failure reported after the success made the build %s", b.Status)
	}
}

// canary is a secret value of the shop's service, for the tests of what
// the agent reports.
const canary = "pa55-Very-Secret-Canary-7d1f9"

// withSecret is a sealed shop whose service has a secret variable, deployed
// to its cluster, with its connected agent's side and connect token.
func withSecret(t *testing.T) (*controltest.Shop, *agents.AgentSide, string) {
	t.Helper()
	s := controltest.Sealed(t)
	if _, err := s.P.Delivery.SetVariable(s.Admin, delivery.SetVariableInput{Project: s.Project.ID, Service: &s.Svc.ID,
		VariableInput: delivery.VariableInput{Name: "API_KEY", Value: canary, Secret: true}}); err != nil {
		t.Fatal(err)
	}
	side, secret := connect(t, s, s.Cluster)
	s.Deploy(t, 1)
	return s, side, secret
}

// noCanary fails the test if what is stored holds the canary in any form.
func noCanary(t *testing.T, what string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)),
		base64.RawURLEncoding.EncodeToString([]byte(canary)), hex.EncodeToString([]byte(canary))} {
		if strings.Contains(string(raw), form) {
			t.Errorf("%s holds the secret (%q): %s", what, form, raw)
		}
	}
}

func lineTexts(lines []model.LogLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Line)
	}
	return out
}

// Lines an agent sends for a service its cluster runs are stored with the
// service's secrets redacted, numbered in order, and read back by the
// tenant only; lines of services it does not run are dropped. Where each
// stream stopped tells a reconnecting agent where to go on, and what it
// sends again is not stored twice.
func TestLogs(t *testing.T) {
	s, side, secret := withSecret(t)
	ctx := context.Background()
	other := newOutsider(t, s)
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	web := func(pod string, stderr bool, from time.Time, texts ...string) agents.LogStreamIn {
		in := agents.LogStreamIn{Environment: s.Env.ID, Service: s.Svc.ID, Release: 1, Process: "web", Namespace: "shop-prod",
			Pod: pod, Container: "app", Stderr: stderr}
		for i, x := range texts {
			in.Lines = append(in.Lines, agents.LogLine{At: from.Add(time.Duration(i) * time.Second), Text: x})
		}
		return in
	}
	noRelease := web("api-web-1", false, at, "of release 7")
	noRelease.Release = 7
	notRun := web("api-web-1", false, at, "of a service the cluster does not run")
	notRun.Service, notRun.Environment = other.svc.ID, other.env.ID
	n, err := side.Logs(ctx, []agents.LogStreamIn{
		web("api-web-1", false, at, "starting", "key is "+canary, "split "+canary[:6]+"\x00"+canary[6:]),
		web("api-web-1", true, at.Add(10*time.Second), "warning: "+canary+" is weak"),
		noRelease, notRun,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("%d lines stored, want 4", n)
	}
	read := func(ctx context.Context, r agents.LogRead) []model.LogLine {
		t.Helper()
		r.Limit = 100
		lines, err := s.P.Agents.ServiceLogs(ctx, s.Svc.ID, s.Env.ID, r)
		if err != nil {
			t.Fatal(err)
		}
		return lines
	}
	lines := read(s.Admin, agents.LogRead{})
	want := []string{"starting", "key is " + agents.Redacted, "split " + agents.Redacted, "warning: " + agents.Redacted + " is weak"}
	if got := lineTexts(lines); !slices.Equal(got, want) {
		t.Fatalf("the service's log: %q, want %q", got, want)
	}
	for i, l := range lines {
		if l.Seq != int64(i+1) || l.ClusterID != s.Cluster.ID || l.Pod != "api-web-1" || l.TenantID != s.Boot.Tenant.ID {
			t.Errorf("line %d: %+v", i, l)
		}
	}
	if lines[3].Stream != model.LogStderr || lines[0].Stream != model.LogStdout || !lines[1].At.Equal(at.Add(time.Second)) {
		t.Errorf("streams and times: %+v", lines)
	}
	noCanary(t, "the stored log", lines)
	stderr := model.LogStderr
	if got := lineTexts(read(s.Admin, agents.LogRead{Stream: &stderr})); len(got) != 1 || !strings.HasPrefix(got[0], "warning") {
		t.Errorf("the log's stderr: %q", got)
	}

	// Another tenant reads nothing of it, and its agent writes nothing into it.
	if got, err := s.P.Agents.ServiceLogs(other.admin, s.Svc.ID, s.Env.ID, agents.LogRead{Limit: 100}); !core.IsNotFound(err) || len(got) != 0 {
		t.Errorf("another tenant's admin read %d lines (%v), want not found", len(got), err)
	}
	outside := authenticate(t, s, other.secret)
	if n, err := outside.Logs(ctx, []agents.LogStreamIn{web("api-web-1", false, at.Add(time.Hour), "planted")}); err != nil || n != 0 {
		t.Errorf("another tenant's agent stored %d lines (%v) into the shop's log", n, err)
	}

	// Where each stream stopped: the last stdout line of the pod sent,
	// nothing for a pod never sent or a service the cluster does not run.
	keys := []agents.LogStreamKey{
		{Environment: s.Env.ID, Service: s.Svc.ID, Pod: "api-web-1", Container: "app"},
		{Environment: s.Env.ID, Service: s.Svc.ID, Pod: "api-web-2", Container: "app"},
		{Environment: other.env.ID, Service: other.svc.ID, Pod: "api-web-1", Container: "app"},
	}
	pos, err := side.LogPositions(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(pos) != 3 || !pos[0].Equal(at.Add(2*time.Second)) || !pos[1].IsZero() || !pos[2].IsZero() {
		t.Fatalf("log positions: %v, want [%v zero zero]", pos, at.Add(2*time.Second))
	}
	if theirs, err := outside.LogPositions(ctx, keys); err != nil || !theirs[0].IsZero() {
		t.Errorf("another tenant's agent learns where the shop's stream stopped: %v (%v)", theirs, err)
	}

	// The agent reconnects and follows the container again from there
	// (the line at that time included, as Kubernetes gives it), with a
	// gap it noticed: only what is new is stored.
	again := authenticate(t, s, secret)
	resumed := web("api-web-1", false, pos[0], "split "+canary[:6]+"\x00"+canary[6:], "after the reconnect")
	older := web("api-web-1", false, at, "starting")
	n, err = again.Logs(ctx, []agents.LogStreamIn{older, resumed})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("a resend stored %d lines, want 1 (the new one)", n)
	}
	want = append(want, "after the reconnect")
	if got := lineTexts(read(s.Admin, agents.LogRead{})); !slices.Equal(got, want) {
		t.Fatalf("the log after the reconnect: %q, want %q", got, want)
	}
	gap := web("api-web-1", false, pos[0].Add(time.Minute), "after the gap")
	gap.Gap = "the log was rotated"
	if n, err := again.Logs(ctx, []agents.LogStreamIn{gap}); err != nil || n != 2 {
		t.Fatalf("a stream with a gap stored %d lines (%v), want the marker and the line", n, err)
	}
	lines = read(s.Admin, agents.LogRead{After: int64(len(want))})
	if len(lines) != 2 || lines[0].Stream != model.LogMarker || !strings.Contains(lines[0].Line, "the log was rotated") || lines[1].Line != "after the gap" {
		t.Fatalf("the lines after a gap: %+v", lines)
	}
	if got, err := again.LogPositions(ctx, keys[:1]); err != nil || !got[0].Equal(pos[0].Add(time.Minute)) {
		t.Fatalf("the position after more lines: %v (%v), want %v", got, err, pos[0].Add(time.Minute))
	}

	// The environment moves off the cluster: the cluster no longer runs
	// the service, its lines are dropped and its streams start afresh.
	if _, err := s.P.Clusters.SetClusterLabels(s.Admin, s.Cluster.ID, []model.Label{{Key: "site", Value: "eu-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.P.Delivery.UpdateEnvironment(s.Admin, s.Env.ID, delivery.EnvironmentInput{
		ClusterSelector: []model.Label{{Key: "site", Value: "us-1"}}}); err != nil {
		t.Fatal(err)
	}
	if got := runningRelease(t, again, s.Svc.ID); got != 0 {
		t.Fatalf("the cluster still runs release %d of the service after its environment moved", got)
	}
	if got, err := again.LogPositions(ctx, keys[:1]); err != nil || !got[0].IsZero() {
		t.Errorf("the position of a service the cluster no longer runs: %v (%v), want zero", got, err)
	}
	if n, err := again.Logs(ctx, []agents.LogStreamIn{web("api-web-1", false, time.Now(), "after the move")}); err != nil || n != 0 {
		t.Errorf("lines of a service the cluster no longer runs: %d stored (%v), want 0", n, err)
	}
	if got := lineTexts(read(s.Admin, agents.LogRead{})); len(got) != len(want)+2 {
		t.Errorf("the log after the move: %q", got)
	}
}

// Kubernetes events and drift an agent reports for what its cluster runs
// are stored redacted, once per occurrence, and read back by the tenant's
// admin; those of what it does not run are dropped; another tenant reads
// none.
func TestEventsAndDrift(t *testing.T) {
	s, side, _ := withSecret(t)
	ctx := context.Background()
	other := newOutsider(t, s)
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	backoff := agents.EventIn{UID: "u-backoff", Count: 1, Type: "Warning", Reason: "BackOff", Message: "pulling with " + canary,
		Namespace: "shop-prod", ObjectKind: "Pod", ObjectName: "api-web-1", Source: "kubelet", FirstAt: at, LastAt: at,
		Environment: s.Env.ID, Service: s.Svc.ID}
	quota := agents.EventIn{UID: "u-quota", Count: 1, Type: "Normal", Reason: "Quota", Message: "namespace quota set",
		Namespace: "shop-prod", ObjectKind: "Namespace", ObjectName: "shop-prod", Source: "quota", FirstAt: at, LastAt: at,
		Environment: s.Env.ID} // tied to no service
	foreign := backoff
	foreign.UID, foreign.Environment, foreign.Service = "u-foreign", other.env.ID, other.svc.ID
	if n, err := side.Events(ctx, []agents.EventIn{backoff, quota, foreign}); err != nil || n != 2 {
		t.Fatalf("events stored: %d (%v), want 2", n, err)
	}
	again := backoff
	again.Count, again.LastAt = 2, at.Add(30*time.Second)
	if n, err := side.Events(ctx, []agents.EventIn{backoff, quota, again}); err != nil || n != 1 {
		t.Fatalf("events stored when sent again with one more occurrence: %d (%v), want 1", n, err)
	}
	evs, err := s.P.Agents.KubeEvents(s.Admin, agents.EventRead{Cluster: s.Cluster.ID, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.UID+"#"+string(rune('0'+e.Count))+" "+e.Message)
	}
	wantEvents := []string{"u-backoff#2 pulling with " + agents.Redacted, "u-quota#1 namespace quota set", "u-backoff#1 pulling with " + agents.Redacted}
	if !slices.Equal(got, wantEvents) {
		t.Errorf("the cluster's events, newest first: %q, want %q", got, wantEvents)
	}
	noCanary(t, "the stored events", evs)
	ofService, err := s.P.Agents.KubeEvents(s.Admin, agents.EventRead{Environment: s.Env.ID, Service: s.Svc.ID, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(ofService) != 2 || ofService[0].UID != "u-backoff" || ofService[1].UID != "u-backoff" {
		t.Errorf("the service's events: %+v", ofService)
	}
	if evs, err := s.P.Agents.KubeEvents(other.admin, agents.EventRead{Cluster: s.Cluster.ID, Limit: 50}); err == nil || len(evs) != 0 {
		t.Errorf("another tenant's admin read %d of the cluster's events (%v)", len(evs), err)
	}
	if evs, err := s.P.Agents.KubeEvents(other.admin, agents.EventRead{Environment: s.Env.ID, Limit: 50}); err == nil || len(evs) != 0 {
		t.Errorf("another tenant's admin read %d of the environment's events (%v)", len(evs), err)
	}

	// Drift.
	if mark, err := s.P.Agents.ClusterDriftMark(s.Admin, s.Cluster.ID); err != nil || mark != 0 {
		t.Fatalf("the drift mark before any: %d (%v)", mark, err)
	}
	if err := side.Drift(ctx, agents.DriftIn{Kind: "Deployment", Namespace: "shop-prod", Name: "api-web",
		Fields: []string{"spec.replicas", "metadata.annotations.token-" + canary}, Managers: []string{"kubectl-edit"},
		Environment: other.env.ID, Service: other.svc.ID, At: at}); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.P.Agents.Drifts(s.Admin, s.Cluster.ID, "", "", store.PageArgs{First: 10}); err != nil || len(ds.Items) != 0 {
		t.Fatalf("a drift of what the cluster does not run was stored: %+v (%v)", ds, err)
	}
	if err := side.Drift(ctx, agents.DriftIn{Kind: "Deployment", Namespace: "shop-prod", Name: "api-web",
		Fields: []string{"spec.replicas", "metadata.annotations.token-" + canary}, Managers: []string{"kubectl-edit"},
		Environment: s.Env.ID, Service: s.Svc.ID, At: at}); err != nil {
		t.Fatal(err)
	}
	page, err := s.P.Agents.Drifts(s.Admin, s.Cluster.ID, "", "", store.PageArgs{First: 10})
	if err != nil {
		t.Fatal(err)
	}
	ds := page.Items
	if len(ds) != 1 || ds[0].Kind != "Deployment" || ds[0].Name != "api-web" || ds[0].ServiceID != s.Svc.ID ||
		!slices.Equal(ds[0].Fields, []string{"spec.replicas", "metadata.annotations.token-" + agents.Redacted}) ||
		!slices.Equal(ds[0].Managers, []string{"kubectl-edit"}) {
		t.Fatalf("the cluster's drifts: %+v", ds)
	}
	noCanary(t, "the stored drift", ds)
	if mark, err := s.P.Agents.ClusterDriftMark(s.Admin, s.Cluster.ID); err != nil || mark != ds[0].ID {
		t.Errorf("the drift mark: %d (%v), want %d", mark, err, ds[0].ID)
	}
	if of, err := s.P.Agents.Drifts(s.Admin, "", s.Env.ID, s.Svc.ID, store.PageArgs{First: 10}); err != nil || len(of.Items) != 1 || of.Items[0].ID != ds[0].ID {
		t.Errorf("the service's drifts: %+v (%v)", of, err)
	}
	if of, err := s.P.Agents.Drifts(other.admin, s.Cluster.ID, "", "", store.PageArgs{First: 10}); err == nil || len(of.Items) != 0 {
		t.Errorf("another tenant's admin read %d drifts (%v)", len(of.Items), err)
	}
	if of, err := s.P.Agents.Drifts(other.admin, "", s.Env.ID, s.Svc.ID, store.PageArgs{First: 10}); err == nil || len(of.Items) != 0 {
		t.Errorf("another tenant's admin read %d of the service's drifts (%v)", len(of.Items), err)
	}
}

// A secret that moves no desired revision — another service's, not yet on
// the cluster, or one set on a running service whose compiled state does
// not change — is redacted from the logs of a session opened before it
// was set: the session rebuilds what it redacts when the tenant's secrets
// change, not only when its revision moves.
func TestLogsRedactSecretsSetDuringTheSession(t *testing.T) {
	s := controltest.Sealed(t)
	side, _ := connect(t, s, s.Cluster)
	s.Deploy(t, 1)
	ctx := context.Background()
	send := func(text string) {
		t.Helper()
		if _, err := side.Logs(ctx, []agents.LogStreamIn{{Environment: s.Env.ID, Service: s.Svc.ID, Release: 1, Pod: "p", Container: "c",
			Lines: []agents.LogLine{{At: time.Now(), Text: text}}}}); err != nil {
			t.Fatal(err)
		}
	}
	send("before any secret") // the session's list is built now
	img := "registry.example.com/shop/worker"
	if _, err := s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: "worker", Image: &img,
		Processes: []model.Process{{Name: "run", Command: []string{"/w"}, Replicas: 1}},
		Variables: []delivery.VariableInput{{Name: "DB_PASSWORD", Value: "worker-db-password-99", Secret: true}}}); err != nil {
		t.Fatal(err)
	}
	send("another service's secret worker-db-password-99")
	if _, err := s.P.Delivery.SetVariable(s.Admin, delivery.SetVariableInput{Project: s.Project.ID, Service: &s.Svc.ID,
		VariableInput: delivery.VariableInput{Name: "API_KEY", Value: "own-api-key-after-deploy", Secret: true}}); err != nil {
		t.Fatal(err)
	}
	send("its own secret own-api-key-after-deploy")
	lines, err := s.P.Agents.ServiceLogs(s.Admin, s.Svc.ID, s.Env.ID, agents.LogRead{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines stored, want 3", len(lines))
	}
	for _, l := range lines {
		for _, secret := range []string{"worker-db-password-99", "own-api-key-after-deploy"} {
			if strings.Contains(l.Line, secret) {
				t.Errorf("a line holds a secret set during the session: %q", l.Line)
			}
		}
	}
	if !strings.Contains(lines[0].Line+lines[1].Line+lines[2].Line, agents.Redacted) {
		t.Fatalf("no line was redacted: %+v", lines)
	}
}
