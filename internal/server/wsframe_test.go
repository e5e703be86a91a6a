package server

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A frame is what encoding/json made of the message: byte for byte when
// the payload is compact and has nothing encoding/json escapes, and the
// same JSON value otherwise; ids and types are escaped as strings.
func TestWSFrame(t *testing.T) {
	for _, m := range []wsMessage{
		{Type: "connection_ack"},
		{ID: "1", Type: "next", Payload: json.RawMessage(`{"data":{"deploymentEvents":{"sequence":3,"stage":"ROLLING_OUT"}}}`)},
		{ID: `a"b\c` + "\u2028\x01", Type: "error", Payload: json.RawMessage(`[{"message":"no"}]`)},
		{ID: "7", Type: "complete"},
	} {
		got, err := m.frame()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(m)
		if string(got) != string(want) {
			t.Errorf("frame %s, want encoding/json's %s", got, want)
		}
	}

	// A payload is not compacted or escaped again: it is gqlgen's output.
	m := wsMessage{ID: "2", Type: "next", Payload: json.RawMessage(`{"data":{"m":"a<b & c>d"}}`)}
	got, _ := m.frame()
	if want := `{"id":"2","type":"next","payload":{"data":{"m":"a<b & c>d"}}}`; string(got) != want {
		t.Errorf("frame %s, want %s", got, want)
	}
	var a, b any
	want, _ := json.Marshal(m)
	if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("frame %s does not read as encoding/json's %s", got, want)
	}
}
