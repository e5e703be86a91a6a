package store

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
)

// decodeJSON reads labels as json.Unmarshal does, through its fast path
// for what encodeJSON writes and through json.Unmarshal for the rest.
func TestDecodeLabelsMatchesUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune(`abcXYZ019-_./:= "\<>&éü漢` + "\x00\x1f\u2028")
	plain := []rune(`abcXYZ019-_./éü漢`) // what labels usually hold: no escapes
	word := func() string {
		from := plain
		if r.IntN(4) == 0 {
			from = alphabet
		}
		out := make([]rune, r.IntN(8))
		for i := range out {
			out[i] = from[r.IntN(len(from))]
		}
		return string(out)
	}
	var inputs []string
	for range 2000 {
		var l model.Labels
		for range r.IntN(4) {
			l = append(l, model.Label{Key: word(), Value: word()})
		}
		inputs = append(inputs, encodeJSON(l))
	}
	inputs = append(inputs, `[ {"key":"a","value":"b"} ]`, `[{"value":"b","key":"a"}]`, `[{"key":"a","value":"b"},]`,
		`[{"key":"a","value":"b"}{"key":"c","value":"d"}]`, `[{"key":"a","value":"b","x":1}]`, "[{\"key\":\"\xff\",\"value\":\"b\"}]")
	fast := 0
	for _, raw := range inputs {
		var want model.Labels
		wantErr := json.Unmarshal([]byte(raw), &want)
		var got model.Labels
		gotErr := decodeJSON(&got, raw)
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v (%v), want %#v (%v)", raw, got, gotErr, want, wantErr)
		}
		var l model.Labels
		if decodeLabels(raw, &l) {
			fast++
		}
	}
	if fast < len(inputs)/10 {
		t.Errorf("only %d of %d inputs took the fast path", fast, len(inputs))
	}
}
