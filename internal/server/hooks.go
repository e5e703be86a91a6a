package server

import (
	"errors"
	"io"
	"net/http"

	"github.com/nebulactrl/nebula/internal/control/builds"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/webhook"
)

// receiveHook takes a Git provider's delivery to /hooks/{id}. The answer
// is what the provider's "recent deliveries" page shows: the outcome and
// its reason, with a status that says whether it was refused and why.
func (s *Server) receiveHook(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if len(id) > 100 {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such webhook"})
		return
	}
	in := builds.Inbound{Header: r.Header}
	if r.ContentLength > webhook.MaxBody {
		in.Oversized = true
	} else {
		body, err := io.ReadAll(io.LimitReader(r.Body, webhook.MaxBody+1))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "reading the body: " + err.Error()})
			return
		}
		in.Body, in.Oversized = body, len(body) > webhook.MaxBody
	}
	if in.Oversized {
		in.Body = nil
	}
	d, why, err := s.plane.Builds.ReceiveWebhook(r.Context(), model.WebhookID(id), in)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such webhook"})
		return
	case errors.Is(err, store.ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the database is unavailable; send it again"})
		return
	case err != nil:
		s.log.ErrorContext(r.Context(), "receiving a webhook delivery", "webhook", id, logError, err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return
	}
	status := http.StatusAccepted
	switch why {
	case builds.RefusedUnknown, builds.RefusedMalformed:
		status = http.StatusBadRequest
	case builds.RefusedOversized:
		status = http.StatusRequestEntityTooLarge
	case builds.RefusedSignature:
		status = http.StatusUnauthorized
	case builds.RefusedReplay:
		status = http.StatusConflict
	}
	// The ids are the GraphQL API's, so the answer a provider shows on its
	// "recent deliveries" page leads to node(id:).
	builds := make([]string, len(d.Builds))
	for i, b := range d.Builds {
		builds[i] = gid.Encode(gid.Build, b)
	}
	writeJSON(w, status, map[string]any{"delivery": gid.Encode(gid.WebhookDelivery, d.ID), "outcome": d.Outcome,
		"reason": d.Reason, "builds": builds})
}
