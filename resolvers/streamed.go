package resolvers

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Reading children later. A connection whose nodes (or edges) are streamed (@stream, third_party/
// gqlgen patch 14) writes its first initialCount items with the first part
// and the others after. Its prefetch follows: the children of the first
// items are read before the first part, as for any list; those of the
// others are left for later (primeLater), read in one batch by the first
// of their resolvers to miss the cache, while the first part is already
// on its way. Read all at once, they would hold the first part back for
// items it does not carry. The same for a child list in a @defer'd
// fragment (primeProjects): read by the first deferred fragment to need
// it, for every parent, after the first part.

// streamedAfter tells how many of a connection's length items the field
// at ctx writes before it streams the rest: its nodes' or edges' @stream
// initialCount, when the operation is a query, the directive's if is not
// false and the list is longer. false when nothing streams.
func streamedAfter(ctx context.Context, length int) (int, bool) {
	op := graphql.GetOperationContext(ctx)
	if op.Operation == nil || op.Operation.Operation != ast.Query {
		return 0, false
	}
	first, streams := length, false
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		if f.Name != "nodes" && f.Name != "edges" {
			continue
		}
		d := f.Directives.ForName("stream")
		if d == nil {
			return 0, false // a list of the same items written whole: it reads them all
		}
		n, _, on := graphql.StreamArgs(d, op.Variables)
		if !on {
			return 0, false
		}
		first, streams = min(first, n), true
	}
	return first, streams && first < length
}

// later is a prefetch left for a streamed list's later items, or for the
// children a deferred fragment reads.
type later struct {
	once sync.Once
	run  func()
}

// laterPrimes holds the prefetches left for later, by the id of each
// parent they cover.
type laterPrimes struct {
	mu sync.Mutex
	by map[string][]*later
}

// primeLater leaves run, the prefetch of the children of the parents ids,
// for the first of those children's resolvers that misses the cache.
func (p *laterPrimes) primeLater(ids []string, run func()) {
	l := &later{run: run}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = make(map[string][]*later, len(ids))
	}
	for _, id := range ids {
		p.by[id] = append(p.by[id], l)
	}
}

// primedLater runs the prefetches left for parent id, each once for all
// the parents it covers (a concurrent caller waits for it), those they
// leave in turn included, and tells whether there was one: the caller
// then looks in the cache again.
func (p *laterPrimes) primedLater(id string) bool {
	ran := false
	for i := 0; ; i++ {
		p.mu.Lock()
		ls := p.by[id]
		p.mu.Unlock()
		if i >= len(ls) {
			return ran
		}
		ls[i].once.Do(ls[i].run)
		ran = true
	}
}
