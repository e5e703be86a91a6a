package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/vektah/gqlparser/v2/ast"
)

// NEBULA PATCH (1) assumes that a group's path, field set and label map are
// needed only once it has a @defer'd field, and that the one place that
// schedules such a field (ResolveConcurrently) makes them first: a group
// stays empty until then, and gets them, at its object's path, on the first.
func TestDeferredGroupOnFirstDeferredField(t *testing.T) {
	i := 2
	ctx := WithFieldContext(context.Background(), &FieldContext{Field: CollectedField{Field: &ast.Field{Alias: "list"}}})
	ctx = WithFieldContext(ctx, &FieldContext{Index: &i})
	fields := []CollectedField{
		{Field: &ast.Field{Alias: "a"}},
		{Field: &ast.Field{Alias: "b"}, Deferrables: []*Deferrable{{Label: "later"}}},
	}
	m := NewFieldSet(fields)
	g := NewDeferredGroup(ctx)
	if n := testing.AllocsPerRun(100, func() { NewDeferredGroup(ctx) }); n != 0 {
		t.Errorf("a new group allocated %.0f times, want 0", n)
	}
	oc := &OperationContext{}
	resolve := func(context.Context) Marshaler { return MarshalString("x") }
	m.ResolveConcurrently(oc, &g, 0, false, false, resolve)
	if g.FieldSet != nil || len(g.Defers) != 0 {
		t.Fatal("a field that is not deferred made the group")
	}
	m.ResolveConcurrently(oc, &g, 1, false, false, resolve)
	if g.FieldSet == nil || g.Defers["later"] == nil || g.Path.String() != "list[2]" {
		t.Fatalf("after a deferred field: field set %v, defers %v, path %q", g.FieldSet, g.Defers, g.Path.String())
	}
}

// NEBULA PATCH (2): a list under a field resolved ahead is marshalled in
// the calling goroutine, and writes what it wrote concurrently; so do the
// resolver fields of an object under it. (That the resolvers call
// ResolvedAhead only for a subtree they have loaded is
// resolvers/plan_test.go's TestPlanShapesHaveNoResolvers.)
func TestResolvedAhead(t *testing.T) {
	fields := []CollectedField{{Field: &ast.Field{Alias: "a"}}, {Field: &ast.Field{Alias: "b"}}}
	write := func(ahead bool) (string, int) {
		ctx := WithFieldContext(context.Background(), &FieldContext{Field: CollectedField{Field: &ast.Field{Alias: "list"}}})
		if ahead {
			ResolvedAhead(ctx)
		}
		// A field below the one resolved ahead is resolved ahead too.
		ctx = WithFieldContext(ctx, &FieldContext{Field: CollectedField{Field: &ast.Field{Alias: "below"}}})
		most := 0
		m := MarshalSliceConcurrently(ctx, 20, 0, false, func(ctx context.Context, i int) Marshaler {
			fs := NewFieldSet(fields)
			for j := range fields {
				fs.Concurrently(j, func(context.Context) Marshaler {
					most = max(most, runtime.NumGoroutine())
					return MarshalInt(10*i + j)
				})
			}
			fs.Dispatch(ctx)
			return fs
		})
		var buf bytes.Buffer
		m.MarshalGQL(&buf)
		return buf.String(), most
	}
	concurrent, _ := write(false)
	before := runtime.NumGoroutine()
	inline, most := write(true)
	if inline != concurrent {
		t.Errorf("resolved ahead: %s, concurrently: %s", inline, concurrent)
	}
	if most > before {
		t.Errorf("resolved ahead, %d goroutines ran, %d before", most, before)
	}
}

// NEBULA PATCH (3) assumes that writing an object from its slice keeps
// marshalFieldSet's rule for a repeated response key (written once, with
// its first value), for objects of up to maxLinearFields fields and past.
func TestFieldSetMarshalGQLRepeatedKeys(t *testing.T) {
	for _, n := range []int{0, 1, 3, maxLinearFields, maxLinearFields + 1, 40} {
		fields := make([]CollectedField, n)
		for i := range fields {
			fields[i] = CollectedField{Field: &ast.Field{Alias: fmt.Sprintf("f%d", i%3)}}
		}
		m := NewFieldSet(fields)
		for i := range m.Values {
			m.Values[i] = MarshalInt(i)
		}
		var got, want bytes.Buffer
		m.MarshalGQL(&got)
		marshalFieldSet(&want, m.allFieldValues())
		if got.String() != want.String() {
			t.Errorf("%d fields: wrote %s, want %s", n, got.String(), want.String())
		}
	}
}

// NEBULA PATCH (13): a deferred field is left out of its object, on both
// ways of writing one, and a later field of the same response key that is
// not deferred is written.
func TestDeferredFieldsLeftOut(t *testing.T) {
	for _, n := range []int{4, maxLinearFields + 2} {
		fields := make([]CollectedField, n)
		for i := range fields {
			fields[i] = CollectedField{Field: &ast.Field{Alias: fmt.Sprintf("f%d", i)}}
		}
		fields[n-1].Alias = "f1" // the key of the deferred field below
		m := NewFieldSet(fields)
		for i := range m.Values {
			m.Values[i] = MarshalInt(i)
		}
		m.Values[1] = Deferred
		var got bytes.Buffer
		m.MarshalGQL(&got)
		var obj map[string]int
		if err := json.Unmarshal(got.Bytes(), &obj); err != nil {
			t.Fatalf("%d fields: %s: %v", n, got.String(), err)
		}
		if len(obj) != n-1 || obj["f0"] != 0 || obj["f1"] != n-1 {
			t.Errorf("%d fields: wrote %s, want every field but the deferred one, f1 from the later field", n, got.String())
		}
	}
}

// NEBULA PATCH (5): the written-out FNV-1a of makeCollectFieldsCacheKey is
// hash/fnv's New64a over the same bytes, and it allocates nothing.
func TestCollectFieldsCacheKeyHash(t *testing.T) {
	for _, satisfies := range [][]string{nil, {}, {"Environment"}, {"Environment", "Node"}, {"", "ü", "Deployment", "Node", "Entity"}} {
		h := fnv.New64a()
		for _, s := range satisfies {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		if got := makeCollectFieldsCacheKey(nil, satisfies).satisfiesHash; got != h.Sum64() {
			t.Errorf("%q: hash %x, want hash/fnv's %x", satisfies, got, h.Sum64())
		}
	}
	satisfies := []string{"Environment", "Node"}
	sel := ast.SelectionSet{&ast.Field{Name: "id"}}
	if makeCollectFieldsCacheKey(sel, satisfies) != makeCollectFieldsCacheKey(sel, satisfies) ||
		makeCollectFieldsCacheKey(sel, satisfies) == makeCollectFieldsCacheKey(sel[:0:0], satisfies) {
		t.Error("a key must be the same for the same selection set and differ for another")
	}
	if n := testing.AllocsPerRun(100, func() { makeCollectFieldsCacheKey(sel, satisfies) }); n != 0 {
		t.Errorf("a cache key allocated %.1f times, want 0", n)
	}
}

// NEBULA PATCH (6): booleans and times write what they wrote before:
// strconv.FormatBool and the quoted RFC 3339 form, into any writer.
func TestScalarMarshalers(t *testing.T) {
	write := func(m Marshaler, builder bool) string {
		if builder {
			var b strings.Builder
			m.MarshalGQL(&b)
			return b.String()
		}
		var b bytes.Buffer
		m.MarshalGQL(&b)
		return b.String()
	}
	at := time.Date(2026, 12, 2, 4, 5, 6, 789, time.FixedZone("x", 5*3600+1800))
	for _, builder := range []bool{false, true} {
		for _, v := range []bool{true, false} {
			if got := write(MarshalBoolean(v), builder); got != strconv.FormatBool(v) {
				t.Errorf("MarshalBoolean(%v) wrote %s", v, got)
			}
		}
		for _, tm := range []time.Time{at, at.UTC(), time.Unix(0, 0).UTC()} {
			if got, want := write(MarshalTime(tm), builder), strconv.Quote(tm.Format(time.RFC3339Nano)); got != want {
				t.Errorf("MarshalTime(%v) wrote %s, want %s", tm, got, want)
			}
		}
	}
	if MarshalTime(time.Time{}) != Null {
		t.Error("the zero time must marshal to null")
	}
}

// NEBULA PATCH (9): a small object's field set is one allocation, and
// holds as many values as it has fields, a large one's too.
func TestNewFieldSet(t *testing.T) {
	for _, n := range []int{0, 1, tinyFieldSet, tinyFieldSet + 1, smallFieldSet, smallFieldSet + 1, 40} {
		fields := make([]CollectedField, n)
		fs := NewFieldSet(fields)
		if len(fs.Values) != n || len(fs.fields) != n {
			t.Errorf("%d fields: %d values, %d fields", n, len(fs.Values), len(fs.fields))
		}
		for i := range 3 {
			fs.delayed = append(fs.delayed, delayedResult{i: i})
		}
		if len(fs.delayed) != 3 || fs.delayed[2].i != 2 {
			t.Errorf("%d fields: delayed results %v", n, fs.delayed)
		}
	}
	for _, n := range []int{tinyFieldSet, smallFieldSet} {
		small := make([]CollectedField, n)
		if a := testing.AllocsPerRun(100, func() { NewFieldSet(small) }); a != 1 {
			t.Errorf("a field set of %d fields took %.1f allocations, want 1", n, a)
		}
	}
	if got := unsafe.Sizeof(fieldSetTiny{}); got > 208 {
		t.Errorf("fieldSetTiny is %d bytes, want it in the 208-byte size class", got)
	}
}

// NEBULA PATCH (10): without a field middleware or a directive the
// resolver is called directly, with the field's context, and two
// allocations fewer; with one, it is called through the middleware, whose
// context the field's children get.
func TestResolveFieldDirect(t *testing.T) {
	type ctxKey struct{}
	field := CollectedField{Field: &ast.Field{Name: "f", Alias: "f"}}
	initFC := func(context.Context, CollectedField) (*FieldContext, error) {
		return &FieldContext{Object: "T", Field: field}, nil
	}
	resolve := func(oc *OperationContext, chain func(context.Context, Resolver) Resolver) (seen, child context.Context, m Marshaler) {
		ctx := WithOperationContext(context.Background(), oc)
		m = ResolveField(ctx, oc, field, initFC,
			func(ctx context.Context) (any, error) { seen = ctx; return "v", nil },
			chain,
			func(ctx context.Context, _ ast.SelectionSet, v string) Marshaler {
				child = ctx
				return MarshalString(v)
			},
			true, true)
		return seen, child, m
	}
	written := func(m Marshaler) string {
		var b bytes.Buffer
		m.MarshalGQL(&b)
		return b.String()
	}

	middlewareRan := false
	around := func(ctx context.Context, next Resolver) (any, error) {
		middlewareRan = true
		return next(context.WithValue(ctx, ctxKey{}, "middleware"))
	}
	direct := &OperationContext{DirectFields: true, ResolverMiddleware: around}
	seen, child, m := resolve(direct, nil)
	if middlewareRan {
		t.Error("with DirectFields and no directive, the field middleware ran")
	}
	if fc := GetFieldContext(seen); fc == nil || fc.Field.Name != "f" || fc.Result != "v" {
		t.Errorf("the resolver's field context is %+v, want field f with its result", fc)
	}
	if child != seen || written(m) != `"v"` {
		t.Errorf("the children's context or the value differs: %q", written(m))
	}

	for _, oc := range []*OperationContext{
		{DirectFields: false, ResolverMiddleware: around}, // a field middleware
		{DirectFields: true, ResolverMiddleware: around},  // a directive (below)
	} {
		middlewareRan = false
		var chain func(context.Context, Resolver) Resolver
		if oc.DirectFields {
			chain = func(_ context.Context, next Resolver) Resolver { return next }
		}
		seen, child, m := resolve(oc, chain)
		if !middlewareRan || seen.Value(ctxKey{}) != "middleware" || child.Value(ctxKey{}) != "middleware" {
			t.Errorf("DirectFields %v: the middleware ran: %v; the resolver and the children must see its context", oc.DirectFields, middlewareRan)
		}
		if written(m) != `"v"` {
			t.Errorf("DirectFields %v: wrote %s", oc.DirectFields, written(m))
		}
	}

	// An error is reported at the field's path, as before.
	oc := &OperationContext{DirectFields: true, ResolverMiddleware: around}
	ctx := WithResponseContext(WithOperationContext(context.Background(), oc), DefaultErrorPresenter, nil)
	m = ResolveField(ctx, oc, field, initFC,
		func(context.Context) (any, error) { return nil, errors.New("boom") }, nil,
		func(context.Context, ast.SelectionSet, string) Marshaler { return Null }, true, true)
	if errs := GetErrors(ctx); m != Null || len(errs) != 1 || errs[0].Path.String() != "f" {
		t.Errorf("the error is %v (result %v), want one at path f", errs, m)
	}

	// Two allocations fewer than through the middleware: the chain's closure
	// and the heap copy of the context.
	count := func(oc *OperationContext) float64 {
		ctx := WithOperationContext(context.Background(), oc)
		return testing.AllocsPerRun(100, func() {
			ResolveField(ctx, oc, field, initFC,
				func(context.Context) (any, error) { return &field, nil }, nil,
				func(context.Context, ast.SelectionSet, *CollectedField) Marshaler { return Null }, true, true)
		})
	}
	passThrough := func(ctx context.Context, next Resolver) (any, error) { return next(ctx) }
	viaMiddleware := count(&OperationContext{ResolverMiddleware: passThrough})
	if d := count(&OperationContext{DirectFields: true, ResolverMiddleware: passThrough}); d > viaMiddleware-2 {
		t.Errorf("the direct call allocated %.0f times, through the middleware %.0f: want 2 fewer", d, viaMiddleware)
	}
}

// NEBULA PATCH (11): a list element's context is one allocation and answers
// as WithFieldContext(ctx, &FieldContext{Index: &i}) did.
func TestElementContext(t *testing.T) {
	type ctxKey struct{}
	parent := &FieldContext{Object: "T", Field: CollectedField{Field: &ast.Field{Name: "list", Alias: "list"}}}
	ctx := WithFieldContext(context.WithValue(context.Background(), ctxKey{}, "above"), parent)
	ectx := withElementContext(ctx, 3)
	fc := GetFieldContext(ectx)
	if fc == nil || fc.Index == nil || *fc.Index != 3 || fc.Parent != parent {
		t.Fatalf("the element's field context is %+v, want index 3 under the list's", fc)
	}
	if ectx.Value(ctxKey{}) != "above" {
		t.Error("a value set above the element is not seen through it")
	}
	if got := GetPath(ectx).String(); got != "list[3]" {
		t.Errorf("the element's path is %q, want list[3]", got)
	}
	if n := testing.AllocsPerRun(100, func() { withElementContext(ctx, 1) }); n != 1 {
		t.Errorf("an element's context allocated %.0f times, want 1", n)
	}

	// Elements marshalled inline and concurrently each see their own index.
	for _, length := range []int{1, 5} {
		got := make([]int, length)
		MarshalSliceConcurrently(ctx, length, 0, false, func(ctx context.Context, i int) Marshaler {
			got[i] = *GetFieldContext(ctx).Index
			return Null
		})
		for i, v := range got {
			if v != i {
				t.Errorf("length %d: element %d saw index %d", length, i, v)
			}
		}
	}
}

// NEBULA PATCH (14) assumes a streamed list's items after initialCount
// reach the response handler in order, each payload's path ending with its
// first item's index, hasNext counted so that it turns false with the
// last; and that an item that fails a non-null list nulls its payload's
// items, with its error there, and ends the stream.
func TestStreamedItems(t *testing.T) {
	for _, c := range []struct {
		name    string
		fail    int // the item whose marshalling panics, -1 for none
		nonNull bool
	}{{"in order", -1, true}, {"a failed nullable item", 3, false}, {"a failed non-null item", 3, true}} {
		t.Run(c.name, func(t *testing.T) {
			def := &ast.DirectiveDefinition{Name: "stream", Arguments: ast.ArgumentDefinitionList{
				{Name: "if", DefaultValue: &ast.Value{Raw: "true", Kind: ast.BooleanValue}},
				{Name: "label"}, {Name: "initialCount", DefaultValue: &ast.Value{Raw: "0", Kind: ast.IntValue}},
			}}
			dir := &ast.Directive{Name: "stream", Definition: def, Arguments: ast.ArgumentList{
				{Name: "initialCount", Value: &ast.Value{Raw: "2", Kind: ast.IntValue}},
				{Name: "label", Value: &ast.Value{Raw: "rest", Kind: ast.StringValue}},
			}}
			oc := &OperationContext{Operation: &ast.OperationDefinition{Operation: ast.Query}, RecoverFunc: DefaultRecover}
			ec := NewExecutionContextState[struct{}, struct{}, struct{}](oc, nil, nil, make(chan DeferredResult))
			ctx := WithResponseContext(WithOperationContext(context.Background(), oc), DefaultErrorPresenter, DefaultRecover)
			ctx = WithFieldContext(ctx, &FieldContext{Field: CollectedField{Field: &ast.Field{Alias: "list", Directives: ast.DirectiveList{dir}}}})

			if StreamOf(ctx, 2) != nil {
				t.Fatal("a list of initialCount items streams")
			}
			s := StreamOf(ctx, 6)
			if s == nil {
				t.Fatal("a list of 6 items with @stream(initialCount: 2) does not stream")
			}
			first := s.Marshal(ctx, 6, c.nonNull, 0, false, func(ctx context.Context, i int) Marshaler {
				if i == c.fail {
					panic("item " + strconv.Itoa(i))
				}
				time.Sleep(time.Duration(6-i) * time.Millisecond) // later items are ready first
				return MarshalString(strconv.Itoa(i))
			})
			if got := marshalled(first); got != `["0","1"]` {
				t.Fatalf("first items %s, want the first two", got)
			}
			if ec.Deferred == 0 {
				t.Fatal("a streamed list does not mark the operation as incremental")
			}
			var got []string
			var errs int
			for atomic.LoadInt32(&ec.PendingDeferred) > 0 {
				var resp Response
				data, isItems := ec.NextIncremental(&resp)
				if !isItems || resp.Label != "rest" || len(resp.Path) != 2 || resp.Path[0] != ast.PathName("list") {
					t.Fatalf("payload items=%v label %q path %v", isItems, resp.Label, resp.Path)
				}
				errs += len(resp.Errors)
				if data == Null {
					got = append(got, fmt.Sprintf("null@%v", resp.Path[1]))
					continue
				}
				if idx := int(resp.Path[1].(ast.PathIndex)); idx != 2+len(got) && c.fail < 0 {
					t.Fatalf("items at %d after %d items", idx, 2+len(got))
				}
				var items []any
				_ = json.Unmarshal([]byte(marshalled(data)), &items)
				for _, v := range items {
					got = append(got, fmt.Sprint(v))
				}
			}
			// Items ready together share a payload: a non-null item's
			// failure nulls the payload it is in, which may hold item 2.
			want := map[string][]string{
				"in order":               {"2 3 4 5"},
				"a failed nullable item": {"2 <nil> 4 5"},
				"a failed non-null item": {"2 null@3", "null@2"},
			}[c.name]
			if streamed := strings.Join(got, " "); !slices.Contains(want, streamed) {
				t.Errorf("streamed %q, want one of %q", streamed, want)
			}
			if wantErrs := map[bool]int{true: 0, false: 1}[c.fail < 0]; errs != wantErrs {
				t.Errorf("%d errors in the payloads, want %d", errs, wantErrs)
			}
		})
	}
}

func marshalled(m Marshaler) string {
	var b bytes.Buffer
	m.MarshalGQL(&b)
	return b.String()
}
