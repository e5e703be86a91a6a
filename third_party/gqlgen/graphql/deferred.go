package graphql

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

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

	// NEBULA PATCH (14): Items tells that Result is a streamed list's items
	// (@stream), written as the payload's items rather than its data.
	Items bool
	// delivered, when set, is called once the response handler has taken
	// this payload: what waits for it to be sent first (a stream or a
	// deferred fragment under it) may go.
	delivered func()
}

// NEBULA PATCH (14): @stream. Upstream declares no @stream and serves none
// (a document using it fails validation). A list field marked
// @stream(initialCount: n) in a query is written with its first n items;
// the others are marshalled in their own goroutines after that, and sent as
// incremental payloads of deferSpec=20220824 ({"items": [...], "path":
// [..., index]}), in order, each run of items that are ready together in
// one payload. They travel on the same channel as @defer's payloads and are
// counted the same way, so hasNext stays true until the last.
//
// A payload is only sent once the payload that holds its list has been
// taken by the response handler (a delivery gate): items of a list inside a
// deferred fragment, or inside another streamed item, never overtake the
// list itself. Deferred fragments nested in deferred fragments wait the
// same way.

// incrementalSink is where a streamed list sends its payloads: the
// counters and the channel of the operation's ExecutionContextState.
type incrementalSink struct {
	deferred *int32
	pending  *int32
	results  chan DeferredResult
}

// Stream is a list field's @stream, read for one marshalling of the list.
type Stream struct {
	label   string
	initial int
	sink    incrementalSink
}

// StreamOf returns the @stream of the list field at ctx when it applies: a
// query's field marked @stream (its if argument true) whose list has more
// than initialCount items. Otherwise nil, and the list is marshalled whole.
// Cheap when the field has no directive: the generated list marshalers call
// it for every list.
func StreamOf(ctx context.Context, length int) *Stream {
	fc := GetFieldContext(ctx)
	if fc == nil || fc.Index != nil || fc.Field.Field == nil || len(fc.Field.Directives) == 0 {
		return nil
	}
	d := fc.Field.Directives.ForName("stream")
	if d == nil {
		return nil
	}
	oc := GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Query || oc.incremental.results == nil {
		return nil // refused before execution (internal/server); whole if not
	}
	initial, label, on := StreamArgs(d, oc.Variables)
	if !on || initial >= length {
		return nil
	}
	return &Stream{label: label, initial: initial, sink: oc.incremental}
}

// StreamArgs reads a @stream directive with the operation's variables: its
// initialCount and label, and whether it streams at all (its if argument
// not false, its initialCount a count).
func StreamArgs(d *ast.Directive, vars map[string]any) (initial int, label string, on bool) {
	args := d.ArgumentMap(vars)
	if on, ok := args["if"].(bool); ok && !on {
		return 0, "", false
	}
	initial, ok := StreamInitialCount(args["initialCount"])
	if !ok {
		return 0, "", false
	}
	label, _ = args["label"].(string)
	return initial, label, true
}

// StreamInitialCount reads @stream's initialCount, as a literal or a
// variable gives it: false for a value that is not a non-negative integer.
func StreamInitialCount(v any) (int, bool) {
	var n int64
	switch v := v.(type) {
	case nil:
		return 0, true // the declared default
	case int:
		n = int64(v)
	case int32:
		n = int64(v)
	case int64:
		n = v
	case float64:
		if v != float64(int64(v)) {
			return 0, false
		}
		n = int64(v)
	case json.Number:
		i, err := strconv.ParseInt(string(v), 10, 32)
		if err != nil {
			return 0, false
		}
		n = i
	case string:
		i, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return 0, false
		}
		n = i
	default:
		return 0, false
	}
	if n < 0 || n > 1<<31-1 {
		return 0, false
	}
	return int(n), true
}

// Marshal writes the list's first initialCount items as
// MarshalSliceConcurrently would, and starts the rest: marshalled after,
// and sent as incremental payloads of items. nonNull is the items' type: a
// null item of a non-null type makes its payload's items null (the list
// cannot be completed; the error says why).
func (s *Stream) Marshal(
	ctx context.Context,
	length int,
	nonNull bool,
	workerLimit int64,
	omitPanicHandler bool,
	marshalElement func(ctx context.Context, i int) Marshaler,
) Array {
	ret := MarshalSliceConcurrently(ctx, s.initial, workerLimit, omitPanicHandler, marshalElement)
	atomic.AddInt32(s.sink.deferred, 1)
	atomic.AddInt32(s.sink.pending, 1)
	st := &streamed{
		Stream:           *s,
		path:             GetPath(ctx),
		from:             s.initial,
		vals:             make([]Marshaler, length-s.initial),
		errs:             make([]gqlerror.List, length-s.initial),
		done:             make([]chan struct{}, length-s.initial),
		gates:            make([]chan struct{}, length-s.initial),
		nonNull:          nonNull,
		omitPanicHandler: omitPanicHandler,
		marshalElement:   marshalElement,
	}
	for j := range st.done {
		st.done[j] = make(chan struct{})
		st.gates[j] = make(chan struct{})
	}
	go st.run(ctx, workerLimit)
	return ret
}

// streamed is one streamed list's items after the first ones.
type streamed struct {
	Stream
	path             ast.Path
	from             int
	vals             []Marshaler
	errs             []gqlerror.List
	done             []chan struct{} // closed when item from+j is marshalled
	gates            []chan struct{} // closed when item from+j's payload is taken
	nonNull          bool
	omitPanicHandler bool
	marshalElement   func(ctx context.Context, i int) Marshaler
}

func (st *streamed) run(ctx context.Context, workerLimit int64) {
	parent := deliveryGate(ctx)
	if resolvedAhead(ctx) {
		go func() {
			for j := range st.vals {
				st.item(ctx, j)
			}
		}()
	} else {
		var sem chan struct{}
		if workerLimit > 0 {
			sem = make(chan struct{}, workerLimit)
		}
		go func() {
			for j := range st.vals {
				if sem != nil {
					select {
					case sem <- struct{}{}:
					case <-ctx.Done():
						return
					}
				}
				go func() {
					st.item(ctx, j)
					if sem != nil {
						<-sem
					}
				}()
			}
		}()
	}

	if parent != nil {
		select {
		case <-parent:
		case <-ctx.Done():
			return
		}
	}
	for next := 0; next < len(st.vals); {
		select {
		case <-st.done[next]:
		case <-ctx.Done():
			return
		}
		end := next + 1
		for end < len(st.vals) && closed(st.done[end]) {
			end++
		}
		items := Array(st.vals[next:end])
		var errs gqlerror.List
		for _, e := range st.errs[next:end] {
			errs = append(errs, e...)
		}
		var result Marshaler = items
		if st.nonNull {
			for _, v := range items {
				if v == Null {
					result = Null
					break
				}
			}
		}
		if end < len(st.vals) {
			atomic.AddInt32(st.sink.pending, 1) // the payload after this one
		}
		gates := st.gates[next:end]
		ds := DeferredResult{
			Path:   append(st.path[:len(st.path):len(st.path)], ast.PathIndex(st.from+next)),
			Label:  st.label,
			Result: result,
			Errors: errs,
			Items:  true,
			delivered: func() {
				for _, g := range gates {
					close(g)
				}
			},
		}
		select {
		case st.sink.results <- ds:
		case <-ctx.Done():
			return
		}
		if result == Null {
			// The list cannot be completed: no payload follows for it.
			if end < len(st.vals) {
				atomic.AddInt32(st.sink.pending, -1)
			}
			return
		}
		next = end
	}
}

// item marshals item from+j under its own response context, so its errors
// travel with its payload, and a delivery gate its nested streams and
// deferred fragments wait on.
func (st *streamed) item(ctx context.Context, j int) {
	defer close(st.done[j])
	ictx := withDeliveryGate(WithFreshResponseContext(ctx), st.gates[j])
	ectx := withElementContext(ictx, st.from+j)
	defer func() {
		st.errs[j] = GetErrors(ictx)
	}()
	if !st.omitPanicHandler {
		defer func() {
			if r := recover(); r != nil {
				AddError(ectx, Recover(ectx, r))
				st.vals[j] = Null
			}
		}()
	}
	st.vals[j] = st.marshalElement(ectx, st.from+j)
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

type deliveryGateKey struct{}

// withDeliveryGate marks ctx as resolving a payload that is delivered when
// gate closes: the incremental payloads of what is resolved under it wait
// for that.
func withDeliveryGate(ctx context.Context, gate <-chan struct{}) context.Context {
	return context.WithValue(ctx, deliveryGateKey{}, gate)
}

// deliveryGate is the gate of the payload ctx resolves, nil in the first
// payload (which is always taken first).
func deliveryGate(ctx context.Context) <-chan struct{} {
	g, _ := ctx.Value(deliveryGateKey{}).(<-chan struct{})
	return g
}

// deliveredOnce returns a function that closes gate when it has been
// called n times: a deferred group's payloads are all taken.
func deliveredOnce(gate chan struct{}, n int) func() {
	var left atomic.Int32
	left.Store(int32(n))
	return func() {
		if left.Add(-1) == 0 {
			close(gate)
		}
	}
}
