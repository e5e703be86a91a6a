package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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

// recompile compiles every cluster of the tenant inside the change's
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

// forCluster points a tenant's input at one of its clusters. The compiler
// only reads its input, so one tenant input serves every cluster.
func ForCluster(in desired.Input, c *model.Cluster) desired.Input {
	in.Cluster = *c
	return in
}

// tenantInput arranges a tenant's rows for the compiler once, secrets
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

// Revision is a desired revision of a cluster as its history shows it: the
// stored revision (its state read only when asked for) and what the
// cluster's agents reported of applying it.
type Revision struct {
	store.Revision
	Tenant   model.TenantID
	Outcomes []store.RevisionOutcome

	// stateMu guards State's one read: a revision listed without its state
	// reads it when state or diff is selected, and those resolve
	// concurrently.
	stateMu sync.Mutex
}

// RevisionDiff is what going from one revision of a cluster to another
// changes, by the compiler's comparison (desired.Compare), as a change
// preview shows it.
type RevisionDiff struct {
	From, To int64
	desired.Diff
}

// ActiveRevision is what the agent's last heartbeat says runs: a revision
// and the hash of the state it applied, confirmed when that is the
// revision's own hash.
type ActiveRevision struct {
	Number     int64
	Hash       string
	Confirmed  bool
	ReportedAt time.Time
}

// maxRevisionPage bounds a page of revision history.
const maxRevisionPage = 100

// RevisionHistory lists a cluster's desired revisions older than before (0:
// from the newest), newest first, with their causes and outcomes, and
// whether older ones remain. Tenant admins: a revision spans projects.
func (p *Plane) RevisionHistory(ctx context.Context, c *model.Cluster, before int64, first int) ([]*Revision, bool, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, false, err
	}
	if first < 1 || first > maxRevisionPage {
		return nil, false, Invalid(fmt.Sprintf("first must be between 1 and %d", maxRevisionPage), "first")
	}
	if before < 0 {
		return nil, false, Invalid("before is a revision number: 1 or more", "before")
	}
	q := p.Querier(ctx)
	rs, more, err := store.RevisionHistory(ctx, q, c.ID, before, first)
	if err != nil {
		return nil, false, err
	}
	out, err := p.withOutcomes(ctx, q, c, rs)
	return out, more, err
}

// Revision reads one revision of a cluster, its state included, with its
// outcomes; a number the cluster never had is not found.
func (p *Plane) Revision(ctx context.Context, c *model.Cluster, number int64) (*Revision, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, err
	}
	q := p.Querier(ctx)
	r, err := store.RevisionByNumber(ctx, q, c.ID, number)
	if err != nil {
		return nil, err
	}
	out, err := p.withOutcomes(ctx, q, c, []*store.Revision{r})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// withOutcomes adds the outcomes of revisions, read in one query.
func (p *Plane) withOutcomes(ctx context.Context, q store.Querier, c *model.Cluster, rs []*store.Revision) ([]*Revision, error) {
	numbers := make([]int64, len(rs))
	for i, r := range rs {
		numbers[i] = r.Number
	}
	outcomes, err := store.RevisionOutcomes(ctx, q, c.ID, numbers)
	if err != nil {
		return nil, err
	}
	out := make([]*Revision, len(rs))
	for i, r := range rs {
		out[i] = &Revision{Revision: *r, Tenant: c.TenantID, Outcomes: outcomes[r.Number]}
	}
	return out, nil
}

// RevisionState is a revision's state as stored: secret values redacted.
func (p *Plane) RevisionState(ctx context.Context, r *Revision) (map[string]any, error) {
	st, err := p.revisionJSON(ctx, r)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(st), &out); err != nil {
		return nil, fmt.Errorf("decoding revision %d: %w", r.Number, err)
	}
	return out, nil
}

// revisionJSON is a revision's stored state, read if the revision came
// from a list.
func (p *Plane) revisionJSON(ctx context.Context, r *Revision) (string, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterManage, model.Scope{Tenant: r.Tenant}); err != nil {
		return "", err
	}
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	if r.State != "" {
		return r.State, nil
	}
	full, err := store.RevisionByNumber(ctx, p.Querier(ctx), r.Cluster, r.Number)
	if err != nil {
		return "", err
	}
	r.State = full.State
	return r.State, nil
}

// CompareRevisions diffs revision against (nil: the one before it; 0: the
// empty state, before the first revision) to r, with the compiler's own
// comparison. The states compared are the stored ones, secrets redacted:
// secrets count through their versions, as they do when compiled.
func (p *Plane) CompareRevisions(ctx context.Context, r *Revision, against *int64) (*RevisionDiff, error) {
	to, err := p.revisionJSON(ctx, r)
	if err != nil {
		return nil, err
	}
	from := r.Number - 1
	if against != nil {
		from = *against
	}
	var a, b desired.State
	if from < 0 {
		return nil, Invalid("against is a revision number, or 0 for the empty state", "against")
	}
	if from > 0 {
		old, err := store.RevisionByNumber(ctx, p.Querier(ctx), r.Cluster, from)
		if errors.Is(err, store.ErrNotFound) {
			return nil, Invalid(fmt.Sprintf("the cluster has no revision %d", from), "against")
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(old.State), &a); err != nil {
			return nil, fmt.Errorf("decoding revision %d: %w", from, err)
		}
	}
	if err := json.Unmarshal([]byte(to), &b); err != nil {
		return nil, fmt.Errorf("decoding revision %d: %w", r.Number, err)
	}
	return &RevisionDiff{From: from, To: r.Number, Diff: desired.Compare(a, b)}, nil
}

// ActiveRevision is what the cluster's agent last said it runs, checked
// against the revision's stored hash; nil before a heartbeat with a hash.
func (p *Plane) ActiveRevision(ctx context.Context, c *model.Cluster) (*ActiveRevision, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterRead, c.Scope()); err != nil {
		return nil, err
	}
	if c.ReportedHash == "" || c.ReportedRevision == 0 || c.LastHeartbeatAt == nil {
		return nil, nil
	}
	out := &ActiveRevision{Number: c.ReportedRevision, Hash: c.ReportedHash, ReportedAt: *c.LastHeartbeatAt}
	// The revision without its state: only its hash is compared.
	rs, _, err := store.RevisionHistory(ctx, p.Querier(ctx), c.ID, c.ReportedRevision+1, 1)
	if err != nil {
		return nil, err
	}
	out.Confirmed = len(rs) == 1 && rs[0].Number == c.ReportedRevision && rs[0].Hash == c.ReportedHash
	return out, nil
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
