package core

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// A hinted event reads back as the event the transaction stored, every
// field of it: a field added to model.DeploymentEvent and not to the hint
// fails here (it would be dropped from the events a subscriber is sent).
func TestHintCarriesEveryField(t *testing.T) {
	e := &model.DeploymentEvent{}
	v := reflect.ValueOf(e).Elem()
	for i := range v.NumField() {
		fill(t, v.Type().Field(i).Name, v.Field(i), i)
	}
	d := &model.Deployment{ID: e.DeploymentID, TenantID: e.TenantID, ProjectID: "p-1", Stage: e.Stage, LastSeq: e.Seq}
	raw, err := json.Marshal(hintOf(&recorded{d: d, events: []*model.DeploymentEvent{e}}))
	if err != nil {
		t.Fatal(err)
	}
	var h eventsHint
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	got := h.events(e.DeploymentID)
	if len(got) != 1 || !reflect.DeepEqual(got[0], e) {
		t.Errorf("the hinted event reads back as\n%+v\nwant\n%+v", got[0], e)
	}
}

// fill sets a field to a value that is not its zero.
func fill(t *testing.T, name string, f reflect.Value, i int) {
	t.Helper()
	switch {
	case f.Type() == reflect.TypeOf(time.Time{}):
		f.Set(reflect.ValueOf(time.Date(2026, 12, 3, 12, 0, i, 0, time.UTC)))
	case f.Kind() == reflect.String:
		f.SetString(name + "-value")
	case f.Kind() == reflect.Int64 || f.Kind() == reflect.Int:
		f.SetInt(int64(41 + i))
	case f.Kind() == reflect.Bool:
		f.SetBool(true)
	case f.Kind() == reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		fill(t, name, p.Elem(), i)
		f.Set(p)
	default:
		t.Fatalf("model.DeploymentEvent.%s is a %s: teach fill to set it", name, f.Type())
	}
}
