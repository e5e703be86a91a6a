package resolvers

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/nebulactrl/nebula/internal/store"
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
		"PageInfo": {plain: []string{"hasNextPage", "hasPreviousPage", "startCursor", "endCursor"}},
		"Project": {plain: []string{"id", "name", "description", "createdAt"},
			prefetched: map[string]string{"environments": "EnvironmentConnection", "services": "ServiceConnection"}},
		"Environment": {plain: []string{"id", "name", "protected", "createdAt"},
			prefetched: map[string]string{"deployments": "DeploymentConnection"}},
		"Service": {plain: []string{"id", "name", "image", "createdAt", "updatedAt"},
			objects: map[string]string{"processes": "Process", "domains": "Domain"}},
		// Deployments and releases are read in part: their fields are
		// those of the column maps below, the one list of them.
		"Deployment": {plain: plainOf(deploymentColumns, "release"), prefetched: map[string]string{"release": "Release"}},
		"Release": {plain: plainOf(releaseColumns, "processes", "domains"),
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

// The columns a prefetch reads. For the types whose rows are read in part,
// each field served from the row has the columns it is made of; a
// selection of only such fields reads those columns and the table's keys
// (store.Cols), any other field the whole row, since its resolver may
// read anything (0). The loaders key what they keep by these sets, so a
// row read in part is served only to a selection of the same fields
// (TestPrefetchReadsTheColumnsItShows).
var (
	deploymentColumns = map[string]store.Cols{
		"__typename": store.Deployments.Cols(), "id": store.Deployments.Cols(),
		"stage": store.Deployments.Cols("stage"), "blocker": store.Deployments.Cols("blocker"),
		"message": store.Deployments.Cols("message"), "approvalExpiresAt": store.Deployments.Cols("approval_expires_at"),
		"createdAt": store.Deployments.Cols("created_at"), "updatedAt": store.Deployments.Cols("updated_at"),
		"release": store.Deployments.Cols("release_id"),
	}
	releaseColumns = map[string]store.Cols{
		"__typename": store.Releases.Cols(), "id": store.Releases.Cols(),
		"number": store.Releases.Cols("number"), "image": store.Releases.Cols("image"),
		"imageDigest": store.Releases.Cols("image_digest"), "createdAt": store.Releases.Cols("created_at"),
		"processes": store.Releases.Cols("config"), "domains": store.Releases.Cols("config"),
	}
)

// plainOf is the fields of a column map served from the struct: all but
// __typename and the named ones (objects, prefetched).
func plainOf(cols map[string]store.Cols, not ...string) []string {
	var out []string
	for f := range cols {
		if f != "__typename" && !slices.Contains(not, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

func deploymentCols(fields []graphql.CollectedField) store.Cols {
	return columnsOf(deploymentColumns, fields)
}

// deploymentColsOf is deploymentCols of the nodes of the connection field
// at ctx (nodeFieldsOf), without gathering them into one list: it runs for
// every environment of a page.
func deploymentColsOf(ctx context.Context) store.Cols {
	var c store.Cols
	for fields := range nodeSelections(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, nil)) {
		b := deploymentCols(fields)
		if b == 0 && len(fields) > 0 {
			return 0 // a field read from elsewhere: whole rows
		}
		c |= b
	}
	return c
}

func releaseCols(fields []graphql.CollectedField) store.Cols {
	return columnsOf(releaseColumns, fields)
}

// columnsOf is the set of columns the fields read, by the table cols; 0
// (the whole row) if one of them is not in it.
func columnsOf(cols map[string]store.Cols, fields []graphql.CollectedField) store.Cols {
	var c store.Cols
	for _, f := range fields {
		b, ok := cols[f.Name]
		if !ok {
			return 0
		}
		c |= b
	}
	return c
}
