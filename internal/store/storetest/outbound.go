package storetest

import (
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func newEndpoint(t testing.TB, s *store.Store, tenant *model.Tenant, project *model.ProjectID, events ...model.EventKind) *model.Endpoint {
	t.Helper()
	now := store.Now()
	return mustInsert(t, s, store.Endpoints, &model.Endpoint{ID: model.EndpointID(newID()), TenantID: tenant.ID, ProjectID: project,
		URL: "https://hooks.example.com/" + newID(), Description: "a receiver", Events: events, Secret: "sealed", RotatedAt: now,
		Enabled: true, CreatedAt: now, UpdatedAt: now})
}

// newMessage numbers and stores a message for an endpoint, due at due.
func newMessage(t testing.TB, s *store.Store, e *model.Endpoint, due time.Time) *model.Message {
	t.Helper()
	seq, err := store.NextMessageSeq(t.Context(), s.Q(), e.ID)
	wantNoErr(t, "numbering a message", err)
	return mustInsert(t, s, store.Messages, &model.Message{ID: model.MessageID(newID()), EndpointID: e.ID, TenantID: e.TenantID,
		ProjectID: e.ProjectID, Kind: model.EventDeploymentStage, Payload: []byte(`{"type":"deployment.stage_changed"}`), Seq: seq,
		Status: model.MessagePending, NextAttemptAt: due, CreatedAt: store.Now()})
}

func messageID(m *model.Message) model.MessageID { return m.ID }

func testOutbound(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	other := newTenant(t, s)
	tenantWide := newEndpoint(t, s, g.tenant, nil, model.EventClusterConnected, model.EventDeploymentEnded)
	projects := newEndpoint(t, s, g.tenant, &g.project.ID, model.EventDeploymentStage)
	newEndpoint(t, s, other, nil, model.EventDeploymentStage)

	t.Run("RoundTrip", func(t *testing.T) {
		assertEqual(t, "endpoint", mustGet(t, s, store.Endpoints, projects.ID), projects)
		m := newMessage(t, s, projects, at)
		assertEqual(t, "message", mustGet(t, s, store.Messages, m.ID), m)
		a := mustInsert(t, s, store.Attempts, &model.Attempt{ID: model.AttemptID(newID()), MessageID: m.ID, EndpointID: projects.ID,
			TenantID: g.tenant.ID, At: at, StatusCode: 503, Latency: 42 * time.Millisecond, Response: "busy", Error: "HTTP 503",
			Redelivery: true})
		assertEqual(t, "attempt", mustGet(t, s, store.Attempts, a.ID), a)
	})

	t.Run("EndpointsOf", func(t *testing.T) {
		got, err := store.EndpointsOfTenant(ctx, s.Q(), g.tenant.ID)
		wantNoErr(t, "reading the tenant's", err)
		wantIDs(t, "the tenant's endpoints", got, []*model.Endpoint{tenantWide, projects}, endpointID)
		got, err = store.EndpointsOfProject(ctx, s.Q(), g.project.ID)
		wantNoErr(t, "reading the project's", err)
		wantIDs(t, "the project's endpoints", got, []*model.Endpoint{projects}, endpointID)
	})

	t.Run("UpdateEndpoint", func(t *testing.T) {
		e := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		want := *e
		until := at.Add(time.Hour)
		want.URL, want.Description, want.Events = "https://elsewhere.example.com/", "moved", []model.EventKind{model.EventBuildEnded, model.EventClusterDisconnected}
		want.OldSecret, want.OldSecretUntil, want.Secret, want.RotatedAt = "old", &until, "new", at
		want.Enabled, want.DisabledReason, want.DisabledAt, want.UpdatedAt = false, "failing", &at, at
		changed := want
		changed.LastSeq, changed.CreatedAt = 99, at // not the update's to change
		wantNoErr(t, "updating", store.UpdateEndpoint(ctx, s.Q(), &changed))
		assertEqual(t, "endpoint", mustGet(t, s, store.Endpoints, e.ID), &want)
		missing := want
		missing.ID = model.EndpointID(newID())
		wantErr(t, "updating a missing endpoint", store.UpdateEndpoint(ctx, s.Q(), &missing), store.ErrNotFound)
	})

	t.Run("NextMessageSeq", func(t *testing.T) {
		e := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		for want := int64(1); want <= 3; want++ {
			got, err := store.NextMessageSeq(ctx, s.Q(), e.ID)
			wantNoErr(t, "numbering", err)
			if got != want {
				t.Errorf("seq %d, want %d", got, want)
			}
		}
		_, err := store.NextMessageSeq(ctx, s.Q(), model.EndpointID(newID()))
		wantErr(t, "numbering for a missing endpoint", err, store.ErrNotFound)
	})

	t.Run("DueMessages", func(t *testing.T) {
		now := store.Now()
		a := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		a1, a2 := newMessage(t, s, a, now.Add(-time.Minute)), newMessage(t, s, a, now.Add(-time.Minute))
		b := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		newMessage(t, s, b, now.Add(time.Minute)) // not due yet: b's later one waits behind it
		newMessage(t, s, b, now.Add(-time.Minute))
		c := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		c1 := newMessage(t, s, c, now.Add(-2*time.Minute))
		c1.Status, c1.DeliveredAt = model.MessageDelivered, &now
		wantNoErr(t, "delivering", store.UpdateMessage(ctx, s.Q(), c1))
		c2 := newMessage(t, s, c, now.Add(-time.Minute))
		off := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		newMessage(t, s, off, now.Add(-time.Minute))
		off.Enabled = false
		wantNoErr(t, "disabling", store.UpdateEndpoint(ctx, s.Q(), off))

		until := now.Add(time.Minute)
		var got []*model.Message
		err := s.Tx(ctx, func(q store.Querier) error {
			var err error
			got, err = store.DueMessages(ctx, q, now, until, 100)
			return err
		})
		wantNoErr(t, "leasing", err)
		// Each endpoint's earliest undelivered, due, of enabled endpoints:
		// a1 (not a2, behind it), c2 (c1 delivered), nothing of b or off.
		mine := map[model.MessageID]bool{a1.ID: true, c2.ID: true}
		var leased []*model.Message
		for _, m := range got {
			if m.EndpointID == a.ID || m.EndpointID == b.ID || m.EndpointID == c.ID || m.EndpointID == off.ID {
				leased = append(leased, m)
			}
		}
		if len(leased) != 2 || !mine[leased[0].ID] || !mine[leased[1].ID] || leased[0].ID == leased[1].ID {
			t.Errorf("leased %v, want a1 and c2", ids(leased, messageID))
		}
		for _, m := range leased {
			if m.LeaseUntil == nil || !m.LeaseUntil.Equal(until) || !mustGet(t, s, store.Messages, m.ID).LeaseUntil.Equal(until) {
				t.Errorf("message %s's lease: %v", m.ID, m.LeaseUntil)
			}
		}
		again, err := store.DueMessages(ctx, s.Q(), now, until, 100)
		wantNoErr(t, "leasing again", err)
		for _, m := range again {
			if mine[m.ID] || m.ID == a2.ID {
				t.Errorf("message %s leased twice, or before the one ahead of it", m.ID)
			}
		}
		// Once the lease ran out, a1 is due again.
		later, err := store.DueMessages(ctx, s.Q(), until.Add(time.Second), until.Add(time.Minute), 100)
		wantNoErr(t, "leasing after the lease", err)
		found := false
		for _, m := range later {
			found = found || m.ID == a1.ID
		}
		if !found {
			t.Error("a1 is not due again once its lease ran out")
		}
	})

	t.Run("UpdateMessageAndAttempts", func(t *testing.T) {
		e := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		m := newMessage(t, s, e, at)
		want := *m
		want.Status, want.Attempts, want.NextAttemptAt, want.LeaseUntil, want.DeliveredAt, want.Redelivery =
			model.MessageDelivered, 3, at.Add(time.Hour), ptr(at), ptr(at.Add(time.Minute)), true
		changed := want
		changed.Payload, changed.Seq, changed.Kind = []byte(`{}`), 42, model.EventBuildEnded // not the update's to change
		wantNoErr(t, "updating", store.UpdateMessage(ctx, s.Q(), &changed))
		assertEqual(t, "message", mustGet(t, s, store.Messages, m.ID), &want)

		var attempts []*model.Attempt
		for i := range 3 {
			attempts = append(attempts, mustInsert(t, s, store.Attempts, &model.Attempt{ID: model.AttemptID(newID()), MessageID: m.ID,
				EndpointID: e.ID, TenantID: e.TenantID, At: at.Add(time.Duration(i) * time.Second), StatusCode: 500}))
		}
		got, err := store.AttemptsOf(ctx, s.Q(), m.ID)
		wantNoErr(t, "reading attempts", err)
		wantIDs(t, "attempts", got, attempts, func(a *model.Attempt) model.AttemptID { return a.ID })
	})

	t.Run("MessagesOf", func(t *testing.T) {
		e := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		var ms []*model.Message
		for range 4 {
			ms = append(ms, newMessage(t, s, e, at))
		}
		ms[1].Status = model.MessageFailed
		wantNoErr(t, "failing", store.UpdateMessage(ctx, s.Q(), ms[1]))
		page, err := store.MessagesOf(ctx, s.Q(), e.ID, nil, store.PageArgs{First: 2})
		wantNoErr(t, "paging", err)
		wantIDs(t, "newest first", page.Items, []*model.Message{ms[3], ms[2]}, messageID)
		if !page.HasNext {
			t.Error("no next page")
		}
		page, err = store.MessagesOf(ctx, s.Q(), e.ID, nil, store.PageArgs{First: 2, After: string(ms[2].ID)})
		wantNoErr(t, "paging on", err)
		wantIDs(t, "the next page", page.Items, []*model.Message{ms[1], ms[0]}, messageID)
		failed := model.MessageFailed
		page, err = store.MessagesOf(ctx, s.Q(), e.ID, &failed, store.PageArgs{First: 10})
		wantNoErr(t, "filtering", err)
		wantIDs(t, "failed ones", page.Items, []*model.Message{ms[1]}, messageID)
	})

	t.Run("DeleteMessagesBefore", func(t *testing.T) {
		e := newEndpoint(t, s, g.tenant, nil, model.EventBuildEnded)
		old, pending, recent := newMessage(t, s, e, at), newMessage(t, s, e, at), newMessage(t, s, e, at)
		for _, m := range []*model.Message{old, pending, recent} {
			m.CreatedAt = at
			m.Status = model.MessageDelivered
			if m == pending {
				m.Status = model.MessagePending
			}
			_, err := s.Q().Exec(ctx, `UPDATE webhook_messages SET created_at = $2 WHERE id = $1`, string(m.ID), at)
			wantNoErr(t, "backdating", err)
			wantNoErr(t, "updating", store.UpdateMessage(ctx, s.Q(), m))
		}
		recent.CreatedAt = store.Now()
		_, err := s.Q().Exec(ctx, `UPDATE webhook_messages SET created_at = $2 WHERE id = $1`, string(recent.ID), recent.CreatedAt)
		wantNoErr(t, "dating", err)
		mustInsert(t, s, store.Attempts, &model.Attempt{ID: model.AttemptID(newID()), MessageID: old.ID, EndpointID: e.ID,
			TenantID: e.TenantID, At: at})
		n, err := store.DeleteMessagesBefore(ctx, s.Q(), at.Add(time.Hour), 100)
		wantNoErr(t, "deleting", err)
		if n < 1 {
			t.Errorf("deleted %d", n)
		}
		_, err = store.Messages.Get(ctx, s.Q(), old.ID)
		wantErr(t, "the old delivered message", err, store.ErrNotFound)
		mustGet(t, s, store.Messages, pending.ID) // still to be delivered: kept
		mustGet(t, s, store.Messages, recent.ID)
		if n, err := countRows(t, s, "webhook_attempts", "message_id = $1", string(old.ID)); err != nil || n != 0 {
			t.Errorf("the old message's attempts: %d, %v", n, err)
		}
	})

	t.Run("TellClusterStatus", func(t *testing.T) {
		c := newCluster(t, s, g.tenant)
		for i, step := range []struct {
			status string
			want   bool
		}{{"CONNECTED", true}, {"CONNECTED", false}, {"DISCONNECTED", true}, {"DISCONNECTED", false}, {"CONNECTED", true}} {
			got, err := store.TellClusterStatus(ctx, s.Q(), c.ID, step.status)
			wantNoErr(t, "telling", err)
			if got != step.want {
				t.Errorf("step %d (%s): changed %v, want %v", i, step.status, got, step.want)
			}
		}
	})

	t.Run("Cascade", func(t *testing.T) {
		p := newProject(t, s, g.tenant)
		e := newEndpoint(t, s, g.tenant, &p.ID, model.EventBuildEnded)
		m := newMessage(t, s, e, at)
		wantNoErr(t, "deleting the project", store.Projects.Delete(ctx, s.Q(), p.ID))
		_, err := store.Endpoints.Get(ctx, s.Q(), e.ID)
		wantErr(t, "the project's endpoint", err, store.ErrNotFound)
		_, err = store.Messages.Get(ctx, s.Q(), m.ID)
		wantErr(t, "its message", err, store.ErrNotFound)
	})
}

func endpointID(e *model.Endpoint) model.EndpointID { return e.ID }
