package server

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/graph/gqlmodel"
)

// depthLimit refuses operations nested deeper than max fields.
// Introspection fields are not counted: tools need them and their cost is
// bounded by the schema.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	if got := depth(op.Operation.SelectionSet, op.Doc.Fragments); got > d.max {
		return &gqlerror.Error{
			Message:    fmt.Sprintf("query depth %d exceeds the limit of %d", got, d.max),
			Extensions: map[string]any{"code": "BAD_USER_INPUT"},
		}
	}
	return nil
}

func depth(set ast.SelectionSet, frags ast.FragmentDefinitionList) int {
	max := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.Name) > 1 && s.Name[:2] == "__" {
				continue
			}
			d = 1 + depth(s.SelectionSet, frags)
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, frags)
		case *ast.FragmentSpread:
			if f := frags.ForName(s.Name); f != nil {
				d = depth(f.SelectionSet, frags)
			}
		}
		if d > max {
			max = d
		}
	}
	return max
}

// complexity prices every connection field by the page it asks for, so that
// the complexity limit bounds the rows a query can read.
func complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	page := func(child int, first *int, _ *string) int {
		n := 20
		if first != nil && *first >= 0 {
			n = *first
		}
		return 1 + n*child
	}
	c.Tenant.Members = page
	c.Tenant.Projects = page
	c.Tenant.Clusters = page
	c.Tenant.AuditEvents = func(child int, first *int, after *string, _ *gqlmodel.AuditEventFilter) int {
		return page(child, first, after)
	}
	c.Project.Members = page
	c.Project.Environments = page
	c.Project.Services = page
	c.Environment.EligibleClusters = page
	c.Environment.EligibleNamespaceTargets = page
	c.Environment.Deployments = page
	c.Cluster.NamespaceTargets = page
	c.Cluster.Commands = page
	c.Service.Releases = func(child int, first *int, after *string, _ *string) int { return page(child, first, after) }
	c.Viewer.Tenants = page
	c.Viewer.APITokens = page
	return c
}
