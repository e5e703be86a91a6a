package apitest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
)

const auditFields = `id action actor { id } targetId targetType clientAddress createdAt details`

// auditEvent is an event as the API shows it.
type auditEvent struct {
	ID            string               `json:"id"`
	Action        string               `json:"action"`
	Actor         *struct{ ID string } `json:"actor"`
	TargetID      string               `json:"targetId"`
	TargetType    string               `json:"targetType"`
	ClientAddress string               `json:"clientAddress"`
	CreatedAt     time.Time            `json:"createdAt"`
	Details       map[string]any       `json:"details"`
}

func (e auditEvent) actorID() string {
	if e.Actor == nil {
		return ""
	}
	return e.Actor.ID
}

// auditPage reads one page of a tenant's audit events.
func auditPage(t *testing.T, env *Env, token, tenantID string, first int, after string, filter map[string]any) (events []auditEvent, next string, more bool) {
	t.Helper()
	vars := map[string]any{"t": tenantID, "first": first, "filter": filter}
	if after != "" {
		vars["after"] = after
	}
	res := env.MustDo(t, token, `query($t: ID!, $first: Int, $after: String, $filter: AuditEventFilter) { node(id: $t) { ... on Tenant {
		auditEvents(first: $first, after: $after, filter: $filter) { edges { cursor node { `+auditFields+` } } pageInfo { hasNextPage endCursor } } } } }`, vars)
	b, _ := json.Marshal(res.Get("node.auditEvents"))
	var conn struct {
		Edges []struct {
			Cursor string
			Node   auditEvent
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
	}
	if err := json.Unmarshal(b, &conn); err != nil {
		t.Fatalf("decoding audit events: %v\n%s", err, b)
	}
	for _, e := range conn.Edges {
		events = append(events, e.Node)
	}
	if conn.PageInfo.EndCursor != nil {
		next = *conn.PageInfo.EndCursor
	}
	return events, next, conn.PageInfo.HasNextPage
}

// allAudit walks every page of a tenant's (filtered) audit events.
func allAudit(t *testing.T, env *Env, token, tenantID string, pageSize int, filter map[string]any) []auditEvent {
	t.Helper()
	var all []auditEvent
	after := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("audit pagination does not end")
		}
		evs, next, more := auditPage(t, env, token, tenantID, pageSize, after, filter)
		if len(evs) > pageSize {
			t.Fatalf("page of %d events, asked for %d", len(evs), pageSize)
		}
		all = append(all, evs...)
		if !more {
			return all
		}
		if next == "" || len(evs) == 0 {
			t.Fatalf("hasNextPage without an endCursor or events")
		}
		after = next
	}
}

// tokenLike matches a whole token: the prefix shown in audit details has
// exactly 8 characters after "nbt_"; anything longer is part of a secret.
var tokenLike = regexp.MustCompile(`nbt_[0-9A-Za-z]{9,}`)

func TestAuditOnePerMutation(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		admin, pm, editor, viewer := f.Users[Admin], f.Users[ProjectManager], f.Users[Editor], f.Users[Viewer]
		secrets := f.Secrets()
		seen := map[string]bool{}
		var newTenant, newTenantToken string

		// step runs one mutation that must succeed and checks the one
		// audit event it adds.
		step := func(c *Caller, field, query string, vars map[string]any, action string, target func(Response) string) Response {
			t.Helper()
			tenant, token := f.TenantID, f.Owner.Token
			if field == "createTenant" {
				tenant = ""
			}
			before := 0
			if tenant != "" {
				before = env.AuditCount(t, tenant)
			}
			res := env.MustDo(t, c.Token, query, vars)
			if field == "createTenant" {
				newTenant, newTenantToken = res.Str("createTenant.tenant.id"), res.Str("createTenant.secret")
				tenant, token = newTenant, newTenantToken
			}
			if s := res.Str(field + ".secret"); s != "" {
				secrets = append(secrets, s)
			}
			if got := env.AuditCount(t, tenant); got != before+1 {
				t.Fatalf("%s: got %d new audit events, want 1", field, got-before)
			}
			evs, _, _ := auditPage(t, env, token, tenant, 1, "", nil)
			if len(evs) != 1 {
				t.Fatalf("%s: no audit event listed", field)
			}
			ev := evs[0]
			if seen[ev.ID] {
				t.Fatalf("%s: newest audit event %s is an old one", field, ev.ID)
			}
			seen[ev.ID] = true
			want := auditEvent{Action: action, TargetID: target(res), ClientAddress: "127.0.0.1"}
			actor := c.UserID
			if field == "createTenant" {
				// The new tenant knows its founder by an id of its own.
				actor = env.MustDo(t, newTenantToken, `{ viewer { user { id } } }`, nil).Str("viewer.user.id")
				if actor == c.UserID {
					t.Errorf("createTenant: the new tenant knows its founder by the id %s of the old one", actor)
				}
			}
			if ev.Action != want.Action || ev.TargetID != want.TargetID || ev.ClientAddress != want.ClientAddress || ev.actorID() != actor {
				t.Errorf("%s: got event {action %s, actor %s, target %s, client %s}, want {action %s, actor %s, target %s, client %s}",
					field, ev.Action, ev.actorID(), ev.TargetID, ev.ClientAddress, want.Action, actor, want.TargetID, want.ClientAddress)
			}
			if time.Since(ev.CreatedAt) > time.Minute || time.Until(ev.CreatedAt) > time.Second {
				t.Errorf("%s: createdAt %s is not now", field, ev.CreatedAt)
			}
			return res
		}
		// reject runs a mutation that must be refused, writing nothing.
		reject := func(c *Caller, field, query string, vars map[string]any, code string) {
			t.Helper()
			before := f.AuditCount(t)
			res := env.Do(t, c.Token, query, vars)
			got := res.ErrorCodes()
			for _, u := range res.UserErrors(field) {
				got = append(got, u.Code)
			}
			if !slices.Contains(got, code) {
				t.Errorf("rejected %s: got codes %v, want %s", field, got, code)
			}
			if n := f.AuditCount(t); n != before {
				t.Errorf("rejected %s: wrote %d audit events, want none", field, n-before)
			}
		}
		at := func(path string) func(Response) string { return func(r Response) string { return r.Str(path) } }
		fixed := func(id string) func(Response) string { return func(Response) string { return id } }

		step(&f.Owner, "createTenant", `mutation { createTenant(input: {name: "spin-off"}) { tenant { id } secret `+ue+` } }`, nil,
			"tenant.create", at("createTenant.tenant.id"))
		step(admin, "updateTenant", `mutation($t: ID!) { updateTenant(input: {tenantId: $t, name: "Acme Rockets"}) { tenant { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "tenant.update", fixed(f.TenantID))
		step(admin, "setTenantPlan", `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: ENTERPRISE}) { tenant { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "tenant.set_plan", fixed(f.TenantID))
		reject(viewer, "setTenantPlan", `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: FREE}) { `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "FORBIDDEN")

		res := step(admin, "addMember", `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "robot@acme.test", name: "Robot", role: MEMBER, kind: INTEGRATION}) {
			member { id user { id } } `+ue+` } }`, map[string]any{"t": f.TenantID}, "member.add", at("addMember.member.id"))
		robotMember, robotUser := res.Str("addMember.member.id"), res.Str("addMember.member.user.id")
		reject(admin, "addMember", `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "robot@acme.test", name: "Robot", role: MEMBER, kind: INTEGRATION}) { `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "CONFLICT")
		step(admin, "updateMemberRole", `mutation($m: ID!) { updateMemberRole(input: {memberId: $m, role: ADMIN}) { member { id } `+ue+` } }`,
			map[string]any{"m": robotMember}, "member.update_role", fixed(robotMember))
		step(admin, "createApiToken", `mutation($u: ID!) { createApiToken(input: {name: "robot", userId: $u, expiresInDays: 30}) { apiToken { id } secret `+ue+` } }`,
			map[string]any{"u": robotUser}, "api_token.create", at("createApiToken.apiToken.id"))
		step(admin, "revokeMemberApiTokens", `mutation($m: ID!) { revokeMemberApiTokens(input: {memberId: $m}) { member { id } revokedApiTokens { id } `+ue+` } }`,
			map[string]any{"m": robotMember}, "api_token.revoke", fixed(robotMember))
		reject(admin, "revokeMemberApiTokens", `mutation($m: ID!) { revokeMemberApiTokens(input: {memberId: $m}) { member { id } `+ue+` } }`,
			map[string]any{"m": robotMember}, "CONFLICT")
		step(admin, "createApiToken", `mutation($u: ID!) { createApiToken(input: {name: "robot-2", userId: $u, expiresInDays: 30}) { apiToken { id } secret `+ue+` } }`,
			map[string]any{"u": robotUser}, "api_token.create", at("createApiToken.apiToken.id"))
		res = step(pm, "createApiToken", `mutation { createApiToken(input: {name: "laptop"}) { apiToken { id } secret `+ue+` } }`, nil,
			"api_token.create", at("createApiToken.apiToken.id"))
		step(pm, "revokeApiToken", `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id } `+ue+` } }`,
			map[string]any{"id": res.Str("createApiToken.apiToken.id")}, "api_token.revoke", at("revokeApiToken.apiToken.id"))
		reject(pm, "revokeApiToken", `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id } `+ue+` } }`,
			map[string]any{"id": res.Str("createApiToken.apiToken.id")}, "CONFLICT")

		res = step(admin, "createProject", `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "rockets"}) { project { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "project.create", at("createProject.project.id"))
		rockets := res.Str("createProject.project.id")
		reject(admin, "createProject", `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "rockets"}) { project { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "CONFLICT")
		step(pm, "updateProject", `mutation($p: ID!) { updateProject(input: {projectId: $p, description: "the web shop"}) { project { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID}, "project.update", fixed(f.ProjectID))
		reject(editor, "updateProject", `mutation($p: ID!) { updateProject(input: {projectId: $p, description: "mine"}) { project { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID}, "FORBIDDEN")
		res = step(pm, "addProjectMember", `mutation($p: ID!, $u: ID!) { addProjectMember(input: {projectId: $p, userId: $u, role: VIEWER}) { projectMember { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "u": robotUser}, "project_member.add", at("addProjectMember.projectMember.id"))
		robotPM := res.Str("addProjectMember.projectMember.id")
		step(pm, "updateProjectMemberRole", `mutation($id: ID!) { updateProjectMemberRole(input: {projectMemberId: $id, role: EDITOR}) { projectMember { id } `+ue+` } }`,
			map[string]any{"id": robotPM}, "project_member.update_role", fixed(robotPM))
		step(pm, "removeProjectMember", `mutation($id: ID!) { removeProjectMember(input: {projectMemberId: $id}) { removedProjectMemberId `+ue+` } }`,
			map[string]any{"id": robotPM}, "project_member.remove", fixed(robotPM))

		res = step(pm, "createEnvironment", `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "canary", clusterSelector: [{key: "region", value: "eu"}], namespaceSelector: [{key: "tier", value: "web"}]}) {
			environment { id } `+ue+` } }`, map[string]any{"p": f.ProjectID}, "environment.create", at("createEnvironment.environment.id"))
		canary := res.Str("createEnvironment.environment.id")
		reject(pm, "createEnvironment", `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "moon", clusterSelector: [{key: "planet", value: "moon"}]}) {
			environment { id } `+ue+` } }`, map[string]any{"p": f.ProjectID}, "BAD_USER_INPUT")
		step(pm, "updateEnvironment", `mutation($e: ID!) { updateEnvironment(input: {environmentId: $e, protected: true}) { environment { id } `+ue+` } }`,
			map[string]any{"e": canary}, "environment.update", fixed(canary))

		res = step(admin, "registerCluster", `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "edge", labels: [{key: "region", value: "us"}]}) {
			cluster { id } `+ue+` } }`, map[string]any{"t": f.TenantID}, "cluster.register", at("registerCluster.cluster.id"))
		edge := res.Str("registerCluster.cluster.id")
		step(admin, "setClusterLabels", `mutation($c: ID!) { setClusterLabels(input: {clusterId: $c, labels: [{key: "region", value: "ap"}]}) { cluster { id } `+ue+` } }`,
			map[string]any{"c": edge}, "cluster.set_labels", fixed(edge))
		res = step(admin, "createNamespaceTarget", `mutation($c: ID!) { createNamespaceTarget(input: {clusterId: $c, namespace: "edge-apps"}) { namespaceTarget { id } `+ue+` } }`,
			map[string]any{"c": edge}, "namespace_target.create", at("createNamespaceTarget.namespaceTarget.id"))
		nt := res.Str("createNamespaceTarget.namespaceTarget.id")
		step(admin, "setNamespaceTargetLabels", `mutation($n: ID!) { setNamespaceTargetLabels(input: {namespaceTargetId: $n, labels: [{key: "tier", value: "edge"}]}) {
			namespaceTarget { id } `+ue+` } }`, map[string]any{"n": nt}, "namespace_target.set_labels", fixed(nt))
		step(admin, "deleteNamespaceTarget", `mutation($n: ID!) { deleteNamespaceTarget(input: {namespaceTargetId: $n}) { deletedNamespaceTargetId `+ue+` } }`,
			map[string]any{"n": nt}, "namespace_target.delete", fixed(nt))

		const variableValue = "hunter2-plain-value"
		res = step(editor, "createService", `mutation($p: ID!, $v: String!) { createService(input: {projectId: $p, name: "worker", image: "registry.example.com/shop/worker",
			processes: [{name: "work", command: ["./work"]}], variables: [{name: "API_KEY", value: $v}]}) { service { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "v": variableValue}, "service.create", at("createService.service.id"))
		worker := res.Str("createService.service.id")
		step(editor, "updateService", `mutation($s: ID!, $v: String!) { updateService(input: {serviceId: $s, variables: [{name: "API_KEY", value: $v}]}) { service { id } `+ue+` } }`,
			map[string]any{"s": worker, "v": variableValue + "-2"}, "service.update", fixed(worker))
		step(editor, "deploy", `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			deployment { id } `+ue+` } }`,
			map[string]any{"s": worker, "e": f.EnvironmentID, "d": Digest(77)}, "deployment.create", at("deploy.deployment.id"))
		reject(editor, "deploy", deployMutation, map[string]any{"s": worker, "e": f.EnvironmentID, "d": "sha256:nope"}, "BAD_USER_INPUT")
		res = step(editor, "deploy", `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			deployment { id } `+ue+` } }`,
			map[string]any{"s": worker, "e": f.EnvironmentID, "d": Digest(79)}, "deployment.create", at("deploy.deployment.id"))
		second := res.Str("deploy.deployment.id")
		step(editor, "cancelDeployment", `mutation($d: ID!) { cancelDeployment(input: {deploymentId: $d}) { deployment { id } `+ue+` } }`,
			map[string]any{"d": second}, "deployment.cancel", fixed(second))
		reject(editor, "cancelDeployment", `mutation($d: ID!) { cancelDeployment(input: {deploymentId: $d}) { deployment { id } `+ue+` } }`,
			map[string]any{"d": second}, "CONFLICT")
		step(editor, "redeploy", `mutation($d: ID!) { redeploy(input: {deploymentId: $d}) { deployment { id } `+ue+` } }`,
			map[string]any{"d": second}, "deployment.redeploy", at("redeploy.deployment.id"))
		step(editor, "rollback", `mutation($s: ID!, $e: ID!) { rollback(input: {serviceId: $s, environmentId: $e, releaseNumber: 1}) { deployment { id } `+ue+` } }`,
			map[string]any{"s": worker, "e": f.EnvironmentID}, "deployment.rollback", at("rollback.deployment.id"))
		reject(editor, "rollback", `mutation($s: ID!, $e: ID!) { rollback(input: {serviceId: $s, environmentId: $e, releaseNumber: 99}) { deployment { id } `+ue+` } }`,
			map[string]any{"s": worker, "e": f.EnvironmentID}, "BAD_USER_INPUT")
		res = step(pm, "deploy", `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			deployment { id } `+ue+` } }`,
			map[string]any{"s": worker, "e": f.ProtectedEnvironmentID, "d": Digest(80)}, "deployment.create", at("deploy.deployment.id"))
		awaiting := res.Str("deploy.deployment.id")
		// The requester cannot approve their own deployment.
		reject(pm, "approveDeployment", `mutation($d: ID!) { approveDeployment(input: {deploymentId: $d}) { deployment { id } `+ue+` } }`,
			map[string]any{"d": awaiting}, "CONFLICT")
		step(admin, "approveDeployment", `mutation($d: ID!) { approveDeployment(input: {deploymentId: $d, comment: "ok"}) { deployment { id } `+ue+` } }`,
			map[string]any{"d": awaiting}, "deployment.approve", fixed(awaiting))
		res = step(pm, "deploy", `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			deployment { id } `+ue+` } }`,
			map[string]any{"s": worker, "e": f.ProtectedEnvironmentID, "d": Digest(81)}, "deployment.create", at("deploy.deployment.id"))
		awaiting = res.Str("deploy.deployment.id")
		step(admin, "rejectDeployment", `mutation($d: ID!) { rejectDeployment(input: {deploymentId: $d, comment: "not now"}) { deployment { id } `+ue+` } }`,
			map[string]any{"d": awaiting}, "deployment.reject", fixed(awaiting))
		reject(editor, "deploy", deployMutation, map[string]any{"s": worker, "e": f.ProtectedEnvironmentID, "d": Digest(78)}, "FORBIDDEN")
		// At the unprotected environment's scope: a change that reaches
		// the protected one is a change set of one (below).
		res = step(pm, "setVariable", `mutation($p: ID!, $e: ID!, $v: String!) { setVariable(input: {projectId: $p, environmentId: $e, name: "DB_PASSWORD", value: $v, secret: true}) {
			variable { id } `+ue+` } }`, map[string]any{"p": f.ProjectID, "e": f.EnvironmentID, "v": variableValue + "-secret"}, "variable.set", at("setVariable.variable.id"))
		secretVar := res.Str("setVariable.variable.id")
		reject(editor, "setVariable", `mutation($p: ID!) { setVariable(input: {projectId: $p, name: "X", value: "y"}) { variable { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID}, "FORBIDDEN")
		step(pm, "deleteVariable", `mutation($v: ID!) { deleteVariable(input: {variableId: $v}) { deletedVariableId `+ue+` } }`,
			map[string]any{"v": secretVar}, "variable.delete", fixed(secretVar))
		// Change sets: every step is audited on the set.
		const csOut = `{ changeSet { id state } ` + ue + ` }`
		openSet := func(title string) string {
			t.Helper()
			res := step(editor, "openChangeSet", `mutation($p: ID!, $t: String!) { openChangeSet(input: {projectId: $p, title: $t}) `+csOut+` }`,
				map[string]any{"p": f.ProjectID, "t": title}, "change_set.open", at("openChangeSet.changeSet.id"))
			id := res.Str("openChangeSet.changeSet.id")
			env.MustDo(t, editor.Token, `mutation($p: ID!, $s: ID!, $c: ID) { setVariable(input: {projectId: $p, serviceId: $s, name: "IN_SET", value: "x", changeSetId: $c}) { changeSet { id } `+ue+` } }`,
				map[string]any{"p": f.ProjectID, "s": worker, "c": id})
			return id
		}
		set := openSet("reviewed")
		step(editor, "commentOnChangeSet", `mutation($c: ID!) { commentOnChangeSet(input: {changeSetId: $c, body: "first draft"}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.comment", fixed(set))
		step(editor, "removeChangeSetChange", `mutation($c: ID!) { removeChangeSetChange(input: {changeSetId: $c, sequence: 1}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.remove_change", fixed(set))
		env.MustDo(t, editor.Token, `mutation($p: ID!, $s: ID!, $c: ID) { setVariable(input: {projectId: $p, serviceId: $s, name: "IN_SET", value: "again", changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "s": worker, "c": set})
		step(editor, "rebaseChangeSet", `mutation($c: ID!) { rebaseChangeSet(input: {changeSetId: $c}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.rebase", fixed(set))
		step(editor, "submitChangeSet", `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.submit", fixed(set))
		step(admin, "rejectChangeSet", `mutation($c: ID!) { rejectChangeSet(input: {changeSetId: $c, comment: "not now"}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.reject", fixed(set))
		set = openSet("approved")
		env.MustDo(t, editor.Token, `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) `+csOut+` }`, map[string]any{"c": set})
		step(admin, "approveChangeSet", `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c, comment: "ok"}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.approve", fixed(set))
		step(editor, "applyChangeSet", `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.apply", fixed(set))
		set = openSet("abandoned")
		step(editor, "closeChangeSet", `mutation($c: ID!) { closeChangeSet(input: {changeSetId: $c}) `+csOut+` }`,
			map[string]any{"c": set}, "change_set.close", fixed(set))
		res = step(pm, "createWebhook", `mutation($p: ID!, $s: ID!) { createWebhook(input: {projectId: $p, serviceId: $s}) {
			webhook { id url } secret `+ue+` } }`, map[string]any{"p": f.ProjectID, "s": worker}, "webhook.create", at("createWebhook.webhook.id"))
		hook, hookURL := res.Str("createWebhook.webhook.id"), res.Str("createWebhook.webhook.url")
		secrets = append(secrets, res.Str("createWebhook.secret"))
		reject(editor, "createWebhook", `mutation($p: ID!) { createWebhook(input: {projectId: $p}) { secret `+ue+` } }`,
			map[string]any{"p": f.ProjectID}, "FORBIDDEN")
		res = step(pm, "rotateWebhookSecret", `mutation($h: ID!) { rotateWebhookSecret(input: {webhookId: $h}) { secret `+ue+` } }`,
			map[string]any{"h": hook}, "webhook.rotate_secret", fixed(hook))
		hookSecret := res.Str("rotateWebhookSecret.secret")
		secrets = append(secrets, hookSecret)
		// A delivery (it writes no audit event: it queues no build here,
		// the service is not built from Git) for an admin to redeliver.
		a := env.Deliver(t, hookURL, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "audit-1",
			Body: SamplePush(t, "github-push.json"), Secret: hookSecret})
		if a.Outcome != "IGNORED" {
			t.Fatalf("a push to an image service's hook: %+v", a)
		}
		delivery := gid.Encode(gid.WebhookDelivery, a.Delivery)
		reject(pm, "redeliverWebhookDelivery", `mutation($d: ID!) { redeliverWebhookDelivery(input: {deliveryId: $d}) { delivery { id } `+ue+` } }`,
			map[string]any{"d": delivery}, "FORBIDDEN")
		step(admin, "redeliverWebhookDelivery", `mutation($d: ID!) { redeliverWebhookDelivery(input: {deliveryId: $d}) { delivery { id } `+ue+` } }`,
			map[string]any{"d": delivery}, "webhook.redeliver", at("redeliverWebhookDelivery.delivery.id"))
		step(pm, "deleteWebhook", `mutation($h: ID!) { deleteWebhook(input: {webhookId: $h}) { deletedWebhookId `+ue+` } }`,
			map[string]any{"h": hook}, "webhook.delete", fixed(hook))
		// Outbound webhook endpoints.
		res = step(pm, "createWebhookEndpoint", `mutation($t: ID!, $p: ID!) { createWebhookEndpoint(input: {tenantId: $t, projectId: $p,
			url: "https://198.41.0.7/nebula", events: [DEPLOYMENT_ENDED]}) { endpoint { id } secret `+ue+` } }`,
			map[string]any{"t": f.TenantID, "p": f.ProjectID}, "webhook_endpoint.create", at("createWebhookEndpoint.endpoint.id"))
		endpoint := res.Str("createWebhookEndpoint.endpoint.id")
		reject(editor, "createWebhookEndpoint", `mutation($t: ID!, $p: ID!) { createWebhookEndpoint(input: {tenantId: $t, projectId: $p,
			url: "https://198.41.0.7/nebula", events: [DEPLOYMENT_ENDED]}) { secret `+ue+` } }`, map[string]any{"t": f.TenantID, "p": f.ProjectID}, "FORBIDDEN")
		reject(admin, "createWebhookEndpoint", `mutation($t: ID!) { createWebhookEndpoint(input: {tenantId: $t,
			url: "http://127.0.0.1:9/hook", events: [CLUSTER_CONNECTED]}) { secret `+ue+` } }`, map[string]any{"t": f.TenantID}, "BAD_USER_INPUT")
		step(pm, "updateWebhookEndpoint", `mutation($e: ID!) { updateWebhookEndpoint(input: {endpointId: $e, events: [DEPLOYMENT_ENDED, BUILD_ENDED]}) {
			endpoint { id } `+ue+` } }`, map[string]any{"e": endpoint}, "webhook_endpoint.update", fixed(endpoint))
		step(pm, "rotateWebhookEndpointSecret", `mutation($e: ID!) { rotateWebhookEndpointSecret(input: {endpointId: $e}) { endpoint { id } secret `+ue+` } }`,
			map[string]any{"e": endpoint}, "webhook_endpoint.rotate_secret", fixed(endpoint))
		step(pm, "setWebhookEndpointEnabled", `mutation($e: ID!) { setWebhookEndpointEnabled(input: {endpointId: $e, enabled: false}) { endpoint { id } `+ue+` } }`,
			map[string]any{"e": endpoint}, "webhook_endpoint.disable", fixed(endpoint))
		step(pm, "setWebhookEndpointEnabled", `mutation($e: ID!) { setWebhookEndpointEnabled(input: {endpointId: $e, enabled: true}) { endpoint { id } `+ue+` } }`,
			map[string]any{"e": endpoint}, "webhook_endpoint.enable", fixed(endpoint))
		message := f.failedMessage(t, endpoint)
		step(pm, "redeliverWebhookMessage", `mutation($m: ID!) { redeliverWebhookMessage(input: {messageId: $m}) { message { id } `+ue+` } }`,
			map[string]any{"m": message}, "webhook_message.redeliver", fixed(message))
		reject(pm, "redeliverWebhookMessage", `mutation($m: ID!) { redeliverWebhookMessage(input: {messageId: $m}) { message { id } `+ue+` } }`,
			map[string]any{"m": message}, "CONFLICT")
		step(pm, "deleteWebhookEndpoint", `mutation($e: ID!) { deleteWebhookEndpoint(input: {endpointId: $e}) { deletedEndpointId `+ue+` } }`,
			map[string]any{"e": endpoint}, "webhook_endpoint.delete", fixed(endpoint))
		step(editor, "deleteService", `mutation($s: ID!) { deleteService(input: {serviceId: $s}) { deletedServiceId `+ue+` } }`,
			map[string]any{"s": worker}, "service.delete", fixed(worker))
		step(pm, "deleteEnvironment", `mutation($e: ID!) { deleteEnvironment(input: {environmentId: $e}) { deletedEnvironmentId `+ue+` } }`,
			map[string]any{"e": canary}, "environment.delete", fixed(canary))
		res = step(admin, "regenerateConnectToken", `mutation($c: ID!, $n: String!) { regenerateConnectToken(input: {clusterId: $c, confirmName: $n}) {
			connectToken { id } secret `+ue+` } }`, map[string]any{"c": edge, "n": "edge"}, "cluster.regenerate_connect_token", fixed(edge))
		f.addSecret(res.Str("regenerateConnectToken.secret"))
		reject(admin, "regenerateConnectToken", `mutation($c: ID!) { regenerateConnectToken(input: {clusterId: $c, confirmName: "wrong"}) { secret `+ue+` } }`,
			map[string]any{"c": edge}, "BAD_USER_INPUT")
		step(admin, "revokeConnectToken", `mutation($k: ID!) { revokeConnectToken(input: {connectTokenId: $k}) { connectToken { id } `+ue+` } }`,
			map[string]any{"k": res.Str("regenerateConnectToken.connectToken.id")}, "cluster.revoke_connect_token", fixed(edge))
		step(admin, "queueCommand", `mutation($c: ID!) { queueCommand(input: {clusterId: $c, kind: COLLECT_DIAGNOSTICS}) { command { id } `+ue+` } }`,
			map[string]any{"c": edge}, "cluster.queue_command", fixed(edge))
		reject(admin, "queueCommand", `mutation($c: ID!) { queueCommand(input: {clusterId: $c, kind: RESYNC, process: "web"}) { command { id } `+ue+` } }`,
			map[string]any{"c": edge}, "BAD_USER_INPUT")
		step(admin, "deleteCluster", `mutation($c: ID!) { deleteCluster(input: {clusterId: $c}) { deletedClusterId `+ue+` } }`,
			map[string]any{"c": edge}, "cluster.delete", fixed(edge))
		step(admin, "deleteProject", `mutation($p: ID!) { deleteProject(input: {projectId: $p}) { deletedProjectId `+ue+` } }`,
			map[string]any{"p": rockets}, "project.delete", fixed(rockets))
		step(admin, "removeMember", `mutation($m: ID!) { removeMember(input: {memberId: $m}) { removedMemberId `+ue+` } }`,
			map[string]any{"m": robotMember}, "member.remove", fixed(robotMember))

		// People: an invitation (revoked), and a person signed in who ends
		// their own session with a personal token made from it.
		res = step(admin, "inviteMember", `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "grace@acme.test", name: "Grace"}) {
			member { id } invitation { id } link `+ue+` } }`, map[string]any{"t": f.TenantID}, "member.invite", at("inviteMember.member.id"))
		secrets = append(secrets, res.Str("inviteMember.link"))
		reject(viewer, "inviteMember", `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "x@acme.test", name: "X"}) { `+ue+` } }`,
			map[string]any{"t": f.TenantID}, "FORBIDDEN")
		step(admin, "revokeInvitation", `mutation($i: ID!) { revokeInvitation(input: {invitationId: $i}) { invitation { id } `+ue+` } }`,
			map[string]any{"i": res.Str("inviteMember.invitation.id")}, "invitation.revoke", at("revokeInvitation.invitation.id"))
		person, _, session := signedInPerson(t, f, "Hedy")
		secrets = append(secrets, person.cookie.Value)
		tok := person.gql(`mutation { createApiToken(input: {name: "hedy"}) { secret } }`, nil)
		who := person.gql(`{ viewer { user { id } } }`, nil)
		hedy := &Caller{Token: dig(tok.body, "data.createApiToken.secret").(string), UserID: dig(who.body, "data.viewer.user.id").(string)}
		secrets = append(secrets, hedy.Token)
		step(hedy, "revokeSession", `mutation($s: ID!) { revokeSession(input: {sessionId: $s}) { revokedSessionId `+ue+` } }`,
			map[string]any{"s": session}, "session.revoke", fixed(session))
		reject(admin, "revokeSession", `mutation($s: ID!) { revokeSession(input: {sessionId: $s}) { revokedSessionId `+ue+` } }`,
			map[string]any{"s": session}, "NOT_FOUND")

		// A CLI's sign-in confirmed by a person in the console.
		cliPerson, _, _ := signedInPerson(t, f, "Cleo")
		secrets = append(secrets, cliPerson.cookie.Value)
		cliCode, cliSecret, _ := cliStart(t, env)
		if r := cliPerson.gql(`mutation($c: String!, $t: ID!) { approveCliLogin(input: {code: $c, tenantId: $t}) { apiToken { id } } }`,
			map[string]any{"c": cliCode, "t": f.TenantID}); dig(r.body, "data.approveCliLogin.apiToken.id") == nil {
			t.Fatalf("approveCliLogin: %s", r.raw)
		}
		if _, tok := cliPoll(t, env, cliSecret); tok != "" {
			secrets = append(secrets, tok)
		}

		t.Run("every mutation scripted", func(t *testing.T) {
			var done []string
			for _, ev := range allAudit(t, env, f.Owner.Token, f.TenantID, 100, nil) {
				done = append(done, ev.Action)
			}
			done = append(done, "tenant.create")
			for _, field := range schemaFields() {
				if field == "node" || field == "viewer" || field == "cliLogin" || strings.HasPrefix(field, "preview") {
					continue // queries: they write nothing
				}
				action := mutationAction[field]
				if action == "" {
					t.Errorf("mutation %s has no expected audit action in this test", field)
					continue
				}
				if !slices.Contains(done, action) {
					t.Errorf("mutation %s (%s) is not in the scripted sequence", field, action)
				}
			}
		})

		t.Run("no secrets in details", func(t *testing.T) {
			for _, tc := range []struct{ tenant, token string }{{f.TenantID, f.Owner.Token}, {newTenant, newTenantToken}} {
				for _, ev := range allAudit(t, env, tc.token, tc.tenant, 100, nil) {
					b, _ := json.Marshal(ev.Details)
					details := string(b)
					for _, s := range secrets {
						hidden := s[len("nbt_")+8:]
						if strings.Contains(details, s) || strings.Contains(details, hidden) {
							t.Errorf("%s event %s details contain a token secret: %s", ev.Action, ev.ID, details)
						}
					}
					if m := tokenLike.FindString(details); m != "" {
						t.Errorf("%s event %s details contain something token-like %q", ev.Action, ev.ID, m)
					}
					if strings.Contains(details, variableValue) {
						t.Errorf("%s event %s details contain a variable value: %s", ev.Action, ev.ID, details)
					}
				}
			}
		})

		t.Run("pagination", func(t *testing.T) {
			all := allAudit(t, env, f.Owner.Token, f.TenantID, 100, nil)
			if want := f.AuditCount(t); len(all) != want {
				t.Fatalf("one page of 100: got %d events, want all %d", len(all), want)
			}
			for _, size := range []int{1, 3, 7} {
				paged := allAudit(t, env, f.Owner.Token, f.TenantID, size, nil)
				if got, want := eventIDs(paged), eventIDs(all); !slices.Equal(got, want) {
					t.Errorf("pages of %d: got %d events %v, want %d %v", size, len(got), got, len(want), want)
				}
			}
			ids := map[string]bool{}
			for i, ev := range all {
				if ids[ev.ID] {
					t.Errorf("event %s listed twice", ev.ID)
				}
				ids[ev.ID] = true
				if i > 0 && ev.CreatedAt.After(all[i-1].CreatedAt) {
					t.Errorf("event %d (%s) is newer than the one before it: want newest first", i, ev.Action)
				}
			}
		})

		t.Run("filters", func(t *testing.T) {
			all := allAudit(t, env, f.Owner.Token, f.TenantID, 100, nil)
			mid := all[len(all)/2].CreatedAt
			cases := []struct {
				name   string
				filter map[string]any
				keep   func(auditEvent) bool
			}{
				{"action", map[string]any{"action": "project.update"}, func(e auditEvent) bool { return e.Action == "project.update" }},
				{"actorId", map[string]any{"actorId": pm.UserID}, func(e auditEvent) bool { return e.actorID() == pm.UserID }},
				{"targetId", map[string]any{"targetId": f.ProjectID}, func(e auditEvent) bool { return e.TargetID == f.ProjectID }},
				{"since", map[string]any{"since": mid.Format(time.RFC3339Nano)}, func(e auditEvent) bool { return !e.CreatedAt.Before(mid) }},
				{"until", map[string]any{"until": mid.Format(time.RFC3339Nano)}, func(e auditEvent) bool { return e.CreatedAt.Before(mid) }},
				{"actor and action", map[string]any{"actorId": admin.UserID, "action": "api_token.create"},
					func(e auditEvent) bool { return e.actorID() == admin.UserID && e.Action == "api_token.create" }},
				{"unknown action", map[string]any{"action": "nothing.ever"}, func(auditEvent) bool { return false }},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					var want []auditEvent
					for _, e := range all {
						if c.keep(e) {
							want = append(want, e)
						}
					}
					if c.name != "unknown action" && len(want) == 0 {
						t.Fatalf("the script left no event for this filter to find")
					}
					for _, size := range []int{2, 100} {
						got := allAudit(t, env, f.Owner.Token, f.TenantID, size, c.filter)
						if !slices.Equal(eventIDs(got), eventIDs(want)) {
							t.Errorf("pages of %d: got %d events %v, want %d %v", size, len(got), actions(got), len(want), actions(want))
						}
					}
				})
			}
		})

		t.Run("bootstrap event", func(t *testing.T) {
			evs, _, _ := auditPage(t, env, env.BootstrapToken, bootstrapTenant(t, env), 100, "", map[string]any{"action": "tenant.bootstrap"})
			if len(evs) != 1 {
				t.Fatalf("got %d tenant.bootstrap events, want 1", len(evs))
			}
			if evs[0].Actor != nil || evs[0].ClientAddress != "local" {
				t.Errorf("bootstrap event: actor %v, client %q; want the system (null) from local", evs[0].Actor, evs[0].ClientAddress)
			}
		})
	})
}

// mutationAction is the audit action of each mutation.
var mutationAction = map[string]string{
	"createTenant": "tenant.create", "updateTenant": "tenant.update", "setTenantPlan": "tenant.set_plan",
	"addMember": "member.add", "updateMemberRole": "member.update_role", "removeMember": "member.remove",
	"inviteMember": "member.invite", "revokeInvitation": "invitation.revoke", "revokeSession": "session.revoke",
	"createApiToken": "api_token.create", "revokeApiToken": "api_token.revoke", "revokeMemberApiTokens": "api_token.revoke",
	"createProject": "project.create", "updateProject": "project.update", "deleteProject": "project.delete",
	"addProjectMember": "project_member.add", "updateProjectMemberRole": "project_member.update_role",
	"removeProjectMember": "project_member.remove",
	"createEnvironment":   "environment.create", "updateEnvironment": "environment.update", "deleteEnvironment": "environment.delete",
	"registerCluster": "cluster.register", "setClusterLabels": "cluster.set_labels", "deleteCluster": "cluster.delete",
	"createNamespaceTarget": "namespace_target.create", "setNamespaceTargetLabels": "namespace_target.set_labels",
	"deleteNamespaceTarget": "namespace_target.delete",
	"createService":         "service.create", "updateService": "service.update", "deleteService": "service.delete",
	"deploy":            "deployment.create",
	"approveDeployment": "deployment.approve", "rejectDeployment": "deployment.reject",
	"cancelDeployment": "deployment.cancel", "redeploy": "deployment.redeploy", "rollback": "deployment.rollback",
	"setVariable": "variable.set", "deleteVariable": "variable.delete",
	"regenerateConnectToken": "cluster.regenerate_connect_token", "revokeConnectToken": "cluster.revoke_connect_token",
	"queueCommand":  "cluster.queue_command",
	"createWebhook": "webhook.create", "rotateWebhookSecret": "webhook.rotate_secret", "deleteWebhook": "webhook.delete",
	"redeliverWebhookDelivery": "webhook.redeliver",
	"approveCliLogin":          "cli_login.approve",
	"createWebhookEndpoint":    "webhook_endpoint.create", "updateWebhookEndpoint": "webhook_endpoint.update",
	"rotateWebhookEndpointSecret": "webhook_endpoint.rotate_secret", "setWebhookEndpointEnabled": "webhook_endpoint.enable",
	"deleteWebhookEndpoint": "webhook_endpoint.delete", "redeliverWebhookMessage": "webhook_message.redeliver",
	"openChangeSet": "change_set.open", "removeChangeSetChange": "change_set.remove_change",
	"submitChangeSet": "change_set.submit", "approveChangeSet": "change_set.approve", "rejectChangeSet": "change_set.reject",
	"applyChangeSet": "change_set.apply", "rebaseChangeSet": "change_set.rebase", "commentOnChangeSet": "change_set.comment",
	"closeChangeSet": "change_set.close",
}

func eventIDs(evs []auditEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func actions(evs []auditEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Action
	}
	return out
}

// bootstrapTenant is the id of the tenant the bootstrap token acts in.
func bootstrapTenant(t *testing.T, env *Env) string {
	t.Helper()
	res := env.MustDo(t, env.BootstrapToken, `{ viewer { tenants { nodes { id } } } }`, nil)
	ids := res.IDs("viewer.tenants.nodes")
	if len(ids) != 1 {
		t.Fatalf("bootstrap token sees tenants %v, want one", ids)
	}
	return ids[0]
}

// The audit trail keeps who acted after they leave the tenant: a removed
// member's events must not turn into what reads as the system's ("actor:
// null for the system").
func TestAuditActorOutlivesMembership(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ed := f.Users[Editor]
		env.MustDo(t, ed.Token, `mutation($s: ID!) { updateService(input: {serviceId: $s, image: "registry.example.com/shop/api2"}) { `+ue+` } }`,
			map[string]any{"s": f.ServiceID})
		f.MustDo(t, `mutation($m: ID!) { removeMember(input: {memberId: $m}) { `+ue+` } }`, map[string]any{"m": ed.MemberID})

		evs := allAudit(t, env, f.Owner.Token, f.TenantID, 100, map[string]any{"actorId": ed.UserID})
		if len(evs) == 0 {
			t.Fatalf("filtering by the removed member finds no events; want the service.update")
		}
		for _, ev := range evs {
			if ev.actorID() != ed.UserID {
				t.Errorf("%s event by the removed member: actor %v, want %s", ev.Action, ev.Actor, ed.UserID)
			}
		}
	})
}
