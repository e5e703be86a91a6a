package core

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A deployment's note carries the events its transaction recorded, with
// the deployment's scope, stage and last event number as they were at the
// commit (see the bus's hints): a subscriber of the deployment's events
// that is where they start sends them without reading the deployment and
// its events again. Every event of the deployment the transaction
// recorded is in its hint (recordEvent is the one place that records
// them), so a hint never skips one.

// eventsHint is the wire form of a deployment's hint.
type eventsHint struct {
	Tenant  model.TenantID        `json:"t"`
	Project model.ProjectID       `json:"p"`
	Stage   model.DeploymentStage `json:"s"`
	LastSeq int64                 `json:"l"`
	Events  []hintedEvent         `json:"e"`
}

type hintedEvent struct {
	Seq     int64                 `json:"q"`
	Stage   model.DeploymentStage `json:"s"`
	Blocker *model.Blocker        `json:"b,omitempty"`
	Message string                `json:"m"`
	At      time.Time             `json:"a"`
}

// recorded is what a transaction recorded of one deployment's events.
type recorded struct {
	d      *model.Deployment // as the transaction left it
	events []*model.DeploymentEvent
}

// RecordEvent records a deployment's event in the transaction and keeps
// it for the hint of the deployment's note.
func (p *Plane) RecordEvent(ctx context.Context, q *Txn, d *model.Deployment, e *model.DeploymentEvent) error {
	if err := store.InsertDeploymentEvent(ctx, q, e); err != nil {
		return err
	}
	if q.recorded == nil {
		q.recorded = map[model.DeploymentID]*recorded{}
	}
	r := q.recorded[d.ID]
	if r == nil {
		r = &recorded{}
		q.recorded[d.ID] = r
	}
	r.d, r.events = d, append(r.events, e)
	return nil
}

// busNotes is the transaction's notes for the bus: each deployment's with
// the events it recorded as its hint. They are made once, when the
// notification is written, and told again after the commit.
func (t *Txn) busNotes() []bus.Note {
	if t.busNoted != nil {
		return t.busNoted
	}
	notes := make([]bus.Note, len(t.notes))
	t.busNoted = notes
	for i, topic := range t.notes {
		notes[i].Topic = topic
	}
	for id, r := range t.recorded {
		topic := bus.Deployment(string(id))
		i := slices.IndexFunc(notes, func(n bus.Note) bool { return n.Topic == topic })
		if i < 0 {
			continue // never: an event's deployment is noted
		}
		if b, err := json.Marshal(hintOf(r)); err == nil {
			notes[i].Hint = string(b)
		}
	}
	return notes
}

// hintOf and eventsHint.events are the one codec of a hinted event: what
// one carries of a model.DeploymentEvent (TestHintCarriesEveryField fills
// every field and reads it back).
func hintOf(r *recorded) eventsHint {
	h := eventsHint{Tenant: r.d.TenantID, Project: r.d.ProjectID, Stage: r.d.Stage, LastSeq: r.d.LastSeq,
		Events: make([]hintedEvent, len(r.events))}
	for j, e := range r.events {
		h.Events[j] = hintedEvent{Seq: e.Seq, Stage: e.Stage, Blocker: e.Blocker, Message: e.Message, At: e.CreatedAt}
	}
	return h
}

// EventsHint is what a deployment's hint says: the deployment's scope,
// stage and last event number at the commit, and the events the
// transaction recorded, as the store holds them.
type EventsHint struct {
	Scope   model.Scope
	Stage   model.DeploymentStage
	LastSeq int64
	Events  []*model.DeploymentEvent
}

// ReadEventsHint reads the hint of deployment id; false when raw is not a
// whole one (no events, or its last event is not the deployment's last).
func ReadEventsHint(raw string, id model.DeploymentID) (EventsHint, bool) {
	var h eventsHint
	if raw == "" || json.Unmarshal([]byte(raw), &h) != nil || len(h.Events) == 0 ||
		h.Events[len(h.Events)-1].Seq != h.LastSeq {
		return EventsHint{}, false
	}
	return EventsHint{Scope: model.Scope{Tenant: h.Tenant, Project: h.Project}, Stage: h.Stage, LastSeq: h.LastSeq,
		Events: h.events(id)}, true
}

// events are the hint's events of deployment id, as the store holds them.
func (h eventsHint) events(id model.DeploymentID) []*model.DeploymentEvent {
	out := make([]*model.DeploymentEvent, len(h.Events))
	for i, e := range h.Events {
		out[i] = &model.DeploymentEvent{DeploymentID: id, Seq: e.Seq, TenantID: h.Tenant,
			Stage: e.Stage, Blocker: e.Blocker, Message: e.Message, CreatedAt: e.At}
	}
	return out
}
