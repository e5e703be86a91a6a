package graphql

import (
	"context"
	"io"

	"github.com/vektah/gqlparser/v2/ast"
)

func ResolveField[T any](
	ctx context.Context,
	oc *OperationContext,
	field CollectedField,
	initializeFieldContext func(ctx context.Context, field CollectedField) (*FieldContext, error),
	fieldResolver func(ctx context.Context) (any, error),
	middlewareChain func(ctx context.Context, next Resolver) Resolver,
	marshal func(ctx context.Context, sel ast.SelectionSet, v T) Marshaler,
	recoverFromPanic bool,
	nonNull bool,
) Marshaler {
	return resolveField[T, Marshaler](
		ctx,
		oc,
		field,
		initializeFieldContext,
		fieldResolver,
		middlewareChain,
		recoverFromPanic,
		nonNull,
		Null,
		RequiredNull,
		func(ctx context.Context, res T) Marshaler {
			return marshal(ctx, field.Selections, res)
		},
	)
}

func ResolveFieldStream[T any](
	ctx context.Context,
	oc *OperationContext,
	field CollectedField,
	initializeFieldContext func(ctx context.Context, field CollectedField) (*FieldContext, error),
	fieldResolver func(context.Context) (any, error),
	middlewareChain func(ctx context.Context, next Resolver) Resolver,
	marshal func(ctx context.Context, sel ast.SelectionSet, v T) Marshaler,
	recoverFromPanic bool,
	nonNull bool,
) func(context.Context) Marshaler {
	return resolveField(
		ctx,
		oc,
		field,
		initializeFieldContext,
		fieldResolver,
		middlewareChain,
		recoverFromPanic,
		nonNull,
		nil,
		nil,
		func(ctx context.Context, res <-chan T) func(context.Context) Marshaler {
			return func(ctx context.Context) Marshaler {
				select {
				case v, ok := <-res:
					if !ok {
						return nil
					}
					return WriterFunc(func(w io.Writer) {
						w.Write([]byte{'{'})
						MarshalString(field.Alias).MarshalGQL(w)
						w.Write([]byte{':'})
						marshal(ctx, field.Selections, v).MarshalGQL(w)
						w.Write([]byte{'}'})
					})
				case <-ctx.Done():
					return nil
				}
			}
		},
	)
}

// ResolveFieldStreamWithEventContext is the streaming-field resolver used for
// subscription fields marked with @subscriptionContext. Like
// [ResolveFieldStream] it returns a function that yields one marshaler per
// channel receive, but the channel element type is [Event][T] rather than T,
// and the returned function emits both the per-event context (from
// [Event].Context) and the marshaler. When [Event].Context is nil the input
// context is passed through unchanged.
func ResolveFieldStreamWithEventContext[T any](
	ctx context.Context,
	oc *OperationContext,
	field CollectedField,
	initializeFieldContext func(ctx context.Context, field CollectedField) (*FieldContext, error),
	fieldResolver func(context.Context) (any, error),
	middlewareChain func(ctx context.Context, next Resolver) Resolver,
	marshal func(ctx context.Context, sel ast.SelectionSet, v T) Marshaler,
	recoverFromPanic bool,
	nonNull bool,
) func(context.Context) (context.Context, Marshaler) {
	return resolveField(
		ctx,
		oc,
		field,
		initializeFieldContext,
		fieldResolver,
		middlewareChain,
		recoverFromPanic,
		nonNull,
		nil,
		nil,
		func(ctx context.Context, res <-chan Event[T]) func(context.Context) (context.Context, Marshaler) {
			return func(ctx context.Context) (context.Context, Marshaler) {
				select {
				case ev, ok := <-res:
					if !ok {
						return ctx, nil
					}
					eventCtx := ev.Context
					if eventCtx == nil {
						eventCtx = ctx
					}
					return eventCtx, WriterFunc(func(w io.Writer) {
						w.Write([]byte{'{'})
						MarshalString(field.Alias).MarshalGQL(w)
						w.Write([]byte{':'})
						marshal(ctx, field.Selections, ev.Value).MarshalGQL(w)
						w.Write([]byte{'}'})
					})
				case <-ctx.Done():
					return ctx, nil
				}
			}
		},
	)
}

func resolveField[T, R any](
	ctx context.Context,
	oc *OperationContext,
	field CollectedField,
	initializeFieldContext func(ctx context.Context, field CollectedField) (*FieldContext, error),
	fieldResolver func(ctx context.Context) (any, error),
	middlewareChain func(ctx context.Context, next Resolver) Resolver,
	recoverFromPanic bool,
	nonNull bool,
	defaultResult R,
	requiredNullResult R,
	result func(ctx context.Context, res T) R,
) (ret R) {
	fc, err := initializeFieldContext(ctx, field)
	if err != nil {
		return defaultResult
	}
	ctx = WithFieldContext(ctx, fc)

	if recoverFromPanic {
		defer func() {
			if r := recover(); r != nil {
				oc.Error(ctx, oc.Recover(ctx, r))
				ret = defaultResult
			}
		}()
	}

	// NEBULA PATCH (10): without a field middleware or a directive, the
	// resolver is called directly. The chain's closure, and the heap copy
	// of ctx it forced (the closure assigns to it), were two allocations
	// for every object-valued field of every object.
	var resTmp any
	if middlewareChain == nil && oc.DirectFields {
		resTmp, err = fieldResolver(ctx)
	} else {
		ctx, resTmp, err = resolveThroughMiddleware(ctx, oc, fieldResolver, middlewareChain)
	}
	if err != nil {
		oc.Error(ctx, AddFieldLocationToError(ctx, err))
		if fc.NonNull && !nonNull {
			return requiredNullResult
		}
		return defaultResult
	}
	if resTmp == nil {
		if nonNull || fc.NonNull {
			AddInvalidNullError(ctx, "")
		}
		if fc.NonNull && !nonNull {
			return requiredNullResult
		}
		return defaultResult
	}
	if res, ok := resTmp.(T); ok {
		fc.Result = res
		return result(ctx, res)
	}
	if res, ok := resTmp.(R); ok {
		fc.Result = res
		return res
	}
	var t T
	oc.Errorf(
		ctx,
		`unexpected type %T from middleware/directive chain, should be %T`,
		resTmp,
		t,
	)
	return defaultResult
}

// resolveThroughMiddleware calls fieldResolver through the directives'
// middlewareChain, if any, and the operation's field middleware. It returns
// the context the resolver was called with, for the field's children (NEBULA
// PATCH (10): the chain's closure lives here, so that resolveField's direct
// path does not allocate it).
func resolveThroughMiddleware(
	ctx context.Context,
	oc *OperationContext,
	fieldResolver func(ctx context.Context) (any, error),
	middlewareChain func(ctx context.Context, next Resolver) Resolver,
) (context.Context, any, error) {
	next := func(rctx context.Context) (any, error) {
		ctx = rctx // use context from middleware stack in children
		return fieldResolver(rctx)
	}
	if middlewareChain != nil {
		next = middlewareChain(ctx, next)
	}
	res, err := oc.ResolverMiddleware(ctx, next)
	return ctx, res, err
}
