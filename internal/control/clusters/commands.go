package clusters

import (
	"context"
	"fmt"
	"slices"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// CommandInput asks for a command on a cluster. RESTART_PROCESS names a
// process of a service in an environment placed on the cluster; RESYNC and
// COLLECT_DIAGNOSTICS take nothing else.
type CommandInput struct {
	Cluster     model.ClusterID
	Kind        model.CommandKind
	Environment *model.EnvironmentID
	Service     *model.ServiceID
	Process     string
}

// QueueCommand stores a command for the cluster's agent; it is delivered
// when the agent is connected, and survives disconnections and restarts
// until acknowledged. Restarting a process is the service's editors' to
// ask; the cluster-wide commands are tenant admins'.
func (p *Clusters) QueueCommand(ctx context.Context, in CommandInput) (*model.Command, error) {
	cl, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, in.Cluster, authz.ClusterRead)
	if err != nil {
		return nil, err
	}
	args := map[string]string{}
	var project *model.ProjectID
	switch in.Kind {
	case model.CommandRestartProcess:
		if args, project, err = p.restartArgs(ctx, cl, in); err != nil {
			return nil, err
		}
	case model.CommandResync, model.CommandCollectDiagnostics:
		if err := p.Authorizer().CheckCtx(ctx, authz.ClusterManage, cl.Scope()); err != nil {
			return nil, err
		}
		if in.Environment != nil || in.Service != nil || in.Process != "" {
			return nil, core.Invalid(fmt.Sprintf("%s takes no environment, service or process", in.Kind), "input", "kind")
		}
	default:
		return nil, core.Invalid(fmt.Sprintf("unknown command kind %q", in.Kind), "input", "kind")
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	uid := a.User.ID
	cmd := &model.Command{ID: core.NewID[model.CommandID](), TenantID: cl.TenantID, ClusterID: cl.ID, Kind: in.Kind, Args: args,
		Status: model.CommandQueued, RequestedBy: &uid, CreatedAt: p.Now(), UpdatedAt: p.Now()}
	err = p.Change(ctx, cl.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActClusterQueueCommand, "Cluster", string(cl.ID))
		ev.Details["commandId"], ev.Details["kind"], ev.Details["args"] = string(cmd.ID), string(cmd.Kind), args
		if err := store.Commands.Insert(ctx, q, cmd); err != nil {
			return err
		}
		if project != nil {
			if err := store.SetCommandProject(ctx, q, cmd.ID, *project); err != nil {
				return err
			}
		}
		// The agent's session may live on another replica.
		return p.Note(ctx, q, bus.Commands(string(cl.ID)))
	})
	if err != nil {
		return nil, err
	}
	if p.Publisher() != nil {
		p.Publisher().CommandQueued(cl.ID)
	}
	return cmd, nil
}

// restartArgs checks a restart request and names what to restart, and
// the project it acts in.
func (p *Clusters) restartArgs(ctx context.Context, cl *model.Cluster, in CommandInput) (map[string]string, *model.ProjectID, error) {
	if in.Environment == nil || in.Service == nil || in.Process == "" {
		return nil, nil, core.Invalid("RESTART_PROCESS needs environmentId, serviceId and process", "input", "kind")
	}
	svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, *in.Service, authz.ServiceManage)
	if err != nil {
		return nil, nil, err
	}
	env, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, *in.Environment, authz.EnvironmentRead)
	if err != nil {
		return nil, nil, err
	}
	if env.ProjectID != svc.ProjectID {
		return nil, nil, core.Invalid("the environment belongs to another project than the service", "input", "environmentId")
	}
	if !slices.ContainsFunc(svc.Processes, func(pr model.Process) bool { return pr.Name == in.Process }) {
		return nil, nil, core.Invalid(fmt.Sprintf("service %s has no process %q", svc.Name, in.Process), "input", "process")
	}
	clusters, targets, err := p.TenantTargets(ctx, p.Querier(ctx), cl.TenantID)
	if err != nil {
		return nil, nil, err
	}
	pl := core.PlaceEnv(env, clusters, targets)
	if pl.Cluster == nil || pl.Cluster.ID != cl.ID {
		return nil, nil, core.Invalid(fmt.Sprintf("environment %s does not run on cluster %s", env.Name, cl.Name), "input", "environmentId")
	}
	ns := pl.Namespace
	if ns == "" {
		proj, err := store.Projects.Get(ctx, p.Querier(ctx), env.ProjectID)
		if err != nil {
			return nil, nil, err
		}
		ns = desired.DefaultNamespace(proj.Name, env.Name)
	}
	project := svc.ProjectID
	return map[string]string{"namespace": ns, "service": svc.Name, "process": in.Process}, &project, nil
}

// Commands lists a cluster's commands, newest first. A command acting in a
// project (a restart of one of its services) names its namespace, service
// and requester: it is listed only to those who may read the project, and
// does not exist for the others. Cluster-wide commands are listed to every
// tenant member; tenant admins see them all.
func (p *Clusters) Commands(ctx context.Context, cl *model.Cluster, pg store.PageArgs) (store.Page[model.Command], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.Command]{}, err
	}
	if err := p.Authorizer().Check(ctx, a, authz.ClusterRead, cl.Scope()); err != nil {
		return store.Page[model.Command]{}, err
	}
	all := p.Authorizer().Check(ctx, a, authz.ClusterManage, cl.Scope()) == nil
	var projects []model.ProjectID
	if !all {
		g, err := p.GrantsOf(ctx, a)
		if err != nil {
			return store.Page[model.Command]{}, err
		}
		for id := range g.Projects {
			if p.Authorizer().Check(ctx, a, authz.ProjectRead, model.Scope{Tenant: cl.TenantID, Project: id}) == nil {
				projects = append(projects, id)
			}
		}
		slices.Sort(projects)
	}
	return store.CommandsIn(ctx, p.Querier(ctx), cl.ID, all, projects, pg)
}

// Command reads one command, visible as Commands lists it.
func (p *Clusters) Command(ctx context.Context, id model.CommandID) (*model.Command, error) {
	cmd, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Commands, id, authz.ClusterRead)
	if err != nil {
		return nil, err
	}
	project, err := store.CommandProject(ctx, p.Querier(ctx), id)
	if err != nil {
		return nil, err
	}
	switch {
	case project != nil:
		err = p.Authorizer().CheckCtx(ctx, authz.ProjectRead, model.Scope{Tenant: cmd.TenantID, Project: *project})
	case cmd.Kind == model.CommandRestartProcess: // queued before commands recorded their project
		err = p.Authorizer().CheckCtx(ctx, authz.ClusterManage, cmd.Scope())
	}
	if core.IsDenied(err) {
		return nil, authz.ErrNotVisible
	}
	if err != nil {
		return nil, err
	}
	return cmd, nil
}
