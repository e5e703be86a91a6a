package server

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// incrementalRules refuses, before anything runs, the uses of @defer and
// @stream the server cannot serve as asked, each with its location:
//   - either in a mutation or a subscription (their answers come whole;
//     the parts would otherwise be dropped unseen);
//   - @stream on a field that is not a list;
//   - @stream's initialCount below 0 or not an integer, from a literal or
//     a variable;
//   - a label given by a variable, or used twice in the document.
//
// What it lets through, the executor serves (third_party/gqlgen, patches
// 13 and 14) and the transports deliver (deferred.go).
type incrementalRules struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = incrementalRules{}

func (incrementalRules) ExtensionName() string                   { return "IncrementalDelivery" }
func (incrementalRules) Validate(graphql.ExecutableSchema) error { return nil }

func (incrementalRules) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || op.Doc == nil {
		return nil
	}
	c := incrementalCheck{op: op, seen: map[string]bool{}, labels: map[string]bool{}}
	c.set(op.Operation.SelectionSet)
	return c.err
}

type incrementalCheck struct {
	op     *graphql.OperationContext
	seen   map[string]bool // fragments checked
	labels map[string]bool
	err    *gqlerror.Error
}

func (c *incrementalCheck) set(set ast.SelectionSet) {
	for _, sel := range set {
		if c.err != nil {
			return
		}
		switch s := sel.(type) {
		case *ast.Field:
			if d := s.Directives.ForName("stream"); d != nil {
				c.stream(s, d)
			}
			c.set(s.SelectionSet)
		case *ast.InlineFragment:
			if d := s.Directives.ForName("defer"); d != nil {
				c.deferred(d)
			}
			c.set(s.SelectionSet)
		case *ast.FragmentSpread:
			if d := s.Directives.ForName("defer"); d != nil {
				c.deferred(d)
			}
			if c.seen[s.Name] {
				continue
			}
			c.seen[s.Name] = true
			if f := c.op.Doc.Fragments.ForName(s.Name); f != nil {
				c.set(f.SelectionSet)
			}
		}
	}
}

func (c *incrementalCheck) deferred(d *ast.Directive) {
	if c.operation(d) {
		c.label(d)
	}
}

func (c *incrementalCheck) stream(f *ast.Field, d *ast.Directive) {
	if !c.operation(d) {
		return
	}
	if f.Definition == nil || f.Definition.Type == nil || f.Definition.Type.Elem == nil {
		typ := "?"
		if f.Definition != nil && f.Definition.Type != nil {
			typ = f.Definition.Type.String()
		}
		c.fail(d, fmt.Sprintf("@stream applies to list fields only; %s is of type %s", f.Alias, typ))
		return
	}
	if arg := d.Arguments.ForName("initialCount"); arg != nil {
		v, err := arg.Value.Value(c.op.Variables)
		if _, ok := graphql.StreamInitialCount(v); err != nil || !ok {
			c.fail(d, fmt.Sprintf("@stream on %s: initialCount must be an integer of 0 or more", f.Alias))
			return
		}
	}
	c.label(d)
}

// operation tells whether the operation takes d (a query), and fails it
// when it does not.
func (c *incrementalCheck) operation(d *ast.Directive) bool {
	if c.op.Operation.Operation == ast.Query {
		return true
	}
	c.fail(d, fmt.Sprintf("@%s is served in queries only; a %s's answer comes whole: remove it", d.Name, c.op.Operation.Operation))
	return false
}

func (c *incrementalCheck) label(d *ast.Directive) {
	arg := d.Arguments.ForName("label")
	if arg == nil || arg.Value == nil {
		return
	}
	if arg.Value.Kind != ast.StringValue {
		c.fail(d, fmt.Sprintf("@%s's label must be a string written in the document, not a variable", d.Name))
		return
	}
	if c.labels[arg.Value.Raw] {
		c.fail(d, fmt.Sprintf("@%s label %q is used twice; each @defer and @stream needs its own", d.Name, arg.Value.Raw))
		return
	}
	c.labels[arg.Value.Raw] = true
}

func (c *incrementalCheck) fail(d *ast.Directive, msg string) {
	if c.err != nil {
		return
	}
	c.err = &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
	if d.Position != nil {
		c.err.Locations = []gqlerror.Location{{Line: d.Position.Line, Column: d.Position.Column}}
	}
}
