package graphql

import (
	"bytes"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vektah/gqlparser/v2/ast"
)

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
