package resolvers

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"github.com/nebulactrl/nebula/graph/gqlmodel"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/store"
)

// DefaultPage is the page size when `first` is omitted.
const DefaultPage = 20

// pageArgs validates first/after: first is 0..100, after a cursor we issued.
func pageArgs(first *int, after *string) (store.PageArgs, error) {
	pg := store.PageArgs{First: DefaultPage}
	if first != nil {
		if *first < 0 || *first > store.MaxPage {
			return pg, core.Invalid(fmt.Sprintf("first must be between 0 and %d, got %d", store.MaxPage, *first), "first")
		}
		pg.First = *first
	}
	if after != nil && *after != "" {
		raw, err := base64.RawURLEncoding.DecodeString(*after)
		if err != nil || len(raw) == 0 || len(raw) > 100 {
			return pg, core.Invalid("after is not a cursor this API issued", "after")
		}
		pg.After = string(raw)
	}
	return pg, nil
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
	info := &gqlmodel.PageInfo{HasNextPage: p.HasNext}
	if n := len(p.Items); n > 0 && reads.endCursor {
		c := cursor(id(p.Items[n-1]))
		info.EndCursor = &c
	}
	items := p.Items
	if items == nil {
		items = []*T{}
	}
	return mk(edges, items, info)
}

// connReads is what of a connection its selection reads beyond its nodes.
type connReads struct{ edges, hasNext, endCursor bool }

// connReadsOf reads it from the field being resolved; outside a GraphQL
// field, everything.
func connReadsOf(ctx context.Context) connReads {
	if graphql.GetFieldContext(ctx) == nil {
		return connReads{edges: true, hasNext: true, endCursor: true}
	}
	return connReadsIn(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, nil))
}

// connReadsIn reads it from the fields selected on a connection: edges
// when `edges` is selected, hasNext and the end cursor when `pageInfo`
// selects `hasNextPage` and `endCursor`.
func connReadsIn(op *graphql.OperationContext, fields []graphql.CollectedField) connReads {
	var r connReads
	for _, f := range fields {
		switch f.Name {
		case "edges":
			r.edges = true
		case "pageInfo":
			info := graphql.CollectFields(op, f.Selections, nil)
			r.hasNext = r.hasNext || selected(info, "hasNextPage")
			r.endCursor = r.endCursor || selected(info, "endCursor")
		}
	}
	return r
}

// pageOfSlice pages an in-memory list already in id order.
func pageOfSlice[T any](all []*T, id func(*T) string, pg store.PageArgs) store.Page[T] {
	start := 0
	if pg.After != "" {
		start = len(all)
		for i, it := range all {
			if id(it) > pg.After {
				start = i
				break
			}
		}
	}
	rest := all[start:]
	if len(rest) > pg.First {
		return store.Page[T]{Items: rest[:pg.First], HasNext: true}
	}
	return store.Page[T]{Items: rest}
}
