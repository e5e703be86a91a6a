package apitest

import (
	"net/http"
	"testing"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/resolvers"
)

// tenantIDs collects the global id of every object of the fixture tenant,
// by kind.
func tenantIDs(t *testing.T, f *Fixture) map[string][]string {
	t.Helper()
	ids := map[string][]string{
		"Tenant":          {f.TenantID},
		"Cluster":         {f.ClusterID},
		"NamespaceTarget": {f.NamespaceTargetID},
		"Project":         {f.ProjectID},
		"Environment":     {f.EnvironmentID, f.ProtectedEnvironmentID},
		"Service":         {f.ServiceID},
		"Release":         {f.ReleaseID},
		"Deployment":      {f.DeploymentID},
	}
	// The owner also belongs to other tenants; its user is legitimately
	// visible to anyone sharing one of them. The role users belong to this
	// tenant only.
	ids["Member"] = f.Values(t, f.TenantID, `... on Tenant { members(first: 100) { nodes { id } } }`, "members.nodes", "id")
	ids["ProjectMember"] = f.Values(t, f.ProjectID, `... on Project { members(first: 100) { nodes { id } } }`, "members.nodes", "id")
	ids["ApiToken"] = []string{f.Owner.TokenID}
	for _, r := range Roles {
		ids["User"] = append(ids["User"], f.Users[r].UserID)
		ids["ApiToken"] = append(ids["ApiToken"], f.Users[r].TokenID)
	}
	ids["AuditEvent"] = f.Values(t, f.TenantID, `... on Tenant { auditEvents(first: 100) { nodes { id } } }`, "auditEvents.nodes", "id")
	ids["Variable"] = f.Values(t, f.ServiceID, `... on Service { variables { id } }`, "variables", "id")
	ids["ConnectToken"] = f.Values(t, f.ClusterID, `... on Cluster { connectTokens(first: 100) { nodes { id } } }`, "connectTokens.nodes", "id")
	res := f.MustDo(t, `mutation($c: ID!) { queueCommand(input: {clusterId: $c, kind: RESYNC}) { command { id } } }`, map[string]any{"c": f.ClusterID})
	ids["Command"] = []string{res.Str("queueCommand.command.id")}
	res = f.MustDo(t, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "isolated"}) { changeSet { id } } }`, map[string]any{"p": f.ProjectID})
	ids["ChangeSet"] = []string{res.Str("openChangeSet.changeSet.id")}
	person := f.NewPerson(t, "iso-person", "MEMBER")
	ids["Session"] = person.Do(t, f.Env, `{ viewer { sessions(first: 100) { nodes { id } } } }`, nil).IDs("viewer.sessions.nodes")
	res = f.MustDo(t, `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "iso-invited@a.test", name: "Iso", role: MEMBER}) {
		invitation { id } `+ue+` } }`, map[string]any{"t": f.TenantID})
	ids["Invitation"] = []string{res.Str("inviteMember.invitation.id")}
	svc := f.NewGitService(t, f.Unique("git"), GitHubRepository, f.EnvironmentID)
	hook, url, secret := f.NewWebhook(t, svc)
	a := f.Env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: f.Unique("iso"),
		Body: SamplePush(t, "github-push.json"), Secret: secret})
	if len(a.Builds) != 1 {
		t.Fatalf("the push queued %v", a)
	}
	ids["Webhook"] = []string{hook}
	ids["WebhookDelivery"] = []string{gid.Encode(gid.WebhookDelivery, a.Delivery)}
	ids["Build"] = []string{gid.Encode(gid.Build, a.Builds[0])}
	endpoint, _ := f.newEndpoint(t, "", "https://198.41.0.4/isolated", "DEPLOYMENT_ENDED")
	ids["WebhookEndpoint"] = []string{endpoint, projectEndpoint(t, f, Admin)["e"].(string)}
	ids["WebhookMessage"] = []string{f.failedMessage(t, ids["WebhookEndpoint"][1])}
	// Every kind of node the schema has must be covered here.
	sch := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	for _, def := range sch.GetPossibleTypes(sch.Types["Node"]) {
		if _, ok := ids[def.Name]; !ok {
			t.Errorf("node type %s has no ids in the isolation test", def.Name)
		}
	}
	for kind, l := range ids {
		if len(l) == 0 || l[0] == "" {
			t.Fatalf("fixture has no %s id", kind)
		}
	}
	return ids
}

func TestCrossTenantIsolation(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		a, b := env.NewFixture(t), env.NewFixture(t)
		ids := tenantIDs(t, a)
		// What of A's the identity surfaces name: a person signed in to A,
		// an open invitation, a CLI sign-in waiting for its code.
		aPerson := a.NewPerson(t, "a-person", "MEMBER")
		inv := a.MustDo(t, `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "invited@a.test", name: "Invited", role: MEMBER}) {
			invitation { id } `+ue+` } }`, map[string]any{"t": a.TenantID})
		invitationID := inv.Str("inviteMember.invitation.id")
		callers := []struct {
			name string
			c    *Caller
		}{
			// A user who belongs to tenant B only.
			{"admin of B", b.Users[Admin]},
			// The owner is admin of both tenants, but a token acts in
			// its own tenant only.
			{"owner with B's token", &b.Owner},
			// A person signed in to B only, by B's invitation.
			{"admin of B signed in", b.NewPerson(t, "b-admin", "ADMIN")},
			// The owner again, with a passphrase set for B only: the
			// session opens B, not A.
			{"owner signed in to B", b.SignInByInvitation(t, b.Owner.Email, "Owner", "ADMIN")},
		}

		t.Run("node", func(t *testing.T) {
			before := a.AuditCount(t)
			for _, c := range callers {
				for kind, list := range ids {
					for _, id := range list {
						res := c.c.Do(t, env, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id})
						if res.Get("node") != nil {
							t.Errorf("%s read %s %s of tenant A: got %v, want null", c.name, kind, id, res.Get("node"))
							continue
						}
						if len(res.Errors) != 1 || res.Errors[0].Code() != "NOT_FOUND" || res.Errors[0].Message != "not found" {
							t.Errorf("%s read %s %s of tenant A: got errors %s, want one NOT_FOUND \"not found\"", c.name, kind, id, res.errorList())
						}
					}
				}
			}
			if got := a.AuditCount(t); got != before {
				t.Errorf("tenant A audit events: got %d after reads, want %d", got, before)
			}
		})

		t.Run("lists", func(t *testing.T) {
			// Tenant B's own lists never show A's objects.
			res := env.MustDo(t, b.Users[Admin].Token, `query { viewer { tenants { nodes { id
				invitations(first: 100) { nodes { id email } }
				members(first: 100) { nodes { id user { id } } }
				projects(first: 100) { nodes { id } }
				clusters(first: 100) { nodes { id } }
				auditEvents(first: 100) { nodes { id targetId } } } } } }`, nil)
			seen := map[string]bool{}
			collect(res.Data, seen)
			for kind, list := range ids {
				for _, id := range list {
					if seen[id] {
						t.Errorf("B's lists show %s %s of tenant A", kind, id)
					}
				}
			}
		})

		other := func(t *testing.T) string { return b.NewCaller(t, "stranger", "MEMBER").UserID }
		mutations := []struct {
			name  string
			query string
			vars  func(t *testing.T) map[string]any
			// userError: the failure is a userError with this code
			// rather than a NOT_FOUND error (the id names something in
			// the caller's own tenant that is fine; the other id is
			// reported as not being in the tenant).
			userError string
			// sessionOnly: tokens are refused the field outright
			// (FORBIDDEN), whatever it names; sessions are tried.
			sessionOnly bool
			// after checks that A's object is as it was.
			after func(t *testing.T, vars map[string]any)
		}{
			{name: "inviteMember", query: `mutation($id: ID!) { inviteMember(input: {tenantId: $id, email: "mole@b.test", name: "Mole", role: ADMIN}) { link ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.TenantID} }},
			{name: "revokeInvitation", query: `mutation($id: ID!) { revokeInvitation(input: {invitationId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": invitationID} },
				after: func(t *testing.T, _ map[string]any) {
					status := ""
					for _, i := range a.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { invitations(first: 100) { nodes { id status } } } } }`,
						map[string]any{"t": a.TenantID}).List("node.invitations.nodes") {
						if dig(i, "id") == invitationID {
							status, _ = dig(i, "status").(string)
						}
					}
					if status != "OPEN" {
						t.Errorf("A's invitation after B's revokeInvitation: %q, want OPEN", status)
					}
				}},
			{name: "revokeSession", query: `mutation($id: ID!) { revokeSession(input: {sessionId: $id}) { revokedSessionId ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": aPerson.SessionID} },
				after: func(t *testing.T, _ map[string]any) {
					if r := aPerson.Do(t, env, `{ viewer { session { id } } }`, nil); r.Status != http.StatusOK || r.Str("viewer.session.id") != aPerson.SessionID {
						t.Errorf("A's person's session after B's revokeSession: HTTP %d %s", r.Status, r.Body)
					}
				}},
			{name: "approveCliLogin for A", query: `mutation($c: String!, $id: ID!) { approveCliLogin(input: {code: $c, tenantId: $id}) { apiToken { id } ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any {
					code, secret, _ := cliStart(t, env)
					return map[string]any{"c": code, "id": a.TenantID, "_secret": secret}
				},
				sessionOnly: true,
				after: func(t *testing.T, vars map[string]any) {
					if status, _ := cliPoll(t, env, vars["_secret"].(string)); status != http.StatusAccepted {
						t.Errorf("the CLI's poll after B's approval for A: %d, want 202 (still waiting)", status)
					}
				}},
			{name: "createWebhook", query: `mutation($id: ID!) { createWebhook(input: {projectId: $id}) { secret ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ProjectID} }},
			{name: "rotateWebhookSecret", query: `mutation($id: ID!) { rotateWebhookSecret(input: {webhookId: $id}) { secret ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": ids["Webhook"][0]} }},
			{name: "deleteWebhook", query: `mutation($id: ID!) { deleteWebhook(input: {webhookId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": ids["Webhook"][0]} }},
			{name: "redeliverWebhookDelivery", query: `mutation($id: ID!) { redeliverWebhookDelivery(input: {deliveryId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": ids["WebhookDelivery"][0]} }},
			{name: "updateTenant", query: `mutation($id: ID!) { updateTenant(input: {tenantId: $id, name: "pwned"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.TenantID} }},
			{name: "setTenantPlan", query: `mutation($id: ID!) { setTenantPlan(input: {tenantId: $id, plan: FREE}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.TenantID} }},
			{name: "addMember", query: `mutation($id: ID!) { addMember(input: {tenantId: $id, email: "mole@b.test", name: "Mole", role: ADMIN}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.TenantID} }},
			{name: "updateMemberRole", query: `mutation($id: ID!) { updateMemberRole(input: {memberId: $id, role: ADMIN}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.Users[Member].MemberID} }},
			{name: "removeMember", query: `mutation($id: ID!) { removeMember(input: {memberId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.Users[Admin].MemberID} }},
			{name: "createApiToken", query: `mutation($id: ID!) { createApiToken(input: {name: "steal", userId: $id}) { secret ` + ue + ` } }`,
				vars:      func(t *testing.T) map[string]any { return map[string]any{"id": a.Users[Editor].UserID} },
				userError: "BAD_USER_INPUT"},
			{name: "revokeApiToken", query: `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.Users[Admin].TokenID} }},
			{name: "createProject", query: `mutation($id: ID!) { createProject(input: {tenantId: $id, name: "planted"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.TenantID} }},
			{name: "updateProject", query: `mutation($id: ID!) { updateProject(input: {projectId: $id, name: "pwned"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ProjectID} }},
			{name: "deleteProject", query: `mutation($id: ID!) { deleteProject(input: {projectId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ProjectID} }},
			{name: "addProjectMember to A's project", query: `mutation($p: ID!, $u: ID!) { addProjectMember(input: {projectId: $p, userId: $u, role: PROJECT_MANAGER}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"p": a.ProjectID, "u": other(t)} }},
			{name: "addProjectMember of A's user", query: `mutation($p: ID!, $u: ID!) { addProjectMember(input: {projectId: $p, userId: $u, role: VIEWER}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any {
					return map[string]any{"p": b.ProjectID, "u": a.Users[Member].UserID}
				},
				userError: "BAD_USER_INPUT"},
			{name: "updateProjectMemberRole", query: `mutation($id: ID!) { updateProjectMemberRole(input: {projectMemberId: $id, role: PROJECT_MANAGER}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.Users[Viewer].ProjectMemberID} }},
			{name: "removeProjectMember", query: `mutation($id: ID!) { removeProjectMember(input: {projectMemberId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any {
					return map[string]any{"id": a.Users[ProjectManager].ProjectMemberID}
				}},
			{name: "createEnvironment", query: `mutation($id: ID!) { createEnvironment(input: {projectId: $id, name: "planted"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ProjectID} }},
			{name: "updateEnvironment", query: `mutation($id: ID!) { updateEnvironment(input: {environmentId: $id, protected: false}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ProtectedEnvironmentID} }},
			{name: "deleteEnvironment", query: `mutation($id: ID!) { deleteEnvironment(input: {environmentId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.EnvironmentID} }},
			{name: "registerCluster", query: `mutation($id: ID!) { registerCluster(input: {tenantId: $id, name: "planted"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.TenantID} }},
			{name: "setClusterLabels", query: `mutation($id: ID!) { setClusterLabels(input: {clusterId: $id, labels: []}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ClusterID} }},
			{name: "deleteCluster", query: `mutation($id: ID!) { deleteCluster(input: {clusterId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ClusterID} }},
			{name: "createNamespaceTarget", query: `mutation($id: ID!) { createNamespaceTarget(input: {clusterId: $id, namespace: "planted"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ClusterID} }},
			{name: "setNamespaceTargetLabels", query: `mutation($id: ID!) { setNamespaceTargetLabels(input: {namespaceTargetId: $id, labels: []}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.NamespaceTargetID} }},
			{name: "deleteNamespaceTarget", query: `mutation($id: ID!) { deleteNamespaceTarget(input: {namespaceTargetId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.NamespaceTargetID} }},
			{name: "createService", query: `mutation($id: ID!) { createService(input: {projectId: $id, name: "planted", image: "evil.example.com/x", processes: [{name: "web"}]}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ProjectID} }},
			{name: "updateService", query: `mutation($id: ID!) { updateService(input: {serviceId: $id, image: "evil.example.com/x"}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ServiceID} }},
			{name: "deleteService", query: `mutation($id: ID!) { deleteService(input: {serviceId: $id}) { ` + ue + ` } }`,
				vars: func(t *testing.T) map[string]any { return map[string]any{"id": a.ServiceID} }},
			{name: "deploy A's service to A's environment", query: deployMutation,
				vars: func(t *testing.T) map[string]any {
					return map[string]any{"s": a.ServiceID, "e": a.EnvironmentID, "d": Digest(env.Next())}
				}},
			{name: "deploy B's service to A's environment", query: deployMutation,
				vars: func(t *testing.T) map[string]any {
					return map[string]any{"s": b.ServiceID, "e": a.EnvironmentID, "d": Digest(env.Next())}
				}},
			{name: "deploy A's service to B's environment", query: deployMutation,
				vars: func(t *testing.T) map[string]any {
					return map[string]any{"s": a.ServiceID, "e": b.EnvironmentID, "d": Digest(env.Next())}
				}},
		}
		for _, m := range mutations {
			t.Run(m.name, func(t *testing.T) {
				for _, c := range callers {
					vars := m.vars(t)
					beforeA, beforeB := a.AuditCount(t), b.AuditCount(t)
					stateA := snapshot(t, a)
					res := c.c.Do(t, env, m.query, vars)
					field := firstField(m.query)
					switch {
					case m.sessionOnly && c.c.Session == nil:
						if len(res.Errors) == 0 || res.Errors[0].Code() != "FORBIDDEN" {
							t.Errorf("%s: got %s, want FORBIDDEN (a token never may)", c.name, res.Body)
						}
					case m.userError != "":
						ue := res.UserErrors(field)
						if len(res.Errors) > 0 || len(ue) == 0 || ue[0].Code != m.userError {
							t.Errorf("%s: got errors %s, userErrors %+v; want userError %s", c.name, res.errorList(), ue, m.userError)
						}
					case len(res.Errors) == 0:
						t.Errorf("%s: got success %s, want NOT_FOUND", c.name, res.Body)
					case res.Errors[0].Code() != "NOT_FOUND" || res.Errors[0].Message != "not found":
						t.Errorf("%s: got %s, want NOT_FOUND \"not found\"", c.name, res.errorList())
					}
					if res.Status != http.StatusOK {
						t.Errorf("%s: got HTTP %d, want 200", c.name, res.Status)
					}
					if got := a.AuditCount(t); got != beforeA {
						t.Errorf("%s: tenant A audit events went from %d to %d", c.name, beforeA, got)
					}
					if got := b.AuditCount(t); got != beforeB {
						t.Errorf("%s: tenant B audit events went from %d to %d", c.name, beforeB, got)
					}
					if got := snapshot(t, a); got != stateA {
						t.Errorf("%s: tenant A changed:\nbefore %s\nafter  %s", c.name, stateA, got)
					}
					if m.after != nil {
						m.after(t, vars)
					}
				}
			})
		}
	})
}

const deployMutation = `mutation($s: ID!, $e: ID!, $d: String!) {
	deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { release { id } ` + ue + ` } }`

// snapshot renders what tenant A holds, as its owner sees it, so that a
// change anywhere shows as a difference.
func snapshot(t *testing.T, f *Fixture) string {
	t.Helper()
	res := f.MustDo(t, `query($id: ID!) { node(id: $id) { ... on Tenant { name plan { name }
		members(first: 20) { nodes { id role user { id } } }
		clusters(first: 10) { nodes { id name labels { key value } namespaceTargets(first: 10) { nodes { id namespace labels { key value } } } } }
		projects(first: 10) { nodes { id name description
			members(first: 20) { nodes { id role user { id } } }
			environments(first: 10) { nodes { id name protected clusterSelector { key value } deployments(first: 20) { nodes { id } } } }
			services(first: 10) { nodes { id name image releases(first: 20) { nodes { id } } } } } } } } }`,
		map[string]any{"id": f.TenantID})
	// Tokens live outside the tenant's lists: check each caller's still works.
	s := string(res.Body)
	for _, r := range Roles {
		if c := f.Users[r]; c != nil {
			if _, ok := f.Env.Authenticates(t, c.Token); !ok {
				s += " token of " + string(r) + " revoked"
			}
		}
	}
	return s
}

// firstField is the root field of a one-field operation.
func firstField(query string) string {
	i := 0
	for i < len(query) && query[i] != '{' {
		i++
	}
	rest := query[i+1:]
	j := 0
	for j < len(rest) && (rest[j] == ' ' || rest[j] == '\n' || rest[j] == '\t') {
		j++
	}
	k := j
	for k < len(rest) && (rest[k] >= 'a' && rest[k] <= 'z' || rest[k] >= 'A' && rest[k] <= 'Z') {
		k++
	}
	return rest[j:k]
}

// collect records every string in a decoded JSON value.
func collect(v any, into map[string]bool) {
	switch x := v.(type) {
	case string:
		into[x] = true
	case map[string]any:
		for _, e := range x {
			collect(e, into)
		}
	case []any:
		for _, e := range x {
			collect(e, into)
		}
	}
}

// A session and an invitation are nodes: node(id:) finds them for whom
// the lists show them (the session's own person; the tenant's admins), and
// for nobody else in the tenant.
func TestSessionAndInvitationNodes(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		person, colleague := f.NewPerson(t, "node-person", "MEMBER"), f.NewPerson(t, "node-colleague", "MEMBER")
		session := person.Do(t, env, `{ viewer { sessions(first: 100) { nodes { id } } } }`, nil).IDs("viewer.sessions.nodes")
		if len(session) != 1 {
			t.Fatalf("the person's sessions: %v, want one", session)
		}
		inv := f.MustDo(t, `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "node-invited@a.test", name: "N", role: MEMBER}) {
			invitation { id } `+ue+` } }`, map[string]any{"t": f.TenantID}).Str("inviteMember.invitation.id")
		read := func(c *Caller, id, fields string) Response {
			return c.Do(t, env, `query($id: ID!) { node(id: $id) { __typename id `+fields+` } }`, map[string]any{"id": id})
		}
		if r := read(person, session[0], `... on Session { method current }`); r.Str("node.id") != session[0] || r.Str("node.__typename") != "Session" {
			t.Errorf("the person reading their session: %v %s", r.Data, r.errorList())
		}
		if r := read(&f.Owner, inv, `... on Invitation { email status }`); r.Str("node.email") != "node-invited@a.test" {
			t.Errorf("the owner reading the invitation: %v %s", r.Data, r.errorList())
		}
		for _, c := range []struct {
			name   string
			caller *Caller
			id     string
		}{
			{"a colleague, the person's session", colleague, session[0]},
			{"the owner, the person's session", &f.Owner, session[0]},
			{"a member, the invitation", f.Users[Member], inv},
			{"a project manager, the invitation", f.Users[ProjectManager], inv},
		} {
			r := read(c.caller, c.id, "")
			if r.Get("node") != nil || len(r.Errors) != 1 || r.Errors[0].Code() != "NOT_FOUND" {
				t.Errorf("%s: got %v %s, want null and NOT_FOUND", c.name, r.Data, r.errorList())
			}
		}
	})
}
