package delivery

import (
	"cmp"
	"context"
	"slices"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
)

// A subscriber of a deployment's events reads them from the hints of the
// deployment's notes when they hold them (core.ReadEventsHint: the codec
// the transaction wrote them with), and from the store otherwise.

// HintedEvents are a deployment's events taken from its notes' hints.
type HintedEvents struct {
	// Events follow the caller's after without a gap, in order.
	Events []*model.DeploymentEvent
	// Ended: the deployment ended, and Events (with what the caller
	// sent before) reach its last event.
	Ended bool
}

// DeploymentEventsHinted returns the events of deployment id after the
// event numbered after, from the hints of its notes, when they hold every
// one of them up to the newest hinted and the caller may read the
// deployment's scope; false when they do not (the caller reads them).
func (p *Delivery) DeploymentEventsHinted(ctx context.Context, id model.DeploymentID, after int64, hints []string) (HintedEvents, bool) {
	var newest *core.EventsHint
	var evs []*model.DeploymentEvent
	for _, raw := range hints {
		h, ok := core.ReadEventsHint(raw, id)
		if !ok {
			return HintedEvents{}, false
		}
		if newest == nil || h.LastSeq > newest.LastSeq {
			newest = &h
		}
		for _, e := range h.Events {
			if e.Seq > after {
				evs = append(evs, e)
			}
		}
	}
	if newest == nil {
		return HintedEvents{}, false
	}
	slices.SortFunc(evs, func(a, b *model.DeploymentEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	evs = slices.CompactFunc(evs, func(a, b *model.DeploymentEvent) bool { return a.Seq == b.Seq })
	for i, e := range evs {
		if e.Seq != after+int64(i)+1 {
			return HintedEvents{}, false // a gap: an event not hinted
		}
	}
	if len(evs) > 0 && evs[len(evs)-1].Seq != newest.LastSeq {
		return HintedEvents{}, false
	}
	if err := p.MayRead(ctx, authz.DeploymentRead, newest.Scope); err != nil {
		return HintedEvents{}, false // the read says why
	}
	// The events reach newest.LastSeq (or the caller is past it): ended
	// when the newest hint's stage is an end.
	return HintedEvents{Events: evs, Ended: newest.Stage.Terminal()}, true
}
