package delivery

import (
	"context"
	"fmt"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func (p *Delivery) Service(ctx context.Context, id model.ServiceID) (*model.Service, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, id, authz.ServiceRead)
}

func (p *Delivery) ServicesByIDs(ctx context.Context, ids []model.ServiceID) (map[model.ServiceID]*model.Service, error) {
	return core.ByIDs(ctx, p.Plane, store.Services, ids, authz.ServiceRead)
}

// ServicesOf lists the services of several projects in one query.
func (p *Delivery) ServicesOf(ctx context.Context, projects []model.Scope, pg store.PageArgs) (map[string]store.Page[model.Service], error) {
	ids, err := p.readableParents(ctx, projects, authz.ServiceRead, func(s model.Scope) string { return string(s.Project) })
	if err != nil {
		return nil, err
	}
	return store.ServicesOfProjects(ctx, p.Querier(ctx), ids, pg)
}

// ServiceInput creates or (nil fields kept) updates a service. Variables,
// when given, replace the service-scope variables.
type ServiceInput struct {
	Name      string
	Image     *string
	Processes []model.Process
	Variables []VariableInput
	Domains   []model.Domain
	// Git, when given, makes the service one built from Git (or changes
	// its source); RemoveGit makes it an image service again.
	Git       *GitInput
	RemoveGit bool
}

func (p *Delivery) CreateService(ctx context.Context, project model.ProjectID, in ServiceInput) (*model.Service, error) {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, project, authz.ServiceManage)
	if err != nil {
		return nil, err
	}
	now := p.Now()
	svc := &model.Service{ID: core.NewID[model.ServiceID](), TenantID: proj.TenantID, ProjectID: project, Name: in.Name,
		CreatedAt: now, UpdatedAt: now, ServiceConfig: model.ServiceConfig{
			Processes: in.Processes, Domains: core.OrEmpty(in.Domains)}}
	if in.Image != nil {
		svc.Image = *in.Image
	}
	var c core.Checks
	c.Name(in.Name, "service name", "input", "name")
	if svc.Processes == nil {
		svc.Processes = []model.Process{}
	}
	checkConfig(&c, &svc.Image, &svc.ServiceConfig)
	checkVariables(&c, in.Variables, "input", "variables")
	if err := c.Err(); err != nil {
		return nil, err
	}
	err = p.Change(ctx, proj.TenantID, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		if err := p.secretsMayChange(ctx, q, proj.TenantID); err != nil {
			return err
		}
		if err := p.EnsureRoom(ctx, q, t, model.LimitServices, 1); err != nil {
			return err
		}
		if err := p.setGit(ctx, q, svc, in.Git, false, "input", "git"); err != nil {
			return err
		}
		if err := store.Services.Insert(ctx, q, svc); err != nil {
			return core.ConflictOn(err, "name", "a service named "+in.Name+" already exists in this project")
		}
		if err := p.replaceServiceVariables(ctx, q, svc, in.Variables); err != nil {
			return err
		}
		core.Target(ev, ActServiceCreate, "Service", string(svc.ID))
		ev.Details["projectId"], ev.Details["name"], ev.Details["image"] = string(project), svc.Name, svc.Image
		auditConfig(ev, svc.ServiceConfig, in.Variables)
		if svc.Git != nil {
			AuditGit(ev, svc)
		}
		return nil
	})
	return core.Committed(svc, err)
}

// auditConfig records a configuration without variable values: names say
// what changed, values may be sensitive. vars is nil when unchanged.
func auditConfig(ev *core.Audit, cfg model.ServiceConfig, vars []VariableInput) {
	procs := make([]string, len(cfg.Processes))
	for i, pr := range cfg.Processes {
		procs[i] = pr.Name
	}
	hosts := make([]string, len(cfg.Domains))
	for i, d := range cfg.Domains {
		hosts[i] = d.Host
	}
	ev.Details["processes"], ev.Details["domains"] = procs, hosts
	if vars != nil {
		names := make([]string, len(vars))
		for i, v := range vars {
			names[i] = v.Name
		}
		ev.Details["variableNames"] = names
	}
}

func (p *Delivery) UpdateService(ctx context.Context, id model.ServiceID, in ServiceInput) (*model.Service, error) {
	return p.updateService(ctx, nil, id, in)
}

// updateService is UpdateService, or its dry run when dry is set.
func (p *Delivery) updateService(ctx context.Context, dry *core.Previewing, id model.ServiceID, in ServiceInput) (*model.Service, error) {
	svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, id, authz.ServiceManage)
	if err != nil {
		return nil, err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	err = p.ChangeOr(ctx, dry, svc.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if err := p.secretsMayChange(ctx, q, svc.TenantID); err != nil {
			return err
		}
		if svc, err = store.Services.Get(ctx, q, id); err != nil {
			return err
		}
		if in.Image != nil {
			svc.Image = *in.Image
		}
		if in.Processes != nil {
			svc.Processes = in.Processes
		}
		if in.Domains != nil {
			svc.Domains = in.Domains
		}
		var c core.Checks
		checkConfig(&c, &svc.Image, &svc.ServiceConfig)
		checkVariables(&c, in.Variables, "input", "variables")
		if in.Git != nil && in.RemoveGit {
			c.Add(core.Invalid("give a Git source or remove it, not both", "input", "removeGit"))
		}
		if err := c.Err(); err != nil {
			return err
		}
		if err := p.setGit(ctx, q, svc, in.Git, in.RemoveGit, "input", "git"); err != nil {
			return err
		}
		if in.Variables != nil {
			if err := p.replaceServiceVariables(ctx, q, svc, in.Variables); err != nil {
				return err
			}
		}
		svc.UpdatedAt = p.Now()
		core.Target(ev, ActServiceUpdate, "Service", string(id))
		ev.Details["image"] = svc.Image
		auditConfig(ev, svc.ServiceConfig, in.Variables)
		if in.Git != nil || in.RemoveGit {
			AuditGit(ev, svc)
		}
		if err := store.UpdateService(ctx, q, svc); err != nil {
			return err
		}
		err = p.releaseConfig(ctx, q, a, ev, svc.ProjectID, "service "+svc.Name+" changed")
		return err
	})
	return core.Committed(svc, err)
}

func (p *Delivery) DeleteService(ctx context.Context, id model.ServiceID) error {
	svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, id, authz.ServiceManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, svc.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActServiceDelete, "Service", string(id))
		ev.Details["projectId"], ev.Details["name"] = string(svc.ProjectID), svc.Name
		if err := p.Builder().NoteBuildSets(ctx, q, svc.TenantID); err != nil {
			return err
		}
		return store.Services.Delete(ctx, q, id)
	})
}

func (p *Delivery) Release(ctx context.Context, id model.ReleaseID) (*model.Release, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Releases, id, authz.ReleaseRead)
}

// ReleasesByIDs reads releases by id for the rows that name them (a
// deployment's, a build's, a log line's release). A release with its image
// never changes, and such a row exists only with its release, so the ones
// the plane's release cache holds are not read again. The releases are
// shared: callers must not modify them.
func (p *Delivery) ReleasesByIDs(ctx context.Context, ids []model.ReleaseID) (map[model.ReleaseID]*model.Release, error) {
	rows, err := p.ReleaseCache().ByIDs(ctx, p.Querier(ctx), ids)
	if err != nil {
		return nil, err
	}
	return core.Visible(ctx, p.Plane, rows, authz.ReleaseRead)
}

// DeploymentsByIDs reads deployments by id, dropping those the caller may
// not read.
func (p *Delivery) DeploymentsByIDs(ctx context.Context, ids []model.DeploymentID) (map[model.DeploymentID]*model.Deployment, error) {
	return core.ByIDs(ctx, p.Plane, store.Deployments, ids, authz.DeploymentRead)
}

// Releases lists a service's releases newest first, optionally of one
// environment.
func (p *Delivery) Releases(ctx context.Context, svc *model.Service, env *model.EnvironmentID, pg store.PageArgs) (store.Page[model.Release], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ReleaseRead, svc.Scope()); err != nil {
		return store.Page[model.Release]{}, err
	}
	return store.ReleasesOf(ctx, p.Querier(ctx), svc.ID, env, pg)
}

func (p *Delivery) Deployment(ctx context.Context, id model.DeploymentID) (*model.Deployment, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Deployments, id, authz.DeploymentRead)
}

// DeploymentsOf lists the deployments of several environments, newest
// first, in one query: their columns cols (store.Cols; zero for whole
// rows).
func (p *Delivery) DeploymentsOf(ctx context.Context, envs []model.Scope, ids []model.EnvironmentID, pg store.PageArgs, cols store.Cols) (map[string]store.Page[model.Deployment], error) {
	parents, err := p.deploymentParents(ctx, envs, ids)
	if err != nil {
		return nil, err
	}
	return store.DeploymentsOfEnvironments(ctx, p.Querier(ctx), parents, pg, cols)
}

// deploymentParents checks that the caller may read the deployments of
// each environment and returns the environments' ids.
func (p *Delivery) deploymentParents(ctx context.Context, envs []model.Scope, ids []model.EnvironmentID) ([]string, error) {
	for _, s := range envs {
		if err := p.Authorizer().CheckCtx(ctx, authz.DeploymentRead, s); err != nil {
			return nil, err
		}
	}
	parents := make([]string, len(ids))
	for i, id := range ids {
		parents[i] = string(id)
	}
	return parents, nil
}

// DeploymentsWithReleasesOf is DeploymentsOf with the deployments'
// releases, read in the same query, their columns release (see
// store.Cols). A release the caller may not read is left out of the map.
func (p *Delivery) DeploymentsWithReleasesOf(ctx context.Context, envs []model.Scope, ids []model.EnvironmentID, pg store.PageArgs, cols, release store.Cols) (map[string]store.Page[model.Deployment], map[model.ReleaseID]*model.Release, error) {
	parents, err := p.deploymentParents(ctx, envs, ids)
	if err != nil {
		return nil, nil, err
	}
	pages, releases, err := store.DeploymentsWithReleasesOfEnvironments(ctx, p.Querier(ctx), parents, pg, cols, release)
	if err != nil {
		return nil, nil, err
	}
	for id, r := range releases {
		if err := p.Authorizer().CheckCtx(ctx, authz.ReleaseRead, r.Scope()); err != nil {
			if !core.IsDenied(err) {
				return nil, nil, err
			}
			delete(releases, id)
		}
	}
	return pages, releases, nil
}

// Deploy releases a service to an environment: it freezes the service's
// configuration with the image digest into the next numbered release and
// queues a deployment to the one cluster the environment's selector picks.
func (p *Delivery) Deploy(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID, digest string) (*model.Release, *model.Deployment, error) {
	return p.deploy(ctx, nil, svcID, envID, deployTarget{digest: digest})
}

// DeployCommit builds a commit of a Git service for an environment and
// deploys what it makes: the release (its image to come) and the
// deployment, which waits at BUILDING while the build runs.
func (p *Delivery) DeployCommit(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID, commit string) (*model.Release, *model.Deployment, error) {
	return p.deploy(ctx, nil, svcID, envID, deployTarget{commit: commit})
}

// DeployBranchHead is DeployCommit of the commit the service's tracked
// branch points at now, read from its repository (as `git ls-remote`
// does, with the service's credential).
func (p *Delivery) DeployBranchHead(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID) (*model.Release, *model.Deployment, error) {
	return p.deploy(ctx, nil, svcID, envID, deployTarget{head: true})
}

// deployTarget is what a deploy releases: an image digest, a commit to build,
// or the head of the service's branch.
type deployTarget struct {
	digest, commit string
	head           bool
}

// deploy is Deploy, or its dry run when dry is set.
func (p *Delivery) deploy(ctx context.Context, dry *core.Previewing, svcID model.ServiceID, envID model.EnvironmentID, t deployTarget) (*model.Release, *model.Deployment, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, svcID, authz.ServiceRead)
	if err != nil {
		return nil, nil, err
	}
	env, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, envID, authz.EnvironmentRead)
	if err != nil {
		return nil, nil, err
	}
	if env.ProjectID != svc.ProjectID {
		return nil, nil, core.Invalid("the environment belongs to another project than the service", "input", "environmentId")
	}
	if err := p.Authorizer().Check(ctx, a, core.DeployPerm(env), env.Scope()); err != nil {
		return nil, nil, err
	}
	if t.head {
		if t.commit, err = p.Builder().BranchHead(ctx, svc); err != nil {
			return nil, nil, err
		}
	}
	if t.commit != "" {
		return p.Builder().BuildAndDeploy(ctx, dry, a, svc, env, t.commit)
	}
	digest := t.digest
	if !core.ImageDigest.MatchString(digest) {
		return nil, nil, core.Invalid(fmt.Sprintf("image digest %q must be sha256: followed by 64 lowercase hex digits", digest), "input", "imageDigest")
	}
	var rel *model.Release
	var dep *model.Deployment
	err = p.ChangeOr(ctx, dry, svc.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if svc, err = store.Services.Get(ctx, q, svcID); err != nil {
			return err
		}
		num, err := store.NextReleaseNumber(ctx, q, svcID, envID)
		if err != nil {
			return err
		}
		now := p.Now()
		uid := a.User.ID
		rel = &model.Release{ID: core.NewID[model.ReleaseID](), TenantID: svc.TenantID, ProjectID: svc.ProjectID,
			ServiceID: svcID, EnvironmentID: envID, Number: num, Image: svc.Image, ImageDigest: digest,
			ServiceConfig: svc.ServiceConfig, CreatedBy: &uid, CreatedAt: now}
		if err := p.FreezeVariables(ctx, q, rel); err != nil {
			return err
		}
		if err := store.Releases.Insert(ctx, q, rel); err != nil {
			return err
		}
		ev.Details["serviceId"], ev.Details["environmentId"], ev.Details["imageDigest"] = string(svcID), string(envID), digest
		dep, err = p.StartDeployment(ctx, q, ev, a, core.ActDeploymentCreate, rel, env, "release %d requested by %s", "input", "environmentId")
		if err == nil {
			q.Previewed(rel, nil, dep.ClusterID)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return rel, dep, nil
}
