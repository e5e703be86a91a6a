package resolvers

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/codegen/templates"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/store"
)

// The plan may only call a field served from memory if gqlgen serves it
// from the Go struct: a field that became a resolver could load, and under
// ResolvedAhead its loads would run one after another. Every field the plan
// names must exist in the schema, every prefetched one must be a resolver
// (it reads the prefetch), and every type it reaches must have a shape.
func TestPlanShapesHaveNoResolvers(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &Resolver{}}).Schema()
	root := reflect.TypeFor[graph.ResolverRoot]()
	for typ, s := range shapes {
		def := schema.Types[typ]
		if def == nil {
			t.Errorf("%s: no such type in the schema", typ)
			continue
		}
		var resolvers reflect.Type // nil: the type has no resolver fields
		if m, ok := root.MethodByName(typ); ok {
			resolvers = m.Type.Out(0)
		}
		isResolver := func(field string) bool {
			if resolvers == nil {
				return false
			}
			_, ok := resolvers.MethodByName(templates.ToGo(field))
			return ok
		}
		served := append(slices.Clone(s.plain), slices.Collect(maps.Keys(s.objects))...)
		for _, f := range append(served, slices.Collect(maps.Keys(s.prefetched))...) {
			if def.Fields.ForName(f) == nil {
				t.Errorf("%s.%s: no such field in the schema", typ, f)
			}
		}
		for _, f := range served {
			if isResolver(f) {
				t.Errorf("%s.%s is a resolver now: the plan cannot call it served from the struct", typ, f)
			}
		}
		for f, target := range s.prefetched {
			if !isResolver(f) {
				t.Errorf("%s.%s is not a resolver: it cannot read the prefetch", typ, f)
			}
			if shapes[target] == nil {
				t.Errorf("%s.%s: no shape for its type %s", typ, f, target)
			}
		}
		for f, target := range s.objects {
			if shapes[target] == nil {
				t.Errorf("%s.%s: no shape for its type %s", typ, f, target)
			}
		}
	}
}

// node(id:) skips a tenant's row when the selection reads none of
// tenantColumns, so every field of Tenant must be known to come from the
// row or not: a field added to the schema fails here until it is put on
// one side.
func TestTenantColumnsCoverTheRow(t *testing.T) {
	notFromRow := []string{"id", "viewerRole", "members", "projects", "clusters", "approvalQueue",
		"deploymentsUnderWay", "webhookEndpoints", "invitations", "auditEvents"}
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &Resolver{}}).Schema()
	for _, f := range schema.Types["Tenant"].Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		in, out := slices.Contains(tenantColumns, f.Name), slices.Contains(notFromRow, f.Name)
		if in == out {
			t.Errorf("Tenant.%s: say whether it is read from the tenant's row (tenantColumns) or not", f.Name)
		}
	}
}

// The types read in part have one list of fields, their column maps: every
// field the plan serves of them is mapped to its columns, and every mapped
// name is a field of the schema's type.
func TestColumnMapsAreTheShapes(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &Resolver{}}).Schema()
	for typ, cols := range map[string]map[string]store.Cols{"Deployment": deploymentColumns, "Release": releaseColumns} {
		s := shapes[typ]
		served := append(slices.Clone(s.plain), slices.Collect(maps.Keys(s.objects))...)
		for _, f := range append(served, slices.Collect(maps.Keys(s.prefetched))...) {
			if _, ok := cols[f]; !ok {
				t.Errorf("%s.%s is served by the plan but has no columns", typ, f)
			}
		}
		for f := range cols {
			if f != "__typename" && schema.Types[typ].Fields.ForName(f) == nil {
				t.Errorf("the columns of %s name %s, no field of the schema", typ, f)
			}
		}
	}
}
