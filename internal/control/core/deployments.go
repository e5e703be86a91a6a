package core

import (
	"context"
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

// Advance moves a deployment to a stage and records the event. Callers
// hold the tenant lock.
func (p *Plane) Advance(ctx context.Context, q *Txn, d *model.Deployment, stage model.DeploymentStage, blocker model.Blocker, msg string) error {
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
	if err := p.RecordEvent(ctx, q, d, &model.DeploymentEvent{DeploymentID: d.ID, Seq: d.LastSeq,
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

// RecordQueued records a new deployment's first event.
func (p *Plane) RecordQueued(ctx context.Context, q *Txn, d *model.Deployment, why string) error {
	if err := p.RecordEvent(ctx, q, d, &model.DeploymentEvent{DeploymentID: d.ID, Seq: 1,
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

// Proceed starts a deployment whose release is ready (at once, or once
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
	if env.Protected && q.approval == "" {
		exp := p.now().Add(p.Settings.ApprovalTTL)
		d.ApprovalExpiresAt = &exp
		return p.Advance(ctx, q, d, model.StageAwaitingApproval, model.BlockerApproval,
			fmt.Sprintf("environment %s is protected: waiting for a project manager or tenant admin to approve release %d (until %s)",
				env.Name, rel.Number, exp.Format(time.RFC3339)))
	}
	return p.deliver(ctx, q, d, rel, open)
}

// Deliver releases a deployment to its cluster: it becomes live (the
// recompile that follows puts its release into the cluster's desired
// state) and supersedes older deployments still rolling out.
func (p *Plane) Deliver(ctx context.Context, q *Txn, d *model.Deployment, rel *model.Release) error {
	open, err := store.OpenDeployments(ctx, q, d.ServiceID, d.EnvironmentID)
	if err != nil {
		return err
	}
	return p.deliver(ctx, q, d, rel, open)
}

// deliver is Deliver with the service's deployments that were open in
// this transaction already read (those it ended since are skipped).
func (p *Plane) deliver(ctx context.Context, q *Txn, d *model.Deployment, rel *model.Release, open []*model.Deployment) error {
	for _, o := range open {
		if o.ID == d.ID || o.ID > d.ID && o.Stage.Live() || o.Stage.Terminal() {
			continue
		}
		if err := p.Advance(ctx, q, o, model.StageSuperseded, "",
			fmt.Sprintf("superseded by the deployment of release %d", rel.Number)); err != nil {
			return err
		}
	}
	c, err := q.cluster(ctx, d.TenantID, d.ClusterID)
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

// DeploymentFor reads a deployment with its environment and release, and
// checks the actor may act on it as perm says (deploying or approving).
func (p *Plane) DeploymentFor(ctx context.Context, id model.DeploymentID, approve bool) (*model.Deployment, *model.Environment, error) {
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

func OrNone(s string) string {
	if s == "" {
		return "(no comment)"
	}
	return s
}

// DeployPerm is the capability deploying to env takes: seeing an
// environment is not permission to deploy to it, and a protected one takes
// more.
func DeployPerm(env *model.Environment) authz.Perm {
	if env.Protected {
		return authz.DeploymentProtected
	}
	return authz.DeploymentCreate
}

// StartDeployment is what deploying a release takes, whether the release
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
