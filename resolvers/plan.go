package resolvers

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"
)

// The prefetch plan. A list field whose resolver prefetches its children
// (loaders.go) may find that the prefetch covers its whole selection: every
// field below it is a struct field of what was read, or a child list or
// reference the prefetch read for every parent. Nothing under the field then
// waits for the database, and the resolver says so (graphql.ResolvedAhead,
// a patch of ours to gqlgen: third_party/gqlgen/NEBULA.md), so that the
// executor marshals the subtree in one goroutine instead of one per list
// element. A selection with any other field keeps the general machinery:
// its resolvers may load, and the dataloaders batch loads made in parallel.

// shape is what the plan knows of a GraphQL type: the fields served from
// the Go struct (TestPlanShapesHaveNoResolvers holds these to the generated
// resolver interfaces), those whose value is an object served the same way
// (by type name), and the fields the prefetch reads.
type shape struct {
	plain      []string
	objects    map[string]string
	prefetched map[string]string
}

// connection is the shape of a connection to nodes of type node.
func connection(node, edge string) map[string]*shape {
	return map[string]*shape{
		node + "Connection": {objects: map[string]string{"nodes": node, "edges": edge, "pageInfo": "PageInfo"}},
		edge:                {plain: []string{"cursor"}, objects: map[string]string{"node": node}},
	}
}

var shapes = func() map[string]*shape {
	m := map[string]*shape{
		"PageInfo": {plain: []string{"hasNextPage", "endCursor"}},
		"Project": {plain: []string{"id", "name", "description", "createdAt"},
			prefetched: map[string]string{"environments": "EnvironmentConnection", "services": "ServiceConnection"}},
		"Environment": {plain: []string{"id", "name", "protected", "createdAt"},
			prefetched: map[string]string{"deployments": "DeploymentConnection"}},
		"Service": {plain: []string{"id", "name", "image", "createdAt", "updatedAt"},
			objects: map[string]string{"processes": "Process", "domains": "Domain"}},
		"Deployment": {plain: []string{"id", "stage", "blocker", "message", "approvalExpiresAt", "createdAt", "updatedAt"},
			prefetched: map[string]string{"release": "Release"}},
		"Release": {plain: []string{"id", "number", "image", "imageDigest", "createdAt"},
			objects: map[string]string{"processes": "Process", "domains": "Domain"}},
		"Process": {plain: []string{"name", "command", "replicas", "port"}, objects: map[string]string{"readinessProbe": "Probe"}},
		"Probe":   {plain: []string{"path", "port", "initialDelaySeconds", "periodSeconds"}},
		"Domain":  {plain: []string{"host", "process"}},
	}
	for _, c := range [][2]string{{"Project", "ProjectEdge"}, {"Environment", "EnvironmentEdge"},
		{"Service", "ServiceEdge"}, {"Deployment", "DeploymentEdge"}} {
		for name, s := range connection(c[0], c[1]) {
			m[name] = s
		}
	}
	return m
}()

// covered tells whether the prefetch serves the fields selected on an
// object of type typ.
func covered(op *graphql.OperationContext, typ string, fields []graphql.CollectedField) bool {
	s := shapes[typ]
	if s == nil {
		return false
	}
	for _, f := range fields {
		if f.Name == "__typename" || slices.Contains(s.plain, f.Name) {
			continue
		}
		t, ok := s.objects[f.Name]
		if !ok {
			t, ok = s.prefetched[f.Name]
		}
		if !ok || !covered(op, t, graphql.CollectFields(op, f.Selections, nil)) {
			return false
		}
	}
	return true
}

// resolvedAhead marks the field at ctx, of type typ, resolved ahead when the
// prefetch covers its selection.
func resolvedAhead(ctx context.Context, typ string) {
	op := graphql.GetOperationContext(ctx)
	if covered(op, typ, graphql.CollectFieldsCtx(ctx, nil)) {
		graphql.ResolvedAhead(ctx)
	}
}
