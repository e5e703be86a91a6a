package resolvers

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/nebulactrl/nebula/graph/gqlmodel"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/store"
)

// DefaultPage is the page size when `first` is omitted.
const DefaultPage = 20

// pageArgs validates a connection's arguments: first (with after) pages
// forwards, last (with before) backwards, each 0..100 and never both;
// after and before are cursors this API issued, and may bound a page
// together.
func pageArgs(first *int, after *string, last *int, before *string) (store.PageArgs, error) {
	return pageArgsUpTo(first, after, last, before, DefaultPage, store.MaxPage)
}

// pageArgsUpTo is pageArgs for a list whose pages hold up to most items
// (logs: 1,000), def when neither first nor last is given.
func pageArgsUpTo(first *int, after *string, last *int, before *string, def, most int) (store.PageArgs, error) {
	return pageArgsOf(first, after, last, before, def, most, maxCursor)
}

// pageArgsByName is pageArgs for a list keyed by names, not ids (a
// cluster's nodes and workloads, from its agent's report): a cursor holds
// up to maxNameCursor bytes, as a namespace and a Kubernetes name do.
func pageArgsByName(first *int, after *string, last *int, before *string) (store.PageArgs, error) {
	return pageArgsOf(first, after, last, before, DefaultPage, store.MaxPage, maxNameCursor)
}

// A cursor holds up to maxCursor bytes: an id, a number; up to
// maxNameCursor for a namespace and a name (63 and 253 bytes, a separator).
const (
	maxCursor     = 100
	maxNameCursor = 320
)

func pageArgsOf(first *int, after *string, last *int, before *string, def, most, cursorMax int) (store.PageArgs, error) {
	pg := store.PageArgs{First: def}
	if first != nil && last != nil {
		return pg, core.Invalid("first and last cannot both be given: page forwards with first (and after) or backwards with last (and before)", "last")
	}
	n, name := first, "first"
	if last != nil {
		n, name = last, "last"
	}
	if n != nil {
		if *n < 0 || *n > most {
			return pg, core.Invalid(fmt.Sprintf("%s must be between 0 and %d, got %d", name, most, *n), name)
		}
		pg.First = *n
	}
	var err error
	if pg.After, err = decodeCursorUpTo(after, "after", cursorMax); err != nil {
		return pg, err
	}
	if pg.Before, err = decodeCursorUpTo(before, "before", cursorMax); err != nil {
		return pg, err
	}
	pg.FromEnd = last != nil || first == nil && pg.Before != ""
	return pg, nil
}

// decodeCursor reads a cursor argument: "" for none.
func decodeCursor(c *string, name string) (string, error) {
	return decodeCursorUpTo(c, name, maxCursor)
}

// decodeCursorUpTo is decodeCursor for a cursor of up to most bytes.
func decodeCursorUpTo(c *string, name string, most int) (string, error) {
	if c == nil || *c == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(*c)
	if err != nil || len(raw) == 0 || len(raw) > most {
		return "", core.Invalid(name+" is not a cursor this API issued", name)
	}
	return string(raw), nil
}

// numberCursors checks that pg's cursors are those of a list of numbered
// items (log lines, drifts, a deployment's events): prefix and a number,
// 1 or more. It returns pg with the bare numbers, as the store reads them.
func numberCursors(pg store.PageArgs, prefix string) (store.PageArgs, error) {
	var err error
	if pg.After, err = bareNumber(pg.After, prefix, "after"); err != nil {
		return pg, err
	}
	pg.Before, err = bareNumber(pg.Before, prefix, "before")
	return pg, err
}

// bareNumber is the number of cursor c (decoded; "" for none) of
// argument name.
func bareNumber(c, prefix, name string) (string, error) {
	if c == "" {
		return "", nil
	}
	n, ok := strings.CutPrefix(c, prefix)
	if v, err := strconv.ParseInt(n, 10, 64); !ok || err != nil || v < 1 || strconv.FormatInt(v, 10) != n {
		return "", core.Invalid(name+" is not a cursor this API issued", name)
	}
	return n, nil
}

func cursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// conn builds a connection from a page: mk assembles the generated
// connection type from edges, nodes and page info. Edges and the end
// cursor are made only when the connection's selection reads them (a
// cursor is an encoding per item); outside a GraphQL field, all are.
func conn[T, E, C any](ctx context.Context, p store.Page[T], id func(*T) string, edge func(string, *T) *E, mk func([]*E, []*T, *gqlmodel.PageInfo) *C) *C {
	reads := connReadsOf(ctx)
	var edges []*E
	if reads.edges {
		edges = make([]*E, len(p.Items))
		for i, it := range p.Items {
			edges[i] = edge(cursor(id(it)), it)
		}
	}
	info := &gqlmodel.PageInfo{HasNextPage: p.HasNext, HasPreviousPage: p.HasPrevious}
	if n := len(p.Items); n > 0 && reads.cursors {
		start, end := cursor(id(p.Items[0])), cursor(id(p.Items[n-1]))
		info.StartCursor, info.EndCursor = &start, &end
	}
	items := p.Items
	if items == nil {
		items = []*T{}
	}
	return mk(edges, items, info)
}

// connReads is what of a connection its selection reads beyond its nodes:
// its edges, whether there is more (hasNextPage or hasPreviousPage) and
// its cursors.
type connReads struct{ edges, more, cursors bool }

// connReadsOf reads it from the field being resolved; outside a GraphQL
// field, everything.
func connReadsOf(ctx context.Context) connReads {
	if graphql.GetFieldContext(ctx) == nil {
		return connReads{edges: true, more: true, cursors: true}
	}
	return connReadsIn(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, nil))
}

// connReadsIn reads it from the fields selected on a connection.
func connReadsIn(op *graphql.OperationContext, fields []graphql.CollectedField) connReads {
	var r connReads
	for _, f := range fields {
		switch f.Name {
		case "edges":
			r.edges = true
		case "pageInfo":
			info := graphql.CollectFields(op, f.Selections, nil)
			r.more = r.more || selected(info, "hasNextPage") || selected(info, "hasPreviousPage")
			r.cursors = r.cursors || selected(info, "endCursor") || selected(info, "startCursor")
		}
	}
	return r
}

// pageOfAll pages a whole list read in memory (a short one: a cluster's
// connect tokens, a project's webhooks), put in id order first: oldest
// first, as ids are time-ordered.
func pageOfAll[T any](all []*T, id func(*T) string, pg store.PageArgs) store.Page[T] {
	sorted := slices.SortedFunc(slices.Values(all), func(a, b *T) int { return strings.Compare(id(a), id(b)) })
	return pageOfSlice(sorted, id, pg)
}

// pageOfSlice pages an in-memory list already in id order.
func pageOfSlice[T any](all []*T, id func(*T) string, pg store.PageArgs) store.Page[T] {
	start, end := 0, len(all)
	if pg.After != "" {
		start = len(all)
		for i, it := range all {
			if id(it) > pg.After {
				start = i
				break
			}
		}
	}
	if pg.Before != "" {
		end = start
		for end < len(all) && id(all[end]) < pg.Before {
			end++
		}
	}
	rest := all[start:max(start, end)]
	switch {
	case len(rest) <= pg.First:
		return store.Page[T]{Items: rest}
	case pg.FromEnd:
		return store.Page[T]{Items: rest[len(rest)-pg.First:], HasPrevious: true}
	}
	return store.Page[T]{Items: rest[:pg.First], HasNext: true}
}
