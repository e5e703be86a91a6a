package core

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/fairgate"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// ClusterChange is what a previewed change would do to one cluster.
type ClusterChange struct {
	Cluster      *model.Cluster
	FromRevision int64
	desired.Diff
	// Releases are the releases the change would make whose deployments
	// go to the cluster.
	Releases []PreviewedRelease
}

// PreviewedRelease is a release a previewed change would make (never
// stored), with the one in force it replaces (nil for none).
type PreviewedRelease struct {
	Release, Previous *model.Release
	cluster           model.ClusterID
}

// Previewed notes, in a preview, a release the change makes, deployed to
// cluster, and the release in force it replaces (nil for none); outside a
// preview it does nothing.
func (t *Txn) Previewed(rel, prev *model.Release, cluster model.ClusterID) {
	if t.preview {
		t.previewed = append(t.previewed, PreviewedRelease{Release: rel, Previous: prev, cluster: cluster})
	}
}

// Previewing marks a change as a dry run and collects what it would do.
// The mutations that can be previewed take it as an explicit argument
// (nil: for real) and hand it to Plane.changeOr.
type Previewing struct{ changes []ClusterChange }

// errPreviewed rolls a previewed change back once its effect is known.
var errPreviewed = errors.New("preview: rolled back")

// Preview runs a mutation's own code — its validation, authorization and
// plan checks included — inside a transaction that is always rolled back,
// and reports what the change would do to each cluster of the tenant.
// Nothing is stored, audited or published.
//
// Previews take turns (see previews): a query's fields run at once, so one
// request of many aliased previews would otherwise compile its tenant over
// and over on every CPU and hold every database connection, and other
// tenants' requests would wait for them.
func (p *Plane) Preview(ctx context.Context, do func(dry *Previewing) error) ([]ClusterChange, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	// The whole preview takes its turn, its reads before the change
	// included, so that waiting previews hold no database connection.
	var lane model.TenantID // the requester's tenant: tokens act in one
	if a.Token != nil {
		lane = a.Home()
	}
	leave, err := previews.Enter(ctx, lane)
	if err != nil {
		return nil, err
	}
	defer leave()
	pv := &Previewing{}
	err = do(pv)
	if errors.Is(err, errPreviewed) {
		return pv.changes, nil
	}
	if err != nil {
		return nil, err
	}
	return []ClusterChange{}, nil
}

// changePreview is change for a preview: fn runs in a transaction that
// always rolls back, between two compilations of the tenant's clusters.
//
// It does not take the tenant's write lock, which would make a tenant's
// previews wait for each other. On PostgreSQL it takes the weakest share
// lock on the tenant's row instead (FOR KEY SHARE, which inserting any row
// of the tenant takes anyway, for its foreign key): it never waits for
// another preview; it waits for a write of the same tenant in progress and
// a write waits for it, so that the two compilations see the tenant at one
// moment; and, taken before fn inserts anything, it keeps a preview from
// deadlocking with a write, which takes the tenant lock first (else an
// insert's foreign key check could wait for the write's lock while the
// write waits for the insert's unique key). Other
// tenants' rows are never locked. On SQLite every write transaction is
// exclusive: a preview takes its turn as a write (sqlite.DB's writer queue,
// first come first served) and holds it for two compilations and fn.
func (p *Plane) changePreview(ctx context.Context, tenant model.TenantID, a *authz.Actor, pv *Previewing,
	fn func(q *Txn, t *model.Tenant, ev *Audit) error) error {
	return p.InTx(ctx, func(q *Txn) error {
		q.preview = true
		t, err := store.ShareTenant(ctx, q, tenant)
		if err != nil {
			return fmt.Errorf("reading tenant: %w", err)
		}
		before, _, err := p.compileAll(ctx, q, tenant)
		if err != nil {
			return err
		}
		if err := fn(q, t, p.NewAuditEvent(a, tenant)); err != nil {
			return err
		}
		return p.finishPreview(ctx, q, tenant, pv, before, q.previewed)
	})
}

// previews admits the previews this process runs (package fairgate): half
// its CPUs' worth at once (at least one), one per tenant, tenants taking
// turns, and each slot resting as long as its preview ran. So previews use
// at most about a quarter of the machine however many are asked for, and
// another tenant's preview waits for one preview per tenant ahead of it at
// most (docs/benchmarks.md, "Previews and other tenants' writes").
var previews = fairgate.New[model.TenantID](runtime.GOMAXPROCS(0) / 2)

// compileAll compiles every cluster of a tenant.
func (p *Plane) compileAll(ctx context.Context, q store.Querier, tenant model.TenantID) (map[model.ClusterID]desired.State, []*model.Cluster, error) {
	rows, err := store.LoadTenantRows(ctx, q, tenant, p.releases)
	if err != nil {
		return nil, nil, err
	}
	out := map[model.ClusterID]desired.State{}
	in := TenantInput(p.box, rows)
	for _, c := range rows.Clusters {
		out[c.ID] = p.compiler.Compile(ForCluster(in, c))
	}
	return out, rows.Clusters, nil
}

// finishPreview compares the states before and after a previewed change.
func (p *Plane) finishPreview(ctx context.Context, q store.Querier, tenant model.TenantID, pv *Previewing,
	before map[model.ClusterID]desired.State, previewed []PreviewedRelease) error {
	after, clusters, err := p.compileAll(ctx, q, tenant)
	if err != nil {
		return err
	}
	pv.changes = []ClusterChange{}
	for _, c := range clusters {
		cc := ClusterChange{Cluster: c, FromRevision: c.DesiredRevision, Diff: desired.Compare(before[c.ID], after[c.ID]),
			Releases: []PreviewedRelease{}}
		for _, r := range previewed {
			if r.cluster == c.ID {
				cc.Releases = append(cc.Releases, r)
			}
		}
		// A cluster is listed when what it runs changes: a release whose
		// deployment waits for an approval changes nothing yet.
		if cc.Diff.Empty() {
			continue
		}
		pv.changes = append(pv.changes, cc)
	}
	return errPreviewed
}
