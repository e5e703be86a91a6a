package agents

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// AgentSide is the control plane as the agent of one cluster sees it: the
// hub opens one per session, from the session's connect token, and every
// method acts on that cluster only. Its subject is the cluster, not a
// person: it reads and writes what the cluster's agent reports and is
// sent, and nothing else. It takes no wire type; the hub translates the
// protocol at its edge.
type AgentSide struct {
	p       *Agents
	cluster model.ClusterID
	tenant  model.TenantID
	token   model.ConnectTokenID // empty when opened without a token (AgentSideOf)
	// logs are the services the cluster runs, for its log lines.
	logs logTargets
	// agent names the agent instance of the session (see Named).
	agent string
	// inventory is the hash of the inventory last stored and when, for
	// Report to write it only when it changed (see inventoryRewrite).
	inventory   [sha256.Size]byte
	inventoryAt time.Time
}

// inventoryRewrite is how long Report keeps an unchanged inventory without
// writing it again: a bound on how stale a write lost to an ambiguous
// error, or another session of the same cluster, leaves it.
const inventoryRewrite = 5 * time.Minute

// Named names the agent instance of the session (its pod's name, as its
// hello says) for the outcomes it reports. A name that is not a
// Kubernetes object name is kept as "unnamed agent": it is shown to people.
func (a *AgentSide) Named(name string) {
	if len(name) > 253 || !objectName.MatchString(name) {
		name = "unnamed agent"
	}
	a.agent = name
}

// objectName is a Kubernetes object name (RFC 1123 subdomain).
var objectName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Cluster is the cluster the side acts for.
func (a *AgentSide) Cluster() model.ClusterID { return a.cluster }

// Tenant is the cluster's tenant.
func (a *AgentSide) Tenant() model.TenantID { return a.tenant }

// Token is the connect token the session presented.
func (a *AgentSide) Token() model.ConnectTokenID { return a.token }

// ErrAgentUnauthorized: the connect token is unknown, revoked or past its
// grace window. Every case reads the same to the caller.
var ErrAgentUnauthorized = errors.New("invalid, expired or revoked connect token")

// AuthenticateAgent checks a connect token and opens the agent side of its
// cluster.
func (p *Agents) AuthenticateAgent(ctx context.Context, secret string) (*AgentSide, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	if !strings.HasPrefix(secret, core.ConnectTokenPrefix) || len(secret) > 200 {
		return nil, ErrAgentUnauthorized
	}
	tok, err := store.ConnectTokenByHash(ctx, p.Querier(ctx), core.HashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrAgentUnauthorized
	}
	if err != nil {
		return nil, err
	}
	if !p.ConnectTokenValid(tok) {
		return nil, ErrAgentUnauthorized
	}
	c, err := store.Clusters.Get(ctx, p.Querier(ctx), tok.ClusterID)
	if err != nil {
		return nil, err
	}
	if err := store.TouchConnectToken(ctx, p.Querier(ctx), tok.ID, p.Now()); err != nil {
		return nil, err
	}
	return &AgentSide{p: p, cluster: c.ID, tenant: c.TenantID, token: tok.ID}, nil
}

// AgentSideOf opens the agent side of a cluster without a connect token:
// for tests and benchmarks that play a cluster's agent without a session.
func (p *Agents) AgentSideOf(ctx context.Context, cluster model.ClusterID) (*AgentSide, error) {
	ctx = core.As(ctx, core.SystemAgent(cluster))
	c, err := store.Clusters.Get(ctx, p.Querier(ctx), cluster)
	if err != nil {
		return nil, err
	}
	return &AgentSide{p: p, cluster: c.ID, tenant: c.TenantID}, nil
}

// ConnectTokenValid tells whether a token is usable now.
func (p *Agents) ConnectTokenValid(t *model.ConnectToken) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || p.Now().Before(*t.ExpiresAt))
}

// TokenStillValid re-reads the session's token, for sessions checking that
// theirs has not been revoked or expired meanwhile. expires is when it
// expires (nil: never), for a session to notice that without a read.
func (a *AgentSide) TokenStillValid(ctx context.Context) (ok bool, expires *time.Time, err error) {
	t, err := store.ConnectTokens.Get(ctx, a.q(ctx), a.token)
	if err != nil {
		return false, nil, err
	}
	return a.p.ConnectTokenValid(t), t.ExpiresAt, nil
}

// TokenExpired tells whether a token that expires at expires has, by the
// plane's clock.
func (a *AgentSide) TokenExpired(expires *time.Time) bool {
	return expires != nil && !a.p.Now().Before(*expires)
}

// Report records a hello or heartbeat: the inventory as the agent sent it
// (JSON), the revision it has applied and the hash of that state, kept
// only when it is a hash (64 hex digits). The inventory is written when
// it differs from the one this session last wrote, or that one is
// inventoryRewrite old; the rest is written every time. One session's
// reports come one at a time.
func (a *AgentSide) Report(ctx context.Context, inventory []byte, applied int64, hash string) error {
	if !stateHash.MatchString(hash) {
		hash = ""
	}
	now := a.p.Now()
	sum := sha256.Sum256(inventory)
	var inv *string
	if sum != a.inventory || now.Sub(a.inventoryAt) >= inventoryRewrite {
		inv = new(string(inventory))
	}
	// With the reports of the replica's other sessions: see heartbeats.
	err := a.p.beats.record(ctx, a.q(ctx), store.Heartbeat{Cluster: a.cluster, At: now, Inventory: inv, Applied: applied, Hash: hash})
	if err != nil {
		a.inventory = [sha256.Size]byte{} // the write may or may not have happened
		return err
	}
	if inv != nil {
		a.inventory, a.inventoryAt = sum, now
	}
	return nil
}

// stateHash is a desired state's hash (desired.State.Hash).
var stateHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Connected tells the cluster's followers its agent connected, and the
// webhook endpoints when the cluster was not connected before.
func (a *AgentSide) Connected(ctx context.Context) {
	a.p.NotifyNow(ctx, []string{bus.Cluster(string(a.cluster))})
	err := a.p.InTx(a.as(ctx), func(q *core.Txn) error {
		c, err := store.Clusters.Get(ctx, q, a.cluster)
		if err != nil {
			return err
		}
		return a.p.EmitClusterStatus(ctx, q, c, true)
	})
	if err != nil && ctx.Err() == nil {
		a.p.Log().Warn("telling webhooks a cluster connected", "cluster", a.cluster, "error", err)
	}
}

// Applied is the outcome of applying a revision, as the agent reports it.
type Applied struct {
	Revision int64
	OK       bool
	Errors   []model.ObjectError
}

// Ack records the outcome of applying a revision.
func (a *AgentSide) Ack(ctx context.Context, r Applied) error {
	var failed *model.ApplyFailure
	if !r.OK {
		failed = &model.ApplyFailure{Revision: r.Revision, Errors: r.Errors}
	}
	if err := store.RecordAck(ctx, a.q(ctx), a.cluster, r.Revision, failed); err != nil {
		return err
	}
	agent := cmp.Or(a.agent, "unnamed agent")
	if err := store.RecordOutcome(ctx, a.q(ctx), a.cluster, store.RevisionOutcome{Revision: r.Revision, Agent: agent,
		Failed: !r.OK, Errors: r.Errors, At: a.p.Now()}); err != nil {
		return err
	}
	a.p.NotifyNow(ctx, []string{bus.Cluster(string(a.cluster))})
	return nil
}

// PendingCommands are what the cluster's agent has yet to acknowledge; the
// hub delivers them (again, after a reconnect).
func (a *AgentSide) PendingCommands(ctx context.Context) ([]*model.Command, error) {
	return store.PendingCommands(ctx, a.q(ctx), a.cluster)
}

// CommandDelivered records that a command went out on the session.
func (a *AgentSide) CommandDelivered(ctx context.Context, id model.CommandID) error {
	_, err := store.MarkCommand(ctx, a.q(ctx), a.cluster, id, model.CommandDelivered, "", a.p.Now())
	return err
}

// CommandDone is the agent's answer to a command.
type CommandDone struct {
	ID      model.CommandID
	Failed  bool
	Message string
}

// CommandAck records the agent's answer to a command of its cluster; an
// ack for another cluster's command, or a second ack, changes nothing.
func (a *AgentSide) CommandAck(ctx context.Context, r CommandDone) error {
	status := model.CommandApplied
	if r.Failed {
		status = model.CommandFailed
	}
	_, err := store.MarkCommand(ctx, a.q(ctx), a.cluster, r.ID, status, r.Message, a.p.Now())
	return err
}

// StageReport is a stage the agent reports for a deployment.
type StageReport struct {
	Deployment model.DeploymentID
	Stage      model.DeploymentStage
	Message    string
}

// Stage records a stage the cluster's agent reports for one of its
// deployments. Only a deployment released to this very cluster moves, and
// only as its rollout can from where it is (see agentMove): a report for
// another cluster's deployment, for one not delivered (awaiting approval,
// say), for one that ended, or going backwards is refused — logged, and
// nothing changes; the session goes on. A report of the stage the
// deployment is at changes nothing either (agents report again after
// reconnecting). A failure or a rollback takes the release out of the
// desired state: the cluster returns to the release that ran before.
func (a *AgentSide) Stage(ctx context.Context, r StageReport) error {
	p := a.p
	// The deployment is read once, holding the tenant's lock: one of this
	// cluster's is of the session's tenant, and any other is refused
	// without a change.
	var refused string
	var from model.DeploymentStage
	err := p.SystemChange(a.as(ctx), a.tenant, false, func(q *core.Txn) error {
		d, err := store.Deployments.Get(ctx, q, r.Deployment)
		if errors.Is(err, store.ErrNotFound) {
			refused = "no such deployment"
			return nil
		}
		if err != nil {
			return err
		}
		if d.ClusterID != a.cluster {
			// Said in the log only: the agent learns nothing of other clusters.
			refused = "the deployment is not this cluster's"
			return nil
		}
		ok, why := agentMove(d, r.Stage)
		if !ok {
			refused, from = why, d.Stage
			return nil
		}
		if err := p.Advance(ctx, q, d, r.Stage, "", r.Message); err != nil {
			return err
		}
		if r.Stage.Live() {
			return nil
		}
		// The release leaves the desired state: a change to what runs,
		// audited as the cluster's agent's (its message is in the
		// deployment's events).
		ev := a.auditEvent(ActRolloutEnded, "Deployment", string(d.ID))
		ev.Details["stage"], ev.Details["releaseId"] = string(r.Stage), string(d.ReleaseID)
		if err := q.Audited(ctx, ev); err != nil {
			return err
		}
		return p.Recompile(ctx, q, a.tenant)
	})
	if err != nil {
		return err
	}
	if refused != "" {
		a.refuseStage(ctx, r, from, refused)
	}
	return nil
}

// auditEvent is an audit event of a change the cluster's agent caused: no
// user acts, and the client is the cluster's agent.
func (a *AgentSide) auditEvent(act core.Action, typ, id string) *model.AuditEvent {
	ev := &core.Audit{AuditEvent: &model.AuditEvent{TenantID: a.tenant, ClientAddress: "agent of cluster " + string(a.cluster),
		CreatedAt: a.p.Now(), Details: map[string]any{"clusterId": string(a.cluster)}}}
	core.Target(ev, act, typ, id)
	return ev.AuditEvent
}

// refuseStage logs a stage report that changed nothing, and why. The
// report's message is the agent's and is not logged.
func (a *AgentSide) refuseStage(ctx context.Context, r StageReport, from model.DeploymentStage, why string) {
	level := slog.LevelWarn
	if from != "" && (from.Terminal() || from.Live()) && r.Stage.FromAgent() {
		// A late report of a rollout this cluster ran (an agent that
		// reconnected or restarted tells what it saw again): refused, but
		// nothing suspicious.
		level = slog.LevelInfo
	}
	a.p.Log().Log(ctx, level, "refused an agent's stage report", logCluster, a.cluster, logDeployment, string(r.Deployment),
		logFrom, string(from), logTo, string(r.Stage), logReason, why)
}

// Log fields of refused stage reports.
const (
	logCluster    = "cluster_id"
	logDeployment = "deployment_id"
	logFrom       = "from"
	logTo         = "to"
	logReason     = "reason"
)

// agentMove tells whether an agent's report of stage moves the deployment,
// as a rollout on its cluster can: it must have been delivered (approved
// where needed) and not have ended; from there any later rollout stage
// (reports lost to a reconnect skip stages), FAILED or ROLLED_BACK, or the
// same stage when it carries a blocker (the agent is back, or progressing
// again). Never backwards. When the report does not move it, why says
// what refuses it; why is empty for a repeat of where the deployment is,
// which agents send after reconnecting and which is no refusal.
func agentMove(d *model.Deployment, stage model.DeploymentStage) (ok bool, why string) {
	switch {
	case !stage.FromAgent():
		return false, fmt.Sprintf("%s is not a stage an agent reports", stage)
	case d.Stage == stage && (d.Stage.Terminal() || d.Blocker == nil):
		return false, ""
	case d.Stage.Terminal():
		return false, fmt.Sprintf("the deployment already ended %s", d.Stage)
	case d.DeliveredAt == nil || !d.Stage.Live():
		return false, fmt.Sprintf("the deployment was not delivered to the cluster: it is %s", d.Stage)
	case d.Stage == stage, stage == model.StageFailed, stage == model.StageRolledBack:
		return true, ""
	case stage.Rank() > d.Stage.Rank():
		return true, ""
	default:
		return false, fmt.Sprintf("the rollout is past %s", stage)
	}
}

// DesiredRevision is the cluster's desired revision now.
func (a *AgentSide) DesiredRevision(ctx context.Context) (int64, error) {
	cl, err := store.Clusters.Get(ctx, a.q(ctx), a.cluster)
	if err != nil {
		return 0, err
	}
	return cl.DesiredRevision, nil
}

// Snapshot reads the tenant of the side's cluster for a delivery, in one
// read-only transaction: the state compiled from it is the one its
// revision names. A read-only snapshot takes no write lock, so a thousand
// sessions catching up at once never queue behind each other or behind
// mutations.
func (a *AgentSide) Snapshot(ctx context.Context) (*core.Snapshot, error) {
	snap, err := a.p.AgentSnapshot(a.as(ctx), a.cluster, a.tenant)
	if err != nil {
		return nil, err
	}
	if _, ok := snap.Revision(a.cluster); !ok {
		return nil, fmt.Errorf("cluster %s: %w", a.cluster, store.ErrNotFound)
	}
	return snap, nil
}

// State compiles the cluster's state as its agent gets it, secrets opened,
// from a snapshot read now: for delivery to that cluster only, never for
// showing. The hub's sessions read it through the hub's cache instead.
func (a *AgentSide) State(ctx context.Context) (int64, *desired.State, error) {
	snap, err := a.Snapshot(ctx)
	if err != nil {
		return 0, nil, err
	}
	rev, st, _ := snap.State(a.cluster) // Snapshot made sure it holds the cluster
	return rev, st, nil
}

// as gives the calls of an agent side its subject: the agent of its
// cluster.
func (a *AgentSide) as(ctx context.Context) context.Context {
	return core.As(ctx, core.SystemAgent(a.cluster))
}

// q is an agent side's querier.
func (a *AgentSide) q(ctx context.Context) store.Querier { return a.p.Querier(a.as(ctx)) }
