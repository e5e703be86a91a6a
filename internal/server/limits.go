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
	"github.com/nebulactrl/nebula/internal/model"
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
			n = level(s) + d.of(s.SelectionSet)
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

// level is what a field adds to the depth: one, except a connection's
// edges and an edge's node, which only spell out the connection's nodes
// (edges { node { … } } is as deep as nodes { … }).
func level(f *ast.Field) int {
	if f.ObjectDefinition == nil {
		return 1
	}
	switch typ := f.ObjectDefinition.Name; {
	case f.Name == "edges" && strings.HasSuffix(typ, "Connection"),
		f.Name == "node" && strings.HasSuffix(typ, "Edge"):
		return 0
	}
	return 1
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

// changeSetPreviewCost is the price of one ChangeSet.preview: at the
// default NEBULA_MAX_COMPLEXITY (250,000) a request may ask for four.
const changeSetPreviewCost = 50_000

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

// Weights of the fields whose values are large text, in rows: a field costs
// 1 by default, what a row of a page costs. A log line is up to 64 KiB, an
// event's or a webhook message's text a few KiB, a revision's state or diff
// the whole compiled state of a cluster (a megabyte at 1,000 services).
const (
	costLine     = 10
	costMessage  = 5
	costDocument = 1000
)

// complexity prices every list field by the page it asks for (first, or
// last, or its default, times what one element costs), so that the
// complexity limit bounds the rows and bytes a query can read; fields that
// hold large text are weighted. Every list the schema has is here:
// TestEveryListIsPriced fails for one that is not.
func complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	// per is a page of n elements of cost child.
	per := func(child, n int) int { return 1 + max(n, 0)*child }
	size := func(first *int, def int) int {
		if first != nil && *first >= 0 {
			return *first
		}
		return def
	}
	// A connection pages forwards (first) or backwards (last), never both.
	page := func(child int, first *int, _ *string, last *int, _ *string) int {
		return per(child, size(first, size(last, 20)))
	}
	// A connection of log lines or of a deployment's events: 100 by
	// default, up to 1,000.
	linePage := func(child int, first *int, _ *string, last *int, _ *string) int {
		return per(child, size(first, size(last, 100)))
	}
	c.Tenant.Members = page
	c.Tenant.Projects = page
	c.Tenant.Clusters = page
	c.Tenant.AuditEvents = func(child int, first *int, after *string, last *int, before *string, _ *gqlmodel.AuditEventFilter) int {
		return page(child, first, after, last, before)
	}
	c.Tenant.ApprovalQueue = page
	c.Tenant.DeploymentsUnderWay = page
	c.Tenant.Invitations = page
	c.Tenant.WebhookEndpoints = page
	c.Project.WebhookEndpoints = page
	c.Project.Webhooks = page
	c.Cluster.ConnectTokens = page
	c.ClusterInventory.Nodes = page
	c.ClusterInventory.Workloads = page
	c.ChangeSet.Comments = page
	c.Project.Members = page
	c.Project.Environments = page
	c.Project.Services = page
	c.Project.ChangeSets = func(child int, _ []model.ChangeSetState, first *int, after *string, last *int, before *string) int {
		return page(child, first, after, last, before)
	}
	// A change set's preview applies the set in a transaction and
	// compiles its tenant twice, like a Query's preview… (which
	// previewLimit counts): priced so that a page of sets cannot ask for
	// more than a few at the default limit.
	c.ChangeSet.Preview = func(child int) int { return child + changeSetPreviewCost }
	c.Environment.EligibleClusters = page
	c.Environment.EligibleNamespaceTargets = page
	c.Environment.Deployments = page
	c.Environment.Events = func(child int, first *int, after *string, last *int, before *string, _ *gqlmodel.KubeEventType, _ *string) int {
		return page(child, first, after, last, before)
	}
	c.Cluster.NamespaceTargets = page
	c.Cluster.Commands = page
	c.Cluster.Events = func(child int, first *int, after *string, last *int, before *string, _ *gqlmodel.KubeEventType) int {
		return page(child, first, after, last, before)
	}
	c.Cluster.Drift = page
	c.Cluster.Revisions = page
	c.Service.Releases = func(child int, first *int, after *string, last *int, before *string, _ *string) int {
		return page(child, first, after, last, before)
	}
	c.Service.Builds = func(child int, first *int, after *string, last *int, before *string, _ *string) int {
		return page(child, first, after, last, before)
	}
	c.Service.Logs = func(child int, _ string, _ *gqlmodel.LogFilter, first *int, after *string, last *int, before *string) int {
		return linePage(child, first, after, last, before)
	}
	c.Service.Events = func(child int, _ string, first *int, after *string, last *int, before *string, _ *gqlmodel.KubeEventType) int {
		return page(child, first, after, last, before)
	}
	c.Service.Drift = func(child int, _ string, first *int, after *string, last *int, before *string) int {
		return page(child, first, after, last, before)
	}
	c.Webhook.Deliveries = page
	c.WebhookEndpoint.Messages = func(child int, first *int, after *string, last *int, before *string, _ *model.MessageStatus) int {
		return page(child, first, after, last, before)
	}
	c.Build.Log = linePage
	c.Deployment.Events = linePage
	c.Viewer.Tenants = page
	c.Viewer.APITokens = page
	c.Viewer.Sessions = page
	c.Member.APITokens = page
	// Large text, by the element.
	c.LogLine.Line = func(int) int { return costLine }
	c.BuildLogLine.Line = func(int) int { return costLine }
	c.KubeEvent.Message = func(int) int { return costMessage }
	c.WebhookMessage.Payload = func(int) int { return costMessage }
	c.Revision.State = func(int) int { return costDocument }
	c.Revision.Diff = func(int, *int) int { return costDocument }
	return c
}
