package core

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// ClusterChange is what a previewed change would do to one cluster.
type ClusterChange struct {
	Cluster      *model.Cluster
	FromRevision int64
	desired.Diff
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
	leave, err := previews.enter(ctx, lane)
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
		return p.finishPreview(ctx, q, tenant, pv, before)
	})
}

// previews admits the previews this process runs: half its CPUs' worth
// at once (at least one), one per tenant, tenants taking turns, and each
// slot resting as long as its preview ran. So previews use at most about a
// quarter of the machine however many are asked for, and another tenant's
// preview waits for one preview per tenant ahead of it at most
// (docs/benchmarks.md, "Previews and other tenants' writes").
var previews = newGate(max(1, runtime.GOMAXPROCS(0)/2))

// gate admits at most n holders at once and one per tenant. A tenant's
// callers queue in their own lane and only the head of each lane waits for
// a slot, so the slots go round the tenants in order of arrival: one tenant
// with a hundred waiting previews delays another's by one preview. A slot
// given back rests as long as it was held before it admits the next.
type gate struct {
	slots chan struct{}
	mu    sync.Mutex
	lanes map[model.TenantID]*lane
}

type lane struct {
	head  chan struct{} // held by the tenant's caller that waits for or holds a slot
	users int
}

func newGate(n int) *gate {
	return &gate{slots: make(chan struct{}, n), lanes: map[model.TenantID]*lane{}}
}

// enter waits for the tenant's turn and a slot, or for ctx to end; leave
// gives both back.
func (g *gate) enter(ctx context.Context, tenant model.TenantID) (leave func(), err error) {
	g.mu.Lock()
	l := g.lanes[tenant]
	if l == nil {
		l = &lane{head: make(chan struct{}, 1)}
		g.lanes[tenant] = l
	}
	l.users++
	g.mu.Unlock()
	done := func() {
		g.mu.Lock()
		if l.users--; l.users == 0 {
			delete(g.lanes, tenant)
		}
		g.mu.Unlock()
	}
	select {
	case l.head <- struct{}{}:
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		<-l.head
		done()
		return nil, ctx.Err()
	}
	start := time.Now()
	return func() {
		<-l.head
		done()
		// The slot rests as long as it worked before the next preview
		// may take it: previews get at most half its time, the rest is
		// left to other requests. The timer owns the slot until then.
		time.AfterFunc(time.Since(start), func() { <-g.slots })
	}, nil
}

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
func (p *Plane) finishPreview(ctx context.Context, q store.Querier, tenant model.TenantID, pv *Previewing, before map[model.ClusterID]desired.State) error {
	after, clusters, err := p.compileAll(ctx, q, tenant)
	if err != nil {
		return err
	}
	pv.changes = []ClusterChange{}
	for _, c := range clusters {
		d := desired.Compare(before[c.ID], after[c.ID])
		if d.Empty() {
			continue
		}
		pv.changes = append(pv.changes, ClusterChange{Cluster: c, FromRevision: c.DesiredRevision, Diff: d})
	}
	return errPreviewed
}
