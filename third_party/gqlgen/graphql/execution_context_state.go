package graphql

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/99designs/gqlgen/graphql/introspection"
)

// ExecutionContextState stores generated execution context dependencies and state.
// Generated code defines its local executionContext type from this one.
type ExecutionContextState[R any, D any, C any] struct {
	*OperationContext
	*ExecutableSchemaState[R, D, C]
	ParsedSchema *ast.Schema

	// Deferred counts the @defer labels this request has produced. The
	// response writer reads it to decide whether a payload reports hasNext,
	// so a deferred query must have incremented it before its first response
	// is written.
	//
	// One counter serves the whole request, and every object resolved in that
	// request would otherwise touch it. Generated code therefore adds to it
	// only when an object carries deferred fields: adding zero from each of
	// them would put every query that uses no @defer on one contended cache
	// line. That is what the guard in the generated code is for — not
	// ProcessDeferredGroup, which already ignores an empty group.
	Deferred int32

	PendingDeferred int32
	DeferredResults chan DeferredResult
}

func NewExecutionContextState[R any, D any, C any](
	operationContext *OperationContext,
	executableSchemaState *ExecutableSchemaState[R, D, C],
	parsedSchema *ast.Schema,
	deferredResults chan DeferredResult,
) *ExecutionContextState[R, D, C] {
	ec := &ExecutionContextState[R, D, C]{
		OperationContext:      operationContext,
		ExecutableSchemaState: executableSchemaState,
		ParsedSchema:          parsedSchema,
		DeferredResults:       deferredResults,
	}
	// NEBULA PATCH (14): where a streamed list sends its items. The
	// generated complexity function makes a state without an operation.
	if operationContext != nil {
		operationContext.incremental = incrementalSink{
			deferred: &ec.Deferred,
			pending:  &ec.PendingDeferred,
			results:  deferredResults,
		}
	}
	return ec
}

// NextIncremental waits for the next incremental payload (a deferred
// fragment or a streamed list's items), fills response's path, label and
// errors, and returns what to write as its data, or as its items when
// items is true. NEBULA PATCH (14): the generated response handler took
// the payload itself, and knew no items.
func (ec *ExecutionContextState[R, D, C]) NextIncremental(response *Response) (data Marshaler, items bool) {
	result := <-ec.DeferredResults
	atomic.AddInt32(&ec.PendingDeferred, -1)
	response.Path = result.Path
	response.Label = result.Label
	response.Errors = result.Errors
	if result.delivered != nil {
		result.delivered()
	}
	return result.Result, result.Items
}

func (ec *ExecutionContextState[R, D, C]) Schema() *ast.Schema {
	if ec.SchemaData != nil {
		return ec.SchemaData
	}
	return ec.ParsedSchema
}

// ProcessDeferredGroup resolves the deferred fields owned by dg and sends one
// DeferredResult per view to ec.DeferredResults.
//
// Errors accumulate append-only on the group's shared response context. Each
// view's DeferredResult.Errors holds the suffix of errors that arrived after
// the previous view in this group completed, so every error appears in
// exactly one view's payload. This matters when two @defer fragments share a
// field that errors: without partitioning, the error would be duplicated
// across labels.
func (ec *ExecutionContextState[R, D, C]) ProcessDeferredGroup(dg DeferredGroup) {
	if len(dg.Defers) == 0 {
		return
	}

	atomic.AddInt32(&ec.PendingDeferred, int32(len(dg.Defers)))
	ctx := WithFreshResponseContext(dg.Context)
	// NEBULA PATCH (14): the group's payloads wait for the payload that
	// holds the group's object (a deferred fragment in a deferred fragment,
	// or in a streamed item), and what is resolved under them waits for
	// them, each through its delivery gate.
	parent := deliveryGate(dg.Context)
	gate := make(chan struct{})
	ctx = withDeliveryGate(ctx, gate)
	delivered := deliveredOnce(gate, len(dg.Defers))

	var (
		errorsMu      sync.Mutex
		errorsEmitted int
	)

	for label, view := range dg.Defers {
		view.SetOnComplete(func(ctx context.Context) {
			errorsMu.Lock()
			allErrors := GetErrors(ctx)
			errs := allErrors[errorsEmitted:]
			errorsEmitted = len(allErrors)
			errorsMu.Unlock()

			ds := DeferredResult{
				Path:      dg.Path,
				Label:     label,
				Result:    view,
				Errors:    errs,
				delivered: delivered,
			}
			// An invalid non-null field nulls its label's payload, the
			// incremental form of bubbling null to the parent.
			if view.payloadInvalid() {
				ds.Result = Null
			}
			if parent != nil {
				select {
				case <-parent:
				case <-ctx.Done():
					return
				}
			}
			select {
			case ec.DeferredResults <- ds:
			case <-ctx.Done():
			}
		})
	}

	go func() {
		dg.FieldSet.Dispatch(ctx)
	}()
}

func (ec *ExecutionContextState[R, D, C]) IntrospectSchema() (*introspection.Schema, error) {
	if ec.DisableIntrospection {
		return nil, errors.New("introspection disabled")
	}
	return introspection.WrapSchema(ec.Schema()), nil
}

func (ec *ExecutionContextState[R, D, C]) IntrospectType(name string) (*introspection.Type, error) {
	if ec.DisableIntrospection {
		return nil, errors.New("introspection disabled")
	}
	return introspection.WrapTypeFromDef(ec.Schema(), ec.Schema().Types[name]), nil
}
