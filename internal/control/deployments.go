package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
)

// Deployment stages, as docs/graphql.md tells them:
//
//	QUEUED → (AWAITING_APPROVAL) → DELIVERING → STARTING → PROBING →
//	SWITCHING_TRAFFIC → RETIRING → SUCCEEDED
//
// or FAILED, ROLLED_BACK, SUPERSEDED, CANCELLED. The control plane moves a
// deployment up to DELIVERING (its release then becomes what the cluster
// should run); the cluster's agent reports the rest. Every move is an
// event numbered per deployment, which subscribers resume from.

// DefaultApprovalTTL is how long a deployment may wait for approval.
const DefaultApprovalTTL = 24 * time.Hour

// WithApprovals sets how long an approval may be waited for and whether a
// requester may approve their own deployment.
func WithApprovals(ttl time.Duration, allowSelf bool) Option {
	return func(p *Plane) { p.approvalTTL, p.allowSelfApproval = ttl, allowSelf }
}

// advance moves a deployment to a stage and records the event. Callers
// hold the tenant lock.
func (p *Plane) advance(ctx context.Context, q store.Querier, d *model.Deployment, stage model.DeploymentStage, blocker, msg string) error {
	now := p.now()
	d.Stage, d.Message, d.UpdatedAt = stage, msg, now
	d.Blocker = nil
	if blocker != "" {
		d.Blocker = &blocker
	}
	if stage != model.StageAwaitingApproval {
		d.ApprovalExpiresAt = nil
	}
	d.LastSeq++
	if err := store.UpdateDeploymentStage(ctx, q, d); err != nil {
		return err
	}
	if err := p.noteTx(ctx, q, bus.Deployment(string(d.ID)), bus.Environment(string(d.EnvironmentID))); err != nil {
		return err
	}
	return store.InsertDeploymentEvent(ctx, q, &model.DeploymentEvent{DeploymentID: d.ID, Seq: d.LastSeq,
		TenantID: d.TenantID, Stage: stage, Blocker: d.Blocker, Message: msg, CreatedAt: now})
}

// queue records a new deployment's first event, replaces the requests of
// the same service and environment still waiting, and starts it: to
// approval in a protected environment, to delivery otherwise.
func (p *Plane) queue(ctx context.Context, q store.Querier, d *model.Deployment, env *model.Environment, rel *model.Release, why string) error {
	if err := store.InsertDeploymentEvent(ctx, q, &model.DeploymentEvent{DeploymentID: d.ID, Seq: 1,
		TenantID: d.TenantID, Stage: model.StageQueued, Message: why, CreatedAt: d.CreatedAt}); err != nil {
		return err
	}
	d.LastSeq, d.Message = 1, why
	if err := store.UpdateDeploymentStage(ctx, q, d); err != nil {
		return err
	}
	if err := p.noteTx(ctx, q, bus.Deployment(string(d.ID)), bus.Environment(string(d.EnvironmentID))); err != nil {
		return err
	}
	open, err := store.OpenDeployments(ctx, q, d.ServiceID, d.EnvironmentID)
	if err != nil {
		return err
	}
	for _, o := range open {
		if o.ID == d.ID || (o.Stage != model.StageQueued && o.Stage != model.StageAwaitingApproval) {
			continue
		}
		if err := p.advance(ctx, q, o, model.StageSuperseded, "",
			fmt.Sprintf("superseded by the deployment of release %d, requested before this one was released", rel.Number)); err != nil {
			return err
		}
	}
	if env.Protected {
		exp := p.now().Add(p.approvalTTL)
		d.ApprovalExpiresAt = &exp
		return p.advance(ctx, q, d, model.StageAwaitingApproval, model.BlockerApproval,
			fmt.Sprintf("environment %s is protected: waiting for a project manager or tenant admin to approve release %d (until %s)",
				env.Name, rel.Number, exp.Format(time.RFC3339)))
	}
	return p.deliver(ctx, q, d, rel)
}

// deliver releases a deployment to its cluster: it becomes live (the
// recompile that follows puts its release into the cluster's desired
// state) and supersedes older deployments still rolling out.
func (p *Plane) deliver(ctx context.Context, q store.Querier, d *model.Deployment, rel *model.Release) error {
	open, err := store.OpenDeployments(ctx, q, d.ServiceID, d.EnvironmentID)
	if err != nil {
		return err
	}
	for _, o := range open {
		if o.ID == d.ID || o.ID > d.ID && o.Stage.Live() {
			continue
		}
		if err := p.advance(ctx, q, o, model.StageSuperseded, "",
			fmt.Sprintf("superseded by the deployment of release %d", rel.Number)); err != nil {
			return err
		}
	}
	c, err := store.Clusters.Get(ctx, q, d.ClusterID)
	if err != nil {
		return err
	}
	now := p.now()
	d.DeliveredAt = &now
	if c.Status(p.now(), p.disconnectedAfter) != model.ClusterConnected {
		return p.advance(ctx, q, d, model.StageDelivering, model.BlockerDelivery,
			fmt.Sprintf("release %d waits for cluster %s, whose agent is not connected", rel.Number, c.Name))
	}
	return p.advance(ctx, q, d, model.StageDelivering, "", fmt.Sprintf("delivering release %d to cluster %s", rel.Number, c.Name))
}

// deploymentFor reads a deployment with its environment and release, and
// checks the actor may act on it as perm says (deploying or approving).
func (p *Plane) deploymentFor(ctx context.Context, id model.DeploymentID, approve bool) (*model.Deployment, *model.Environment, error) {
	d, err := get(ctx, p, p.store.Q(), store.Deployments, id, authz.DeploymentRead)
	if err != nil {
		return nil, nil, err
	}
	env, err := store.Environments.Get(ctx, p.store.Q(), d.EnvironmentID)
	if err != nil {
		return nil, nil, err
	}
	perm := authz.DeploymentCreate
	switch {
	case approve:
		perm = authz.DeploymentApprove
	case env.Protected:
		perm = authz.DeploymentProtected
	}
	if err := p.authz.CheckCtx(ctx, perm, env.Scope()); err != nil {
		return nil, nil, err
	}
	return d, env, nil
}

func actorName(a *authz.Actor) string {
	if a.User != nil {
		return a.User.Email
	}
	return "the control plane"
}

// Decide approves or rejects a deployment awaiting approval, with a
// comment. Project managers and tenant admins decide; the requester may
// not decide on their own deployment unless the control plane allows it;
// an approval window that closed cannot be used.
func (p *Plane) Decide(ctx context.Context, id model.DeploymentID, decision model.ApprovalDecision, comment string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, env, err := p.deploymentFor(ctx, id, true)
	if err != nil {
		return nil, err
	}
	if len(comment) > 2000 {
		return nil, Invalid("a comment has at most 2000 characters", "input", "comment")
	}
	err = p.change(ctx, d.TenantID, func(q store.Querier, _ *model.Tenant, ev *model.AuditEvent) error {
		if d, err = store.Deployments.Get(ctx, q, id); err != nil {
			return err
		}
		if d.Stage != model.StageAwaitingApproval {
			return Problem{Code: CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the deployment is %s, not awaiting approval", d.Stage)}
		}
		if d.ApprovalExpiresAt != nil && !p.now().Before(*d.ApprovalExpiresAt) {
			return Problem{Code: CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the approval window closed at %s; deploy again to ask anew", d.ApprovalExpiresAt.Format(time.RFC3339))}
		}
		if !p.allowSelfApproval && a.User != nil && d.RequestedBy != nil && *d.RequestedBy == a.User.ID {
			return Problem{Code: CodeConflict, Field: []string{"input", "deploymentId"},
				Message: "you requested this deployment: another project manager or tenant admin must decide on it"}
		}
		rel, err := store.Releases.Get(ctx, q, d.ReleaseID)
		if err != nil {
			return err
		}
		ap := &model.Approval{ID: newID[model.ApprovalID](), TenantID: d.TenantID, DeploymentID: d.ID,
			Decision: decision, Comment: comment, CreatedAt: p.now()}
		if a.User != nil {
			uid := a.User.ID
			ap.UserID = &uid
		}
		if err := store.Approvals.Insert(ctx, q, ap); err != nil {
			return err
		}
		action := "deployment.approve"
		if decision == model.Rejected {
			action = "deployment.reject"
		}
		target(ev, action, "Deployment", string(d.ID))
		ev.Details["environmentId"], ev.Details["releaseNumber"] = string(env.ID), rel.Number
		if decision == model.Rejected {
			return p.advance(ctx, q, d, model.StageCancelled, "", fmt.Sprintf("rejected by %s: %s", actorName(a), orNone(comment)))
		}
		if err := p.noteTx(ctx, q, bus.Deployment(string(d.ID))); err != nil {
			return err
		}
		if err := store.InsertDeploymentEvent(ctx, q, &model.DeploymentEvent{DeploymentID: d.ID, Seq: d.LastSeq + 1,
			TenantID: d.TenantID, Stage: d.Stage, Message: fmt.Sprintf("approved by %s: %s", actorName(a), orNone(comment)),
			CreatedAt: p.now()}); err != nil {
			return err
		}
		d.LastSeq++
		return p.deliver(ctx, q, d, rel)
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func orNone(s string) string {
	if s == "" {
		return "(no comment)"
	}
	return s
}

// Cancel ends a deployment that has not ended. One already released is
// taken back: its cluster returns to the release that ran before.
func (p *Plane) Cancel(ctx context.Context, id model.DeploymentID, reason string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, _, err := p.deploymentFor(ctx, id, false)
	if err != nil {
		return nil, err
	}
	if len(reason) > 2000 {
		return nil, Invalid("a reason has at most 2000 characters", "input", "reason")
	}
	err = p.change(ctx, d.TenantID, func(q store.Querier, _ *model.Tenant, ev *model.AuditEvent) error {
		if d, err = store.Deployments.Get(ctx, q, id); err != nil {
			return err
		}
		if d.Stage.Terminal() {
			return Problem{Code: CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the deployment already ended: %s", d.Stage)}
		}
		target(ev, "deployment.cancel", "Deployment", string(d.ID))
		ev.Details["stage"] = string(d.Stage)
		return p.advance(ctx, q, d, model.StageCancelled, "", fmt.Sprintf("cancelled by %s: %s", actorName(a), orNone(reason)))
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Redeploy deploys a deployment's release again, as a new deployment.
func (p *Plane) Redeploy(ctx context.Context, id model.DeploymentID) (*model.Deployment, error) {
	d, _, err := p.deploymentFor(ctx, id, false)
	if err != nil {
		return nil, err
	}
	return p.deployRelease(ctx, d.ReleaseID, "deployment.redeploy", "redeploy of release %d requested by %s", "input", "deploymentId")
}

// Rollback deploys an earlier release of a service in an environment, by
// its number, as a new deployment.
func (p *Plane) Rollback(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID, number int) (*model.Deployment, error) {
	svc, err := get(ctx, p, p.store.Q(), store.Services, svcID, authz.ServiceRead)
	if err != nil {
		return nil, err
	}
	rel, err := store.ReleaseByNumber(ctx, p.store.Q(), svc.ID, envID, number)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Invalid(fmt.Sprintf("service %s has no release %d in this environment", svc.Name, number), "input", "releaseNumber")
	}
	if err != nil {
		return nil, err
	}
	return p.deployRelease(ctx, rel.ID, "deployment.rollback", "rollback to release %d requested by %s", "input", "releaseNumber")
}

// deployRelease queues a new deployment of an existing release, checked
// like deploy.
func (p *Plane) deployRelease(ctx context.Context, relID model.ReleaseID, action, why string, field ...string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := get(ctx, p, p.store.Q(), store.Releases, relID, authz.DeploymentRead)
	if err != nil {
		return nil, err
	}
	env, err := store.Environments.Get(ctx, p.store.Q(), rel.EnvironmentID)
	if err != nil {
		return nil, err
	}
	perm := authz.DeploymentCreate
	if env.Protected {
		perm = authz.DeploymentProtected
	}
	if err := p.authz.Check(ctx, a, perm, env.Scope()); err != nil {
		return nil, err
	}
	var dep *model.Deployment
	err = p.change(ctx, rel.TenantID, func(q store.Querier, _ *model.Tenant, ev *model.AuditEvent) error {
		clusters, targets, err := p.tenantTargets(ctx, q, rel.TenantID)
		if err != nil {
			return err
		}
		pl := place(env, clusters, targets)
		if pl.Cluster == nil {
			return Invalid(fmt.Sprintf("environment %s has no single target: %s", env.Name, pl.Reason), field...)
		}
		now := p.now()
		uid := a.User.ID
		dep = &model.Deployment{ID: newID[model.DeploymentID](), TenantID: rel.TenantID, ProjectID: rel.ProjectID,
			ServiceID: rel.ServiceID, EnvironmentID: rel.EnvironmentID, ReleaseID: rel.ID, ClusterID: pl.Cluster.ID,
			Stage: model.StageQueued, RequestedBy: &uid, CreatedAt: now, UpdatedAt: now}
		if err := store.Deployments.Insert(ctx, q, dep); err != nil {
			return err
		}
		target(ev, action, "Deployment", string(dep.ID))
		ev.Details["releaseId"], ev.Details["releaseNumber"], ev.Details["clusterId"] = string(rel.ID), rel.Number, string(pl.Cluster.ID)
		return p.queue(ctx, q, dep, env, rel, fmt.Sprintf(why, rel.Number, actorName(a)))
	})
	if err != nil {
		return nil, err
	}
	return dep, nil
}

// Log fields of refused stage reports.
const (
	logCluster    = "cluster_id"
	logDeployment = "deployment_id"
	logFrom       = "from"
	logTo         = "to"
	logReason     = "reason"
)

// AgentStage records a stage the cluster's agent reports for one of its
// deployments. Only a deployment released to this very cluster moves, and
// only as its rollout can from where it is (see agentMove): a report for
// another cluster's deployment, for one not delivered (awaiting approval,
// say), for one that ended, or going backwards is refused — logged, and
// nothing changes; the session goes on. A report of the stage the
// deployment is at changes nothing either (agents report again after
// reconnecting). A failure or a rollback takes the release out of the
// desired state: the cluster returns to the release that ran before.
func (p *Plane) AgentStage(ctx context.Context, cluster model.ClusterID, r *protocol.Stage) error {
	stage := model.DeploymentStage(r.Stage)
	d, err := store.Deployments.Get(ctx, p.store.Q(), model.DeploymentID(r.Deployment))
	if errors.Is(err, store.ErrNotFound) {
		p.refuseStage(ctx, cluster, r, "", "no such deployment")
		return nil
	}
	if err != nil {
		return err
	}
	if d.ClusterID != cluster {
		// Said in the log only: the agent learns nothing of other clusters.
		p.refuseStage(ctx, cluster, r, "", "the deployment is not this cluster's")
		return nil
	}
	if ok, why := agentMove(d, stage); !ok {
		if why != "" {
			p.refuseStage(ctx, cluster, r, d.Stage, why)
		}
		return nil
	}
	var refused string
	var from model.DeploymentStage
	err = p.system(ctx, d.TenantID, !stage.Live(), func(q store.Querier) error {
		if d, err = store.Deployments.Get(ctx, q, d.ID); err != nil {
			return err
		}
		ok, why := agentMove(d, stage) // it may have moved on meanwhile
		if !ok {
			refused, from = why, d.Stage
			return nil
		}
		return p.advance(ctx, q, d, stage, "", r.Message)
	})
	if err != nil {
		return err
	}
	if refused != "" {
		p.refuseStage(ctx, cluster, r, from, refused)
	}
	return nil
}

// refuseStage logs a stage report that changed nothing, and why. The
// report's message is the agent's and is not logged.
func (p *Plane) refuseStage(ctx context.Context, cluster model.ClusterID, r *protocol.Stage, from model.DeploymentStage, why string) {
	level := slog.LevelWarn
	if from != "" && (from.Terminal() || from.Live()) && model.DeploymentStage(r.Stage).FromAgent() {
		// A late report of a rollout this cluster ran (an agent that
		// reconnected or restarted tells what it saw again): refused, but
		// nothing suspicious.
		level = slog.LevelInfo
	}
	p.log.Log(ctx, level, "refused an agent's stage report", logCluster, cluster, logDeployment, r.Deployment,
		logFrom, string(from), logTo, r.Stage, logReason, why)
}

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

// system runs a change the control plane makes itself (agent reports,
// background jobs): under the tenant lock, recompiling when the change can
// alter desired state, publishing after the commit. fn writes its own
// audit events when it changes what people asked for.
func (p *Plane) system(ctx context.Context, tenant model.TenantID, recompile bool, fn func(q store.Querier) error) error {
	var bumped []Bumped
	return p.txThen(ctx, func(q store.Querier) error {
		bumped = nil
		if _, err := store.LockTenant(ctx, q, tenant); err != nil {
			return fmt.Errorf("locking tenant: %w", err)
		}
		if err := fn(q); err != nil {
			return err
		}
		if !recompile {
			return nil
		}
		var err error
		bumped, err = p.recompile(ctx, q, tenant)
		return err
	}, func() {
		if len(bumped) > 0 && p.pub != nil {
			p.pub.Published(bumped)
		}
	})
}

// DeploymentEvents reads a deployment's events after a sequence number.
func (p *Plane) DeploymentEvents(ctx context.Context, id model.DeploymentID, after int64, limit int) ([]*model.DeploymentEvent, error) {
	if _, err := get(ctx, p, p.store.Q(), store.Deployments, id, authz.DeploymentRead); err != nil {
		return nil, err
	}
	return store.DeploymentEventsAfter(ctx, p.store.Q(), id, after, limit)
}

// Approvals lists the decisions on a deployment, oldest first (ids are
// time-ordered).
func (p *Plane) Approvals(ctx context.Context, d *model.Deployment) ([]*model.Approval, error) {
	return store.ApprovalsOf(ctx, p.store.Q(), d.ID)
}
