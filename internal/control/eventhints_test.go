package control_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A deployment's note carries every event its transaction recorded, and
// those events are the stored ones: a subscriber where they start gets
// them from the hint alone; one before them (a gap), one without access,
// or a hint that is not whole gets nothing and reads.
func TestDeploymentNotesCarryTheirEvents(t *testing.T) {
	b := bus.New()
	rec := &notifications{Memory: bus.Memory{B: b}}
	s := controltest.New(t, core.WithBus(b, rec))
	_, first := s.Deploy(t, 1)
	rec.reset()
	_, second := s.Deploy(t, 2) // supersedes first: events of both
	if len(rec.notes) != 1 {
		t.Fatalf("the deploy wrote %d notifications, want 1", len(rec.notes))
	}
	hintOf := func(id model.DeploymentID) string {
		for _, n := range rec.notes[0] {
			if n.Topic == bus.Deployment(string(id)) {
				return n.Hint
			}
		}
		t.Fatalf("no note of deployment %s", id)
		return ""
	}
	for _, id := range []model.DeploymentID{first.ID, second.ID} {
		d, err := store.Deployments.Get(s.Admin, s.St.Q(), id)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := store.DeploymentEventsAfter(s.Admin, s.St.Q(), id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		hint := hintOf(id)
		// The events the deploy recorded: those after the ones before it.
		var before int64
		if id == first.ID {
			before = first.LastSeq
		}
		he, ok := s.P.Delivery.DeploymentEventsHinted(s.Admin, id, before, []string{hint})
		if !ok {
			t.Fatalf("deployment %s: the hint %s was not taken", id, hint)
		}
		if want := stored[before:]; !reflect.DeepEqual(he.Events, want) {
			t.Errorf("deployment %s: hinted events %+v, stored %+v", id, he.Events, want)
		}
		if he.Ended != d.Stage.Terminal() {
			t.Errorf("deployment %s: ended %v, its stage is %s", id, he.Ended, d.Stage)
		}
		// The same hint twice, or once more after the events: nothing to add.
		if again, ok := s.P.Delivery.DeploymentEventsHinted(s.Admin, id, d.LastSeq, []string{hint, hint}); !ok || len(again.Events) != 0 {
			t.Errorf("deployment %s: after its last event the hint gave %+v (%v), want none", id, again.Events, ok)
		}
		if before > 0 {
			if _, ok := s.P.Delivery.DeploymentEventsHinted(s.Admin, id, before-1, []string{hint}); ok {
				t.Errorf("deployment %s: a hint that skips event %d was taken", id, before)
			}
		}
		if _, ok := s.P.Delivery.DeploymentEventsHinted(context.Background(), id, before, []string{hint}); ok {
			t.Errorf("deployment %s: a hint was taken for a caller who may not read it", id)
		}
		for _, bad := range []string{"", "{", `{"t":"x","l":5,"e":[{"q":4}]}`} {
			if _, ok := s.P.Delivery.DeploymentEventsHinted(s.Admin, id, before, []string{hint, bad}); ok {
				t.Errorf("deployment %s: a hint %q was taken", id, bad)
			}
		}
	}
}
