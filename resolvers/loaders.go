package resolvers

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vikstrous/dataloadgen"

	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Two ways keep a nested query at a fixed number of SQL queries:
//
//   - Child lists (a project's environments, an environment's deployments)
//     are prefetched: when a parent list resolves, it looks ahead at the
//     selection, loads the children of every parent in one query with the
//     arguments the query asks for, and leaves the pages in a per-operation
//     cache that the child resolvers read. This is deterministic: no timing
//     decides how many queries run.
//   - References by id (a deployment's release, a release's creator) go
//     through dataloaders that batch the ids asked for within a short window,
//     and are primed by the prefetch where it can see them coming.

const batchWait = 2 * time.Millisecond

type loaders struct {
	plane        *control.Plane
	users        *dataloadgen.Loader[people.UserIn, *model.User]
	tenants      *dataloadgen.Loader[model.TenantID, *model.Tenant]
	projects     *dataloadgen.Loader[model.ProjectID, *model.Project]
	environments *dataloadgen.Loader[model.EnvironmentID, *model.Environment]
	clusters     *dataloadgen.Loader[model.ClusterID, *model.Cluster]
	services     *dataloadgen.Loader[model.ServiceID, *model.Service]
	releases     *dataloadgen.Loader[model.ReleaseID, *model.Release]
	webhooks     *dataloadgen.Loader[model.WebhookID, *model.Webhook]
	deliveries   *dataloadgen.Loader[model.WebhookDeliveryID, *model.WebhookDelivery]
	builds       *dataloadgen.Loader[model.BuildID, *model.Build]

	envPages pageCache[model.Environment]
	svcPages pageCache[model.Service]
	depPages pageCache[model.Deployment]
	// later holds the prefetches left for streamed items (streamed.go).
	later laterPrimes

	// releaseHeads are releases read with the deployments prefetched,
	// some of their columns (plan.go): they serve a deployment's release
	// only to a selection that reads no other column.
	headsMu      sync.Mutex
	releaseHeads map[model.ReleaseID]releaseHead
}

type releaseHead struct {
	r    *model.Release
	cols store.Cols
}

type loadersKey struct{}

// Loaders returns the operation middleware that gives each operation its
// own loaders: a cache never outlives the request whose actor filled it.
func Loaders(plane *control.Plane) graphql.OperationMiddleware {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		// A subscription lives long and sends many updates: loaders kept for
		// its whole life would serve stale objects. Its fields load on
		// their own (loadersFrom makes loaders per call).
		if op := graphql.GetOperationContext(ctx); op != nil && op.Operation != nil && op.Operation.Operation == ast.Subscription {
			return next(ctx)
		}
		return next(context.WithValue(ctx, loadersKey{}, newLoaders(plane)))
	}
}

func newLoaders(p *control.Plane) *loaders {
	w := dataloadgen.WithWait(batchWait)
	return &loaders{
		plane:        p,
		users:        dataloadgen.NewMappedLoader(p.People.UsersIn, w),
		tenants:      dataloadgen.NewMappedLoader(p.People.TenantsByIDs, w),
		projects:     dataloadgen.NewMappedLoader(p.Delivery.ProjectsByIDs, w),
		environments: dataloadgen.NewMappedLoader(p.Delivery.EnvironmentsByIDs, w),
		clusters:     dataloadgen.NewMappedLoader(p.Clusters.ClustersByIDs, w),
		services:     dataloadgen.NewMappedLoader(p.Delivery.ServicesByIDs, w),
		releases:     dataloadgen.NewMappedLoader(p.Delivery.ReleasesByIDs, w),
		webhooks:     dataloadgen.NewMappedLoader(p.Builds.WebhooksByIDs, w),
		deliveries:   dataloadgen.NewMappedLoader(p.Builds.DeliveriesByIDs, w),
		builds:       dataloadgen.NewMappedLoader(p.Builds.BuildsByIDs, w),
	}
}

func loadersFrom(ctx context.Context, p *control.Plane) *loaders {
	if l, ok := ctx.Value(loadersKey{}).(*loaders); ok {
		return l
	}
	// Callers outside an operation (tests of single resolvers) still work.
	return newLoaders(p)
}

// load reads one referenced object; a missing or invisible one is
// store.ErrNotFound.
func load[K comparable, V any](ctx context.Context, l *dataloadgen.Loader[K, *V], id K) (*V, error) {
	v, err := l.Load(ctx, id)
	if errors.Is(err, dataloadgen.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	return v, err
}

// userIn reads a user an object of tenant refers to, as tenant knows them;
// nil when id is nil or the user is not visible.
func userIn(ctx context.Context, p *control.Plane, tenant model.TenantID, id *model.UserID) (*model.User, error) {
	if id == nil {
		return nil, nil
	}
	return loadOptional(ctx, loadersFrom(ctx, p).users, &people.UserIn{Tenant: tenant, User: *id})
}

// loadOptional reads an optional reference: nil when unset or not visible.
func loadOptional[K comparable, V any](ctx context.Context, l *dataloadgen.Loader[K, *V], id *K) (*V, error) {
	if id == nil {
		return nil, nil
	}
	v, err := load(ctx, l, *id)
	if core.IsNotFound(err) {
		return nil, nil
	}
	return v, err
}

// loadAll reads referenced objects in order, leaving out those missing or
// invisible to the caller.
func loadAll[K comparable, V any](ctx context.Context, l *dataloadgen.Loader[K, *V], ids []K) ([]*V, error) {
	out := make([]*V, 0, len(ids))
	for _, id := range ids {
		v, err := loadOptional(ctx, l, &id)
		if err != nil {
			return nil, err
		}
		if v != nil {
			out = append(out, v)
		}
	}
	return out, nil
}

// pageKey names how a set of pages was read: the page arguments and the
// rows' columns read (plan.go).
type pageKey struct {
	pg   store.PageArgs
	cols store.Cols
}

// pageCache holds prefetched child pages for one operation: for each way
// they were read, the pages by parent. A read's map is kept as the store
// returned it, not copied entry by entry.
type pageCache[T any] struct {
	mu sync.Mutex
	m  map[pageKey]map[string]store.Page[T]
}

func (c *pageCache[T]) get(parent string, pg store.PageArgs, cols store.Cols) (store.Page[T], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[pageKey{pg, cols}][parent]
	return p, ok
}

// put keeps pages read with pg, of rows read whole (cols 0) or in part, and
// returns their items. The cache owns pages from then on.
func (c *pageCache[T]) put(pages map[string]store.Page[T], pg store.PageArgs, cols store.Cols) []*T {
	n := 0
	for _, p := range pages {
		n += len(p.Items)
	}
	all := make([]*T, 0, n)
	for _, p := range pages {
		all = append(all, p.Items...)
	}
	key := pageKey{pg, cols}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[pageKey]map[string]store.Page[T]{}
	}
	if kept, ok := c.m[key]; ok {
		maps.Copy(kept, pages)
	} else {
		c.m[key] = pages
	}
	return all
}

// nodeFields returns the fields selected on the nodes of the connection
// field f (through both `nodes` and `edges { node }`).
func nodeFields(op *graphql.OperationContext, sel []graphql.CollectedField) []graphql.CollectedField {
	var out []graphql.CollectedField
	for fields := range nodeSelections(op, sel) {
		out = append(out, fields...)
	}
	return out
}

// nodeSelections yields each selection on the nodes of a connection whose
// fields are sel: that of `nodes`, and that of each `edges { node }`.
func nodeSelections(op *graphql.OperationContext, sel []graphql.CollectedField) iter.Seq[[]graphql.CollectedField] {
	return func(yield func([]graphql.CollectedField) bool) {
		for _, f := range sel {
			switch f.Name {
			case "nodes":
				if !yield(graphql.CollectFields(op, f.Selections, nil)) {
					return
				}
			case "edges":
				for _, e := range graphql.CollectFields(op, f.Selections, nil) {
					if e.Name == "node" && !yield(graphql.CollectFields(op, e.Selections, nil)) {
						return
					}
				}
			}
		}
	}
}

// nodeFieldsOf is nodeFields of the connection field at ctx.
func nodeFieldsOf(ctx context.Context) []graphql.CollectedField {
	return nodeFields(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, nil))
}

// childPage is a prefetched child connection of a list's items: its page,
// the fields selected on its nodes, and whether it is in a @defer'd
// fragment.
type childPage struct {
	pg       store.PageArgs
	fields   []graphql.CollectedField
	deferred bool
}

// childPages finds the fields called name among fields and returns, for
// each, its validated page arguments and the fields selected on its nodes.
func childPages(op *graphql.OperationContext, fields []graphql.CollectedField, name string) (out []childPage) {
	for _, f := range fields {
		if f.Name != name {
			continue
		}
		args := f.ArgumentMap(op.Variables)
		pg, err := pageArgs(intArg(args["first"]), strArg(args["after"]), intArg(args["last"]), strArg(args["before"]))
		if err != nil {
			continue // the resolver reports it
		}
		sel := graphql.CollectFields(op, f.Selections, nil)
		pg.NoNext = !connReadsIn(op, sel).more
		out = append(out, childPage{pg, nodeFields(op, sel), f.IsDeferred()})
	}
	return out
}

// childPageArgs validates the arguments of a prefetched child connection
// the way its prefetch did (childPages), so that the two find one page.
func childPageArgs(ctx context.Context, first *int, after *string, last *int, before *string) (store.PageArgs, error) {
	pg, err := pageArgs(first, after, last, before)
	if err != nil {
		return pg, err
	}
	pg.NoNext = !connReadsOf(ctx).more
	return pg, nil
}

func intArg(v any) *int {
	var n int
	switch x := v.(type) {
	case int:
		n = x
	case int64:
		n = int(x)
	case float64:
		n = int(x)
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return nil
		}
		n = int(i)
	default:
		return nil
	}
	return &n
}

func strArg(v any) *string {
	if s, ok := v.(string); ok {
		return &s
	}
	return nil
}

func selected(fields []graphql.CollectedField, name string) bool {
	_, ok := field(fields, name)
	return ok
}

// field is the first of fields called name.
func field(fields []graphql.CollectedField, name string) (graphql.CollectedField, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return graphql.CollectedField{}, false
}

// primeProjects prefetches what the selection asks of each project.
// Errors are left for the child resolvers to meet and report.
func (l *loaders) primeProjects(ctx context.Context, projects []*model.Project) {
	if len(projects) == 0 {
		return
	}
	op := graphql.GetOperationContext(ctx)
	fields := nodeFields(op, graphql.CollectFieldsCtx(ctx, nil))
	scopes := make([]model.Scope, len(projects))
	for i, p := range projects {
		scopes[i] = p.Scope()
	}
	var ids []string // of the projects, once a deferred child needs them
	prime := func(c childPage, read func()) {
		if !c.deferred {
			read()
			return
		}
		// In a @defer'd fragment: read after the first part, by the first
		// fragment that needs it, for every project (streamed.go).
		if ids == nil {
			ids = make([]string, len(projects))
			for i, p := range projects {
				ids[i] = string(p.ID)
			}
		}
		l.later.primeLater(ids, read)
	}
	for _, c := range childPages(op, fields, "environments") {
		prime(c, func() {
			if pages, err := l.plane.Delivery.EnvironmentsOf(ctx, scopes, c.pg); err == nil {
				l.primeEnvironments(ctx, op, l.envPages.put(pages, c.pg, 0), c.fields)
			}
		})
	}
	for _, c := range childPages(op, fields, "services") {
		prime(c, func() {
			if pages, err := l.plane.Delivery.ServicesOf(ctx, scopes, c.pg); err == nil {
				l.svcPages.put(pages, c.pg, 0)
			}
		})
	}
}

func (l *loaders) primeEnvironments(ctx context.Context, op *graphql.OperationContext, envs []*model.Environment, fields []graphql.CollectedField) {
	if len(envs) == 0 {
		return
	}
	scopes := make([]model.Scope, len(envs))
	ids := make([]model.EnvironmentID, len(envs))
	for i, e := range envs {
		scopes[i], ids[i] = e.Scope(), e.ID
		// Already authorized through their project: references to them
		// (a deployment's environment) need no second read.
		l.environments.Prime(e.ID, e)
	}
	for _, c := range childPages(op, fields, "deployments") {
		cols := deploymentCols(c.fields)
		release, ok := field(c.fields, "release")
		if !ok {
			pages, err := l.plane.Delivery.DeploymentsOf(ctx, scopes, ids, c.pg, cols)
			if err == nil {
				l.depPages.put(pages, c.pg, cols)
			}
			continue
		}
		// The releases in the same statement, only the columns their
		// selection reads (the configuration only for processes or
		// domains).
		rcols := releaseCols(graphql.CollectFields(op, release.Selections, nil))
		pages, rels, err := l.plane.Delivery.DeploymentsWithReleasesOf(ctx, scopes, ids, c.pg, cols, rcols)
		if err != nil {
			continue
		}
		l.depPages.put(pages, c.pg, cols)
		if rcols == 0 {
			for id, r := range rels {
				l.releases.Prime(id, r)
			}
			continue
		}
		l.headsMu.Lock()
		if l.releaseHeads == nil {
			l.releaseHeads = map[model.ReleaseID]releaseHead{}
		}
		for id, r := range rels {
			l.releaseHeads[id] = releaseHead{r, rcols}
		}
		l.headsMu.Unlock()
	}
}

// release is a deployment's release for the field being resolved: the
// prefetched one when it was read with the columns the field's selection
// reads, else the whole release through the loader.
func (l *loaders) release(ctx context.Context, id model.ReleaseID) (*model.Release, error) {
	l.headsMu.Lock()
	h := l.releaseHeads[id]
	l.headsMu.Unlock()
	if h.r != nil {
		if need := releaseCols(graphql.CollectFieldsCtx(ctx, nil)); need != 0 && need&h.cols == need {
			return h.r, nil
		}
	}
	return load(ctx, l.releases, id)
}
