package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// testMemberProfiles: each tenant reads a user by its own profile of them,
// by an id of its own; a tenant without a profile of a user reads nothing.
func testMemberProfiles(t *testing.T, s *store.Store) {
	ctx := t.Context()
	a, b, c := newTenant(t, s), newTenant(t, s), newTenant(t, s)
	user, stranger := newUser(t, s), newUser(t, s)

	inA := &model.User{ID: user.ID, Email: user.Email, Name: "Named by A", Kind: model.UserIntegration, CreatedAt: at}
	wantNoErr(t, "recording a's profile", store.PutMemberProfile(ctx, s.Q(), a.ID, inA))
	inB := &model.User{ID: user.ID, Email: user.Email, Name: "Named by B", Kind: model.UserHuman, CreatedAt: at.Add(time.Hour)}
	wantNoErr(t, "recording b's profile", store.PutMemberProfile(ctx, s.Q(), b.ID, inB))
	var err error
	inA.LocalID, err = store.LocalIDOf(ctx, s.Q(), a.ID, user.ID)
	wantNoErr(t, "reading a's id for the user", err)
	inB.LocalID, err = store.LocalIDOf(ctx, s.Q(), b.ID, user.ID)
	wantNoErr(t, "reading b's id for the user", err)

	t.Run("each tenant has its own id, with nothing in it", func(t *testing.T) {
		if inA.LocalID == inB.LocalID || string(inA.LocalID) == string(user.ID) || string(inB.LocalID) == string(user.ID) {
			t.Fatalf("ids: a %s, b %s, the user's %s: want three different ids", inA.LocalID, inB.LocalID, user.ID)
		}
		for _, id := range []model.LocalUserID{inA.LocalID, inB.LocalID} {
			u, err := uuid.Parse(string(id))
			if err != nil || u.Version() != 4 {
				t.Errorf("id %s: want a random (version 4) UUID, which carries no time; parsed %v, %v", id, u.Version(), err)
			}
		}
		_, err := store.LocalIDOf(ctx, s.Q(), c.ID, user.ID)
		wantErr(t, "the id of a tenant without a profile", err, store.ErrNotFound)
	})
	t.Run("UserOfLocalID only in its tenant", func(t *testing.T) {
		got, err := store.UserOfLocalID(ctx, s.Q(), a.ID, inA.LocalID)
		wantNoErr(t, "reading a's id in a", err)
		if got != user.ID {
			t.Errorf("a's id names %s, want %s", got, user.ID)
		}
		_, err = store.UserOfLocalID(ctx, s.Q(), b.ID, inA.LocalID)
		wantErr(t, "a's id in b", err, store.ErrNotFound)
		_, err = store.UserOfLocalID(ctx, s.Q(), a.ID, model.LocalUserID(user.ID))
		wantErr(t, "the user's own id", err, store.ErrNotFound)
	})
	for _, tc := range []struct {
		name   string
		tenant *model.Tenant
		want   *model.User
	}{
		{"tenant a", a, inA},
		{"tenant b", b, inB},
	} {
		t.Run("UserAsKnownIn "+tc.name, func(t *testing.T) {
			got, err := store.UserAsKnownIn(ctx, s.Q(), tc.tenant.ID, user.ID)
			wantNoErr(t, "reading", err)
			assertEqual(t, "user", got, tc.want)
		})
	}
	t.Run("UserAsKnownIn a tenant without a profile", func(t *testing.T) {
		_, err := store.UserAsKnownIn(ctx, s.Q(), c.ID, user.ID)
		wantErr(t, "reading", err, store.ErrNotFound)
	})
	t.Run("TokenByHash reads the user as the token's tenant knows them", func(t *testing.T) {
		for _, tc := range []struct {
			tenant *model.Tenant
			want   *model.User
		}{{a, inA}, {b, inB}} {
			tok := newToken(t, s, tc.tenant, user)
			_, got, err := store.TokenByHash(ctx, s.Q(), tok.Hash)
			wantNoErr(t, "reading", err)
			assertEqual(t, "user", got, tc.want)
		}
	})
	t.Run("PutMemberProfile again replaces it and keeps the id", func(t *testing.T) {
		again := &model.User{ID: user.ID, LocalID: inA.LocalID, Email: user.Email, Name: "Renamed by A", Kind: model.UserHuman,
			CreatedAt: at.Add(2 * time.Hour)}
		wantNoErr(t, "recording again", store.PutMemberProfile(ctx, s.Q(), a.ID, again))
		got, err := store.UserAsKnownIn(ctx, s.Q(), a.ID, user.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "user", got, again)
		got, err = store.UserAsKnownIn(ctx, s.Q(), b.ID, user.ID)
		wantNoErr(t, "reading", err)
		assertEqual(t, "user in b", got, inB)
	})
	t.Run("UsersAsKnownIn", func(t *testing.T) {
		got, err := store.UsersAsKnownIn(ctx, s.Q(), b.ID, []model.UserID{user.ID, stranger.ID, model.UserID(newID())})
		wantNoErr(t, "reading", err)
		if len(got) != 1 {
			t.Fatalf("got %d users, want 1 (the stranger and the missing id left out)", len(got))
		}
		assertEqual(t, "user", got[user.ID], inB)
		none, err := store.UsersAsKnownIn(ctx, s.Q(), b.ID, nil)
		wantNoErr(t, "reading none", err)
		if len(none) != 0 {
			t.Errorf("got %d users for no ids, want 0", len(none))
		}
	})
	t.Run("UserAsKnownIn missing", func(t *testing.T) {
		_, err := store.UserAsKnownIn(ctx, s.Q(), a.ID, model.UserID(newID()))
		wantErr(t, "reading a missing user", err, store.ErrNotFound)
	})
	t.Run("audit details name users by the tenant's id", func(t *testing.T) {
		known := &model.AuditEvent{TenantID: b.ID, Action: "member.add", TargetType: "Member", CreatedAt: at,
			Details: map[string]any{"userId": string(user.ID), "role": "VIEWER"}}
		wantNoErr(t, "inserting", store.InsertAudit(ctx, s.Q(), known))
		unknown := &model.AuditEvent{TenantID: c.ID, Action: "member.add", TargetType: "Member", CreatedAt: at,
			Details: map[string]any{"userId": string(user.ID), "role": "VIEWER"}}
		wantNoErr(t, "inserting", store.InsertAudit(ctx, s.Q(), unknown))
		for _, tc := range []struct {
			tenant *model.Tenant
			want   map[string]any
		}{
			{b, map[string]any{"userId": string(inB.LocalID), "role": "VIEWER"}},
			{c, map[string]any{"role": "VIEWER"}},
		} {
			pg, err := store.ListAudit(ctx, s.Q(), tc.tenant.ID, store.AuditFilter{}, store.PageArgs{First: 10})
			wantNoErr(t, "listing", err)
			if len(pg.Items) != 1 {
				t.Fatalf("got %d events, want 1", len(pg.Items))
			}
			assertEqual(t, "details", pg.Items[0].Details, tc.want)
		}
	})
}

// testCommandProjects: commands record their project, and a cluster's
// commands list by project.
func testCommandProjects(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	other := newCluster(t, s, g.tenant)
	p2 := newProject(t, s, g.tenant)
	newCmd := func(c *model.Cluster, kind model.CommandKind, project *model.Project) *model.Command {
		t.Helper()
		now := store.Now()
		cmd := mustInsert(t, s, store.Commands, &model.Command{ID: model.CommandID(newID()), TenantID: c.TenantID, ClusterID: c.ID,
			Kind: kind, Args: map[string]string{}, Status: model.CommandQueued, CreatedAt: now, UpdatedAt: now})
		if project != nil {
			wantNoErr(t, "recording the project", store.SetCommandProject(ctx, s.Q(), cmd.ID, project.ID))
		}
		return cmd
	}
	resync := newCmd(g.cluster, model.CommandResync, nil)
	inP1 := newCmd(g.cluster, model.CommandRestartProcess, g.project)
	inP2 := newCmd(g.cluster, model.CommandRestartProcess, p2)
	legacy := newCmd(g.cluster, model.CommandRestartProcess, nil) // queued before commands had a project
	newCmd(other, model.CommandRestartProcess, g.project)         // another cluster's

	t.Run("CommandProject", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			cmd  *model.Command
			want *model.ProjectID
		}{
			{"cluster-wide", resync, nil},
			{"restart", inP1, &g.project.ID},
			{"restart without a project", legacy, nil},
		} {
			got, err := store.CommandProject(ctx, s.Q(), tc.cmd.ID)
			wantNoErr(t, tc.name, err)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("%s: got project %v, want %v", tc.name, got, tc.want)
			}
		}
		_, err := store.CommandProject(ctx, s.Q(), model.CommandID(newID()))
		wantErr(t, "a missing command", err, store.ErrNotFound)
		wantErr(t, "recording the project of a missing command",
			store.SetCommandProject(ctx, s.Q(), model.CommandID(newID()), g.project.ID), store.ErrNotFound)
	})
	for _, tc := range []struct {
		name     string
		all      bool
		projects []model.ProjectID
		want     []*model.Command // newest first
	}{
		{"all", true, nil, []*model.Command{legacy, inP2, inP1, resync}},
		{"no project", false, nil, []*model.Command{resync}},
		{"one project", false, []model.ProjectID{g.project.ID}, []*model.Command{inP1, resync}},
		{"both projects", false, []model.ProjectID{g.project.ID, p2.ID}, []*model.Command{inP2, inP1, resync}},
	} {
		t.Run("CommandsIn "+tc.name, func(t *testing.T) {
			page, err := store.CommandsIn(ctx, s.Q(), g.cluster.ID, tc.all, tc.projects, store.PageArgs{First: 10})
			wantNoErr(t, "listing", err)
			got := ids(page.Items, func(c *model.Command) model.CommandID { return c.ID })
			want := ids(tc.want, func(c *model.Command) model.CommandID { return c.ID })
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("CommandsIn pages", func(t *testing.T) {
		first, err := store.CommandsIn(ctx, s.Q(), g.cluster.ID, false, []model.ProjectID{g.project.ID, p2.ID}, store.PageArgs{First: 2})
		wantNoErr(t, "listing", err)
		if !first.HasNext || len(first.Items) != 2 {
			t.Fatalf("first page: got %d items, hasNext %v; want 2 and more", len(first.Items), first.HasNext)
		}
		rest, err := store.CommandsIn(ctx, s.Q(), g.cluster.ID, false, []model.ProjectID{g.project.ID, p2.ID},
			store.PageArgs{First: 2, After: string(first.Items[1].ID)})
		wantNoErr(t, "listing the rest", err)
		if got := ids(rest.Items, func(c *model.Command) model.CommandID { return c.ID }); !slices.Equal(got, []string{string(resync.ID)}) || rest.HasNext {
			t.Errorf("second page: got %v (hasNext %v), want [%s]", got, rest.HasNext, resync.ID)
		}
	})
}
