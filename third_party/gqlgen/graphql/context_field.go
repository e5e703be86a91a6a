package graphql

import (
	"context"
	"errors"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
)

type key string

const resolverCtx key = "resolver_context"

// Deprecated: Use FieldContext instead
type ResolverContext = FieldContext

type FieldContext struct {
	Parent *FieldContext
	// The name of the type this field belongs to
	Object string
	// These are the args after processing, they can be mutated in middleware to change what the
	// resolver will get.
	Args map[string]any
	// The raw field
	Field CollectedField
	// The index of array in path.
	Index *int
	// The result object of resolver
	Result any
	// IsMethod indicates if the resolver is a method
	IsMethod bool
	// IsResolver indicates if the field has a user-specified resolver
	IsResolver bool
	// NonNull is set to true at runtime by a FieldInterceptor (via MarkNonNull)
	// to indicate this field should be treated as semantically non-null.
	// When true and the field resolves to nil, null propagation occurs
	// as if the field were declared non-null (!) in the schema.
	NonNull bool
	// Child allows getting a child FieldContext by its field collection description.
	// Note that, the returned child FieldContext represents the context as it was
	// before the execution of the field resolver. For example:
	//
	//	srv.AroundFields(func(ctx context.Context, next graphql.Resolver) (any, error) {
	//		fc := graphql.GetFieldContext(ctx)
	//		opCtx := graphql.GetOperationContext(ctx)
	//		collected := graphql.CollectFields(opCtx, fc.Field.Selections, []string{"User"})
	//
	//		child, err := fc.Child(ctx, collected[0])
	//		if err != nil {
	//			return nil, err
	//		}
	//		fmt.Printf("child context %q with args: %v\n", child.Field.Name, child.Args)
	//
	//		return next(ctx)
	//	})
	//
	Child func(context.Context, CollectedField) (*FieldContext, error)

	// NEBULA PATCH (upstreamable): resolvedAhead is set by ResolvedAhead.
	resolvedAhead bool
}

type FieldStats struct {
	// When field execution started
	Started time.Time

	// When argument marshaling finished
	ArgumentsCompleted time.Time

	// When the field completed running all middleware. Not available inside field middleware!
	Completed time.Time
}

func (r *FieldContext) Path() ast.Path {
	var path ast.Path
	for it := r; it != nil; it = it.Parent {
		if it.Index != nil {
			path = append(path, ast.PathIndex(*it.Index))
		} else if it.Field.Field != nil {
			path = append(path, ast.PathName(it.Field.Alias))
		}
	}

	// because we are walking up the chain, all the elements are backwards, do an inplace flip.
	for i := len(path)/2 - 1; i >= 0; i-- {
		opp := len(path) - 1 - i
		path[i], path[opp] = path[opp], path[i]
	}

	return path
}

// Deprecated: Use GetFieldContext instead
func GetResolverContext(ctx context.Context) *ResolverContext {
	return GetFieldContext(ctx)
}

func GetFieldContext(ctx context.Context) *FieldContext {
	if val, ok := ctx.Value(resolverCtx).(*FieldContext); ok {
		return val
	}
	return nil
}

func WithFieldContext(ctx context.Context, rc *FieldContext) context.Context {
	rc.Parent = GetFieldContext(ctx)
	return context.WithValue(ctx, resolverCtx, rc)
}

// NewScalarFieldContext creates a FieldContext for scalar or enum fields, which
// have no child fields. The returned Child callback always fails, naming
// typeName. It builds that error per call rather than up front because
// validation rejects sub-selections on a scalar, so no well-formed query
// reaches it.
func NewScalarFieldContext(
	objectName string,
	field CollectedField,
	isMethod, isResolver bool,
	typeName string,
) (*FieldContext, error) {
	return &FieldContext{
		Object:     objectName,
		Field:      field,
		IsMethod:   isMethod,
		IsResolver: isResolver,
		Child: func(ctx context.Context, field CollectedField) (*FieldContext, error) {
			return nil, errors.New("field of type " + typeName + " does not have child fields")
		},
	}, nil
}

// MarkNonNull marks the current field as semantically non-null at runtime.
// When a field is marked non-null and resolves to nil, null propagation
// occurs as if the field were declared non-null (!) in the schema.
//
// This is intended for use by FieldInterceptors that need runtime
// required-field semantics (e.g., a @priority(value: REQUIRED) directive).
// It must be called before the resolver returns, typically inside an
// AroundFields middleware or FieldInterceptor.
//
// Trade-offs: altering null-propagation semantics at runtime makes the
// response shape depend on server logic rather than the schema. A field
// declared as nullable (String) can behave like a non-null field (String!)
// for a given request. This behavior cannot be discovered via introspection
// and cannot be validated statically by client tooling (GraphQL IDEs, type
// generators), so the schema is no longer the single source of truth for the
// client-server contract. Prefer triggering it from an executable directive
// that the client explicitly includes in the query (like @skip/@include), so
// the stricter behavior is an explicit opt-in rather than hidden server logic.
// Use only when you control both client and server, and when the benefit
// (e.g., stricter data integrity for critical fields) outweighs the loss of
// schema-time guarantees. See the "Dynamically requiring fields" recipe in the
// documentation for the recommended pattern.
func MarkNonNull(ctx context.Context) {
	if fc := GetFieldContext(ctx); fc != nil {
		fc.NonNull = true
	}
}

func equalPath(a, b ast.Path) bool {
	if len(a) != len(b) {
		return false
	}

	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}

	return true
}

// ResolvedAhead tells the executor that the resolver of the field at ctx has
// already loaded everything the selection below the field reads, so that
// nothing under it waits for I/O: the lists and the objects under the field
// are then marshalled in the calling goroutine, element after element and
// field after field, rather than with a goroutine per list element and per
// object with more than one resolver field. A resolver calls it before it
// returns.
//
// NEBULA PATCH (upstreamable): without it, every element of every list of
// objects got its own goroutine, whose stack grew as it marshalled; for a
// nested list read from a prefetch, goroutines and their stacks were most of
// the executor's cost. A resolver that is wrong about its subtree makes its
// I/O sequential, never incorrect.
func ResolvedAhead(ctx context.Context) {
	if fc := GetFieldContext(ctx); fc != nil {
		fc.resolvedAhead = true
	}
}

// resolvedAhead tells whether a field above ctx was resolved ahead.
func resolvedAhead(ctx context.Context) bool {
	for fc := GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		if fc.resolvedAhead {
			return true
		}
	}
	return false
}
