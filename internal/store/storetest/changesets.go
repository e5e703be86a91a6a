package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func changeSetID(c *model.ChangeSet) model.ChangeSetID { return c.ID }

// testChangeSets: a set's row round-trips its lists; numbers count per
// project; UpdateChangeSet writes state, times and lists; the project's
// sets page newest first, by state; UpdatedSince reads what changed after
// a time, oldest change first; LapsedChangeSets finds the submitted and
// approved sets whose window closed, of every tenant, and nothing else.
func testChangeSets(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	at := store.Now().Add(-time.Hour)
	n, err := store.NextChangeSetNumber(ctx, s.Q(), g.project.ID)
	wantNoErr(t, "numbering the first set", err)
	if n != 1 {
		t.Fatalf("the first set's number is %d, want 1", n)
	}
	mk := func(p *model.Project, number int, state model.ChangeSetState, expires *time.Time, updated time.Time) *model.ChangeSet {
		return mustInsert(t, s, store.ChangeSets, &model.ChangeSet{ID: model.ChangeSetID(newID()), TenantID: p.TenantID,
			ProjectID: p.ID, Number: number, Title: "set", State: state, CreatedBy: &g.user.ID, CreatedAt: at,
			UpdatedAt: updated, ExpiresAt: expires, Changes: []model.Change{{ID: "c1", Seq: 1, Kind: model.ChangeSetVariable,
				Author: g.user.ID, At: at, Name: "FLAG", Value: "on", ServiceID: &g.service.ID}}})
	}
	past, future := at.Add(time.Minute), store.Now().Add(time.Hour)
	open := mk(g.project, 1, model.ChangeSetOpen, nil, at)
	submitted := mk(g.project, 2, model.ChangeSetSubmitted, &past, at.Add(time.Second))
	waiting := mk(g.project, 3, model.ChangeSetSubmitted, &future, at.Add(2*time.Second))
	approved := mk(g.project, 4, model.ChangeSetApproved, &past, at.Add(3*time.Second))
	elsewhere := mk(newGraph(t, s).project, 1, model.ChangeSetSubmitted, &past, at)

	got, err := store.ChangeSets.Get(ctx, s.Q(), open.ID)
	wantNoErr(t, "reading a set", err)
	if len(got.Changes) != 1 || got.Changes[0].Name != "FLAG" || *got.Changes[0].ServiceID != g.service.ID ||
		got.Comments == nil && len(got.Comments) != 0 {
		t.Fatalf("the set read back: %+v", got)
	}
	if n, err = store.NextChangeSetNumber(ctx, s.Q(), g.project.ID); err != nil || n != 5 {
		t.Fatalf("the next number is %d (%v), want 5", n, err)
	}

	now := store.Now()
	open.State, open.UpdatedAt, open.AppliedAt, open.AppliedBy = model.ChangeSetApplied, now, &now, &g.user.ID
	open.Comments = []model.ChangeComment{{Author: g.user.ID, Body: "ok", Decision: "APPROVED", At: now}}
	open.Deployments = []model.DeploymentID{g.deployment.ID}
	wantNoErr(t, "updating a set", store.UpdateChangeSet(ctx, s.Q(), open))
	got, err = store.ChangeSets.Get(ctx, s.Q(), open.ID)
	wantNoErr(t, "reading the updated set", err)
	if got.State != model.ChangeSetApplied || !got.AppliedAt.Equal(now) || len(got.Comments) != 1 ||
		!slices.Equal(got.Deployments, open.Deployments) {
		t.Fatalf("the updated set read back: %+v", got)
	}

	page, err := store.ChangeSetsOfProject(ctx, s.Q(), g.project.ID, nil, store.PageArgs{First: 10})
	wantNoErr(t, "listing sets", err)
	if want := []string{string(approved.ID), string(waiting.ID), string(submitted.ID), string(open.ID)}; !slices.Equal(ids(page.Items, changeSetID), want) {
		t.Fatalf("the project's sets: %v, want %v (newest first)", ids(page.Items, changeSetID), want)
	}
	page, err = store.ChangeSetsOfProject(ctx, s.Q(), g.project.ID, []model.ChangeSetState{model.ChangeSetSubmitted}, store.PageArgs{First: 1})
	wantNoErr(t, "listing submitted sets", err)
	if !slices.Equal(ids(page.Items, changeSetID), []string{string(waiting.ID)}) || !page.HasNext {
		t.Fatalf("the first submitted set: %v (more: %v), want %s and more", ids(page.Items, changeSetID), page.HasNext, waiting.ID)
	}

	since, err := store.ChangeSetsUpdatedSince(ctx, s.Q(), g.project.ID, at)
	wantNoErr(t, "reading sets changed since", err)
	if want := []string{string(submitted.ID), string(waiting.ID), string(approved.ID), string(open.ID)}; !slices.Equal(ids(since, changeSetID), want) {
		t.Fatalf("sets changed after %v: %v, want %v (oldest change first)", at, ids(since, changeSetID), want)
	}

	lapsed, err := store.LapsedChangeSets(ctx, s.Q(), store.Now(), 10)
	wantNoErr(t, "reading lapsed sets", err)
	got3 := ids(lapsed, changeSetID)
	slices.Sort(got3)
	want := []string{string(submitted.ID), string(approved.ID), string(elsewhere.ID)}
	slices.Sort(want)
	if !slices.Equal(got3, want) {
		t.Fatalf("lapsed sets: %v, want %v (submitted or approved, window closed, any tenant)", got3, want)
	}
}
