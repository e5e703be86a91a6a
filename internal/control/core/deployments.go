package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
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

// advance moves a deployment to a stage and records the event. Callers
// hold the tenant lock.
func (p *Plane) Advance(ctx context.Context, q *Txn, d *model.Deployment, stage model.DeploymentStage, blocker, msg string) error {
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
	if err := p.Note(ctx, q, bus.Deployment(string(d.ID)), bus.Environment(string(d.EnvironmentID))); err != nil {
		return err
	}
	if err := p.recordEvent(ctx, q, d, &model.DeploymentEvent{DeploymentID: d.ID, Seq: d.LastSeq,
		TenantID: d.TenantID, Stage: stage, Blocker: d.Blocker, Message: msg, CreatedAt: now}); err != nil {
		return err
	}
	return p.EmitStage(ctx, q, d)
}

// queue records a new deployment's first event, replaces the requests of
// the same service and environment still waiting, and starts it: to
// approval in a protected environment, to delivery otherwise.
func (p *Plane) queue(ctx context.Context, q *Txn, d *model.Deployment, env *model.Environment, rel *model.Release, why string) error {
	if err := p.RecordQueued(ctx, q, d, why); err != nil {
		return err
	}
	return p.Proceed(ctx, q, d, env, rel)
}

// recordQueued records a new deployment's first event.
func (p *Plane) RecordQueued(ctx context.Context, q *Txn, d *model.Deployment, why string) error {
	if err := p.recordEvent(ctx, q, d, &model.DeploymentEvent{DeploymentID: d.ID, Seq: 1,
		TenantID: d.TenantID, Stage: model.StageQueued, Message: why, CreatedAt: d.CreatedAt}); err != nil {
		return err
	}
	d.LastSeq, d.Message = 1, why
	if err := store.UpdateDeploymentStage(ctx, q, d); err != nil {
		return err
	}
	if err := p.EmitStage(ctx, q, d); err != nil {
		return err
	}
	return p.Note(ctx, q, bus.Deployment(string(d.ID)), bus.Environment(string(d.EnvironmentID)))
}

// proceed starts a deployment whose release is ready (at once, or once
// its build made the image): it replaces the requests of the same service
// and environment still waiting, then goes to approval in a protected
// environment, to delivery otherwise.
func (p *Plane) Proceed(ctx context.Context, q *Txn, d *model.Deployment, env *model.Environment, rel *model.Release) error {
	open, err := store.OpenDeployments(ctx, q, d.ServiceID, d.EnvironmentID)
	if err != nil {
		return err
	}
	for _, o := range open {
		if o.ID == d.ID || (o.Stage != model.StageQueued && o.Stage != model.StageAwaitingApproval) {
			continue
		}
		if err := p.Advance(ctx, q, o, model.StageSuperseded, "",
			fmt.Sprintf("superseded by the deployment of release %d, requested before this one was released", rel.Number)); err != nil {
			return err
		}
	}
	if env.Protected {
		exp := p.now().Add(p.Settings.ApprovalTTL)
		d.ApprovalExpiresAt = &exp
		return p.Advance(ctx, q, d, model.StageAwaitingApproval, model.BlockerApproval,
			fmt.Sprintf("environment %s is protected: waiting for a project manager or tenant admin to approve release %d (until %s)",
				env.Name, rel.Number, exp.Format(time.RFC3339)))
	}
	return p.deliver(ctx, q, d, rel)
}

// deliver releases a deployment to its cluster: it becomes live (the
// recompile that follows puts its release into the cluster's desired
// state) and supersedes older deployments still rolling out.
func (p *Plane) deliver(ctx context.Context, q *Txn, d *model.Deployment, rel *model.Release) error {
	open, err := store.OpenDeployments(ctx, q, d.ServiceID, d.EnvironmentID)
	if err != nil {
		return err
	}
	for _, o := range open {
		if o.ID == d.ID || o.ID > d.ID && o.Stage.Live() {
			continue
		}
		if err := p.Advance(ctx, q, o, model.StageSuperseded, "",
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
	if c.Status(p.now(), p.Settings.DisconnectedAfter) != model.ClusterConnected {
		return p.Advance(ctx, q, d, model.StageDelivering, model.BlockerDelivery,
			fmt.Sprintf("release %d waits for cluster %s, whose agent is not connected", rel.Number, c.Name))
	}
	return p.Advance(ctx, q, d, model.StageDelivering, "", fmt.Sprintf("delivering release %d to cluster %s", rel.Number, c.Name))
}

// deploymentFor reads a deployment with its environment and release, and
// checks the actor may act on it as perm says (deploying or approving).
func (p *Plane) deploymentFor(ctx context.Context, id model.DeploymentID, approve bool) (*model.Deployment, *model.Environment, error) {
	d, err := Get(ctx, p, p.Querier(ctx), store.Deployments, id, authz.DeploymentRead)
	if err != nil {
		return nil, nil, err
	}
	env, err := store.Environments.Get(ctx, p.Querier(ctx), d.EnvironmentID)
	if err != nil {
		return nil, nil, err
	}
	perm := DeployPerm(env)
	if approve {
		perm = authz.DeploymentApprove
	}
	if err := p.authz.CheckCtx(ctx, perm, env.Scope()); err != nil {
		return nil, nil, err
	}
	return d, env, nil
}

func ActorName(a *authz.Actor) string {
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
	err = p.Change(ctx, d.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
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
		if !p.Settings.AllowSelfApproval && a.User != nil && d.RequestedBy != nil && *d.RequestedBy == a.User.ID {
			return Problem{Code: CodeConflict, Field: []string{"input", "deploymentId"},
				Message: "you requested this deployment: another project manager or tenant admin must decide on it"}
		}
		rel, err := store.Releases.Get(ctx, q, d.ReleaseID)
		if err != nil {
			return err
		}
		ap := &model.Approval{ID: NewID[model.ApprovalID](), TenantID: d.TenantID, DeploymentID: d.ID,
			Decision: decision, Comment: comment, CreatedAt: p.now()}
		if a.User != nil {
			uid := a.User.ID
			ap.UserID = &uid
		}
		if err := store.Approvals.Insert(ctx, q, ap); err != nil {
			return err
		}
		action := ActDeploymentApprove
		if decision == model.Rejected {
			action = ActDeploymentReject
		}
		Target(ev, action, "Deployment", string(d.ID))
		ev.Details["environmentId"], ev.Details["releaseNumber"] = string(env.ID), rel.Number
		if decision == model.Rejected {
			return p.Advance(ctx, q, d, model.StageCancelled, "", fmt.Sprintf("rejected by %s: %s", ActorName(a), OrNone(comment)))
		}
		if err := p.Note(ctx, q, bus.Deployment(string(d.ID))); err != nil {
			return err
		}
		if err := p.recordEvent(ctx, q, d, &model.DeploymentEvent{DeploymentID: d.ID, Seq: d.LastSeq + 1,
			TenantID: d.TenantID, Stage: d.Stage, Message: fmt.Sprintf("approved by %s: %s", ActorName(a), OrNone(comment)),
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

func OrNone(s string) string {
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
	err = p.Change(ctx, d.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		if d, err = store.Deployments.Get(ctx, q, id); err != nil {
			return err
		}
		if d.Stage.Terminal() {
			return Problem{Code: CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the deployment already ended: %s", d.Stage)}
		}
		Target(ev, ActDeploymentCancel, "Deployment", string(d.ID))
		ev.Details["stage"] = string(d.Stage)
		if d.Stage == model.StageBuilding {
			// Its build stops too: the agent deletes its Job.
			if err := p.CancelBuildOf(ctx, q, d, "its deployment was cancelled by "+ActorName(a)); err != nil {
				return err
			}
		}
		return p.Advance(ctx, q, d, model.StageCancelled, "", fmt.Sprintf("cancelled by %s: %s", ActorName(a), OrNone(reason)))
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
	return p.deployRelease(ctx, d.ReleaseID, ActDeploymentRedeploy, "redeploy of release %d requested by %s", "input", "deploymentId")
}

// Rollback deploys an earlier release of a service in an environment, by
// its number, as a new deployment.
func (p *Plane) Rollback(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID, number int) (*model.Deployment, error) {
	svc, err := Get(ctx, p, p.Querier(ctx), store.Services, svcID, authz.ServiceRead)
	if err != nil {
		return nil, err
	}
	rel, err := store.ReleaseByNumber(ctx, p.Querier(ctx), svc.ID, envID, number)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Invalid(fmt.Sprintf("service %s has no release %d in this environment", svc.Name, number), "input", "releaseNumber")
	}
	if err != nil {
		return nil, err
	}
	return p.deployRelease(ctx, rel.ID, ActDeploymentRollback, "rollback to release %d requested by %s", "input", "releaseNumber")
}

// deployRelease queues a new deployment of an existing release, checked
// like deploy.
func (p *Plane) deployRelease(ctx context.Context, relID model.ReleaseID, action Action, why string, field ...string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := Get(ctx, p, p.Querier(ctx), store.Releases, relID, authz.DeploymentRead)
	if err != nil {
		return nil, err
	}
	env, err := store.Environments.Get(ctx, p.Querier(ctx), rel.EnvironmentID)
	if err != nil {
		return nil, err
	}
	if err := p.authz.Check(ctx, a, DeployPerm(env), env.Scope()); err != nil {
		return nil, err
	}
	if rel.ImageDigest == "" {
		return nil, Invalid(fmt.Sprintf("release %d has no image: its build did not succeed", rel.Number), field...)
	}
	var dep *model.Deployment
	err = p.Change(ctx, rel.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		dep, err = p.StartDeployment(ctx, q, ev, a, action, rel, env, why, field...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return dep, nil
}

// deployPerm is the capability deploying to env takes: seeing an
// environment is not permission to deploy to it, and a protected one takes
// more.
func DeployPerm(env *model.Environment) authz.Perm {
	if env.Protected {
		return authz.DeploymentProtected
	}
	return authz.DeploymentCreate
}

// startDeployment is what deploying a release takes, whether the release
// was just made (Deploy) or is deployed again (Redeploy, Rollback): the one
// cluster the environment's selector picks now, the deployment row, the
// audit event's target and details, and its first stages (queue). why is a
// format of the release number and the requester's name; field is where a
// placement problem is reported.
func (p *Plane) StartDeployment(ctx context.Context, q *Txn, ev *Audit, a *authz.Actor, action Action,
	rel *model.Release, env *model.Environment, why string, field ...string) (*model.Deployment, error) {
	clusters, targets, err := p.TenantTargets(ctx, q, rel.TenantID)
	if err != nil {
		return nil, err
	}
	pl := PlaceEnv(env, clusters, targets)
	if pl.Cluster == nil {
		what := "no single target"
		if len(pl.Candidates) == 0 {
			what = "no eligible cluster"
		}
		return nil, Invalid(fmt.Sprintf("environment %s has %s: %s", env.Name, what, pl.Reason), field...)
	}
	now := p.now()
	uid := a.User.ID
	dep := &model.Deployment{ID: NewID[model.DeploymentID](), TenantID: rel.TenantID, ProjectID: rel.ProjectID,
		ServiceID: rel.ServiceID, EnvironmentID: rel.EnvironmentID, ReleaseID: rel.ID, ClusterID: pl.Cluster.ID,
		Stage: model.StageQueued, RequestedBy: &uid, CreatedAt: now, UpdatedAt: now}
	if err := store.Deployments.Insert(ctx, q, dep); err != nil {
		return nil, err
	}
	Target(ev, action, "Deployment", string(dep.ID))
	ev.Details["releaseId"], ev.Details["releaseNumber"], ev.Details["clusterId"] = string(rel.ID), rel.Number, string(pl.Cluster.ID)
	return dep, p.queue(ctx, q, dep, env, rel, fmt.Sprintf(why, rel.Number, ActorName(a)))
}

// system runs a change the control plane makes itself (agent reports,
// background jobs): under the tenant lock, recompiling when the change can
// alter desired state, publishing after the commit. fn writes its own
// audit events when it changes what people asked for.
func (p *Plane) SystemChange(ctx context.Context, tenant model.TenantID, recompile bool, fn func(q *Txn) error) error {
	return p.InTx(ctx, func(q *Txn) error {
		if _, err := store.LockTenant(ctx, q, tenant); err != nil {
			return fmt.Errorf("locking tenant: %w", err)
		}
		if err := fn(q); err != nil {
			return err
		}
		if !recompile {
			return nil
		}
		return p.Recompile(ctx, q, tenant)
	})
}

// DeploymentEvents reads a deployment's events after a sequence number.
func (p *Plane) DeploymentEvents(ctx context.Context, id model.DeploymentID, after int64, limit int) ([]*model.DeploymentEvent, error) {
	_, evs, err := p.DeploymentAndEvents(ctx, id, after, limit)
	return evs, err
}

// DeploymentAndEvents is DeploymentEvents with the deployment as it was
// read just before them (to authorize the read): its stage and last
// sequence tell a follower whether the events reach its end.
func (p *Plane) DeploymentAndEvents(ctx context.Context, id model.DeploymentID, after int64, limit int) (*model.Deployment, []*model.DeploymentEvent, error) {
	d, evs, err := store.DeploymentAndEventsAfter(ctx, p.Querier(ctx), id, after, limit)
	if err != nil {
		return nil, nil, err
	}
	if err := p.authz.CheckCtx(ctx, authz.DeploymentRead, d.Scope()); err != nil {
		return nil, nil, err
	}
	return d, evs, nil
}

// Approvals lists the decisions on a deployment, oldest first (ids are
// time-ordered).
func (p *Plane) Approvals(ctx context.Context, d *model.Deployment) ([]*model.Approval, error) {
	if err := p.authz.CheckCtx(ctx, authz.DeploymentRead, d.Scope()); err != nil {
		return nil, err
	}
	return store.ApprovalsOf(ctx, p.Querier(ctx), d.ID)
}

// ApprovalQueue lists a tenant's deployments waiting for an approval,
// oldest first: those in projects the caller may read.
func (p *Plane) ApprovalQueue(ctx context.Context, tenant model.TenantID, limit int) ([]*model.Deployment, error) {
	return p.tenantDeployments(ctx, tenant, limit, store.AwaitingApproval)
}

// DeploymentsUnderWay lists a tenant's deployments that have not ended,
// newest first: those in projects the caller may read.
func (p *Plane) DeploymentsUnderWay(ctx context.Context, tenant model.TenantID, limit int) ([]*model.Deployment, error) {
	return p.tenantDeployments(ctx, tenant, limit, store.UnderWay)
}

// tenantDeployments reads deployments of a tenant with read, keeping
// those of the projects the caller may read.
func (p *Plane) tenantDeployments(ctx context.Context, tenant model.TenantID, limit int,
	read func(context.Context, store.Querier, model.TenantID, int) ([]*model.Deployment, error)) ([]*model.Deployment, error) {
	if err := p.authz.CheckCtx(ctx, authz.TenantRead, model.Scope{Tenant: tenant}); err != nil {
		return nil, err
	}
	if limit < 1 || limit > 200 {
		return nil, Invalid("first must be between 1 and 200", "first")
	}
	ds, err := read(ctx, p.Querier(ctx), tenant, limit)
	if err != nil {
		return nil, err
	}
	out := ds[:0]
	for _, d := range ds {
		if p.authz.CheckCtx(ctx, authz.DeploymentRead, d.Scope()) == nil {
			out = append(out, d)
		}
	}
	return out, nil
}
