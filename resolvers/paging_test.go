package resolvers

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A connection builds its edges and its end cursor only for a selection
// that reads them, through aliases, fragments and @skip alike; without a
// field (a call from outside GraphQL) it builds everything.
func TestConnBuildsWhatTheSelectionReads(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &Resolver{}}).Schema()
	page := store.Page[model.Deployment]{Items: []*model.Deployment{{ID: "d1"}, {ID: "d2"}}, HasNext: true}
	for _, tc := range []struct {
		sel              string
		edges, endCursor bool
	}{
		{`nodes { id }`, false, false},
		{`nodes { id } pageInfo { hasNextPage }`, false, false},
		{`edges { cursor }`, true, false},
		{`e: edges { node { id } }`, true, false},
		{`pageInfo { endCursor }`, false, true},
		{`... on DeploymentConnection { edges { cursor } pageInfo { ... on PageInfo { end: endCursor } } }`, true, true},
		{`nodes { id } edges @skip(if: true) { cursor }`, false, false},
	} {
		t.Run(tc.sel, func(t *testing.T) {
			query := `{ node(id: "x") { ... on Environment { deployments { ` + tc.sel + ` } } } }`
			doc, errs := gqlparser.LoadQuery(schema, query)
			if errs != nil {
				t.Fatal(errs)
			}
			env := doc.Operations[0].SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.InlineFragment)
			deployments := env.SelectionSet[0].(*ast.Field)
			oc := &graphql.OperationContext{RawQuery: query, Doc: doc, Operation: doc.Operations[0], Variables: map[string]any{}}
			ctx := graphql.WithOperationContext(context.Background(), oc)
			ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "Environment",
				Field: graphql.CollectedField{Field: deployments, Selections: deployments.SelectionSet}})

			c := deploymentConn(ctx, page)
			if got := c.Edges != nil; got != tc.edges {
				t.Errorf("edges built: %v, want %v", got, tc.edges)
			}
			if got := c.PageInfo.EndCursor != nil; got != tc.endCursor {
				t.Errorf("end cursor built: %v, want %v", got, tc.endCursor)
			}
			if len(c.Nodes) != 2 || !c.PageInfo.HasNextPage {
				t.Errorf("got %d nodes and hasNextPage %v, want 2 and true", len(c.Nodes), c.PageInfo.HasNextPage)
			}
			if tc.edges && (len(c.Edges) != 2 || c.Edges[1].Cursor != cursor("d2")) {
				t.Errorf("got edges %+v, want the two with their cursors", c.Edges)
			}
		})
	}
	all := deploymentConn(context.Background(), page)
	if len(all.Edges) != 2 || all.PageInfo.EndCursor == nil || *all.PageInfo.EndCursor != cursor("d2") {
		t.Errorf("outside a field: got %+v, want the edges and the end cursor", all)
	}
}
