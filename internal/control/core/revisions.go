package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
)

// Bumped is a cluster that got a new desired revision in a change.
type Bumped struct {
	Cluster  model.ClusterID
	Revision int64
	// State is the state compiled at Revision (secrets opened, for
	// delivery), so that a publisher in this process need not compile it
	// again. Never shown or logged.
	State *desired.State
}

// Recompile compiles every cluster of the tenant inside the change's
// transaction and gives each whose state changed the next revision, caused
// by the audit event the transaction recorded. A change that compiles to
// the same state bumps nothing. The tenant lock the change
// holds orders revisions across replicas. Once the change committed, the
// new states go to this process's agent sessions (Publisher.Published):
// an agent never sees a revision that rolled back.
func (p *Plane) Recompile(ctx context.Context, q *Txn, tenant model.TenantID) error {
	rows, err := store.LoadTenantRows(ctx, q, tenant, p.releases)
	if err != nil {
		return fmt.Errorf("loading rows to compile: %w", err)
	}
	var out []Bumped
	in := TenantInput(p.box, rows)
	for _, c := range rows.Clusters {
		st := p.compiler.Compile(ForCluster(in, c))
		shown, h := st.Shown()
		if h == c.DesiredHash {
			continue
		}
		rev, err := store.BumpRevision(ctx, q, c.ID, h, shown, q.cause, p.now())
		if err != nil {
			return err
		}
		if err := p.Note(ctx, q, bus.Revision(string(c.ID)), bus.Cluster(string(c.ID))); err != nil {
			return err
		}
		out = append(out, Bumped{Cluster: c.ID, Revision: rev, State: &st})
	}
	if len(out) > 0 && p.pub != nil {
		q.AfterCommit(func() { p.pub.Published(out) })
	}
	return nil
}

// compileInput arranges a tenant's rows for compiling one cluster.
func compileInput(box *seal.Box, rows *store.TenantRows, c *model.Cluster) desired.Input {
	return ForCluster(TenantInput(box, rows), c)
}

// ForCluster points a tenant's input at one of its clusters. The compiler
// only reads its input, so one tenant input serves every cluster.
func ForCluster(in desired.Input, c *model.Cluster) desired.Input {
	in.Cluster = *c
	return in
}

// TenantInput arranges a tenant's rows for the compiler once, secrets
// opened once, whatever the number of clusters compiled from it.
func TenantInput(box *seal.Box, rows *store.TenantRows) desired.Input {
	var in desired.Input
	for _, x := range rows.Clusters {
		in.Clusters = append(in.Clusters, *x)
	}
	for _, t := range rows.Targets {
		in.Targets = append(in.Targets, *t)
	}
	byProject := map[model.ProjectID]*desired.Project{}
	for _, p := range rows.Projects {
		byProject[p.ID] = &desired.Project{Project: *p, Current: map[model.EnvironmentID]map[model.ServiceID]*model.Release{}}
	}
	for _, e := range rows.Environments {
		if p := byProject[e.ProjectID]; p != nil {
			p.Environments = append(p.Environments, *e)
		}
	}
	for _, s := range rows.Services {
		p := byProject[s.ProjectID]
		if p == nil {
			continue
		}
		p.Services = append(p.Services, *s)
	}
	for _, v := range rows.Variables {
		if p := byProject[v.ProjectID]; p != nil {
			p.Variables = append(p.Variables, compileVariable(box, v))
		}
	}
	for _, d := range rows.Live {
		if p := byProject[d.ProjectID]; p != nil {
			if p.Deployments == nil {
				p.Deployments = map[model.EnvironmentID]map[model.ServiceID]model.DeploymentID{}
			}
			if p.Deployments[d.EnvironmentID] == nil {
				p.Deployments[d.EnvironmentID] = map[model.ServiceID]model.DeploymentID{}
			}
			p.Deployments[d.EnvironmentID][d.ServiceID] = d.ID
		}
	}
	for _, r := range rows.Current {
		if p := byProject[r.ProjectID]; p != nil {
			if p.Current[r.EnvironmentID] == nil {
				p.Current[r.EnvironmentID] = map[model.ServiceID]*model.Release{}
			}
			p.Current[r.EnvironmentID][r.ServiceID] = r
			if r.Frozen() {
				if p.Frozen == nil {
					p.Frozen = map[model.ReleaseID][]desired.Variable{}
				}
				p.Frozen[r.ID] = frozenVariables(box, r, rows.Versions)
			}
		}
	}
	for _, p := range rows.Projects {
		in.Projects = append(in.Projects, *byProject[p.ID])
	}
	return in
}

// DesiredState shows a cluster's newest revision with secret values
// redacted; tenant admins only.
func (p *Plane) DesiredState(ctx context.Context, c *model.Cluster) (map[string]any, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, err
	}
	rev, err := store.LatestRevision(ctx, p.Querier(ctx), c.ID)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(rev.State), &out); err != nil {
		return nil, fmt.Errorf("decoding stored state: %w", err)
	}
	out["revision"] = rev.Number
	out["hash"] = rev.Hash
	return out, nil
}

// compileVariable opens a secret for the compiler. A secret that does not
// open is marked unreadable, which holds the services that need it.
func compileVariable(box *seal.Box, v *model.Variable) desired.Variable {
	out := desired.Variable{Name: v.Name, Value: v.Value, Secret: v.Secret, Scope: desired.ScopeProject}
	switch {
	case v.ServiceID != nil:
		out.Scope, out.Service = desired.ScopeService, *v.ServiceID
	case v.EnvironmentID != nil:
		out.Scope, out.Environment = desired.ScopeEnvironment, *v.EnvironmentID
	}
	if v.Secret {
		out.Value = ""
		out.Version = fmt.Sprintf("%s@%d", v.ID, v.UpdatedAt.UnixMicro())
		pt, err := box.Open(v.Value, v.Binding())
		if err != nil {
			out.Unreadable = err.Error()
		} else {
			out.Value = string(pt)
		}
	}
	return out
}

// frozenVariables are the variables release r froze, for the compiler:
// secrets opened from the versions it froze.
func frozenVariables(box *seal.Box, r *model.Release, versions map[model.SecretVersionID]*model.SecretVersion) []desired.Variable {
	out := make([]desired.Variable, len(r.Variables))
	for i, v := range r.Variables {
		out[i] = desired.Variable{Name: v.Name, Value: v.Value, Secret: v.Secret, Scope: desired.ScopeService, Service: r.ServiceID}
		if !v.Secret {
			continue
		}
		out[i].Version = string(v.Version)
		sv := versions[v.Version]
		if sv == nil {
			out[i].Unreadable = "the version of the secret release " + fmt.Sprint(r.Number) + " froze is gone"
			continue
		}
		if pt, err := box.Open(sv.Sealed, sv.Binding()); err != nil {
			out[i].Unreadable = err.Error()
		} else {
			out[i].Value = string(pt)
		}
	}
	return out
}

// FreezeVariables sets what release rel freezes of the variables in force
// for its service in its environment (desired.Freeze).
func (p *Plane) FreezeVariables(ctx context.Context, q store.Querier, rel *model.Release) error {
	vars, err := store.VariablesOfProject(ctx, q, rel.ProjectID)
	if err != nil {
		return err
	}
	rel.Variables = desired.Freeze(vars, rel.ServiceID, rel.EnvironmentID)
	return nil
}

// Snapshot is the compiler's input for a tenant's clusters, read at one
// moment, with each cluster's row (and desired revision) of that moment. The
// hub keeps one per tenant between deliveries (see hub.deliveries).
type Snapshot struct {
	compiler *desired.Compiler
	input    desired.Input
	clusters map[model.ClusterID]*model.Cluster
}

// Revision is the desired revision of cluster c in the snapshot; false
// when the snapshot does not hold c.
func (s *Snapshot) Revision(c model.ClusterID) (int64, bool) {
	sc := s.clusters[c]
	if sc == nil {
		return 0, false
	}
	return sc.DesiredRevision, true
}

// State compiles cluster c's state from the snapshot (secrets opened, for
// delivery only); false when the snapshot does not hold c.
func (s *Snapshot) State(c model.ClusterID) (int64, *desired.State, bool) {
	sc := s.clusters[c]
	if sc == nil {
		return 0, nil, false
	}
	st := s.compiler.Compile(ForCluster(s.input, sc))
	return sc.DesiredRevision, &st, true
}

// AgentSnapshot reads the rows of cluster's tenant for compiling, in one
// read-only transaction: every cluster's state compiled from it is the one
// its revision names. Only the agent of cluster reads it (its secrets are
// opened): for any other subject it fails with authz.ErrForbidden.
func (p *Plane) AgentSnapshot(ctx context.Context, cluster model.ClusterID, tenant model.TenantID) (*Snapshot, error) {
	if s, ok := ctx.Value(systemKey{}).(System); !ok || s != SystemAgent(cluster) {
		return nil, authz.ErrForbidden
	}
	var snap *Snapshot
	err := p.InReadTx(ctx, func(q store.Querier) error {
		rows, err := store.LoadTenantRows(ctx, q, tenant, p.releases)
		if err != nil {
			return err
		}
		snap = &Snapshot{compiler: p.compiler, input: TenantInput(p.box, rows), clusters: map[model.ClusterID]*model.Cluster{}}
		for _, x := range rows.Clusters {
			snap.clusters[x.ID] = x
		}
		return nil
	})
	return snap, err
}

// Input is what the snapshot compiles from, secrets opened: for the
// agent side's redaction of what its cluster reports, never for showing.
func (s *Snapshot) Input() *desired.Input { return &s.input }
