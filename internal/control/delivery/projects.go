package delivery

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func (p *Delivery) Project(ctx context.Context, id model.ProjectID) (*model.Project, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, id, authz.ProjectRead)
}

func (p *Delivery) ProjectsByIDs(ctx context.Context, ids []model.ProjectID) (map[model.ProjectID]*model.Project, error) {
	return core.ByIDs(ctx, p.Plane, store.Projects, ids, authz.ProjectRead)
}

// Projects lists the tenant's projects the caller can see: all of them for a
// tenant admin, those they hold a role in otherwise.
func (p *Delivery) Projects(ctx context.Context, tenant model.TenantID, pg store.PageArgs) (store.Page[model.Project], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.Project]{}, err
	}
	all, ids, err := p.readableProjects(ctx, a, tenant)
	if err != nil {
		return store.Page[model.Project]{}, err
	}
	if all {
		return store.ProjectsOf(ctx, p.Querier(ctx), tenant, pg)
	}
	return store.ProjectsIn(ctx, p.Querier(ctx), tenant, ids, pg)
}

// readableProjects are the tenant's projects a caller may read: all of
// them for a tenant admin, else those the caller holds a role in (ids).
func (p *Delivery) readableProjects(ctx context.Context, a *authz.Actor, tenant model.TenantID) (all bool, ids []model.ProjectID, err error) {
	s, err := p.Authorizer().Subject(ctx, a, model.Scope{Tenant: tenant})
	if err != nil || s == authz.SubjectTenantAdmin {
		return err == nil, nil, err
	}
	g, err := p.GrantsOf(ctx, a)
	if err != nil {
		return false, nil, err
	}
	ids = make([]model.ProjectID, 0, len(g.Projects))
	for id := range g.Projects {
		ids = append(ids, id)
	}
	return false, ids, nil
}

// CreateProject creates a project; tenant admins only, within the plan.
func (p *Delivery) CreateProject(ctx context.Context, tenant model.TenantID, name, description string) (*model.Project, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ProjectCreate, model.Scope{Tenant: tenant}); err != nil {
		return nil, err
	}
	var c core.Checks
	c.Name(name, "project name", "input", "name")
	c.Text(description, "description", 1000, false, "input", "description")
	if err := c.Err(); err != nil {
		return nil, err
	}
	var proj *model.Project
	err := p.Change(ctx, tenant, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		if err := p.EnsureRoom(ctx, q, t, model.LimitProjects, 1); err != nil {
			return err
		}
		proj = &model.Project{ID: core.NewID[model.ProjectID](), TenantID: tenant, Name: name, Description: description, CreatedAt: p.Now()}
		if err := store.Projects.Insert(ctx, q, proj); err != nil {
			return core.ConflictOn(err, "name", "a project named "+name+" already exists in this tenant")
		}
		core.Target(ev, ActProjectCreate, "Project", string(proj.ID))
		ev.Details["name"], ev.Details["description"] = name, description
		return nil
	})
	return core.Committed(proj, err)
}

// UpdateProject renames or re-describes a project; nil fields stay.
func (p *Delivery) UpdateProject(ctx context.Context, id model.ProjectID, name, description *string) (*model.Project, error) {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, id, authz.ProjectUpdate)
	if err != nil {
		return nil, err
	}
	var c core.Checks
	if name != nil {
		c.Name(*name, "project name", "input", "name")
	}
	if description != nil {
		c.Text(*description, "description", 1000, false, "input", "description")
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	err = p.Change(ctx, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if proj, err = store.Projects.Get(ctx, q, id); err != nil {
			return err
		}
		core.Target(ev, ActProjectUpdate, "Project", string(id))
		core.Changed(ev, "name", &proj.Name, name)
		core.Changed(ev, "description", &proj.Description, description)
		if err := store.UpdateProject(ctx, q, proj); err != nil {
			return core.ConflictOn(err, "name", "a project with that name already exists in this tenant")
		}
		return nil
	})
	return core.Committed(proj, err)
}

// DeleteProject deletes a project with its environments, services,
// releases and deployments; tenant admins only.
func (p *Delivery) DeleteProject(ctx context.Context, id model.ProjectID) error {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, id, authz.ProjectDelete)
	if err != nil {
		return err
	}
	return p.Change(ctx, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActProjectDelete, "Project", string(id))
		ev.Details["name"] = proj.Name
		if err := p.Builder().NoteBuildSets(ctx, q, proj.TenantID); err != nil {
			return err
		}
		return store.Projects.Delete(ctx, q, id)
	})
}

func (p *Delivery) Environment(ctx context.Context, id model.EnvironmentID) (*model.Environment, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, id, authz.EnvironmentRead)
}

func (p *Delivery) EnvironmentsByIDs(ctx context.Context, ids []model.EnvironmentID) (map[model.EnvironmentID]*model.Environment, error) {
	return core.ByIDs(ctx, p.Plane, store.Environments, ids, authz.EnvironmentRead)
}

// EnvironmentsOf lists the environments of several projects in one query;
// every project must be readable by the caller.
func (p *Delivery) EnvironmentsOf(ctx context.Context, projects []model.Scope, pg store.PageArgs) (map[string]store.Page[model.Environment], error) {
	ids, err := p.readableParents(ctx, projects, authz.EnvironmentRead, func(s model.Scope) string { return string(s.Project) })
	if err != nil {
		return nil, err
	}
	return store.EnvironmentsOfProjects(ctx, p.Querier(ctx), ids, pg)
}

// readableParents checks perm on each parent scope and returns their ids.
func (p *Delivery) readableParents(ctx context.Context, scopes []model.Scope, perm authz.Perm, id func(model.Scope) string) ([]string, error) {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if err := p.Authorizer().CheckCtx(ctx, perm, s); err != nil {
			return nil, err
		}
		out = append(out, id(s))
	}
	return out, nil
}

// EnvironmentInput creates or (with nil fields kept) updates an environment.
type EnvironmentInput struct {
	Name              *string
	Protected         *bool
	ClusterSelector   []model.Label
	NamespaceSelector []model.Label
}

func (p *Delivery) CreateEnvironment(ctx context.Context, project model.ProjectID, in EnvironmentInput) (*model.Environment, error) {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, project, authz.EnvironmentManage)
	if err != nil {
		return nil, err
	}
	env := &model.Environment{ID: core.NewID[model.EnvironmentID](), TenantID: proj.TenantID, ProjectID: project,
		ClusterSelector: model.Labels{}, NamespaceSelector: model.Labels{}, CreatedAt: p.Now()}
	err = p.Change(ctx, proj.TenantID, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		if err := p.applyEnvironment(ctx, q, t, env, in, true); err != nil {
			return err
		}
		if err := store.Environments.Insert(ctx, q, env); err != nil {
			return core.ConflictOn(err, "name", "an environment named "+env.Name+" already exists in this project")
		}
		core.Target(ev, ActEnvironmentCreate, "Environment", string(env.ID))
		ev.Details["projectId"], ev.Details["name"], ev.Details["protected"] = string(project), env.Name, env.Protected
		ev.Details["clusterSelector"], ev.Details["namespaceSelector"] = env.ClusterSelector, env.NamespaceSelector
		return nil
	})
	return core.Committed(env, err)
}

func (p *Delivery) UpdateEnvironment(ctx context.Context, id model.EnvironmentID, in EnvironmentInput) (*model.Environment, error) {
	return p.updateEnvironment(ctx, nil, id, in)
}

// updateEnvironment is UpdateEnvironment, or its dry run when dry is set.
func (p *Delivery) updateEnvironment(ctx context.Context, dry *core.Previewing, id model.EnvironmentID, in EnvironmentInput) (*model.Environment, error) {
	env, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, id, authz.EnvironmentManage)
	if err != nil {
		return nil, err
	}
	err = p.ChangeOr(ctx, dry, env.TenantID, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		if env, err = store.Environments.Get(ctx, q, id); err != nil {
			return err
		}
		before := *env
		if err := p.applyEnvironment(ctx, q, t, env, in, false); err != nil {
			return err
		}
		core.Target(ev, ActEnvironmentUpdate, "Environment", string(id))
		core.Changed(ev, "name", &before.Name, &env.Name)
		core.Changed(ev, "protected", &before.Protected, &env.Protected)
		if in.ClusterSelector != nil {
			ev.Details["clusterSelector"] = map[string]any{"from": before.ClusterSelector, "to": env.ClusterSelector}
		}
		if in.NamespaceSelector != nil {
			ev.Details["namespaceSelector"] = map[string]any{"from": before.NamespaceSelector, "to": env.NamespaceSelector}
		}
		if err := store.UpdateEnvironment(ctx, q, env); err != nil {
			return core.ConflictOn(err, "name", "an environment with that name already exists in this project")
		}
		return nil
	})
	return core.Committed(env, err)
}

// applyEnvironment validates in and applies it to env, inside the tenant
// lock: it checks the plan for protected environments and that selector
// keys are labels some cluster or namespace target carries.
func (p *Delivery) applyEnvironment(ctx context.Context, q store.Querier, t *model.Tenant, env *model.Environment, in EnvironmentInput, create bool) error {
	var c core.Checks
	if in.Name != nil || create {
		name := ""
		if in.Name != nil {
			name = *in.Name
		}
		c.Name(name, "environment name", "input", "name")
		env.Name = name
	}
	if in.ClusterSelector != nil {
		env.ClusterSelector = c.Labels(in.ClusterSelector, "input", "clusterSelector")
	}
	if in.NamespaceSelector != nil {
		env.NamespaceSelector = c.Labels(in.NamespaceSelector, "input", "namespaceSelector")
	}
	if err := c.Err(); err != nil {
		return err
	}
	if in.ClusterSelector != nil || in.NamespaceSelector != nil || create {
		clusters, targets, err := p.TenantTargets(ctx, q, t.ID)
		if err != nil {
			return err
		}
		if in.ClusterSelector != nil {
			c.KnownKeys(env.ClusterSelector, labelKeys(clusters, func(c *model.Cluster) model.Labels { return c.Labels }), "cluster", "input", "clusterSelector")
		}
		if in.NamespaceSelector != nil {
			c.KnownKeys(env.NamespaceSelector, labelKeys(targets, func(n *model.NamespaceTarget) model.Labels { return n.Labels }), "namespace target", "input", "namespaceSelector")
		}
		if cl, ns := targetsBypassed(env, clusters, targets); cl != "" {
			c.Add(core.Invalid(fmt.Sprintf("cluster %s has namespace targets your tenant admin defined (%s): "+
				"an environment placed there takes one of them, picked with a namespace selector; "+
				"the default namespace is only for clusters without targets", cl, strings.Join(ns, ", ")),
				"input", "namespaceSelector"))
		}
		if err := c.Err(); err != nil {
			return err
		}
	}
	if in.Protected != nil {
		if *in.Protected && !env.Protected {
			if err := p.EnsureRoom(ctx, q, t, model.LimitProtectedEnvironments, 1); err != nil {
				return err
			}
		}
		env.Protected = *in.Protected
	}
	return nil
}

func (p *Delivery) DeleteEnvironment(ctx context.Context, id model.EnvironmentID) error {
	env, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, id, authz.EnvironmentManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, env.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActEnvironmentDelete, "Environment", string(id))
		ev.Details["projectId"], ev.Details["name"] = string(env.ProjectID), env.Name
		if err := p.Builder().NoteBuildSets(ctx, q, env.TenantID); err != nil {
			return err
		}
		return store.Environments.Delete(ctx, q, id)
	})
}

// targetsBypassed names the cluster and its namespace targets when env,
// without a namespace selector, would fall back to its default namespace
// on a cluster where the tenant admin defined namespace targets: refused,
// so that a project manager cannot step around them by clearing the
// selector. ("" when env picks no single cluster, has a namespace
// selector, or its cluster has no targets.)
func targetsBypassed(env *model.Environment, clusters []*model.Cluster, targets []*model.NamespaceTarget) (string, []string) {
	if len(env.NamespaceSelector) > 0 {
		return "", nil
	}
	var picked *model.Cluster
	for _, c := range clusters {
		if c.Labels.Matches(env.ClusterSelector) {
			if picked != nil {
				return "", nil // several: it places nowhere, and says so
			}
			picked = c
		}
	}
	if picked == nil {
		return "", nil
	}
	var ns []string
	for _, t := range targets {
		if t.ClusterID == picked.ID {
			ns = append(ns, t.Namespace)
		}
	}
	if len(ns) == 0 {
		return "", nil
	}
	slices.Sort(ns)
	return picked.Name, ns
}
