package graphql

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

type Deferrable struct {
	Label string
}

type DeferredGroup struct {
	Path     ast.Path
	FieldSet *FieldSet
	Defers   map[string]*FieldSetView
	Context  context.Context
}

// NewDeferredGroup returns an empty group ready to collect the @defer'd fields
// of the object being resolved at ctx. The incremental payloads the group
// eventually emits are labelled with ctx's path and resolved under ctx, so it
// must be the same context the object's fields are collected and dispatched
// with.
//
// NEBULA PATCH (upstreamable): the group is made empty, and its path, field
// set and label map only when the object has a @defer'd field (addDeferred).
// Every object of every response made a group, and building the path walked
// and copied the field contexts to the root: an eighth of the allocations of
// a nested list query that defers nothing.
func NewDeferredGroup(ctx context.Context) DeferredGroup {
	return DeferredGroup{Context: ctx}
}

// addDeferred makes the group's path, field set and label map on its first
// @defer'd field.
func (g *DeferredGroup) addDeferred() {
	if g.FieldSet == nil {
		g.Path = GetPath(g.Context)
		g.FieldSet = NewFieldSet(nil)
		g.Defers = make(map[string]*FieldSetView)
	}
}

type DeferredResult struct {
	Path   ast.Path
	Label  string
	Result Marshaler
	Errors gqlerror.List
}
