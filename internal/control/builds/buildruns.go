package builds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/webhook"
)

// startBuild makes what a build of commit for one environment needs: the
// release it will fill in (the service's configuration frozen now, no
// image yet), its deployment waiting at BUILDING on the cluster the
// environment picks, and the build, queued. An older deployment of the
// service still building for the environment is superseded and its build
// cancelled: the newest push wins. Callers hold the tenant lock.
func (p *Builds) startBuild(ctx context.Context, q *core.Txn, s *model.Service, envID model.EnvironmentID, commit, why string,
	delivery *model.WebhookDeliveryID, by *model.UserID) (*model.Build, error) {
	env, err := store.Environments.Get(ctx, q, envID)
	if err != nil {
		return nil, err
	}
	clusters, targets, err := p.TenantTargets(ctx, q, s.TenantID)
	if err != nil {
		return nil, err
	}
	pl := core.PlaceEnv(env, clusters, targets)
	if pl.Cluster == nil {
		return nil, core.Invalid(fmt.Sprintf("environment %s has no single cluster to build on: %s", env.Name, pl.Reason))
	}
	num, err := store.NextReleaseNumber(ctx, q, s.ID, envID)
	if err != nil {
		return nil, err
	}
	now := p.Now()
	rel := &model.Release{ID: core.NewID[model.ReleaseID](), TenantID: s.TenantID, ProjectID: s.ProjectID, ServiceID: s.ID,
		EnvironmentID: envID, Number: num, Image: s.Image, ServiceConfig: s.ServiceConfig, CreatedBy: by, CreatedAt: now}
	if err := p.FreezeVariables(ctx, q, rel); err != nil {
		return nil, err
	}
	if err := store.Releases.Insert(ctx, q, rel); err != nil {
		return nil, err
	}
	dep := &model.Deployment{ID: core.NewID[model.DeploymentID](), TenantID: s.TenantID, ProjectID: s.ProjectID,
		ServiceID: s.ID, EnvironmentID: envID, ReleaseID: rel.ID, ClusterID: pl.Cluster.ID, Stage: model.StageQueued,
		RequestedBy: by, CreatedAt: now, UpdatedAt: now}
	if err := store.Deployments.Insert(ctx, q, dep); err != nil {
		return nil, err
	}
	if err := p.RecordQueued(ctx, q, dep, fmt.Sprintf(why, num)); err != nil {
		return nil, err
	}
	open, err := store.OpenDeployments(ctx, q, s.ID, envID)
	if err != nil {
		return nil, err
	}
	for _, o := range open {
		if o.ID == dep.ID || o.Stage != model.StageBuilding {
			continue
		}
		if err := p.CancelBuildOf(ctx, q, o, fmt.Sprintf("superseded by the build of release %d", num)); err != nil {
			return nil, err
		}
		if err := p.Advance(ctx, q, o, model.StageSuperseded, "",
			fmt.Sprintf("superseded by release %d, pushed before this one was built", num)); err != nil {
			return nil, err
		}
	}
	b := &model.Build{ID: core.NewID[model.BuildID](), TenantID: s.TenantID, ProjectID: s.ProjectID, ServiceID: s.ID,
		EnvironmentID: envID, ClusterID: &pl.Cluster.ID, Repository: s.Git.Repository, Branch: s.Git.Branch,
		Commit: commit, Status: model.BuildQueued, Message: "waiting for a build slot on cluster " + pl.Cluster.Name,
		DeliveryID: delivery, CreatedBy: by, DeploymentID: &dep.ID, ReleaseID: &rel.ID, CreatedAt: now}
	if err := store.Builds.Insert(ctx, q, b); err != nil {
		return nil, err
	}
	if err := p.Advance(ctx, q, dep, model.StageBuilding, model.BlockerBuild,
		fmt.Sprintf("building %s of %s (%s) on cluster %s", commit[:12], b.Repository, b.Branch, pl.Cluster.Name)); err != nil {
		return nil, err
	}
	return b, p.Note(ctx, q, bus.Build(string(b.ID)))
}

// scheduleBuilds is the build scheduler's job: it hands queued builds to
// their clusters whose agent is connected, at most PerCluster running on
// one at a time and as many as its plan allows in a tenant, oldest first; ends builds that ran past their timeout; and hands out again
// those whose agent went silent while disconnected (up to Attempts).
func (p *Builds) scheduleBuilds(ctx context.Context, q *core.Txn) (int, error) {
	n := 0
	now := p.Now()
	running, err := store.BuildsWithStatus(ctx, q, model.BuildRunning, 10000)
	if err != nil {
		return 0, err
	}
	load := map[model.ClusterID]int{}
	tenants := map[model.TenantID]int{}
	// Each cluster is read once a run.
	clusters := map[model.ClusterID]*model.Cluster{}
	cluster := func(id model.ClusterID) (*model.Cluster, bool, error) {
		cl, ok := clusters[id]
		if !ok {
			var err error
			if cl, err = store.Clusters.Get(ctx, q, id); err != nil {
				return nil, false, err
			}
			clusters[id] = cl
		}
		return cl, cl.Status(now, p.Settings.DisconnectedAfter) == model.ClusterConnected, nil
	}
	for _, b := range running {
		switch {
		case now.After(b.Deadline(p.Settings.Builds.Timeout)):
			// Past the deadline its agent was given: started and running
			// too long, or handed out and never started (its pod never
			// came up), which would otherwise hold its slots for ever.
			why := fmt.Sprintf("the build ran longer than %s and was stopped", p.Settings.Builds.Timeout)
			if b.StartedAt == nil {
				why = fmt.Sprintf("the build did not start within %s of being queued and was stopped", p.Settings.Builds.Timeout)
			}
			if err := p.closeBuild(ctx, q, b, model.BuildTimedOut, why); err != nil {
				return n, err
			}
			n++
			continue
		case b.HeartbeatAt != nil && now.Sub(*b.HeartbeatAt) > p.Settings.Builds.Silence:
			cl, up, err := cluster(*b.ClusterID)
			if err != nil {
				return n, err
			}
			if up {
				break // its agent is there: it is slow to say so
			}
			if err := p.requeueBuild(ctx, q, b, cl); err != nil {
				return n, err
			}
			n++
			continue
		}
		load[*b.ClusterID]++
		tenants[b.TenantID]++
	}
	queued, err := store.BuildsWithStatus(ctx, q, model.BuildQueued, 1000)
	if err != nil {
		return n, err
	}
	for _, b := range queued {
		if b.ClusterID == nil || load[*b.ClusterID] >= p.Settings.Builds.PerCluster {
			continue
		}
		_, up, err := cluster(*b.ClusterID)
		if err != nil {
			return n, err
		}
		if !up {
			continue // handed out once its agent is there
		}
		t, err := store.LockTenant(ctx, q, b.TenantID)
		if err != nil {
			return n, err
		}
		if limit := t.PlanName.Limits()[model.LimitConcurrentBuilds]; limit != model.Unlimited && tenants[t.ID] >= limit {
			why := fmt.Sprintf("waiting: the %s plan runs %d build(s) at once", t.PlanName, limit)
			if b.Message != why {
				b.Message = why
				if err := store.UpdateBuild(ctx, q, b); err != nil {
					return n, err
				}
				if err := p.Note(ctx, q, bus.Build(string(b.ID))); err != nil {
					return n, err
				}
			}
			continue
		}
		load[*b.ClusterID]++
		tenants[t.ID]++
		b.Status, b.Attempts, b.HeartbeatAt = model.BuildRunning, b.Attempts+1, &now
		b.Message = "handed to the cluster's agent"
		if err := store.UpdateBuild(ctx, q, b); err != nil {
			return n, err
		}
		if err := p.Note(ctx, q, bus.Build(string(b.ID)), bus.Builds(string(*b.ClusterID))); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// requeueBuild hands a build whose agent vanished out again, or fails it
// after its last attempt.
func (p *Builds) requeueBuild(ctx context.Context, q *core.Txn, b *model.Build, cl *model.Cluster) error {
	if _, err := store.LockTenant(ctx, q, b.TenantID); err != nil {
		return err
	}
	if b.Attempts >= p.Settings.Builds.Attempts {
		return p.closeBuild(ctx, q, b, model.BuildFailed, fmt.Sprintf(
			"the agent of cluster %s went away during each of %d attempts", cl.Name, b.Attempts))
	}
	b.Status, b.HeartbeatAt = model.BuildQueued, nil
	b.Message = fmt.Sprintf("the agent of cluster %s went away during attempt %d: it runs again once the agent is back",
		cl.Name, b.Attempts)
	if err := store.UpdateBuild(ctx, q, b); err != nil {
		return err
	}
	return p.Note(ctx, q, bus.Build(string(b.ID)), bus.Builds(string(cl.ID)))
}

// closeBuild ends a build without an image, and its deployment.
func (p *Builds) closeBuild(ctx context.Context, q *core.Txn, b *model.Build, status model.BuildStatus, why string) error {
	if _, err := store.LockTenant(ctx, q, b.TenantID); err != nil {
		return err
	}
	if err := p.EndBuild(ctx, q, b, status, why); err != nil {
		return err
	}
	return p.FailBuildDeployment(ctx, q, b)
}

// expireBuildLogs deletes build log lines older than the retention.
func (p *Builds) expireBuildLogs(ctx context.Context, q *core.Txn) (int, error) {
	n, err := store.DeleteBuildLogsBefore(ctx, q, p.Now().Add(-p.Settings.Builds.LogRetention))
	return int(n), err
}

// BuildLog reads up to limit lines of a build's log after line after.
func (p *Builds) BuildLog(ctx context.Context, b *model.Build, after int64, limit int) ([]model.BuildLogLine, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.BuildRead, b.Scope()); err != nil {
		return nil, err
	}
	return store.BuildLogAfter(ctx, p.Querier(ctx), b.ID, after, limit)
}

// BuildLogPage reads one page of a build's log, first line first; pg's
// cursors are line numbers.
func (p *Builds) BuildLogPage(ctx context.Context, b *model.Build, pg store.PageArgs) (store.Page[model.BuildLogLine], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.BuildRead, b.Scope()); err != nil {
		return store.Page[model.BuildLogLine]{}, err
	}
	return store.BuildLogPage(ctx, p.Querier(ctx), b.ID, pg)
}

// BuildOf is the build a deployment waits for or waited for, nil for a
// deployment of an image built elsewhere.
func (p *Builds) BuildOf(ctx context.Context, d *model.Deployment) (*model.Build, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.BuildRead, d.Scope()); err != nil {
		return nil, err
	}
	b, err := store.BuildOfDeployment(ctx, p.Querier(ctx), d.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// deployCommit is deploy of a commit: a build of it for the environment,
// audited as the deployment it makes. A commit being built there already
// is a conflict; one built before is built again (its release stays).
func (p *Builds) BuildAndDeploy(ctx context.Context, dry *core.Previewing, a *authz.Actor, svc *model.Service, env *model.Environment,
	commit string) (*model.Release, *model.Deployment, error) {
	commit = strings.ToLower(commit)
	if !webhook.IsCommit(commit) {
		return nil, nil, core.Invalid(fmt.Sprintf("commit %q must be a full commit id, 40 hex digits", core.ClipText(commit, 100)), "input", "commit")
	}
	if svc.Git == nil {
		return nil, nil, core.Invalid("service "+svc.Name+" is not built from Git: deploy an image digest", "input", "commit")
	}
	var rel *model.Release
	var dep *model.Deployment
	err := p.ChangeOr(ctx, dry, svc.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		s, err := store.Services.Get(ctx, q, svc.ID)
		if err != nil {
			return err
		}
		if s.Git == nil {
			return core.Invalid("service "+s.Name+" is not built from Git: deploy an image digest", "input", "commit")
		}
		if prev, err := store.BuildOfCommit(ctx, q, s.ID, env.ID, commit); err == nil && !prev.Status.Ended() {
			return core.Problem{Code: core.CodeConflict, Field: []string{"input", "commit"},
				Message: fmt.Sprintf("commit %s is being built for this environment already (build %s)", commit[:12], prev.ID)}
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		uid := a.User.ID
		b, err := p.startBuild(ctx, q, s, env.ID, commit,
			fmt.Sprintf("release %%d: a build of %s requested by %s", commit[:12], core.ActorName(a)), nil, &uid)
		if err != nil {
			var pr core.Problem
			if errors.As(err, &pr) && len(pr.Field) == 0 {
				pr.Field = []string{"input", "environmentId"}
				return pr
			}
			return err
		}
		if dep, err = store.Deployments.Get(ctx, q, *b.DeploymentID); err != nil {
			return err
		}
		if rel, err = store.Releases.Get(ctx, q, *b.ReleaseID); err != nil {
			return err
		}
		core.Target(ev, core.ActDeploymentCreate, "Deployment", string(dep.ID))
		ev.Details["serviceId"], ev.Details["environmentId"], ev.Details["commit"] = string(s.ID), string(env.ID), commit
		ev.Details["buildId"], ev.Details["releaseNumber"] = string(b.ID), rel.Number
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rel, dep, nil
}

// BranchHead reads the commit a Git service's tracked branch points at
// from its repository, with the service's credential. The request leaves
// the control plane, so it is made outside any transaction.
func (p *Builds) BranchHead(ctx context.Context, svc *model.Service) (string, error) {
	if svc.Git == nil {
		return "", core.Invalid("service "+svc.Name+" is not built from Git: deploy an image digest", "input", "branchHead")
	}
	token, err := p.GitCredential(svc, svc.Git.Repository)
	if err != nil {
		return "", err
	}
	commit, err := p.heads.Head(ctx, svc.Git.Repository, svc.Git.Branch, token)
	if err != nil {
		return "", core.Invalid(fmt.Sprintf("reading the head of branch %s of %s: %v", svc.Git.Branch, svc.Git.Repository, err),
			"input", "branchHead")
	}
	return commit, nil
}
