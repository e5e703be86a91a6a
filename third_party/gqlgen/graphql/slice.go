package graphql

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// MarshalSliceConcurrently marshals a slice of elements concurrently, writing
// each result into the returned Array.
//
// The marshalElement callback is called for each index and receives a context
// that already has a FieldContext with Index set. The callback should set
// FieldContext.Result and perform the actual marshaling.
//
// workerLimit of 0 means unlimited concurrency.
//
// Every element of the returned Array is set, because Array.MarshalGQL
// marshals each one. An element that could not be marshalled holds Null, as
// one whose resolver returned an error would: one whose marshalElement
// panicked (recovered unless omitPanicHandler), or, with a workerLimit, one
// not yet started when ctx is cancelled, reported once as ctx.Err(). A
// nullable element thus reports null in place, and for non-null elements the
// caller's non-null check nulls the whole list.
func MarshalSliceConcurrently(
	ctx context.Context,
	length int,
	workerLimit int64,
	omitPanicHandler bool,
	marshalElement func(ctx context.Context, i int) Marshaler,
) Array {
	ret := make(Array, length)
	if length == 0 {
		return ret
	}

	// NEBULA PATCH (upstreamable): one element, or elements that were
	// resolved ahead (ResolvedAhead), are marshalled in this goroutine.
	if length == 1 || resolvedAhead(ctx) {
		for i := range length {
			marshalElementInline(ctx, ret, i, omitPanicHandler, marshalElement)
		}
		return ret
	}

	// Multiple elements: use goroutines.
	var wg sync.WaitGroup
	var sm *semaphore.Weighted
	if workerLimit > 0 {
		sm = semaphore.NewWeighted(workerLimit)
	}

	for i := range length {
		childCtx := withElementContext(ctx, i)

		f := func(i int) {
			defer wg.Done()
			if sm != nil {
				defer sm.Release(1)
			}
			if !omitPanicHandler {
				defer func() {
					if r := recover(); r != nil {
						AddError(childCtx, Recover(childCtx, r))
						ret[i] = Null
					}
				}()
			}
			ret[i] = marshalElement(childCtx, i)
		}

		if sm != nil {
			if err := sm.Acquire(ctx, 1); err != nil {
				AddError(childCtx, ctx.Err())
				// No worker owns these slots, so they are safe to write here.
				for j := i; j < length; j++ {
					ret[j] = Null
				}
				break
			}
		}

		wg.Add(1)
		go f(i)
	}

	wg.Wait()
	return ret
}

// marshalElementInline marshals element i of ret in the calling goroutine.
func marshalElementInline(ctx context.Context, ret Array, i int, omitPanicHandler bool, marshalElement func(ctx context.Context, i int) Marshaler) {
	childCtx := withElementContext(ctx, i)
	if !omitPanicHandler {
		defer func() {
			if r := recover(); r != nil {
				AddError(childCtx, Recover(childCtx, r))
				ret[i] = Null
			}
		}()
	}
	ret[i] = marshalElement(childCtx, i)
}

// elementContext is the context of one list element: the element's field
// context, its index, and the context that holds them, in one allocation.
// NEBULA PATCH (11): WithFieldContext made three (the index, the field
// context and the context value) for every element of every list.
type elementContext struct {
	context.Context
	fc FieldContext
	i  int
}

// withElementContext returns ctx with the field context of element i, as
// WithFieldContext(ctx, &FieldContext{Index: &i}) would.
func withElementContext(ctx context.Context, i int) context.Context {
	c := &elementContext{Context: ctx, i: i}
	c.fc.Index = &c.i
	c.fc.Parent = GetFieldContext(ctx)
	return c
}

func (c *elementContext) Value(key any) any {
	if key == resolverCtx {
		return &c.fc
	}
	return c.Context.Value(key)
}
