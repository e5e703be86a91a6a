package apitest

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// TestPersonIDsAreTenantLocal: a person in two tenants has a different id
// in each, and the id says nothing about the other tenant. Adding a member
// used to return the person's one global id (a time-ordered UUID), so a
// tenant admin who added any email learned whether, and roughly when, that
// person had joined somewhere else, and could follow them across tenants.
func TestPersonIDsAreTenantLocal(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		a, b := env.NewFixture(t), env.NewFixture(t)
		email := "drifter-" + a.Name + "@people.test"
		add := func(f *Fixture) string {
			r := f.MustDo(t, `mutation($t: ID!, $email: String!) {
				addMember(input: {tenantId: $t, email: $email, name: "Drifter", role: MEMBER}) {
					member { id user { id } } userErrors { field message code } }
			}`, map[string]any{"t": f.TenantID, "email": email})
			return r.Str("addMember.member.user.id")
		}
		inA, inB := add(a), add(b)
		if inA == inB {
			t.Fatalf("tenants A and B know the same person by the same id %s", inA)
		}
		// The bootstrap admin founded both fixtures: one person, two ids.
		if a.Owner.UserID == b.Owner.UserID {
			t.Fatalf("the founder of both tenants has one id %s in each", a.Owner.UserID)
		}
		for _, id := range []string{inA, inB, a.Owner.UserID, b.Owner.UserID} {
			local, err := gid.UnmarshalLocalUserID(id)
			if err != nil {
				t.Fatalf("user id %q: %v", id, err)
			}
			u, err := uuid.Parse(string(local))
			if err != nil || u.Version() != 4 {
				t.Fatalf("user id %q holds %q, want a random (version 4) UUID", id, local)
			}
		}

		// A's id names nobody in B: not as a node, not to grant a role,
		// not to mint a token, not as an audit actor.
		r := env.Do(t, b.Owner.Token, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": inA})
		if r.Get("node") != nil {
			t.Errorf("B reads A's id for the person as %v", r.Get("node"))
		}
		// Each is refused exactly as an id nobody has is.
		nobody := gid.Encode(gid.User, model.LocalUserID(uuid.NewString()))
		grant := func(u string) Response {
			return env.Do(t, b.Owner.Token, `mutation($p: ID!, $u: ID!) {
				addProjectMember(input: {projectId: $p, userId: $u, role: VIEWER}) { projectMember { id } userErrors { field message code } }
			}`, map[string]any{"p": b.ProjectID, "u": u})
		}
		mint := func(u string) Response {
			return env.Do(t, b.Owner.Token, `mutation($u: ID!) {
				createApiToken(input: {name: "stolen", userId: $u}) { apiToken { id } secret userErrors { field message code } }
			}`, map[string]any{"u": u})
		}
		for _, c := range []struct {
			name string
			do   func(string) Response
			id   string
		}{
			{"addProjectMember", grant, inA},
			{"createApiToken", mint, a.Users[Admin].UserID},
			{"createApiToken", mint, a.Owner.UserID},
		} {
			got, want := c.do(c.id), c.do(nobody)
			if len(got.UserErrors(c.name)) == 0 {
				t.Errorf("B's %s with A's id %s was not refused: %v %s", c.name, c.id, got.Data, got.errorList())
			}
			if mustJSON(t, got.Data) != mustJSON(t, want.Data) || got.errorList() != want.errorList() {
				t.Errorf("B's %s tells A's id from nobody's: %v vs %v", c.name, got.Data, want.Data)
			}
		}
		audit := func(actor string) int {
			r := env.MustDo(t, b.Owner.Token, `query($t: ID!, $a: ID!) { node(id: $t) { ... on Tenant {
				auditEvents(first: 100, filter: {actorId: $a}) { nodes { id } } } } }`, map[string]any{"t": b.TenantID, "a": actor})
			return len(r.List("node.auditEvents.nodes"))
		}
		if n := audit(b.Owner.UserID); n == 0 {
			t.Fatalf("B's audit has no events by B's founder")
		}
		if n := audit(a.Owner.UserID); n != 0 {
			t.Errorf("B's audit filtered by A's id for the same founder lists %d events", n)
		}

		// The same id works where it belongs.
		r = env.MustDo(t, b.Owner.Token, `mutation($p: ID!, $u: ID!) {
			addProjectMember(input: {projectId: $p, userId: $u, role: VIEWER}) { projectMember { id user { id email } } userErrors { field message code } }
		}`, map[string]any{"p": b.ProjectID, "u": inB})
		if got := r.Str("addProjectMember.projectMember.user.id"); got != inB {
			t.Errorf("B's project member reads the person as %q, want %q", got, inB)
		}

		// Nothing returned anywhere in B carries A's ids for the person.
		r = env.MustDo(t, b.Owner.Token, `query($t: ID!) { node(id: $t) { ... on Tenant {
			members(first: 100) { nodes { user { id } } }
			auditEvents(first: 100) { nodes { actor { id } details } } } } }`, map[string]any{"t": b.TenantID})
		seen := mustJSON(t, r.Data)
		for _, leaked := range []string{inA, a.Owner.UserID, string(mustLocal(t, inA)), string(mustLocal(t, a.Owner.UserID))} {
			if strings.Contains(seen, leaked) {
				t.Errorf("B's members and audit carry A's id %s", leaked)
			}
		}
	})
}

func mustLocal(t *testing.T, id string) model.LocalUserID {
	t.Helper()
	local, err := gid.UnmarshalLocalUserID(id)
	if err != nil {
		t.Fatalf("user id %q: %v", id, err)
	}
	return local
}
