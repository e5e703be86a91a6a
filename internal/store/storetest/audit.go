package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func testAudit(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b := newTenant(t, s), newTenant(t, s)
	// Actors are users the tenant has profiles of; the filter takes the
	// tenant's id for them.
	user1, user2 := newUser(t, s), newUser(t, s)
	u1, u2 := user1.ID, user2.ID
	local := func(tenant *model.Tenant, u *model.User) model.LocalUserID {
		t.Helper()
		wantNoErr(t, "recording a profile", store.PutMemberProfile(ctx, s.Q(), tenant.ID, u))
		id, err := store.LocalIDOf(ctx, s.Q(), tenant.ID, u.ID)
		wantNoErr(t, "reading the tenant's id", err)
		return id
	}
	l1, l2, l1InB := local(a, user1), local(a, user2), local(b, user1)
	tok := model.TokenID(newID())
	p1, p2, c1 := newID(), newID(), newID()
	t0 := store.Now().Add(-time.Hour)
	minute := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }

	// Inserted oldest first; e[i] happened at minute i.
	e := []*model.AuditEvent{
		{TenantID: a.ID, ActorID: &u1, Action: "project.create", TargetType: "Project", TargetID: &p1,
			ClientAddress: "192.0.2.1", CreatedAt: minute(0),
			Details: map[string]any{"name": "shop", "replicas": float64(3), "nested": map[string]any{"tags": []any{"a", "b"}}, "ok": true}},
		{TenantID: a.ID, ActorID: &u1, Action: "project.update", TargetType: "Project", TargetID: &p1,
			ClientAddress: "192.0.2.1", CreatedAt: minute(1), Details: map[string]any{}},
		{TenantID: a.ID, ActorID: &u2, TokenID: &tok, Action: "project.create", TargetType: "Project", TargetID: &p2,
			ClientAddress: "2001:db8::1", CreatedAt: minute(2), Details: map[string]any{"name": "blog"}},
		{TenantID: a.ID, Action: "cluster.create", TargetType: "Cluster", TargetID: &c1,
			ClientAddress: "", CreatedAt: minute(3)}, // by the system, no details
		{TenantID: a.ID, ActorID: &u2, Action: "project.delete", TargetType: "Project", TargetID: &p1,
			ClientAddress: "192.0.2.7", CreatedAt: minute(4), Details: map[string]any{"reason": "“done”"}},
	}
	// Another tenant's events, one for the same target, must never show.
	other := []*model.AuditEvent{
		{TenantID: b.ID, ActorID: &u1, Action: "project.create", TargetType: "Project", TargetID: &p1,
			ClientAddress: "192.0.2.9", CreatedAt: minute(1)},
		{TenantID: b.ID, Action: "tenant.update", TargetType: "Tenant", ClientAddress: "192.0.2.9", CreatedAt: minute(5)},
	}
	for i, ev := range slices.Concat(e[:2], other[:1], e[2:], other[1:]) {
		if err := store.InsertAudit(ctx, s.Q(), ev); err != nil {
			t.Fatalf("inserting audit event %d: %v", i, err)
		}
	}

	all, err := store.ListAudit(ctx, s.Q(), a.ID, store.AuditFilter{}, store.PageArgs{First: store.MaxPage})
	wantNoErr(t, "listing the audit log", err)
	if len(all.Items) != len(e) || all.HasNext {
		t.Fatalf("got %d events (HasNext %v), want %d", len(all.Items), all.HasNext, len(e))
	}
	// Newest first; ids are assigned by the store and name the event.
	idOf := make([]string, len(e))
	for i, got := range all.Items {
		want := e[len(e)-1-i]
		if got.ID == "" {
			t.Errorf("event %d: got an empty id", i)
		}
		withID := *want
		withID.ID = got.ID
		assertEqual(t, "event "+string(got.ID), got, &withID)
		idOf[len(e)-1-i] = string(got.ID)
	}
	ev := func(idx ...int) []string {
		out := make([]string, len(idx))
		for i, x := range idx {
			out[i] = idOf[x]
		}
		return out
	}

	t.Run("filters", func(t *testing.T) {
		tests := []struct {
			name   string
			filter store.AuditFilter
			want   []string
		}{
			{"action", store.AuditFilter{Action: "project.create"}, ev(2, 0)},
			{"actor", store.AuditFilter{ActorID: l1}, ev(1, 0)},
			{"other actor", store.AuditFilter{ActorID: l2}, ev(4, 2)},
			{"actor by another tenant's id", store.AuditFilter{ActorID: l1InB}, nil},
			{"actor by the user's own id", store.AuditFilter{ActorID: model.LocalUserID(u1)}, nil},
			{"target", store.AuditFilter{TargetType: "Project", TargetID: p1}, ev(4, 1, 0)},
			{"target id of another type", store.AuditFilter{TargetType: "Cluster", TargetID: p1}, nil},
			{"cluster target", store.AuditFilter{TargetType: "Cluster", TargetID: c1}, ev(3)},
			{"since, inclusive", store.AuditFilter{Since: ptr(minute(2))}, ev(4, 3, 2)},
			{"until, exclusive", store.AuditFilter{Until: ptr(minute(2))}, ev(1, 0)},
			{"since and until", store.AuditFilter{Since: ptr(minute(1)), Until: ptr(minute(3))}, ev(2, 1)},
			{"since in another zone", store.AuditFilter{Since: ptr(minute(3).In(time.FixedZone("UTC-7", -7*3600)))}, ev(4, 3)},
			{"action and actor", store.AuditFilter{Action: "project.create", ActorID: l2}, ev(2)},
			{"everything", store.AuditFilter{Action: "project.delete", ActorID: l2, TargetType: "Project", TargetID: p1,
				Since: ptr(minute(0)), Until: ptr(minute(5))}, ev(4)},
			{"no match", store.AuditFilter{Action: "project.archive"}, nil},
			{"empty range", store.AuditFilter{Since: ptr(minute(3)), Until: ptr(minute(3))}, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				pg, err := store.ListAudit(ctx, s.Q(), a.ID, tc.filter, store.PageArgs{First: 10})
				wantNoErr(t, "listing", err)
				got := ids(pg.Items, func(e *model.AuditEvent) model.AuditEventID { return e.ID })
				if len(got) != 0 || len(tc.want) != 0 {
					if !slices.Equal(got, tc.want) {
						t.Errorf("got events %v, want %v", got, tc.want)
					}
				}
				if pg.HasNext {
					t.Errorf("got HasNext true, want false")
				}
			})
		}
	})

	t.Run("pagination", func(t *testing.T) {
		tests := []struct {
			name   string
			filter store.AuditFilter
			first  int
			pages  [][]string
		}{
			{"by two", store.AuditFilter{}, 2, [][]string{ev(4, 3), ev(2, 1), ev(0)}},
			{"by one, filtered", store.AuditFilter{TargetType: "Project", TargetID: p1}, 1, [][]string{ev(4), ev(1), ev(0)}},
			{"exactly a page", store.AuditFilter{}, 5, [][]string{ev(4, 3, 2, 1, 0)}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				after := ""
				for i, want := range tc.pages {
					pg, err := store.ListAudit(ctx, s.Q(), a.ID, tc.filter, store.PageArgs{First: tc.first, After: after})
					wantNoErr(t, "listing", err)
					got := ids(pg.Items, func(e *model.AuditEvent) model.AuditEventID { return e.ID })
					if !slices.Equal(got, want) {
						t.Errorf("page %d: got %v, want %v", i, got, want)
					}
					if wantNext := i < len(tc.pages)-1; pg.HasNext != wantNext {
						t.Errorf("page %d: got HasNext %v, want %v", i, pg.HasNext, wantNext)
					}
					if len(got) == 0 {
						return
					}
					after = got[len(got)-1]
				}
			})
			t.Run(tc.name+" from the end", func(t *testing.T) {
				var want, got []string
				for _, p := range tc.pages {
					want = append(want, p...)
				}
				before := ""
				for i := 0; i <= len(want); i++ {
					pg, err := store.ListAudit(ctx, s.Q(), a.ID, tc.filter, store.PageArgs{First: tc.first, Before: before, FromEnd: true})
					wantNoErr(t, "listing from the end", err)
					page := ids(pg.Items, func(e *model.AuditEvent) model.AuditEventID { return e.ID })
					got = append(page, got...)
					if !pg.HasPrevious || len(page) == 0 {
						break
					}
					before = page[0]
				}
				if !slices.Equal(got, want) {
					t.Errorf("from the end: got %v, want %v", got, want)
				}
			})
		}
	})

	t.Run("bad cursor", func(t *testing.T) {
		if _, err := store.ListAudit(ctx, s.Q(), a.ID, store.AuditFilter{}, store.PageArgs{First: 2, After: "abc"}); err == nil {
			t.Error("listing after cursor \"abc\": got no error, want one")
		}
	})

	t.Run("AuditEventByID", func(t *testing.T) {
		for i, want := range e {
			got, err := store.AuditEventByID(ctx, s.Q(), model.AuditEventID(idOf[i]))
			wantNoErr(t, "reading event "+idOf[i], err)
			withID := *want
			withID.ID = model.AuditEventID(idOf[i])
			assertEqual(t, "event "+idOf[i], got, &withID)
		}
		for _, id := range []model.AuditEventID{"999999999", "not-a-number", ""} {
			_, err := store.AuditEventByID(ctx, s.Q(), id)
			wantErr(t, "reading event "+string(id), err, store.ErrNotFound)
		}
	})

	t.Run("CountAudit", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			tenant model.TenantID
			want   int
		}{{"a", a.ID, len(e)}, {"b", b.ID, len(other)}, {"unknown", model.TenantID(newID()), 0}} {
			n, err := store.CountAudit(ctx, s.Q(), tc.tenant)
			wantNoErr(t, "counting", err)
			if n != tc.want {
				t.Errorf("tenant %s: got %d events, want %d", tc.name, n, tc.want)
			}
		}
	})

	t.Run("unknown tenant", func(t *testing.T) {
		err := store.InsertAudit(ctx, s.Q(), &model.AuditEvent{TenantID: model.TenantID(newID()), Action: "x",
			TargetType: "Tenant", CreatedAt: store.Now()})
		wantConflict(t, "inserting an event for an unknown tenant", err, true)
	})
}
