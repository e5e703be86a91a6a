package server

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// refusalFloor is how long after its arrival a document over a cost limit
// is refused, at the soonest. Refusing one takes work (the complexity walk
// alone allocates an argument map and an execution context per field), and
// a client that sends such documents back to back, waiting for each
// answer, kept a core and the garbage collector busy, which other tenants'
// requests felt; held to the floor, it sends one every 25 ms. A person
// writing a query does not notice 25 ms (docs/benchmarks.md, "Hardening").
const refusalFloor = 25 * time.Millisecond

// holdRefusal waits until refusalFloor after start (now, when the
// transport did not time its read), or until ctx ends.
func holdRefusal(ctx context.Context, start time.Time) {
	if start.IsZero() {
		start = time.Now()
	}
	d := time.Until(start.Add(refusalFloor))
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// heldParams holds the refusals of a limit that checks the raw document
// (before gqlgen parses and validates it).
type heldParams struct {
	limit interface {
		graphql.HandlerExtension
		graphql.OperationParameterMutator
	}
}

func (h heldParams) ExtensionName() string                     { return "Held" + h.limit.ExtensionName() }
func (h heldParams) Validate(s graphql.ExecutableSchema) error { return h.limit.Validate(s) }

func (h heldParams) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	err := h.limit.MutateOperationParameters(ctx, params)
	if err != nil {
		holdRefusal(ctx, params.ReadTime.Start)
	}
	return err
}

// heldOperation holds the refusals of a limit that checks the parsed
// operation (depth, complexity).
type heldOperation struct {
	limit interface {
		graphql.HandlerExtension
		graphql.OperationContextMutator
	}
}

func (h heldOperation) ExtensionName() string                     { return "Held" + h.limit.ExtensionName() }
func (h heldOperation) Validate(s graphql.ExecutableSchema) error { return h.limit.Validate(s) }

func (h heldOperation) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	err := h.limit.MutateOperationContext(ctx, op)
	if err != nil {
		holdRefusal(ctx, op.Stats.Read.Start)
	}
	return err
}
