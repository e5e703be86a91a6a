package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Decide approves or rejects a deployment awaiting approval, with a
// comment. Project managers and tenant admins decide; the requester may
// not decide on their own deployment unless the control plane allows it;
// an approval window that closed cannot be used.
func (p *Delivery) Decide(ctx context.Context, id model.DeploymentID, decision model.ApprovalDecision, comment string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, env, err := p.DeploymentFor(ctx, id, true)
	if err != nil {
		return nil, err
	}
	if len(comment) > 2000 {
		return nil, core.Invalid("a comment has at most 2000 characters", "input", "comment")
	}
	err = p.Change(ctx, d.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if d, err = store.Deployments.Get(ctx, q, id); err != nil {
			return err
		}
		if d.Stage != model.StageAwaitingApproval {
			return core.Problem{Code: core.CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the deployment is %s, not awaiting approval", d.Stage)}
		}
		if d.ApprovalExpiresAt != nil && !p.Now().Before(*d.ApprovalExpiresAt) {
			return core.Problem{Code: core.CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the approval window closed at %s; deploy again to ask anew", d.ApprovalExpiresAt.Format(time.RFC3339))}
		}
		if !p.Settings.AllowSelfApproval && a.User != nil && d.RequestedBy != nil && *d.RequestedBy == a.User.ID {
			return core.Problem{Code: core.CodeConflict, Field: []string{"input", "deploymentId"},
				Message: "you requested this deployment: another project manager or tenant admin must decide on it"}
		}
		rel, err := store.Releases.Get(ctx, q, d.ReleaseID)
		if err != nil {
			return err
		}
		ap := &model.Approval{ID: core.NewID[model.ApprovalID](), TenantID: d.TenantID, DeploymentID: d.ID,
			Decision: decision, Comment: comment, CreatedAt: p.Now()}
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
		core.Target(ev, action, "Deployment", string(d.ID))
		ev.Details["environmentId"], ev.Details["releaseNumber"] = string(env.ID), rel.Number
		if decision == model.Rejected {
			return p.Advance(ctx, q, d, model.StageCancelled, "", fmt.Sprintf("rejected by %s: %s", core.ActorName(a), core.OrNone(comment)))
		}
		if err := p.Note(ctx, q, bus.Deployment(string(d.ID))); err != nil {
			return err
		}
		if err := p.RecordEvent(ctx, q, d, &model.DeploymentEvent{DeploymentID: d.ID, Seq: d.LastSeq + 1,
			TenantID: d.TenantID, Stage: d.Stage, Message: fmt.Sprintf("approved by %s: %s", core.ActorName(a), core.OrNone(comment)),
			CreatedAt: p.Now()}); err != nil {
			return err
		}
		d.LastSeq++
		return p.Deliver(ctx, q, d, rel)
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Cancel ends a deployment that has not ended. One already released is
// taken back: its cluster returns to the release that ran before.
func (p *Delivery) Cancel(ctx context.Context, id model.DeploymentID, reason string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, _, err := p.DeploymentFor(ctx, id, false)
	if err != nil {
		return nil, err
	}
	if len(reason) > 2000 {
		return nil, core.Invalid("a reason has at most 2000 characters", "input", "reason")
	}
	err = p.Change(ctx, d.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if d, err = store.Deployments.Get(ctx, q, id); err != nil {
			return err
		}
		if d.Stage.Terminal() {
			return core.Problem{Code: core.CodeConflict, Field: []string{"input", "deploymentId"},
				Message: fmt.Sprintf("the deployment already ended: %s", d.Stage)}
		}
		core.Target(ev, ActDeploymentCancel, "Deployment", string(d.ID))
		ev.Details["stage"] = string(d.Stage)
		if d.Stage == model.StageBuilding {
			// Its build stops too: the agent deletes its Job.
			if err := p.Builder().CancelBuildOf(ctx, q, d, "its deployment was cancelled by "+core.ActorName(a)); err != nil {
				return err
			}
		}
		return p.Advance(ctx, q, d, model.StageCancelled, "", fmt.Sprintf("cancelled by %s: %s", core.ActorName(a), core.OrNone(reason)))
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Redeploy deploys a deployment's release again, as a new deployment.
func (p *Delivery) Redeploy(ctx context.Context, id model.DeploymentID) (*model.Deployment, error) {
	d, _, err := p.DeploymentFor(ctx, id, false)
	if err != nil {
		return nil, err
	}
	return p.deployRelease(ctx, d.ReleaseID, ActDeploymentRedeploy, "redeploy of release %d requested by %s", "input", "deploymentId")
}

// Rollback deploys an earlier release of a service in an environment, by
// its number, as a new deployment.
func (p *Delivery) Rollback(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID, number int) (*model.Deployment, error) {
	svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, svcID, authz.ServiceRead)
	if err != nil {
		return nil, err
	}
	rel, err := store.ReleaseByNumber(ctx, p.Querier(ctx), svc.ID, envID, number)
	if errors.Is(err, store.ErrNotFound) {
		return nil, core.Invalid(fmt.Sprintf("service %s has no release %d in this environment", svc.Name, number), "input", "releaseNumber")
	}
	if err != nil {
		return nil, err
	}
	return p.deployRelease(ctx, rel.ID, ActDeploymentRollback, "rollback to release %d requested by %s", "input", "releaseNumber")
}

// deployRelease queues a new deployment of an existing release, checked
// like deploy.
func (p *Delivery) deployRelease(ctx context.Context, relID model.ReleaseID, action core.Action, why string, field ...string) (*model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Releases, relID, authz.DeploymentRead)
	if err != nil {
		return nil, err
	}
	env, err := store.Environments.Get(ctx, p.Querier(ctx), rel.EnvironmentID)
	if err != nil {
		return nil, err
	}
	if err := p.Authorizer().Check(ctx, a, core.DeployPerm(env), env.Scope()); err != nil {
		return nil, err
	}
	if rel.ImageDigest == "" {
		return nil, core.Invalid(fmt.Sprintf("release %d has no image: its build did not succeed", rel.Number), field...)
	}
	var dep *model.Deployment
	err = p.Change(ctx, rel.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		dep, err = p.StartDeployment(ctx, q, ev, a, action, rel, env, why, field...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return dep, nil
}

// DeploymentEvents reads one page of a deployment's events, oldest first;
// pg's cursors are event numbers.
func (p *Delivery) DeploymentEvents(ctx context.Context, d *model.Deployment, pg store.PageArgs) (store.Page[model.DeploymentEvent], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.DeploymentRead, d.Scope()); err != nil {
		return store.Page[model.DeploymentEvent]{}, err
	}
	return store.DeploymentEventsPage(ctx, p.Querier(ctx), d.ID, pg)
}

// DeploymentAndEvents is DeploymentEvents with the deployment as it was
// read just before them (to authorize the read): its stage and last
// sequence tell a follower whether the events reach its end.
func (p *Delivery) DeploymentAndEvents(ctx context.Context, id model.DeploymentID, after int64, limit int) (*model.Deployment, []*model.DeploymentEvent, error) {
	d, evs, err := store.DeploymentAndEventsAfter(ctx, p.Querier(ctx), id, after, limit)
	if err != nil {
		return nil, nil, err
	}
	if err := p.Authorizer().CheckCtx(ctx, authz.DeploymentRead, d.Scope()); err != nil {
		return nil, nil, err
	}
	return d, evs, nil
}

// Approvals lists the decisions on a deployment, oldest first (ids are
// time-ordered).
func (p *Delivery) Approvals(ctx context.Context, d *model.Deployment) ([]*model.Approval, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.DeploymentRead, d.Scope()); err != nil {
		return nil, err
	}
	return store.ApprovalsOf(ctx, p.Querier(ctx), d.ID)
}

// ApprovalQueue lists a tenant's deployments waiting for an approval,
// ApprovalQueue pages a tenant's deployments awaiting an approval, oldest
// first: those of the projects the caller may read.
func (p *Delivery) ApprovalQueue(ctx context.Context, tenant model.TenantID, pg store.PageArgs) (store.Page[model.Deployment], error) {
	return p.tenantDeployments(ctx, tenant, pg, store.AwaitingApproval)
}

// DeploymentsUnderWay pages a tenant's deployments that have not ended,
// newest first: those of the projects the caller may read.
func (p *Delivery) DeploymentsUnderWay(ctx context.Context, tenant model.TenantID, pg store.PageArgs) (store.Page[model.Deployment], error) {
	return p.tenantDeployments(ctx, tenant, pg, store.UnderWay)
}

// tenantDeployments pages deployments of a tenant with read, of the
// projects the caller may read (every project for a tenant admin), so that
// a page is full whatever the caller may not see.
func (p *Delivery) tenantDeployments(ctx context.Context, tenant model.TenantID, pg store.PageArgs,
	read func(context.Context, store.Querier, model.TenantID, bool, []model.ProjectID, store.PageArgs) (store.Page[model.Deployment], error)) (store.Page[model.Deployment], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.Deployment]{}, err
	}
	if err := p.Authorizer().Check(ctx, a, authz.TenantRead, model.Scope{Tenant: tenant}); err != nil {
		return store.Page[model.Deployment]{}, err
	}
	all, projects, err := p.readableProjects(ctx, a, tenant)
	if err != nil {
		return store.Page[model.Deployment]{}, err
	}
	page, err := read(ctx, p.Querier(ctx), tenant, all, projects, pg)
	if err != nil {
		return page, err
	}
	// The grants decided the projects; each deployment is checked too,
	// as every read of one is.
	kept := page.Items[:0]
	for _, d := range page.Items {
		if p.Authorizer().Check(ctx, a, authz.DeploymentRead, d.Scope()) == nil {
			kept = append(kept, d)
		}
	}
	page.Items = kept
	return page, nil
}
