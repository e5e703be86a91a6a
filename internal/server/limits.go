package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

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

// depth is the deepest chain of fields in set, fragments expanded. Each
// fragment's depth is computed once: expanding a fragment at every spread
// is exponential in a document whose fragments spread each other twice.
func depth(set ast.SelectionSet, frags ast.FragmentDefinitionList) int {
	d := depther{frags: make(map[string]*ast.FragmentDefinition, len(frags)), memo: map[string]int{}}
	for _, f := range frags {
		if _, dup := d.frags[f.Name]; !dup {
			d.frags[f.Name] = f
		}
	}
	return d.of(set)
}

type depther struct {
	frags map[string]*ast.FragmentDefinition
	// memo holds each fragment's depth, or counting while it is measured
	// (a cycle, which validation has refused before this runs).
	memo map[string]int
}

func (d depther) of(set ast.SelectionSet) int {
	deepest := 0
	for _, sel := range set {
		var n int
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.Name) > 1 && s.Name[:2] == "__" {
				continue
			}
			n = 1 + d.of(s.SelectionSet)
		case *ast.InlineFragment:
			n = d.of(s.SelectionSet)
		case *ast.FragmentSpread:
			n = d.fragment(s.Name)
		}
		if n > deepest {
			deepest = n
		}
	}
	return deepest
}

func (d depther) fragment(name string) int {
	if n, ok := d.memo[name]; ok {
		return max(n, 0)
	}
	f := d.frags[name]
	if f == nil {
		return 0
	}
	d.memo[name] = counting
	n := d.of(f.SelectionSet)
	d.memo[name] = n
	return n
}

// previewLimit refuses, before it runs, a query that asks for more than
// max previews (every Query field named preview…): each runs a mutation's
// code and compiles its tenant's clusters twice, and gqlgen runs a query's
// fields at once, so aliases would multiply one request's work at will.
type previewLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = previewLimit{}

func (previewLimit) ExtensionName() string                   { return "PreviewLimit" }
func (previewLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (l previewLimit) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || op.Operation.Operation != ast.Query {
		return nil
	}
	n := 0
	// As execution collects them: fragments expanded, @skip and @include
	// applied, fields of one response name run once.
	for _, f := range graphql.CollectFields(op, op.Operation.SelectionSet, []string{"Query"}) {
		if strings.HasPrefix(f.Name, "preview") {
			n++
		}
	}
	if n > l.max {
		return badInput(fmt.Sprintf("the query asks for %d previews; one request may run at most %d: "+
			"send the others in further requests", n, l.max))
	}
	return nil
}

// rulesWithoutSuggestions are gqlparser's validation rules with every rule
// that suggests names ("Did you mean …?") replaced by its silent variant.
// gqlgen's SetDisableSuggestion swaps only two of them.
func rulesWithoutSuggestions() *rules.Rules {
	r := rules.NewDefaultRules()
	for _, silent := range []core.Rule{
		rules.FieldsOnCorrectTypeRuleWithoutSuggestions,
		rules.KnownArgumentNamesRuleWithoutSuggestions,
		rules.KnownTypeNamesRuleWithoutSuggestions,
		rules.ScalarLeafsRuleWithoutSuggestions,
		rules.ValuesOfCorrectTypeRuleWithoutSuggestions,
	} {
		r.RemoveRule(strings.TrimSuffix(silent.Name, "WithoutSuggestions"))
		r.AddRule(silent.Name, silent.RuleFunc)
	}
	return r
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
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
	c.Member.APITokens = page
	return c
}
