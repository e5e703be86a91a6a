package server

import (
	"context"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// The second response to an operation is written into a buffer reserved
// from the first one's size; another operation, or a subscription, gets
// no hint from it.
func TestResponseSizeHint(t *testing.T) {
	s := newResponseSizes()
	run := func(query string, kind ast.Operation, size int) int {
		op := &graphql.OperationContext{RawQuery: query, Operation: &ast.OperationDefinition{Operation: kind}}
		ctx := graphql.WithOperationContext(context.Background(), op)
		var hint int
		s.around(ctx, func(ctx context.Context) *graphql.Response {
			hint = graphql.GetOperationContext(ctx).ResponseSizeHint
			return &graphql.Response{Data: []byte(strings.Repeat("x", size))}
		})
		return hint
	}
	if h := run("{ a }", ast.Query, 40_000); h != 0 {
		t.Errorf("a first response got a hint of %d, want 0", h)
	}
	if h := run("{ a }", ast.Query, 40_000); h < 40_000 {
		t.Errorf("the second response to the same query got a hint of %d, want at least 40000", h)
	}
	if h := run("{ b }", ast.Query, 10); h != 0 {
		t.Errorf("another query got a hint of %d, want 0", h)
	}
	run("subscription { s }", ast.Subscription, 500)
	if h := run("subscription { s }", ast.Subscription, 500); h != 0 {
		t.Errorf("a subscription got a hint of %d, want 0", h)
	}
}
