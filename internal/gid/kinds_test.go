package gid_test

import (
	"slices"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/resolvers"
)

// Every kind of id names an object type of the schema, and every type
// node(id:) can return has its kind: the table in gen.go and the schema
// agree.
func TestKindsAreTheSchemasNodes(t *testing.T) {
	sch := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	var nodes []string
	for _, def := range sch.GetPossibleTypes(sch.Types["Node"]) {
		nodes = append(nodes, def.Name)
	}
	for _, k := range gid.Kinds {
		if def := sch.Types[k]; def == nil || def.Kind != ast.Object {
			t.Errorf("kind %s is no object type of the schema", k)
		}
	}
	for _, n := range nodes {
		if !slices.Contains(gid.Kinds, n) {
			t.Errorf("Node type %s has no kind in internal/gid/gen.go", n)
		}
	}
}
