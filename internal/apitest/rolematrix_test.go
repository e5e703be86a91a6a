package apitest

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/resolvers"
)

// access is the outcome a role gets for an operation.
type access string

const (
	allowed   access = "allowed"
	forbidden access = "FORBIDDEN"
	notFound  access = "NOT_FOUND"
)

// by lists the outcome for each role, in the order of Roles.
func by(admin, pm, editor, viewer, member access) map[Role]access {
	return map[Role]access{Admin: admin, ProjectManager: pm, Editor: editor, Viewer: viewer, Member: member}
}

// The outcomes that follow from authz/policy.csv: tenant capabilities are
// the tenant role's; project capabilities need a project role (or tenant
// admin), and a tenant member without one cannot see the project at all.
var (
	everyone        = by(allowed, allowed, allowed, allowed, allowed)
	tenantAdmins    = by(allowed, forbidden, forbidden, forbidden, forbidden)
	projectReaders  = by(allowed, allowed, allowed, allowed, notFound)
	projectEditors  = by(allowed, allowed, allowed, forbidden, notFound)
	projectManagers = by(allowed, allowed, forbidden, forbidden, notFound)
	// Deleting a project is a tenant capability exercised on a project.
	projectDeleters = by(allowed, forbidden, forbidden, forbidden, notFound)
	// Only its owner and tenant admins see a token.
	tokenOwnerOnly = by(allowed, notFound, notFound, notFound, notFound)
	// An object only tenant admins may read (an audit event) is invisible,
	// not forbidden, to everyone else.
	adminOnlyObject = by(allowed, notFound, notFound, notFound, notFound)
)

// matrixCase is one operation of the role matrix.
type matrixCase struct {
	name  string
	query string
	// vars prepares, as the owner, what the operation acts on (fresh per
	// role where the operation destroys or changes it) and returns the
	// variables; keys starting with '_' are test state, not sent.
	vars func(t *testing.T, f *Fixture, r Role) map[string]any
	want map[Role]access
	// signedIn, when set, is the outcome for people calling through a
	// browser session where it differs from a token's.
	signedIn map[Role]access
	// auditsElsewhere says an allowed call audits in another tenant than
	// the fixture's (the one it makes).
	auditsElsewhere bool
	// effect checks, as the owner, that an allowed call did what it says
	// (ok) or that a denied one changed nothing (!ok).
	effect func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool)
}

const ue = `userErrors { field message code }`

// nodeCase reads an object of the fixture by node(id:).
func nodeCase(name string, id func(f *Fixture) string, selection string, want map[Role]access) matrixCase {
	return matrixCase{
		name:  name,
		query: `query($id: ID!) { node(id: $id) { id ` + selection + ` } }`,
		vars:  func(t *testing.T, f *Fixture, r Role) map[string]any { return map[string]any{"id": id(f)} },
		want:  want,
		effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
			t.Helper()
			if got := res.Str("node.id"); ok && got != v["id"] {
				t.Errorf("node.id: got %q, want %q", got, v["id"])
			}
			if ok || res.Get("node") == nil || len(res.Errors) == 0 {
				return
			}
			// A field the role may not read on a node it may: that field
			// is null, at the error's path, and the node stands.
			at := res.Errors[0].PathString()
			if len(res.Errors[0].Path) < 2 || res.Get(at) != nil || res.Str("node.id") != v["id"] {
				t.Errorf("denied: got node %v with the error at %s, want null there and the node's id", res.Get("node"), at)
			}
		},
	}
}

// projectEndpoint makes an endpoint of the fixture's project, for a case
// to act on as v["e"].
func projectEndpoint(t *testing.T, f *Fixture, r Role) map[string]any {
	id, _ := f.newEndpoint(t, f.ProjectID, "https://198.41.0.4/"+string(r), "DEPLOYMENT_ENDED")
	return map[string]any{"e": id}
}

// endpointNodeCase reads node(id) of what id makes of a project endpoint:
// its managers see it, nobody else does (not even that it exists).
func endpointNodeCase(name string, id func(t *testing.T, f *Fixture, endpoint string) string, selection string) matrixCase {
	c := nodeCase(name, nil, selection, by(allowed, allowed, notFound, notFound, notFound))
	c.vars = func(t *testing.T, f *Fixture, r Role) map[string]any {
		return map[string]any{"id": id(t, f, projectEndpoint(t, f, r)["e"].(string))}
	}
	return c
}

// then runs extra checks after a case's own effect check.
func (c matrixCase) then(check func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool)) matrixCase {
	prev := c.effect
	c.effect = func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		if prev != nil {
			prev(t, f, r, v, res, ok)
		}
		check(t, f, r, v, res, ok)
	}
	return c
}

// gone checks that the object with the id in v[key] was deleted exactly
// when the call was allowed.
func gone(key string) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		id := v[key].(string)
		exists := f.Node(t, id, "") != nil
		if ok && exists {
			t.Errorf("%s %s still exists after an allowed delete", key, id)
		}
		if !ok && !exists {
			t.Errorf("%s %s was deleted by a denied call", key, id)
		}
	}
}

// fieldIs checks that node(v[key]) has value want at path exactly when the
// call was allowed.
func fieldIs(key, selection, path string, want func(v map[string]any) string) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		id := v[key].(string)
		n := f.Node(t, id, selection)
		if n == nil {
			t.Fatalf("node %s is gone", id)
		}
		got, _ := dig(n, path).(string)
		w := want(v)
		if ok && got != w {
			t.Errorf("%s after an allowed call: got %q, want %q", path, got, w)
		}
		if !ok && got == w {
			t.Errorf("%s after a denied call: got %q, want it unchanged", path, got)
		}
	}
}

// listed checks that the value v[key] appears in the list exactly when the
// call was allowed.
func listed(key string, node func(f *Fixture) string, selection, listPath, itemPath string) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		vals := f.Values(t, node(f), selection, listPath, itemPath)
		in := slices.Contains(vals, v[key].(string))
		if ok && !in {
			t.Errorf("%s %v missing from %s after an allowed call (got %v)", key, v[key], listPath, vals)
		}
		if !ok && in {
			t.Errorf("%s %v in %s after a denied call", key, v[key], listPath)
		}
	}
}

func tenantOf(f *Fixture) string  { return f.TenantID }
func projectOf(f *Fixture) string { return f.ProjectID }
func clusterOf(f *Fixture) string { return f.ClusterID }

func constant(s string) func(map[string]any) string { return func(map[string]any) string { return s } }

func varOf(key string) func(map[string]any) string {
	return func(v map[string]any) string { s, _ := v[key].(string); return s }
}

// roleMatrix is the table: for every Query and Mutation field, the
// operations that exercise it and the outcome for every role.
func roleMatrix() map[string][]matrixCase {
	return map[string][]matrixCase{
		"node": {
			nodeCase("tenant", tenantOf, `... on Tenant { viewerRole }`, everyone).then(
				func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					want := "MEMBER"
					if r == Admin {
						want = "ADMIN"
					}
					if got := res.Str("node.viewerRole"); got != want {
						t.Errorf("tenant viewerRole: got %q, want %q", got, want)
					}
				}),
			nodeCase("user", func(f *Fixture) string { return f.Users[ProjectManager].UserID }, `... on User { email }`, everyone),
			nodeCase("member", func(f *Fixture) string { return f.Users[Viewer].MemberID }, `... on Member { role }`, everyone),
			// The editor owns the token: it sees it, as does the admin.
			nodeCase("apiToken", func(f *Fixture) string { return f.Users[Editor].TokenID }, `... on ApiToken { prefix }`,
				by(allowed, notFound, allowed, notFound, notFound)),
			nodeCase("project", projectOf, `... on Project { viewerRole }`, projectReaders).then(
				func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					want := map[Role]string{Admin: "PROJECT_MANAGER", ProjectManager: "PROJECT_MANAGER", Editor: "EDITOR", Viewer: "VIEWER"}[r]
					if got := res.Str("node.viewerRole"); ok && got != want {
						t.Errorf("project viewerRole: got %q, want %q", got, want)
					}
				}),
			nodeCase("projectMember", func(f *Fixture) string { return f.Users[Viewer].ProjectMemberID }, `... on ProjectMember { role }`, projectReaders),
			nodeCase("environment", func(f *Fixture) string { return f.EnvironmentID }, `... on Environment { name }`, projectReaders),
			nodeCase("cluster", clusterOf, `... on Cluster { name status }`, everyone),
			nodeCase("namespaceTarget", func(f *Fixture) string { return f.NamespaceTargetID }, `... on NamespaceTarget { namespace }`, everyone),
			nodeCase("service", func(f *Fixture) string { return f.ServiceID }, `... on Service { name }`, projectReaders),
			nodeCase("release", func(f *Fixture) string { return f.ReleaseID }, `... on Release { number imageDigest }`, projectReaders),
			nodeCase("environment.events", func(f *Fixture) string { return f.EnvironmentID }, `... on Environment { events { nodes { number } } }`, projectReaders),
			nodeCase("cluster.events", clusterOf, `... on Cluster { events { nodes { number } } }`, tenantAdmins),
			nodeCase("cluster.drift", clusterOf, `... on Cluster { drift { nodes { name } } }`, tenantAdmins),
			nodeCase("cluster.revisions", clusterOf, `... on Cluster { revisions(first: 1) { nodes { number state cause { action } outcomes { agent } diff { from } } } }`, tenantAdmins),
			nodeCase("cluster.activeRevision", clusterOf, `... on Cluster { activeRevision { number confirmed } }`, everyone),
			{
				name:  "service.logs",
				query: `query($id: ID!, $e: ID!) { node(id: $id) { ... on Service { logs(environmentId: $e) { nodes { number } } } } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"id": f.ServiceID, "e": f.EnvironmentID}
				},
				want: projectReaders,
			},
			nodeCase("deployment", func(f *Fixture) string { return f.DeploymentID }, `... on Deployment { stage }`, projectReaders),
			nodeCase("deployment.events", func(f *Fixture) string { return f.DeploymentID },
				`... on Deployment { events(last: 1) { edges { cursor } nodes { sequence } pageInfo { hasPreviousPage } } }`, projectReaders),
			{
				name: "service.drift",
				query: `query($id: ID!, $e: ID!) { node(id: $id) { ... on Service {
					drift(environmentId: $e, first: 5) { nodes { name } pageInfo { hasNextPage } } } } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"id": f.ServiceID, "e": f.EnvironmentID}
				},
				want: projectReaders,
			},
			{
				name:  "auditEvent",
				query: `query($id: ID!) { node(id: $id) { id } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					r0 := f.MustDo(t, `query($id: ID!) { node(id: $id) { ... on Tenant { auditEvents(first: 1) { nodes { id } } } } }`,
						map[string]any{"id": f.TenantID})
					return map[string]any{"id": r0.Str("node.auditEvents.nodes.0.id")}
				},
				// Seeing the tenant is not seeing its history: an event a
				// member may not read looks missing.
				want: adminOnlyObject,
			},
			nodeCase("tenant.auditEvents", tenantOf, `... on Tenant { auditEvents(first: 5) { nodes { id action } } }`,
				tenantAdmins).then(func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				if ok && len(res.List("node.auditEvents.nodes")) == 0 {
					t.Errorf("auditEvents: got none, want the fixture's history")
				}
			}),
			nodeCase("tenant.members", tenantOf, `... on Tenant { members(first: 100) { nodes { id } } }`, everyone),
			nodeCase("tenant.clusters", tenantOf, `... on Tenant { clusters { nodes { id } } }`, everyone),
			nodeCase("tenant.approvalQueue", tenantOf, `... on Tenant { approvalQueue { nodes { id } } }`, everyone),
			nodeCase("tenant.deploymentsUnderWay", tenantOf, `... on Tenant { deploymentsUnderWay { nodes { id } } }`, everyone),
			nodeCase("tenant.webhookEndpoints", tenantOf, `... on Tenant { webhookEndpoints { nodes { id } } }`, tenantAdmins),
			nodeCase("project.webhookEndpoints", projectOf, `... on Project { webhookEndpoints { nodes { id } } }`, projectManagers),
			endpointNodeCase("webhookEndpoint", func(t *testing.T, f *Fixture, e string) string { return e },
				`... on WebhookEndpoint { url events messages { nodes { id } } }`),
			endpointNodeCase("webhookMessage", func(t *testing.T, f *Fixture, e string) string { return f.failedMessage(t, e) },
				`... on WebhookMessage { status payload attempts { error } endpoint { id } }`),
			nodeCase("tenant.plan", tenantOf, `... on Tenant { plan { name limits { resource limit used } } }`, everyone),
			nodeCase("tenant.projects", tenantOf, `... on Tenant { projects { nodes { id } } }`, everyone).then(
				func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					// A project is listed to those who can read it.
					got := res.IDs("node.projects.nodes")
					want := []string{f.ProjectID}
					if r == Member {
						want = nil
					}
					if !slices.Equal(got, want) {
						t.Errorf("projects: got %v, want %v", got, want)
					}
				}),
			// A member's tokens: tenant admins', and the member's own (the
			// editor's member here).
			nodeCase("member.apiTokens", func(f *Fixture) string { return f.Users[Editor].MemberID },
				`... on Member { apiTokens { nodes { id prefix } } }`, by(allowed, forbidden, allowed, forbidden, forbidden)).then(
				func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					if got := res.IDs("node.apiTokens.nodes"); ok && !slices.Contains(got, f.Users[Editor].TokenID) {
						t.Errorf("member.apiTokens: got %v, want the editor's token %s among them", got, f.Users[Editor].TokenID)
					}
				}),
			nodeCase("project.members", projectOf, `... on Project { members { nodes { id } } }`, projectReaders),
			nodeCase("project.environments.deployments", projectOf,
				`... on Project { environments { nodes { id eligibleClusters { nodes { id } } eligibleNamespaceTargets { nodes { id } }
					deployments { nodes { id release { id } cluster { id } requestedBy { id } } } } } }`, projectReaders).then(
				func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					if !ok {
						return
					}
					var deps []string
					for _, e := range res.List("node.environments.nodes") {
						for _, d := range dig(e, "deployments.nodes").([]any) {
							deps = append(deps, dig(d, "id").(string))
						}
					}
					if !slices.Equal(deps, []string{f.DeploymentID}) {
						t.Errorf("deployments: got %v, want [%s]", deps, f.DeploymentID)
					}
				}),
			nodeCase("service.releases", func(f *Fixture) string { return f.ServiceID },
				`... on Service { releases { nodes { id createdBy { id } } } }`, projectReaders),
			{
				name:  "changeSet",
				query: `query($id: ID!) { node(id: $id) { id ... on ChangeSet { state title changes { sequence } } } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"id": f.changeSetAsOwner(t, r, 1, false)}
				},
				want: projectReaders,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					t.Helper()
					if got := res.Str("node.id"); ok && (got != v["id"] || res.Str("node.state") != "OPEN") {
						t.Errorf("node: %s, want the open change set %s", res.Body, v["id"])
					}
					if !ok && res.Get("node") != nil {
						t.Errorf("node: got %v, want null", res.Get("node"))
					}
				},
			},
		},
		"viewer": {{
			name:  "self",
			query: `{ viewer { user { id } token { id } session { id } sessions { nodes { id } } tenants { nodes { id } } apiTokens { nodes { id } } } }`,
			want:  everyone,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				c := f.Users[r]
				if got := res.Str("viewer.user.id"); got != c.UserID {
					t.Errorf("viewer.user.id: got %q, want %q", got, c.UserID)
				}
				// A request comes with a token or with a session, never both.
				wantToken, wantSession := c.TokenID, ""
				if c.Session != nil {
					wantToken, wantSession = "", c.SessionID
				}
				if got := res.Str("viewer.token.id"); got != wantToken {
					t.Errorf("viewer.token.id: got %q, want %q", got, wantToken)
				}
				if got := res.Str("viewer.session.id"); got != wantSession {
					t.Errorf("viewer.session.id: got %q, want %q", got, wantSession)
				}
				if got, want := res.IDs("viewer.sessions.nodes"), []string{wantSession}; c.Session != nil && !slices.Equal(got, want) {
					t.Errorf("viewer.sessions: got %v, want %v", got, want)
				}
				if got := res.IDs("viewer.tenants.nodes"); !slices.Equal(got, []string{f.TenantID}) {
					t.Errorf("viewer.tenants: got %v, want [%s]", got, f.TenantID)
				}
				if got := res.IDs("viewer.apiTokens.nodes"); !slices.Equal(got, []string{c.TokenID}) {
					t.Errorf("viewer.apiTokens: got %v, want [%s]", got, c.TokenID)
				}
			},
		}},

		// The role callers are integrations, and an integration acts for
		// the tenant it was made in: it founds no tenants. A person founding
		// one is what every fixture does (and TestAuditOnePerMutation checks).
		"createTenant": {{
			// An integration (every token caller here) founds no tenant. A
			// person signed in founds one whatever their role here, and is
			// its admin there only; it is audited there.
			name:  "found one",
			query: `mutation($name: String!) { createTenant(input: {name: $name}) { tenant { id name } apiToken { id prefix } secret ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"name": f.Unique("by-" + r.slug())}
			},
			want:            by(forbidden, forbidden, forbidden, forbidden, forbidden),
			signedIn:        everyone,
			auditsElsewhere: true,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				if !ok {
					return
				}
				tenant, secret := res.Str("createTenant.tenant.id"), res.Str("createTenant.secret")
				got := f.Env.MustDo(t, secret, `query($t: ID!) { viewer { user { id } tenants { nodes { id } } }
					node(id: $t) { ... on Tenant { viewerRole auditEvents(first: 10) { nodes { action } } } } }`, map[string]any{"t": tenant})
				if ids := got.IDs("viewer.tenants.nodes"); !slices.Equal(ids, []string{tenant}) {
					t.Errorf("the new tenant's token acts in %v, want only %s", ids, tenant)
				}
				if got.Str("node.viewerRole") != "ADMIN" || len(got.List("node.auditEvents.nodes")) == 0 {
					t.Errorf("the new tenant: %s", got.Body)
				}
				if got.Str("viewer.user.id") == f.Users[r].UserID {
					t.Errorf("the new tenant knows its founder by this tenant's id")
				}
			},
		}},
		"updateTenant": {{
			name:  "rename",
			query: `mutation($t: ID!, $name: String!) { updateTenant(input: {tenantId: $t, name: $name}) { tenant { id name } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"t": f.TenantID, "name": "renamed by " + string(r)}
			},
			want:   tenantAdmins,
			effect: fieldIs("t", `... on Tenant { name }`, "name", varOf("name")),
		}},
		"setTenantPlan": {{
			name:  "upgrade",
			query: `mutation($t: ID!, $plan: PlanName!) { setTenantPlan(input: {tenantId: $t, plan: $plan}) { tenant { id plan { name } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				// Always a change: from whatever the plan is now.
				plan := "ENTERPRISE"
				if f.Node(t, f.TenantID, `... on Tenant { plan { name } }`)["plan"].(map[string]any)["name"] == plan {
					plan = "TEAM"
				}
				return map[string]any{"t": f.TenantID, "plan": plan}
			},
			want:   tenantAdmins,
			effect: fieldIs("t", `... on Tenant { plan { name } }`, "plan.name", varOf("plan")),
		}},
		"addMember": {{
			name: "person",
			query: `mutation($t: ID!, $email: String!) { addMember(input: {tenantId: $t, email: $email, name: "New Person", role: MEMBER}) {
				member { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"t": f.TenantID, "email": f.Unique("new-"+r.slug()) + "@example.com"}
			},
			want:   tenantAdmins,
			effect: listed("email", tenantOf, `... on Tenant { members(first: 100) { nodes { user { email } } } }`, "members.nodes", "user.email"),
		}},
		"inviteMember": {{
			name: "person",
			query: `mutation($t: ID!, $email: String!) { inviteMember(input: {tenantId: $t, email: $email, name: "Invited Person"}) {
				member { id } invitation { id } link ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"t": f.TenantID, "email": f.Unique("invited-"+r.slug()) + "@example.com"}
			},
			want:   tenantAdmins,
			effect: listed("email", tenantOf, `... on Tenant { invitations(first: 100) { nodes { email } } }`, "invitations.nodes", "email"),
		}},
		"revokeInvitation": {{
			name:  "open",
			query: `mutation($i: ID!) { revokeInvitation(input: {invitationId: $i}) { invitation { id status } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				res := f.MustDo(t, `mutation($t: ID!, $e: String!) { inviteMember(input: {tenantId: $t, email: $e, name: "To Revoke"}) {
					invitation { id } `+ue+` } }`, map[string]any{"t": f.TenantID, "e": f.Unique("revoked-"+r.slug()) + "@example.com"})
				return map[string]any{"i": res.Str("inviteMember.invitation.id")}
			},
			// Others do not see invitations: one does not exist for them.
			want: by(allowed, notFound, notFound, notFound, notFound),
		}},
		"revokeSession": {{
			name:  "someone else's",
			query: `mutation($s: ID!) { revokeSession(input: {sessionId: $s}) { revokedSessionId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				_, _, session := signedInPerson(t, f, "other-"+r.slug())
				return map[string]any{"s": session}
			},
			// Nobody ends another person's session, tenant admins neither.
			want: by(notFound, notFound, notFound, notFound, notFound),
		}},
		"updateMemberRole": {{
			name:  "promote",
			query: `mutation($m: ID!) { updateMemberRole(input: {memberId: $m, role: ADMIN}) { member { id role } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"m": f.NewCaller(t, "promoted", "MEMBER").MemberID}
			},
			want:   tenantAdmins,
			effect: fieldIs("m", `... on Member { role }`, "role", constant("ADMIN")),
		}},
		"removeMember": {{
			name:  "integration",
			query: `mutation($m: ID!) { removeMember(input: {memberId: $m}) { removedMemberId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				c := f.NewCaller(t, "removed", "MEMBER")
				return map[string]any{"m": c.MemberID, "_secret": c.Token}
			},
			want: tenantAdmins,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				gone("m")(t, f, r, v, res, ok)
				// Removing a member revokes their tokens in the tenant.
				if _, works := f.Env.Authenticates(t, v["_secret"].(string)); works == ok {
					t.Errorf("the removed member's token: accepted=%v, want %v", works, !ok)
				}
			},
		}},

		"createApiToken": {
			{
				name:  "own",
				query: `mutation($name: String!) { createApiToken(input: {name: $name}) { apiToken { id prefix user { id } } secret ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"name": "ci of " + string(r)}
				},
				want: everyone,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					secret, prefix := res.Str("createApiToken.secret"), res.Str("createApiToken.apiToken.prefix")
					if prefix == "" || !strings.HasPrefix(secret, prefix) {
						t.Errorf("prefix %q is not a prefix of the secret", prefix)
					}
					if got, _ := f.Env.Authenticates(t, secret); got != f.Users[r].UserID {
						t.Errorf("new token authenticates as %q, want the caller %q", got, f.Users[r].UserID)
					}
				},
			},
			{
				name:  "for an integration user",
				query: `mutation($u: ID!) { createApiToken(input: {name: "deploy bot", userId: $u}) { apiToken { id } secret ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"u": f.NewCaller(t, "bot", "MEMBER").UserID}
				},
				want: tenantAdmins,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					if !ok {
						return
					}
					if got, _ := f.Env.Authenticates(t, res.Str("createApiToken.secret")); got != v["u"] {
						t.Errorf("new token authenticates as %q, want the integration user %q", got, v["u"])
					}
				},
			},
		},
		"revokeApiToken": {
			{
				name:  "own",
				query: `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id revokedAt } ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					res := f.Env.MustDo(t, f.Users[r].Token, `mutation { createApiToken(input: {name: "short-lived"}) { apiToken { id } secret `+ue+` } }`, nil)
					return map[string]any{"id": res.Str("createApiToken.apiToken.id"), "_secret": res.Str("createApiToken.secret")}
				},
				want:   everyone,
				effect: revoked,
			},
			{
				name:  "another user's",
				query: `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id revokedAt } ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					c := f.NewCaller(t, "revoked", "MEMBER")
					return map[string]any{"id": c.TokenID, "_secret": c.Token}
				},
				want:   tokenOwnerOnly,
				effect: revoked,
			},
		},
		"revokeMemberApiTokens": {{
			name:  "integration",
			query: `mutation($m: ID!) { revokeMemberApiTokens(input: {memberId: $m}) { member { id } revokedApiTokens { id revokedAt } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				c := f.NewCaller(t, "revoked-all", "MEMBER")
				return map[string]any{"m": c.MemberID, "_secret": c.Token}
			},
			want: tenantAdmins,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				if _, works := f.Env.Authenticates(t, v["_secret"].(string)); works == ok {
					t.Errorf("the member's token: accepted=%v, want %v", works, !ok)
				}
				if ok && len(res.List("revokeMemberApiTokens.revokedApiTokens")) != 1 {
					t.Errorf("revokedApiTokens: %s, want the member's one token", res.Body)
				}
			},
		}},

		"createProject": {{
			name:  "project",
			query: `mutation($t: ID!, $name: String!) { createProject(input: {tenantId: $t, name: $name}) { project { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"t": f.TenantID, "name": f.Unique(r.slug())}
			},
			want:   tenantAdmins,
			effect: listed("name", tenantOf, `... on Tenant { projects(first: 100) { nodes { name } } }`, "projects.nodes", "name"),
		}},
		"updateProject": {{
			name:  "describe",
			query: `mutation($p: ID!, $d: String!) { updateProject(input: {projectId: $p, description: $d}) { project { id description } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.ProjectID, "d": "described by " + string(r)}
			},
			want:   projectManagers,
			effect: fieldIs("p", `... on Project { description }`, "description", varOf("d")),
		}},
		"deleteProject": {{
			name:  "project",
			query: `mutation($p: ID!) { deleteProject(input: {projectId: $p}) { deletedProjectId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.NewProject(t)}
			},
			want:   projectDeleters,
			effect: gone("p"),
		}},

		"addProjectMember": {{
			name:  "viewer",
			query: `mutation($p: ID!, $u: ID!) { addProjectMember(input: {projectId: $p, userId: $u, role: VIEWER}) { projectMember { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.ProjectID, "u": f.NewCaller(t, "joiner", "MEMBER").UserID}
			},
			want:   projectManagers,
			effect: listed("u", projectOf, `... on Project { members(first: 100) { nodes { user { id } } } }`, "members.nodes", "user.id"),
		}},
		"updateProjectMemberRole": {{
			name:  "promote",
			query: `mutation($pm: ID!) { updateProjectMemberRole(input: {projectMemberId: $pm, role: EDITOR}) { projectMember { id role } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				c := f.NewCaller(t, "promoted", "MEMBER")
				return map[string]any{"pm": f.GrantProjectRole(t, f.ProjectID, c.UserID, "VIEWER")}
			},
			want:   projectManagers,
			effect: fieldIs("pm", `... on ProjectMember { role }`, "role", constant("EDITOR")),
		}},
		"removeProjectMember": {{
			name:  "viewer",
			query: `mutation($pm: ID!) { removeProjectMember(input: {projectMemberId: $pm}) { removedProjectMemberId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				c := f.NewCaller(t, "leaver", "MEMBER")
				return map[string]any{"pm": f.GrantProjectRole(t, f.ProjectID, c.UserID, "VIEWER")}
			},
			want:   projectManagers,
			effect: gone("pm"),
		}},

		"createEnvironment": {{
			name: "selecting the cluster",
			query: `mutation($p: ID!, $name: String!) { createEnvironment(input: {projectId: $p, name: $name,
				clusterSelector: [{key: "env", value: "prod"}], namespaceSelector: [{key: "tier", value: "web"}]}) { environment { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.ProjectID, "name": f.Unique(r.slug())}
			},
			want:   projectManagers,
			effect: listed("name", projectOf, `... on Project { environments(first: 100) { nodes { name } } }`, "environments.nodes", "name"),
		}},
		"updateEnvironment": {{
			name:  "rename",
			query: `mutation($e: ID!, $name: String!) { updateEnvironment(input: {environmentId: $e, name: $name}) { environment { id name } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"e": f.NewEnvironment(t), "name": f.Unique("renamed")}
			},
			want:   projectManagers,
			effect: fieldIs("e", `... on Environment { name }`, "name", varOf("name")),
		}},
		"deleteEnvironment": {{
			name:  "environment",
			query: `mutation($e: ID!) { deleteEnvironment(input: {environmentId: $e}) { deletedEnvironmentId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"e": f.NewEnvironment(t)}
			},
			want:   projectManagers,
			effect: gone("e"),
		}},

		"registerCluster": {{
			name:  "cluster",
			query: `mutation($t: ID!, $name: String!) { registerCluster(input: {tenantId: $t, name: $name}) { cluster { id status } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"t": f.TenantID, "name": f.Unique(r.slug())}
			},
			want:   tenantAdmins,
			effect: listed("name", tenantOf, `... on Tenant { clusters(first: 100) { nodes { name } } }`, "clusters.nodes", "name"),
		}},
		"setClusterLabels": {{
			name: "relabel",
			query: `mutation($c: ID!, $v: String!) { setClusterLabels(input: {clusterId: $c, labels: [{key: "scratch", value: $v}]}) {
				cluster { id labels { key value } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"c": f.NewCluster(t), "v": r.slug()}
			},
			want:   tenantAdmins,
			effect: fieldIs("c", `... on Cluster { labels { key value } }`, "labels.0.value", varOf("v")),
		}},
		"deleteCluster": {{
			name:  "unused cluster",
			query: `mutation($c: ID!) { deleteCluster(input: {clusterId: $c}) { deletedClusterId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"c": f.NewCluster(t)}
			},
			want:   tenantAdmins,
			effect: gone("c"),
		}},

		"regenerateConnectToken": {{
			name:  "confirmed by name",
			query: `mutation($c: ID!) { regenerateConnectToken(input: {clusterId: $c, confirmName: "prod-eu"}) { connectToken { id prefix } secret ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"c": f.ClusterID, "_before": len(f.connectTokens(t))}
			},
			want: tenantAdmins,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				want := v["_before"].(int)
				if ok {
					want++
					if secret := res.Str("regenerateConnectToken.secret"); !strings.HasPrefix(secret, res.Str("regenerateConnectToken.connectToken.prefix")) || !strings.HasPrefix(secret, "nbc_") {
						t.Errorf("secret %q does not start with its prefix", secret)
					}
				}
				if got := len(f.connectTokens(t)); got != want {
					t.Errorf("connect tokens: %d, want %d", got, want)
				}
			},
		}},
		"revokeConnectToken": {{
			name:  "fresh token",
			query: `mutation($k: ID!) { revokeConnectToken(input: {connectTokenId: $k}) { connectToken { id revokedAt } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				res := f.MustDo(t, `mutation($c: ID!) { regenerateConnectToken(input: {clusterId: $c, confirmName: "prod-eu"}) { connectToken { id } } }`,
					map[string]any{"c": f.ClusterID})
				return map[string]any{"k": res.Str("regenerateConnectToken.connectToken.id")}
			},
			want: tenantAdmins,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				revoked := f.Node(t, v["k"].(string), "... on ConnectToken { revokedAt }")["revokedAt"] != nil
				if revoked != ok {
					t.Errorf("token revoked = %v after a call that was allowed = %v", revoked, ok)
				}
			},
		}},

		"queueCommand": {
			{
				name:  "resync",
				query: `mutation($c: ID!) { queueCommand(input: {clusterId: $c, kind: RESYNC}) { command { id status } ` + ue + ` } }`,
				vars:  func(t *testing.T, f *Fixture, r Role) map[string]any { return map[string]any{"c": f.ClusterID} },
				want:  tenantAdmins,
			},
			{
				name: "restart a process",
				query: `mutation($c: ID!, $e: ID!, $s: ID!) { queueCommand(input: {clusterId: $c, kind: RESTART_PROCESS, environmentId: $e, serviceId: $s, process: "web"}) {
					command { id status args { namespace service process } } ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"c": f.ClusterID, "e": f.EnvironmentID, "s": f.ServiceID}
				},
				want: projectEditors,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					t.Helper()
					if ok && (res.Str("queueCommand.command.status") != "QUEUED" || res.Str("queueCommand.command.args.namespace") != "shop" ||
						res.Str("queueCommand.command.args.process") != "web" || res.Str("queueCommand.command.args.service") == "") {
						t.Errorf("queued command: %s, want QUEUED with the namespace shop and process web", res.Body)
					}
				},
			},
		},

		"createNamespaceTarget": {{
			name:  "namespace",
			query: `mutation($c: ID!, $ns: String!) { createNamespaceTarget(input: {clusterId: $c, namespace: $ns}) { namespaceTarget { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"c": f.ClusterID, "ns": f.Unique(r.slug())}
			},
			want: tenantAdmins,
			effect: listed("ns", clusterOf, `... on Cluster { namespaceTargets(first: 100) { nodes { namespace } } }`,
				"namespaceTargets.nodes", "namespace"),
		}},
		"setNamespaceTargetLabels": {{
			name: "relabel",
			query: `mutation($n: ID!, $v: String!) { setNamespaceTargetLabels(input: {namespaceTargetId: $n, labels: [{key: "tier", value: $v}]}) {
				namespaceTarget { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"n": f.NewNamespaceTarget(t), "v": r.slug()}
			},
			want:   tenantAdmins,
			effect: fieldIs("n", `... on NamespaceTarget { labels { key value } }`, "labels.0.value", varOf("v")),
		}},
		"deleteNamespaceTarget": {{
			name:  "namespace target",
			query: `mutation($n: ID!) { deleteNamespaceTarget(input: {namespaceTargetId: $n}) { deletedNamespaceTargetId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"n": f.NewNamespaceTarget(t)}
			},
			want:   tenantAdmins,
			effect: gone("n"),
		}},

		"createService": {{
			name: "service",
			query: `mutation($p: ID!, $name: String!) { createService(input: {projectId: $p, name: $name,
				image: "registry.example.com/shop/worker", processes: [{name: "worker", command: ["./work"]}]}) { service { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.ProjectID, "name": f.Unique(r.slug())}
			},
			want:   projectEditors,
			effect: listed("name", projectOf, `... on Project { services(first: 100) { nodes { name } } }`, "services.nodes", "name"),
		}},
		"updateService": {{
			name:  "image",
			query: `mutation($s: ID!, $image: String!) { updateService(input: {serviceId: $s, image: $image}) { service { id image } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"s": f.ServiceID, "image": "registry.example.com/shop/api-" + r.slug()}
			},
			want:   projectEditors,
			effect: fieldIs("s", `... on Service { image }`, "image", varOf("image")),
		}},
		"deleteService": {{
			name:  "service",
			query: `mutation($s: ID!) { deleteService(input: {serviceId: $s}) { deletedServiceId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"s": f.NewService(t, f.ProjectID, f.Unique("doomed"))}
			},
			want:   projectEditors,
			effect: gone("s"),
		}},

		"createWebhook": {{
			name:  "service hook",
			query: `mutation($p: ID!, $s: ID!) { createWebhook(input: {projectId: $p, serviceId: $s}) { webhook { id } secret ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.ProjectID, "s": f.NewGitService(t, f.Unique("hooked"), GitHubRepository)}
			},
			want: projectManagers,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				if ok {
					f.addSecret(res.Str("createWebhook.secret"))
					if !strings.HasPrefix(res.Str("createWebhook.secret"), "nbwh_") {
						t.Errorf("secret %q", res.Str("createWebhook.secret"))
					}
				}
				n := f.Node(t, v["s"].(string), `... on Service { webhook { id } }`)
				if has := n["webhook"] != nil; has != ok {
					t.Errorf("the service has a webhook: %t, want %t", has, ok)
				}
			},
		}},
		"rotateWebhookSecret": {{
			name:  "service hook",
			query: `mutation($h: ID!) { rotateWebhookSecret(input: {webhookId: $h}) { webhook { rotatedAt } secret ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				id, url, secret := f.NewWebhook(t, f.NewGitService(t, f.Unique("rotated"), GitHubRepository))
				return map[string]any{"h": id, "_url": url, "_secret": secret}
			},
			want: projectManagers,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				if ok {
					f.addSecret(res.Str("rotateWebhookSecret.secret"))
				}
				// The secret given before works exactly when the rotation
				// was refused.
				a := f.Env.Deliver(t, v["_url"].(string), Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "rot-" + string(r),
					Body: SamplePush(t, "github-push.json"), Secret: v["_secret"].(string)})
				if refused := a.Outcome == "REFUSED"; refused != ok {
					t.Errorf("the old secret after the rotation was %v: %+v", ok, a)
				}
			},
		}},
		"deleteWebhook": {{
			name:  "project hook",
			query: `mutation($h: ID!) { deleteWebhook(input: {webhookId: $h}) { deletedWebhookId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				id, _, _ := f.NewWebhook(t, "")
				return map[string]any{"h": id}
			},
			want:   projectManagers,
			effect: gone("h"),
		}},
		"redeliverWebhookDelivery": {{
			name:  "an ignored push",
			query: `mutation($d: ID!) { redeliverWebhookDelivery(input: {deliveryId: $d}) { delivery { id redeliveryOf { id } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				id, url, secret := f.NewWebhook(t, f.NewGitService(t, f.Unique("redelivered"), GitHubRepository))
				a := f.Env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "re-" + string(r),
					Body: SamplePush(t, "github-push.json"), Secret: secret})
				if a.Outcome != "IGNORED" {
					t.Fatalf("the push: %+v", a)
				}
				return map[string]any{"d": gid.Encode(gid.WebhookDelivery, a.Delivery), "_hook": id}
			},
			want: projectDeleters, // tenant admins only
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				r2 := f.MustDo(t, `query($h: ID!) { node(id: $h) { ... on Webhook { deliveries(first: 10) { nodes { id } } } } }`,
					map[string]any{"h": v["_hook"]})
				if n, want := len(r2.List("node.deliveries.nodes")), map[bool]int{true: 2, false: 1}[ok]; n != want {
					t.Errorf("deliveries: %d, want %d", n, want)
				}
			},
		}},

		// A CLI's sign-in is confirmed from a browser session only: with an
		// API token it is refused, whatever the role; any person signed in
		// confirms one, for themselves in a tenant they act in
		// (TestCLILoginThroughTheConsole follows one through).
		"cliLogin": {{
			name:  "a waiting sign-in",
			query: `query($c: String!) { cliLogin(code: $c) { code } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				code, _, _ := cliStart(t, f.Env)
				return map[string]any{"c": code}
			},
			want:     by(forbidden, forbidden, forbidden, forbidden, forbidden),
			signedIn: everyone,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				if ok && res.Str("cliLogin.code") != v["c"] {
					t.Errorf("cliLogin: got %v, want the code %v", res.Get("cliLogin"), v["c"])
				}
			},
		}},
		"approveCliLogin": {{
			name:  "a waiting sign-in",
			query: `mutation($c: String!, $t: ID!) { approveCliLogin(input: {code: $c, tenantId: $t}) { apiToken { id } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				code, secret, _ := cliStart(t, f.Env)
				return map[string]any{"c": code, "t": f.TenantID, "_secret": secret}
			},
			want:     by(forbidden, forbidden, forbidden, forbidden, forbidden),
			signedIn: everyone,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				status, token := cliPoll(t, f.Env, v["_secret"].(string))
				if !ok {
					if status != http.StatusAccepted {
						t.Errorf("after a refused confirmation the CLI's poll answers %d, want 202 (still waiting)", status)
					}
					return
				}
				// The CLI's token is the person's, in this tenant only.
				if status != http.StatusOK {
					t.Fatalf("after the confirmation the CLI's poll answers %d, want 200", status)
				}
				if who, _ := f.Env.Authenticates(t, token); who != f.Users[r].UserID {
					t.Errorf("the CLI's token acts as %q, want the person %q", who, f.Users[r].UserID)
				}
			},
		}},
		"createWebhookEndpoint": {
			{
				name:  "the tenant's",
				query: `mutation($t: ID!) { createWebhookEndpoint(input: {tenantId: $t, url: "https://198.41.0.4/hook", events: [CLUSTER_CONNECTED]}) { endpoint { id } secret ` + ue + ` } }`,
				vars:  func(t *testing.T, f *Fixture, r Role) map[string]any { return map[string]any{"t": f.TenantID} },
				want:  tenantAdmins,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					t.Helper()
					if ok {
						f.addSecret(res.Str("createWebhookEndpoint.secret"))
					}
				},
			},
			{
				name:  "a project's",
				query: `mutation($t: ID!, $p: ID!) { createWebhookEndpoint(input: {tenantId: $t, projectId: $p, url: "https://198.41.0.4/hook", events: [DEPLOYMENT_ENDED]}) { endpoint { id } secret ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"t": f.TenantID, "p": f.ProjectID}
				},
				want: projectManagers,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					t.Helper()
					if ok {
						f.addSecret(res.Str("createWebhookEndpoint.secret"))
						if !strings.HasPrefix(res.Str("createWebhookEndpoint.secret"), "whsec_") {
							t.Errorf("secret %q", res.Str("createWebhookEndpoint.secret"))
						}
					}
				},
			},
		},
		"updateWebhookEndpoint": {{
			name:   "a project's",
			query:  `mutation($e: ID!) { updateWebhookEndpoint(input: {endpointId: $e, description: "changed"}) { endpoint { id } ` + ue + ` } }`,
			vars:   projectEndpoint,
			want:   projectManagers,
			effect: fieldIs("e", `... on WebhookEndpoint { description }`, "description", constant("changed")),
		}},
		"rotateWebhookEndpointSecret": {{
			name:  "a project's",
			query: `mutation($e: ID!) { rotateWebhookEndpointSecret(input: {endpointId: $e}) { endpoint { previousSecretValidUntil } secret ` + ue + ` } }`,
			vars:  projectEndpoint,
			want:  projectManagers,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				if ok {
					f.addSecret(res.Str("rotateWebhookEndpointSecret.secret"))
				}
				if rotated := f.Node(t, v["e"].(string), `... on WebhookEndpoint { previousSecretValidUntil }`)["previousSecretValidUntil"] != nil; rotated != ok {
					t.Errorf("rotated: %v, want %v", rotated, ok)
				}
			},
		}},
		"setWebhookEndpointEnabled": {{
			name:  "a project's, disabled",
			query: `mutation($e: ID!) { setWebhookEndpointEnabled(input: {endpointId: $e, enabled: false}) { endpoint { enabled } ` + ue + ` } }`,
			vars:  projectEndpoint,
			want:  projectManagers,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				if enabled := f.Node(t, v["e"].(string), `... on WebhookEndpoint { enabled }`)["enabled"]; enabled != !ok {
					t.Errorf("enabled %v after a call that was allowed: %v", enabled, ok)
				}
			},
		}},
		"deleteWebhookEndpoint": {{
			name:   "a project's",
			query:  `mutation($e: ID!) { deleteWebhookEndpoint(input: {endpointId: $e}) { deletedEndpointId ` + ue + ` } }`,
			vars:   projectEndpoint,
			want:   projectManagers,
			effect: gone("e"),
		}},
		"redeliverWebhookMessage": {{
			name:  "a failed message of a project's endpoint",
			query: `mutation($m: ID!) { redeliverWebhookMessage(input: {messageId: $m}) { message { status } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				v := projectEndpoint(t, f, r)
				return map[string]any{"m": f.failedMessage(t, v["e"].(string))}
			},
			want:   projectManagers,
			effect: fieldIs("m", `... on WebhookMessage { status }`, "status", constant("PENDING")),
		}},

		"previewDeploy": {
			previewCase("unprotected environment", `previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d})`,
				func(f *Fixture) string { return f.EnvironmentID }, projectEditors),
			// In a protected environment the release waits for approval:
			// deploying changes no cluster yet.
			previewNothing(previewCase("protected environment", `previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d})`,
				func(f *Fixture) string { return f.ProtectedEnvironmentID }, projectManagers)),
		},
		"previewUpdateService": {
			// Domains take effect at once (processes wait for the next deploy).
			previewCase("new domain", `previewUpdateService(input: {serviceId: $s, domains: [{host: "preview.example.com", process: "web"}]})`,
				nil, projectEditors),
		},
		"previewUpdateEnvironment": {
			// A new namespace selector moves the environment to another target.
			previewCase("new namespace selector", `previewUpdateEnvironment(input: {environmentId: $e, namespaceSelector: [{key: "tier", value: "gated"}]})`,
				nil, projectManagers),
		},
		"previewSetVariable": {
			previewCase("service variable", `previewSetVariable(input: {projectId: $p, serviceId: $s, name: "NEW_VAR", value: "x"})`,
				nil, projectEditors),
		},
		"setVariable": {
			setVariableCase("service scope", `, $s: ID!`, `serviceId: $s, `, projectEditors),
			setVariableCase("environment scope", `, $e: ID!`, `environmentId: $e, `, projectManagers),
			setVariableCase("project scope", ``, ``, projectManagers),
			{
				// With changeSetId the change goes to the set (checked as
				// the direct change is), and no variable is set.
				name: "service scope, into a change set",
				query: `mutation($p: ID!, $s: ID!, $n: String!, $c: ID!) { setVariable(input: {projectId: $p, serviceId: $s, name: $n, value: "x", changeSetId: $c}) {
					variable { id } changeSet { id state changes { sequence variableName } } ` + ue + ` } }`,
				vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
					return map[string]any{"p": f.ProjectID, "s": f.ServiceID, "n": "PROPOSED_" + strings.ToUpper(r.slug()),
						"c": f.changeSetAsOwner(t, r, 0, false)}
				},
				want: projectEditors,
				effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					t.Helper()
					if ok && (res.Get("setVariable.variable") != nil || res.Str("setVariable.changeSet.id") != v["c"]) {
						t.Errorf("setVariable into a change set: %s, want no variable and the set %s", res.Body, v["c"])
					}
					names := f.Values(t, f.ServiceID, `... on Service { variables { name } }`, "variables", "name")
					if slices.Contains(names, v["n"].(string)) {
						t.Errorf("variable %s was set, want it only proposed", v["n"])
					}
					changes := f.changeSet(t, v["c"].(string))["changes"].([]any)
					if n := map[bool]int{true: 1, false: 0}[ok]; len(changes) != n {
						t.Errorf("the set holds %d changes, want %d", len(changes), n)
					}
				},
			},
		},
		"deleteVariable": {{
			name:  "service variable",
			query: `mutation($v: ID!) { deleteVariable(input: {variableId: $v}) { deletedVariableId ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				res := f.MustDo(t, `mutation($p: ID!, $s: ID!, $n: String!) { setVariable(input: {projectId: $p, serviceId: $s, name: $n, value: "x"}) { variable { id } }}`,
					map[string]any{"p": f.ProjectID, "s": f.ServiceID, "n": "DOOMED_" + strings.ToUpper(r.slug())})
				return map[string]any{"v": res.Str("setVariable.variable.id")}
			},
			want:   projectEditors,
			effect: gone("v"),
		}},

		"deploy": {
			deployCase("unprotected environment", func(f *Fixture) string { return f.EnvironmentID }, projectEditors),
			// A protected environment needs a project manager.
			deployCase("protected environment", func(f *Fixture) string { return f.ProtectedEnvironmentID }, projectManagers),
		},
		"approveDeployment": {decideCase("approveDeployment", "DELIVERING")},

		"openChangeSet": {{
			name:  "empty",
			query: `mutation($p: ID!, $title: String!) { openChangeSet(input: {projectId: $p, title: $title}) { changeSet { id state author { id } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"p": f.ProjectID, "title": "opened by " + string(r)}
			},
			want: projectEditors,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				listed("title", projectOf, `... on Project { changeSets(first: 100) { nodes { title } } }`, "changeSets.nodes", "title")(t, f, r, v, res, ok)
				if !ok {
					return
				}
				if res.Str("openChangeSet.changeSet.author.id") != f.Users[r].UserID {
					t.Errorf("author: %s, want the caller %s", res.Body, f.Users[r].UserID)
				}
				// The owner reads the set the payload names.
				if got := f.changeSet(t, res.Str("openChangeSet.changeSet.id"))["state"]; got != "OPEN" {
					t.Errorf("the new set's state: %v, want OPEN", got)
				}
			},
		}},
		"removeChangeSetChange": {{
			name:  "the only change",
			query: `mutation($c: ID!) { removeChangeSetChange(input: {changeSetId: $c, sequence: 1}) { changeSet { id changes { sequence } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"c": f.changeSetAsOwner(t, r, 1, false)}
			},
			want: projectEditors,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				changes := f.changeSet(t, v["c"].(string))["changes"].([]any)
				if n := map[bool]int{true: 0, false: 1}[ok]; len(changes) != n {
					t.Errorf("the set holds %d changes, want %d", len(changes), n)
				}
			},
		}},
		"submitChangeSet": {{
			name:   "open, one change",
			query:  `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) { changeSet { id state } ` + ue + ` } }`,
			vars:   changeSetVars(1, false),
			want:   projectEditors,
			effect: changeSetStateIs("c", "SUBMITTED", "OPEN"),
		}},
		// The owner, who prepares the sets decided on here, is a tenant admin
		// of its own (the fixture's founder) and none of the matrix's roles:
		// the matrix's admin is another user, so no role decides on a set it
		// authored (an author is refused whatever their role).
		"approveChangeSet": {{
			name:   "submitted",
			query:  `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c, comment: "looks right"}) { changeSet { id state decidedBy { id } } ` + ue + ` } }`,
			vars:   changeSetVars(1, true),
			want:   projectManagers,
			effect: both(changeSetStateIs("c", "APPROVED", "SUBMITTED"), decidedByCaller("approveChangeSet")),
		}},
		"rejectChangeSet": {{
			name:   "submitted",
			query:  `mutation($c: ID!) { rejectChangeSet(input: {changeSetId: $c, comment: "not now"}) { changeSet { id state decidedBy { id } } ` + ue + ` } }`,
			vars:   changeSetVars(1, true),
			want:   projectManagers,
			effect: both(changeSetStateIs("c", "REJECTED", "SUBMITTED"), decidedByCaller("rejectChangeSet")),
		}},
		"applyChangeSet": {{
			// A service variable in the unprotected environment: applied
			// from OPEN, no approval needed.
			name:  "open, unprotected",
			query: `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) { changeSet { id state appliedBy { id } } ` + ue + ` } }`,
			vars:  changeSetVars(1, false),
			want:  projectEditors,
			effect: both(changeSetStateIs("c", "APPLIED", "OPEN"),
				func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
					t.Helper()
					names := f.Values(t, f.ServiceID, `... on Service { variables { name } }`, "variables", "name")
					if in := slices.Contains(names, changeSetVariable(r)); in != ok {
						t.Errorf("variable %s set: %v, want %v", changeSetVariable(r), in, ok)
					}
					if ok && res.Str("applyChangeSet.changeSet.appliedBy.id") != f.Users[r].UserID {
						t.Errorf("appliedBy: %s, want the caller %s", res.Body, f.Users[r].UserID)
					}
				}),
		}},
		"rebaseChangeSet": {{
			// Rebasing a submitted set takes it back to OPEN.
			name:   "submitted",
			query:  `mutation($c: ID!) { rebaseChangeSet(input: {changeSetId: $c}) { changeSet { id state } ` + ue + ` } }`,
			vars:   changeSetVars(1, true),
			want:   projectEditors,
			effect: changeSetStateIs("c", "OPEN", "SUBMITTED"),
		}},
		"commentOnChangeSet": {{
			name:  "open",
			query: `mutation($c: ID!, $body: String!) { commentOnChangeSet(input: {changeSetId: $c, body: $body}) { changeSet { id comments(first: 100) { nodes { body } } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"c": f.changeSetAsOwner(t, r, 1, false), "body": "a word from " + string(r)}
			},
			want: projectEditors,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				t.Helper()
				var bodies []string
				for _, c := range dig(f.changeSet(t, v["c"].(string)), "comments.nodes").([]any) {
					bodies = append(bodies, dig(c, "body").(string))
				}
				if n := map[bool]int{true: 1, false: 0}[ok]; len(bodies) != n || (ok && bodies[0] != v["body"]) {
					t.Errorf("comments %q after a call allowed: %v", bodies, ok)
				}
			},
		}},
		"closeChangeSet": {{
			name:   "open",
			query:  `mutation($c: ID!) { closeChangeSet(input: {changeSetId: $c}) { changeSet { id state } ` + ue + ` } }`,
			vars:   changeSetVars(1, false),
			want:   projectEditors,
			effect: changeSetStateIs("c", "CLOSED", "OPEN"),
		}},
		"rejectDeployment": {decideCase("rejectDeployment", "CANCELLED")},
		"cancelDeployment": {{
			name:  "delivering deployment",
			query: `mutation($d: ID!) { cancelDeployment(input: {deploymentId: $d, reason: "wrong image"}) { deployment { id stage message } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				return map[string]any{"d": f.deployAsOwner(t, f.EnvironmentID)}
			},
			want:   projectEditors,
			effect: stageIs("d", "CANCELLED", "DELIVERING"),
		}},
		"redeploy": {{
			name:  "earlier deployment",
			query: `mutation($d: ID!) { redeploy(input: {deploymentId: $d}) { deployment { id stage release { id } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				d := f.deployAsOwner(t, f.EnvironmentID)
				return map[string]any{"d": d, "_release": f.Node(t, d, `... on Deployment { release { id } }`)["release"].(map[string]any)["id"]}
			},
			want: projectEditors,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				if !ok {
					return
				}
				if res.Str("redeploy.deployment.id") == v["d"] || res.Str("redeploy.deployment.release.id") != v["_release"] {
					t.Errorf("redeploy: %s, want a new deployment of release %s", res.Body, v["_release"])
				}
			},
		}},
		"rollback": {{
			name:  "release 1",
			query: `mutation($s: ID!, $e: ID!) { rollback(input: {serviceId: $s, environmentId: $e, releaseNumber: 1}) { deployment { id stage release { number } } ` + ue + ` } }`,
			vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
				f.deployAsOwner(t, f.EnvironmentID)
				return map[string]any{"s": f.ServiceID, "e": f.EnvironmentID}
			},
			want: projectEditors,
			effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
				if ok && (res.Get("rollback.deployment.release.number") != float64(1) || res.Str("rollback.deployment.stage") != "DELIVERING") {
					t.Errorf("rollback: %s, want a delivering deployment of release 1", res.Body)
				}
			},
		}},
	}
}

// deployAsOwner deploys the fixture's service to an environment as the
// owner and returns the deployment's id.
func (f *Fixture) deployAsOwner(t *testing.T, env string) string {
	t.Helper()
	res := f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } } }`,
		map[string]any{"s": f.ServiceID, "e": env, "d": Digest(f.Env.Next())})
	return res.Str("deploy.deployment.id")
}

// changeSetVariable names the service variable a change set prepared for
// role r sets: unique per role, a valid variable name.
func changeSetVariable(r Role) string { return "CS_" + strings.ToUpper(r.slug()) }

// changeSetAsOwner opens a change set in the fixture project as the owner,
// fresh for role r; with changes 1 it holds a change of a service variable
// (the service runs in the unprotected environment only: applying it
// needs no approval), and submit submits it. It returns the set's id.
func (f *Fixture) changeSetAsOwner(t *testing.T, r Role, changes int, submit bool) string {
	t.Helper()
	res := f.MustDo(t, `mutation($p: ID!, $title: String!) { openChangeSet(input: {projectId: $p, title: $title}) { changeSet { id } `+ue+` } }`,
		map[string]any{"p": f.ProjectID, "title": "prepared for " + string(r)})
	id := res.Str("openChangeSet.changeSet.id")
	if id == "" || len(res.UserErrors("openChangeSet")) > 0 {
		t.Fatalf("openChangeSet: %s", res.Body)
	}
	if changes > 0 {
		res = f.MustDo(t, `mutation($p: ID!, $s: ID!, $n: String!, $c: ID!) { setVariable(input: {projectId: $p, serviceId: $s, name: $n, value: "x", changeSetId: $c}) {
			changeSet { id } `+ue+` } }`, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "n": changeSetVariable(r), "c": id})
		if res.Str("setVariable.changeSet.id") != id || len(res.UserErrors("setVariable")) > 0 {
			t.Fatalf("setVariable into change set %s: %s", id, res.Body)
		}
	}
	if submit {
		res = f.MustDo(t, `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`, map[string]any{"c": id})
		if got := res.Str("submitChangeSet.changeSet.state"); got != "SUBMITTED" {
			t.Fatalf("submitChangeSet: %s", res.Body)
		}
	}
	return id
}

// changeSetVars prepares, for a case acting on v["c"], a change set as
// changeSetAsOwner does.
func changeSetVars(changes int, submit bool) func(t *testing.T, f *Fixture, r Role) map[string]any {
	return func(t *testing.T, f *Fixture, r Role) map[string]any {
		return map[string]any{"c": f.changeSetAsOwner(t, r, changes, submit)}
	}
}

// changeSet reads a change set of the fixture project as the owner, from
// the project's list of them.
func (f *Fixture) changeSet(t *testing.T, id string) map[string]any {
	t.Helper()
	n := f.Node(t, f.ProjectID, `... on Project { changeSets(first: 100) { nodes { id state title
		changes { sequence variableName } comments(first: 100) { nodes { body decision } } decidedBy { id } appliedBy { id } } } }`)
	for _, s := range dig(n, "changeSets.nodes").([]any) {
		if m := s.(map[string]any); m["id"] == id {
			return m
		}
	}
	t.Fatalf("change set %s is not among the project's", id)
	return nil
}

// changeSetStateIs checks the change set in v[key] reached state ok, or
// stayed in before when the call was refused.
func changeSetStateIs(key, ok, before string) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, allowed bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, allowed bool) {
		t.Helper()
		want := before
		if allowed {
			want = ok
		}
		if got := f.changeSet(t, v[key].(string))["state"]; got != want {
			t.Errorf("change set state %v, want %s", got, want)
		}
	}
}

// decidedByCaller checks an allowed decision on a change set is the
// caller's, and its comment is on the set.
func decidedByCaller(field string) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		if ok && res.Str(field+".changeSet.decidedBy.id") != f.Users[r].UserID {
			t.Errorf("decidedBy: %s, want the caller %s", res.Body, f.Users[r].UserID)
		}
		comments := dig(f.changeSet(t, v["c"].(string)), "comments.nodes").([]any)
		if n := map[bool]int{true: 1, false: 0}[ok]; len(comments) != n {
			t.Errorf("the set has %d comments, want %d (the decision's)", len(comments), n)
		}
	}
}

// both runs two effect checks.
func both(a, b func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool)) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		a(t, f, r, v, res, ok)
		b(t, f, r, v, res, ok)
	}
}

var (
	requestersMu sync.Mutex
	requesters   = map[*Fixture]*Caller{}
)

// requester is a project manager who is none of the matrix's roles: it
// requests the deployments the roles decide on, so that no role decides on
// its own.
func (f *Fixture) requester(t *testing.T) *Caller {
	t.Helper()
	requestersMu.Lock()
	defer requestersMu.Unlock()
	if c := requesters[f]; c != nil {
		return c
	}
	c := f.NewCaller(t, "requester", "MEMBER")
	f.GrantProjectRole(t, f.ProjectID, c.UserID, "PROJECT_MANAGER")
	requesters[f] = c
	return c
}

// decideCase approves or rejects a deployment to the protected environment
// that the requester asked for.
func decideCase(field, after string) matrixCase {
	return matrixCase{
		name:  "awaiting approval",
		query: `mutation($d: ID!) { ` + field + `(input: {deploymentId: $d, comment: "looks right"}) { deployment { id stage approvals { decision comment user { id } } } ` + ue + ` } }`,
		vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
			res := f.Env.MustDo(t, f.requester(t).Token, `mutation($s: ID!, $e: ID!, $d: String!) {
				deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id stage } } }`,
				map[string]any{"s": f.ServiceID, "e": f.ProtectedEnvironmentID, "d": Digest(f.Env.Next())})
			if got := res.Str("deploy.deployment.stage"); got != "AWAITING_APPROVAL" {
				t.Fatalf("a deployment to the protected environment is %s", got)
			}
			return map[string]any{"d": res.Str("deploy.deployment.id")}
		},
		want: projectManagers,
		effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
			stageIs("d", after, "AWAITING_APPROVAL")(t, f, r, v, res, ok)
			if ok && res.Str(field+".deployment.approvals.0.user.id") != f.Users[r].UserID {
				t.Errorf("approvals: %s, want the caller's decision", res.Body)
			}
		},
	}
}

// stageIs checks the deployment in v[key] reached ok's stage, or stayed in
// before when the call was refused.
func stageIs(key, ok, before string) func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, allowed bool) {
	return func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, allowed bool) {
		t.Helper()
		want := before
		if allowed {
			want = ok
		}
		if got := f.Node(t, v[key].(string), `... on Deployment { stage }`)["stage"]; got != want {
			t.Errorf("deployment stage %v, want %s", got, want)
		}
	}
}

func revoked(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
	t.Helper()
	if ok && res.Str("revokeApiToken.apiToken.revokedAt") == "" {
		t.Errorf("revokedAt: got empty after revoking")
	}
	if _, works := f.Env.Authenticates(t, v["_secret"].(string)); works == ok {
		t.Errorf("token accepted after the call: %v, want %v", works, !ok)
	}
}

func deployCase(name string, env func(f *Fixture) string, want map[Role]access) matrixCase {
	return matrixCase{
		name: name,
		query: `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			release { id number imageDigest } deployment { id stage requestedBy { id } cluster { id } } ` + ue + ` } }`,
		vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
			return map[string]any{"s": f.ServiceID, "e": env(f), "d": Digest(f.Env.Next())}
		},
		want: want,
		effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
			digests := f.Values(t, f.ServiceID, `... on Service { releases(first: 100) { nodes { imageDigest } } }`, "releases.nodes", "imageDigest")
			if in := slices.Contains(digests, v["d"].(string)); in != ok {
				t.Errorf("a release of digest %s exists: %v, want %v", v["d"], in, ok)
			}
			if !ok {
				return
			}
			// No agent is connected: an unprotected environment's deployment
			// is delivering, blocked on delivery; a protected one awaits
			// approval.
			want := "DELIVERING"
			if v["e"] == f.ProtectedEnvironmentID {
				want = "AWAITING_APPROVAL"
			}
			if got := res.Str("deploy.deployment.stage"); got != want {
				t.Errorf("stage: got %q, want %s", got, want)
			}
			if got := res.Str("deploy.deployment.requestedBy.id"); got != f.Users[r].UserID {
				t.Errorf("requestedBy: got %q, want the caller %q", got, f.Users[r].UserID)
			}
			if got := res.Str("deploy.deployment.cluster.id"); got != f.ClusterID {
				t.Errorf("cluster: got %q, want %q", got, f.ClusterID)
			}
		},
	}
}

// schemaFields lists the Query and Mutation fields of the executable schema.
func schemaFields() []string {
	s := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	var out []string
	for _, f := range s.Query.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			out = append(out, f.Name)
		}
	}
	for _, f := range s.Mutation.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	table := roleMatrix()
	t.Run("covers every field", func(t *testing.T) {
		fields := schemaFields()
		for _, f := range fields {
			if len(table[f]) == 0 {
				t.Errorf("field %s has no entry in the role matrix", f)
			}
		}
		for k := range table {
			if !slices.Contains(fields, k) {
				t.Errorf("role matrix entry %q names no Query or Mutation field", k)
			}
		}
		for k, cases := range table {
			for _, c := range cases {
				for _, r := range Roles {
					if _, ok := c.want[r]; !ok {
						t.Errorf("%s/%s: no outcome for role %s", k, c.name, r)
					}
				}
			}
		}
	})
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Every case runs twice: as integrations calling with API tokens, and
	// as people who accepted an invitation, calling through the browser
	// session it signed them in with. Each door has servers of its own:
	// the CLI sign-ins the cases start count against one address's limit.
	for _, door := range []string{"token", "session"} {
		t.Run(door, func(t *testing.T) {
			t.Parallel()
			EachStore(t, func(t *testing.T, env *Env) {
				for _, field := range keys {
					for _, c := range table[field] {
						t.Run(field+"/"+c.name, func(t *testing.T) {
							t.Parallel()
							f := env.newFixture(t, door == "session")
							for _, r := range Roles {
								t.Run(string(r), func(t *testing.T) { runMatrixCase(t, f, field, c, r) })
							}
						})
					}
				}
			})
		})
	}
}

func runMatrixCase(t *testing.T, f *Fixture, field string, c matrixCase, r Role) {
	vars := map[string]any{}
	if c.vars != nil {
		vars = c.vars(t, f, r)
	}
	want := c.want[r]
	if f.People && c.signedIn != nil {
		want = c.signedIn[r]
	}
	isMutation := strings.HasPrefix(strings.TrimSpace(c.query), "mutation")
	before := f.AuditCount(t)
	res := f.Users[r].Do(t, f.Env, c.query, vars)
	delta := f.AuditCount(t) - before
	if res.Status != http.StatusOK {
		t.Fatalf("%s as %s: got HTTP %d, want 200\n%s", field, r, res.Status, res.Body)
	}
	if want == allowed {
		if len(res.Errors) > 0 {
			t.Fatalf("%s as %s: got errors %s, want success", field, r, res.errorList())
		}
		wantDelta := 0
		if isMutation {
			if res.Get(field) == nil {
				t.Fatalf("%s as %s: got a null payload", field, r)
			}
			if ue := res.UserErrors(field); len(ue) > 0 {
				t.Fatalf("%s as %s: got userErrors %+v, want none", field, r, ue)
			}
			if !c.auditsElsewhere {
				wantDelta = 1
			}
		}
		if delta != wantDelta {
			t.Errorf("%s as %s: got %d new audit events in the tenant, want %d", field, r, delta, wantDelta)
		}
	} else {
		if len(res.Errors) == 0 {
			t.Fatalf("%s as %s: got success %s, want %s", field, r, res.Body, want)
		}
		e := res.Errors[0]
		if e.Code() != string(want) {
			t.Errorf("%s as %s: got code %s (%s), want %s", field, r, e.Code(), e.Message, want)
		}
		if len(e.Path) == 0 || e.Path[0] != field {
			t.Errorf("%s as %s: error path %v, want it to start at %s", field, r, e.Path, field)
		}
		wantMsg := map[access]string{forbidden: "forbidden: your role does not allow this", notFound: "not found"}[want]
		if e.Message != wantMsg {
			t.Errorf("%s as %s: message %q, want %q", field, r, e.Message, wantMsg)
		}
		if isMutation && res.Get(field) != nil {
			t.Errorf("%s as %s: denied, yet returned a payload %v", field, r, res.Get(field))
		}
		if delta != 0 {
			t.Errorf("%s as %s: denied, yet wrote %d audit events", field, r, delta)
		}
	}
	if c.effect != nil {
		c.effect(t, f, r, vars, res, want == allowed)
	}
}

// setVariableCase sets a secret at a scope (scopeArg names it) and checks,
// as the owner, that it is there — as a secret whose value never shows.
func setVariableCase(name, decl, scopeArg string, want map[Role]access) matrixCase {
	return matrixCase{
		name: name,
		query: `mutation($p: ID!, $n: String!` + decl + `) { setVariable(input: {projectId: $p, ` + scopeArg +
			`name: $n, value: "s3cret-matrix", secret: true}) { variable { id secret value status } ` + ue + ` } }`,
		vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
			v := map[string]any{"p": f.ProjectID, "n": "K_" + strings.ToUpper(strings.NewReplacer(" ", "_", "-", "_").Replace(name+"_"+r.slug()))}
			switch {
			case strings.Contains(decl, "$s"):
				v["s"] = f.ServiceID
			case strings.Contains(decl, "$e"):
				v["e"] = f.EnvironmentID
			}
			return v
		},
		want: want,
		effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
			t.Helper()
			if strings.Contains(string(res.Body), "s3cret-matrix") {
				t.Errorf("the response shows the secret: %s", res.Body)
			}
			if !ok {
				return
			}
			if res.Get("setVariable.variable.value") != nil || res.Str("setVariable.variable.status") != "SET" {
				t.Errorf("secret variable: %s, want value null and status SET", res.Body)
			}
		},
	}
}

// previewCase runs a preview query: allowed for whoever may run the
// mutation, it reports a change on the fixture cluster and stores nothing
// (the runner checks no audit event is written; this checks the revision).
// previewNothing turns a preview case into one whose change alters no
// cluster (checked as the owner, like previewCase's effect).
func previewNothing(c matrixCase) matrixCase {
	field := c.query[strings.Index(c.query, "{")+1:]
	field = strings.TrimSpace(field[:strings.Index(field, "(")])
	c.effect = func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
		t.Helper()
		if rev := f.Node(t, f.ClusterID, "... on Cluster { desiredRevision }")["desiredRevision"]; rev != v["_rev"] {
			t.Errorf("a preview moved the revision from %v to %v", v["_rev"], rev)
		}
		if clusters := res.List(field + ".clusters"); ok && len(clusters) != 0 {
			t.Errorf("%s: %d clusters changed, want none: %s", field, len(clusters), res.Body)
		}
	}
	return c
}

func previewCase(name, call string, env func(*Fixture) string, want map[Role]access) matrixCase {
	field := call[:strings.Index(call, "(")]
	var decl []string
	for _, d := range []string{"$s: ID!", "$e: ID!", "$d: String!", "$p: ID!"} {
		if strings.Contains(call, d[:2]) {
			decl = append(decl, d)
		}
	}
	return matrixCase{
		name: name,
		query: `query(` + strings.Join(decl, ", ") + `) { ` + call + ` {
			clusters { cluster { id } fromRevision added { kind namespace name } changed { kind name } removed { kind name } }
			userErrors { field message code } } }`,
		vars: func(t *testing.T, f *Fixture, r Role) map[string]any {
			e := f.EnvironmentID
			if env != nil {
				e = env(f)
			}
			rev := f.Node(t, f.ClusterID, "... on Cluster { desiredRevision }")["desiredRevision"]
			v := map[string]any{"_rev": rev}
			for k, val := range map[string]any{"s": f.ServiceID, "e": e, "d": Digest(4242), "p": f.ProjectID} {
				if strings.Contains(call, "$"+k) {
					v[k] = val
				}
			}
			return v
		},
		want: want,
		effect: func(t *testing.T, f *Fixture, r Role, v map[string]any, res Response, ok bool) {
			t.Helper()
			if rev := f.Node(t, f.ClusterID, "... on Cluster { desiredRevision }")["desiredRevision"]; rev != v["_rev"] {
				t.Errorf("a preview moved the revision from %v to %v", v["_rev"], rev)
			}
			if !ok {
				return
			}
			clusters := res.List(field + ".clusters")
			if len(clusters) != 1 {
				t.Fatalf("%s: %d clusters changed, want 1: %s", field, len(clusters), res.Body)
			}
			c := clusters[0].(map[string]any)
			if c["fromRevision"] != v["_rev"] {
				t.Errorf("fromRevision %v, want the current %v", c["fromRevision"], v["_rev"])
			}
			if len(c["added"].([]any))+len(c["changed"].([]any))+len(c["removed"].([]any)) == 0 {
				t.Errorf("%s: a change with no objects: %s", field, res.Body)
			}
		},
	}
}

func (f *Fixture) connectTokens(t *testing.T) []any {
	t.Helper()
	n := f.Node(t, f.ClusterID, "... on Cluster { connectTokens(first: 100) { nodes { id } } }")
	return dig(n, "connectTokens.nodes").([]any)
}
