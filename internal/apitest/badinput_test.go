package apitest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// newFreeTenant builds a tenant on the FREE plan at its limits: two
// clusters, three projects and one protected environment, with the owner
// as its only member (and so its last admin).
func newFreeTenant(t *testing.T, env *Env) *Fixture {
	t.Helper()
	f := &Fixture{Env: env, Name: fmt.Sprintf("free-%d", env.Next()), Users: map[Role]*Caller{}}
	r := env.MustDo(t, env.BootstrapToken, `mutation($name: String!) {
		createTenant(input: {name: $name}) { tenant { id } apiToken { id } secret `+ue+` } }`, map[string]any{"name": f.Name})
	f.TenantID = r.Str("createTenant.tenant.id")
	f.Owner = Caller{UserID: env.BootstrapUserID, Token: r.Str("createTenant.secret"), TokenID: r.Str("createTenant.apiToken.id")}
	f.Owner.MemberID = f.Values(t, f.TenantID, `... on Tenant { members { nodes { id } } }`, "members.nodes", "id")[0]
	for _, c := range []struct{ name, env string }{{"one", "prod"}, {"two", "dev"}} {
		r := f.MustDo(t, `mutation($t: ID!, $name: String!, $env: String!) {
			registerCluster(input: {tenantId: $t, name: $name, labels: [{key: "env", value: $env}]}) { cluster { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID, "name": c.name, "env": c.env})
		if c.name == "one" {
			f.ClusterID = r.Str("registerCluster.cluster.id")
		}
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		r := f.MustDo(t, `mutation($t: ID!, $name: String!) { createProject(input: {tenantId: $t, name: $name}) { project { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID, "name": p})
		if p == "p1" {
			f.ProjectID = r.Str("createProject.project.id")
		}
	}
	r = f.MustDo(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "prod", protected: true,
		clusterSelector: [{key: "env", value: "prod"}]}) { environment { id } `+ue+` } }`, map[string]any{"p": f.ProjectID})
	f.ProtectedEnvironmentID = r.Str("createEnvironment.environment.id")
	return f
}

// badCase is one bad request and how it must be refused.
type badCase struct {
	name  string
	query string
	vars  func(t *testing.T, f, free *Fixture) map[string]any
	// userError: refused as a userError of the mutation's payload (with the
	// field path in path, if given); otherwise as a request error.
	userError bool
	path      []string
	code      string
	// mentions: the message names the offending value or field.
	mentions []string
	// errPath: the request error's path (for variables, which the message
	// does not name).
	errPath []string
}

func ids(kv ...string) func(t *testing.T, f, free *Fixture) map[string]any {
	return func(t *testing.T, f, free *Fixture) map[string]any {
		out := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = fixtureValue(f, free, kv[i+1])
		}
		return out
	}
}

// reported is ids once f's cluster has an inventory: its agent's report
// of a node and a workload, recorded as a heartbeat would be.
func reported(kv ...string) func(t *testing.T, f, free *Fixture) map[string]any {
	return func(t *testing.T, f, free *Fixture) map[string]any {
		t.Helper()
		cid, err := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
		if err != nil {
			t.Fatal(err)
		}
		inv := `{"agentVersion":"bad-input","nodes":[{"name":"node-a","ready":true}],"workloads":[{"namespace":"shop","name":"web","replicas":1}]}`
		if err := store.RecordHeartbeat(t.Context(), f.Env.Store.Q(), cid, f.Env.Clock.Now(), &inv, 0, ""); err != nil {
			t.Fatal(err)
		}
		return ids(kv...)(t, f, free)
	}
}

// openSet opens a change set of f's project with a comment: c.
func openSet(t *testing.T, f, free *Fixture) map[string]any {
	t.Helper()
	c := f.MustDo(t, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "bad input"}) { changeSet { id } `+ue+` } }`,
		map[string]any{"p": f.ProjectID}).Str("openChangeSet.changeSet.id")
	f.MustDo(t, `mutation($c: ID!) { commentOnChangeSet(input: {changeSetId: $c, body: "a word"}) { `+ue+` } }`, map[string]any{"c": c})
	return map[string]any{"c": c}
}

// fixtureValue resolves a name ("f.project", "free.cluster", …) to an id;
// anything else is used as is.
func fixtureValue(f, free *Fixture, name string) any {
	switch name {
	case "f.tenant":
		return f.TenantID
	case "f.project":
		return f.ProjectID
	case "f.cluster":
		return f.ClusterID
	case "f.environment":
		return f.EnvironmentID
	case "f.protected":
		return f.ProtectedEnvironmentID
	case "f.service":
		return f.ServiceID
	case "f.deployment":
		return f.DeploymentID
	case "free.tenant":
		return free.TenantID
	case "free.project":
		return free.ProjectID
	case "free.protected":
		return free.ProtectedEnvironmentID
	case "free.owner":
		return free.Owner.MemberID
	}
	return name
}

func badInputs() []badCase {
	okProcess := `processes: [{name: "web", port: 8080}]`
	return []badCase{
		// Ids.
		{name: "node id not base64", query: `query { node(id: "not an id!") { id } }`,
			code: "BAD_USER_INPUT", mentions: []string{"not an id!"}},
		{name: "node id of an unknown kind", query: `query($id: ID!) { node(id: $id) { id } }`,
			vars: ids("id", base64.RawURLEncoding.EncodeToString([]byte("Bogus:42"))),
			code: "BAD_USER_INPUT", mentions: []string{"Bogus"}},
		{name: "mutation id not base64", query: `mutation { updateProject(input: {projectId: "%%%", name: "x"}) { ` + ue + ` } }`,
			userError: true, path: []string{"input", "projectId"}, code: "BAD_USER_INPUT", mentions: []string{"%%%"}},
		{name: "cluster id where a project id is expected", query: `mutation($id: ID!) { updateProject(input: {projectId: $id, name: "x"}) { ` + ue + ` } }`,
			vars: ids("id", "f.cluster"), userError: true, path: []string{"input", "projectId"}, code: "BAD_USER_INPUT", mentions: []string{"Cluster", "Project"}},
		{name: "environment id where a service id is expected", query: deployMutation,
			vars:      ids("s", "f.environment", "e", "f.environment", "d", Digest(1)),
			userError: true, path: []string{"input", "serviceId"}, code: "BAD_USER_INPUT", mentions: []string{"Environment", "Service"}},
		{name: "audit filter actorId of a project", query: `query($t: ID!, $a: ID!) { node(id: $t) { ... on Tenant { auditEvents(filter: {actorId: $a}) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant", "a", "f.project"), code: "BAD_USER_INPUT", mentions: []string{"Project", "User"}},
		{name: "releases of a cluster id", query: `query($s: ID!, $c: ID!) { node(id: $s) { ... on Service { releases(environmentId: $c) { nodes { id } } } } }`,
			vars: ids("s", "f.service", "c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"Cluster", "Environment"}},

		// Paging.
		{name: "first: 101", query: `query($t: ID!) { node(id: $t) { ... on Tenant { clusters(first: 101) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"first", "101"}},
		{name: "first: -1", query: `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: -1) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"first", "-1"}},
		{name: "audit events first: 101", query: `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 101) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"first", "101"}},
		{name: "after not a cursor", query: `query { viewer { apiTokens(after: "!!!") { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"after"}},
		{name: "before not a cursor", query: `query { viewer { apiTokens(last: 2, before: "!!!") { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"before"}},
		{name: "first and last", query: `query($t: ID!) { node(id: $t) { ... on Tenant { clusters(first: 2, last: 2) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"first", "last"}},
		{name: "last: 101", query: `query($t: ID!) { node(id: $t) { ... on Tenant { projects(last: 101) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"last", "101"}},
		{name: "audit events before not a cursor", query: `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(last: 1, before: "YWJj") { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"before"}},
		{name: "drift first: 101", query: `query($c: ID!) { node(id: $c) { ... on Cluster { drift(first: 101) { nodes { name } } } } }`,
			vars: ids("c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"first", "101"}},
		{name: "drift after not a drift's cursor", query: `query($s: ID!, $e: ID!) { node(id: $s) { ... on Service {
			drift(environmentId: $e, after: "ZXZlbnQ6MQ") { nodes { name } } } } }`, // event:1
			vars: ids("s", "f.service", "e", "f.environment"), code: "BAD_USER_INPUT", mentions: []string{"after", "cursor"}},
		{name: "drift first and last", query: `query($c: ID!) { node(id: $c) { ... on Cluster { drift(first: 1, last: 1) { nodes { name } } } } }`,
			vars: ids("c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"first", "last"}},
		{name: "inventory workloads first: 101", query: `query($c: ID!) { node(id: $c) { ... on Cluster { inventory { workloads(first: 101) { nodes { name } } } } } }`,
			vars: reported("c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"first", "101"}},
		{name: "inventory workloads after not a cursor", query: `query($c: ID!) { node(id: $c) { ... on Cluster { inventory { workloads(after: "!!!") { nodes { name } } } } } }`,
			vars: reported("c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"after", "cursor"}},
		{name: "inventory nodes first and last", query: `query($c: ID!) { node(id: $c) { ... on Cluster { inventory { nodes(first: 1, last: 1) { nodes { name } } } } } }`,
			vars: reported("c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"first", "last"}},
		{name: "inventory nodes last: -1", query: `query($c: ID!) { node(id: $c) { ... on Cluster { inventory { nodes(last: -1) { nodes { name } } } } } }`,
			vars: reported("c", "f.cluster"), code: "BAD_USER_INPUT", mentions: []string{"last", "-1"}},
		{name: "inventory nodes before too long a cursor", query: `query($c: ID!, $b: String) { node(id: $c) { ... on Cluster { inventory { nodes(last: 1, before: $b) { nodes { name } } } } } }`,
			vars: func(t *testing.T, f, free *Fixture) map[string]any {
				v := reported("c", "f.cluster")(t, f, free)
				v["b"] = base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("n", 321)))
				return v
			}, code: "BAD_USER_INPUT", mentions: []string{"before", "cursor"}},
		{name: "change set comments first: 101", query: `query($c: ID!) { node(id: $c) { ... on ChangeSet { comments(first: 101) { nodes { body } } } } }`,
			vars: openSet, code: "BAD_USER_INPUT", mentions: []string{"first", "101"}},
		{name: "change set comments first and last", query: `query($c: ID!) { node(id: $c) { ... on ChangeSet { comments(first: 1, last: 1) { nodes { body } } } } }`,
			vars: openSet, code: "BAD_USER_INPUT", mentions: []string{"first", "last"}},
		{name: "change set comments after not a comment's cursor", query: `query($c: ID!) { node(id: $c) { ... on ChangeSet { comments(after: "Y29tbWVudDox") { nodes { body } } } } }`, // comment:1
			vars: openSet, code: "BAD_USER_INPUT", mentions: []string{"after", "cursor"}},
		{name: "change set comments before not a cursor", query: `query($c: ID!) { node(id: $c) { ... on ChangeSet { comments(last: 1, before: "!!!") { nodes { body } } } } }`,
			vars: openSet, code: "BAD_USER_INPUT", mentions: []string{"before", "cursor"}},
		{name: "deployment events last: 1001", query: `query($d: ID!) { node(id: $d) { ... on Deployment { events(last: 1001) { nodes { sequence } } } } }`,
			vars: ids("d", "f.deployment"), code: "BAD_USER_INPUT", mentions: []string{"last", "1000", "1001"}},
		{name: "deployment events before a line's cursor", query: `query($d: ID!) { node(id: $d) { ... on Deployment { events(last: 1, before: "MQ") { nodes { sequence } } } } }`,
			vars: ids("d", "f.deployment"), code: "BAD_USER_INPUT", mentions: []string{"before", "cursor"}},
		{name: "logs first: -1", query: `query($s: ID!, $e: ID!) { node(id: $s) { ... on Service { logs(environmentId: $e, first: -1) { nodes { number } } } } }`,
			vars: ids("s", "f.service", "e", "f.environment"), code: "BAD_USER_INPUT", mentions: []string{"first", "-1"}},
		{name: "logs after line 0", query: `query($s: ID!, $e: ID!) { node(id: $s) { ... on Service { logs(environmentId: $e, after: "MA") { nodes { number } } } } }`, // 0
			vars: ids("s", "f.service", "e", "f.environment"), code: "BAD_USER_INPUT", mentions: []string{"after", "cursor"}},
		{name: "sessions first and last", query: `query { viewer { sessions(first: 1, last: 1) { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"first", "last"}},
		{name: "sessions first: -1", query: `query { viewer { sessions(first: -1) { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"first", "-1"}},
		{name: "sessions last: 101", query: `query { viewer { sessions(last: 101) { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"last", "100", "101"}},
		{name: "sessions after not a cursor", query: `query { viewer { sessions(after: "!!!") { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"after", "cursor"}},
		{name: "sessions before not a cursor", query: `query { viewer { sessions(last: 2, before: "%%") { nodes { id } } } }`,
			code: "BAD_USER_INPUT", mentions: []string{"before", "cursor"}},
		{name: "audit since after until", query: `query($t: ID!) { node(id: $t) { ... on Tenant {
			auditEvents(filter: {since: "2030-01-02T00:00:00Z", until: "2030-01-01T00:00:00Z"}) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"since", "until"}},

		// Types.
		{name: "string literal for Int", query: `query($t: ID!) { node(id: $t) { ... on Tenant { clusters(first: "ten") { nodes { id } } } } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"ten", "Int"}},
		{name: "string variable for Int", query: `query($t: ID!, $n: Int) { node(id: $t) { ... on Tenant { clusters(first: $n) { nodes { id } } } } }`,
			vars: ids("t", "f.tenant", "n", "ten"), code: "BAD_USER_INPUT", mentions: []string{"Int"}, errPath: []string{"variable", "n"}},
		{name: "unknown enum literal", query: `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "x@example.com", name: "X", role: SUPERUSER}) { ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"SUPERUSER"}},
		{name: "unknown enum variable", query: `mutation($t: ID!, $p: PlanName!) { setTenantPlan(input: {tenantId: $t, plan: $p}) { ` + ue + ` } }`,
			vars: ids("t", "f.tenant", "p", "PLATINUM"), code: "BAD_USER_INPUT", mentions: []string{"PLATINUM"}, errPath: []string{"variable", "p"}},
		{name: "missing required input field", query: `mutation($t: ID!) { createProject(input: {tenantId: $t}) { ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), code: "BAD_USER_INPUT", mentions: []string{"name"}},
		{name: "unknown field", query: `query { viewer { password } }`, code: "BAD_USER_INPUT", mentions: []string{"password"}},
		{name: "syntax error", query: `query { viewer { user { id }`, code: "BAD_USER_INPUT"},

		// Duplicates.
		{name: "duplicate project", query: `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "shop"}) { project { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "name"}, code: "CONFLICT", mentions: []string{"shop"}},
		{name: "duplicate environment", query: `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "production", namespaceSelector: [{key: "tier", value: "web"}]}) { environment { id } ` + ue + ` } }`,
			vars: ids("p", "f.project"), userError: true, path: []string{"input", "name"}, code: "CONFLICT", mentions: []string{"production"}},
		{name: "environment renamed to a taken name", query: `mutation($e: ID!) { updateEnvironment(input: {environmentId: $e, name: "production"}) { environment { id } ` + ue + ` } }`,
			vars: ids("e", "f.protected"), userError: true, path: []string{"input", "name"}, code: "CONFLICT", mentions: []string{"name"}},
		{name: "duplicate service", query: `mutation($p: ID!) { createService(input: {projectId: $p, name: "api", image: "registry.example.com/a", ` + okProcess + `}) { service { id } ` + ue + ` } }`,
			vars: ids("p", "f.project"), userError: true, path: []string{"input", "name"}, code: "CONFLICT", mentions: []string{"api"}},
		{name: "duplicate cluster", query: `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "prod-eu"}) { cluster { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "name"}, code: "CONFLICT", mentions: []string{"prod-eu"}},
		{name: "duplicate namespace target", query: `mutation($c: ID!) { createNamespaceTarget(input: {clusterId: $c, namespace: "shop"}) { namespaceTarget { id } ` + ue + ` } }`,
			vars: ids("c", "f.cluster"), userError: true, path: []string{"input", "namespace"}, code: "CONFLICT", mentions: []string{"shop"}},
		{name: "member added twice", query: `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "admin@acme.test", name: "Again", role: MEMBER}) { member { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "email"}, code: "CONFLICT", mentions: []string{"admin@acme.test"}},
		{name: "cluster with deployments", query: `mutation($c: ID!) { deleteCluster(input: {clusterId: $c}) { deletedClusterId ` + ue + ` } }`,
			vars: ids("c", "f.cluster"), userError: true, path: []string{"input", "clusterId"}, code: "CONFLICT", mentions: []string{"prod-eu"}},
		{name: "last admin demoted", query: `mutation($m: ID!) { updateMemberRole(input: {memberId: $m, role: MEMBER}) { member { id } ` + ue + ` } }`,
			vars: ids("m", "free.owner"), userError: true, path: []string{"input", "memberId"}, code: "CONFLICT", mentions: []string{"last admin"}},
		{name: "last admin removed", query: `mutation($m: ID!) { removeMember(input: {memberId: $m}) { removedMemberId ` + ue + ` } }`,
			vars: ids("m", "free.owner"), userError: true, path: []string{"input", "memberId"}, code: "CONFLICT", mentions: []string{"last admin"}},

		// Selectors and labels.
		{name: "unknown cluster selector key", query: `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "zoned",
			clusterSelector: [{key: "env", value: "prod"}, {key: "zone", value: "a"}]}) { environment { id } ` + ue + ` } }`,
			vars: ids("p", "f.project"), userError: true, path: []string{"input", "clusterSelector", "1", "key"}, code: "BAD_USER_INPUT",
			mentions: []string{`"zone"`, "env", "region"}},
		{name: "unknown namespace selector key", query: `mutation($e: ID!) { updateEnvironment(input: {environmentId: $e,
			namespaceSelector: [{key: "team", value: "a"}]}) { environment { id } ` + ue + ` } }`,
			vars: ids("e", "f.environment"), userError: true, path: []string{"input", "namespaceSelector", "0", "key"}, code: "BAD_USER_INPUT",
			mentions: []string{`"team"`, "tier"}},
		{name: "invalid label key", query: `mutation($c: ID!) { setClusterLabels(input: {clusterId: $c, labels: [{key: "bad key", value: "x"}]}) { cluster { id } ` + ue + ` } }`,
			vars: ids("c", "f.cluster"), userError: true, path: []string{"input", "labels", "0", "key"}, code: "BAD_USER_INPUT", mentions: []string{"bad key"}},
		{name: "label key twice", query: `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "twice", labels: [{key: "a", value: "1"}, {key: "a", value: "2"}]}) { cluster { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, code: "BAD_USER_INPUT", mentions: []string{`"a"`, "twice"}},

		// Names and values.
		{name: "project name with spaces", query: `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "Shop Front"}) { project { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "name"}, code: "BAD_USER_INPUT", mentions: []string{"Shop Front"}},
		{name: "cluster name with a leading dash", query: `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "-edge"}) { cluster { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "name"}, code: "BAD_USER_INPUT", mentions: []string{"-edge"}},
		{name: "empty environment name", query: `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: ""}) { environment { id } ` + ue + ` } }`,
			vars: ids("p", "f.project"), userError: true, path: []string{"input", "name"}, code: "BAD_USER_INPUT", mentions: []string{"environment name"}},
		{name: "service name with underscore", query: `mutation($p: ID!) { createService(input: {projectId: $p, name: "my_api", image: "registry.example.com/a", ` + okProcess + `}) { service { id } ` + ue + ` } }`,
			vars: ids("p", "f.project"), userError: true, path: []string{"input", "name"}, code: "BAD_USER_INPUT", mentions: []string{"my_api"}},
		{name: "blank tenant name", query: `mutation($t: ID!) { updateTenant(input: {tenantId: $t, name: "   "}) { tenant { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "name"}, code: "BAD_USER_INPUT", mentions: []string{"tenant name"}},
		{name: "invalid email", query: `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "not-an-email", name: "X", role: MEMBER}) { member { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "email"}, code: "BAD_USER_INPUT", mentions: []string{"not-an-email"}},
		{name: "image with a tag", query: `mutation($s: ID!) { updateService(input: {serviceId: $s, image: "registry.example.com/shop/api:latest"}) { service { id } ` + ue + ` } }`,
			vars: ids("s", "f.service"), userError: true, path: []string{"input", "image"}, code: "BAD_USER_INPUT", mentions: []string{"registry.example.com/shop/api:latest"}},
		{name: "invalid image digest", query: deployMutation,
			vars:      ids("s", "f.service", "e", "f.environment", "d", "sha256:abc"),
			userError: true, path: []string{"input", "imageDigest"}, code: "BAD_USER_INPUT", mentions: []string{"sha256:abc"}},
		{name: "domain naming a missing process", query: `mutation($p: ID!) { createService(input: {projectId: $p, name: "web2", image: "registry.example.com/a",
			` + okProcess + `, domains: [{host: "shop.example.com", process: "worker"}]}) { service { id } ` + ue + ` } }`,
			vars: ids("p", "f.project"), userError: true, path: []string{"input", "domains", "0", "process"}, code: "BAD_USER_INPUT",
			mentions: []string{"worker", "shop.example.com"}},
		{name: "domain on a process without a port", query: `mutation($s: ID!) { updateService(input: {serviceId: $s,
			processes: [{name: "web"}], domains: [{host: "shop.example.com", process: "web"}]}) { service { id } ` + ue + ` } }`,
			vars: ids("s", "f.service"), userError: true, path: []string{"input", "domains", "0", "process"}, code: "BAD_USER_INPUT", mentions: []string{"port"}},
		{name: "replicas out of range", query: `mutation($s: ID!) { updateService(input: {serviceId: $s, processes: [{name: "web", replicas: 1000}]}) { service { id } ` + ue + ` } }`,
			vars: ids("s", "f.service"), userError: true, path: []string{"input", "processes", "0", "replicas"}, code: "BAD_USER_INPUT", mentions: []string{"replicas"}},
		{name: "token expiry of 0 days", query: `mutation { createApiToken(input: {name: "x", expiresInDays: 0}) { secret ` + ue + ` } }`,
			userError: true, path: []string{"input", "expiresInDays"}, code: "BAD_USER_INPUT", mentions: []string{"expiresInDays"}},
		{name: "deploy to an environment of another project", query: deployMutation,
			vars: func(t *testing.T, f, free *Fixture) map[string]any {
				p := f.NewProject(t)
				r := f.MustDo(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "elsewhere", namespaceSelector: [{key: "tier", value: "web"}]}) { environment { id } `+ue+` } }`,
					map[string]any{"p": p})
				return map[string]any{"s": f.ServiceID, "e": r.Str("createEnvironment.environment.id"), "d": Digest(2)}
			},
			userError: true, path: []string{"input", "environmentId"}, code: "BAD_USER_INPUT", mentions: []string{"another project"}},
		{name: "deploy to an environment picking no cluster", query: deployMutation,
			vars: func(t *testing.T, f, free *Fixture) map[string]any {
				r := f.MustDo(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "us",
					clusterSelector: [{key: "region", value: "us"}]}) { environment { id } `+ue+` } }`, map[string]any{"p": f.ProjectID})
				return map[string]any{"s": f.ServiceID, "e": r.Str("createEnvironment.environment.id"), "d": Digest(3)}
			},
			userError: true, path: []string{"input", "environmentId"}, code: "BAD_USER_INPUT", mentions: []string{"no eligible cluster", "region=us"}},

		// Plan limits.
		{name: "3rd cluster on FREE", query: `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "three"}) { cluster { id } ` + ue + ` } }`,
			vars: ids("t", "free.tenant"), userError: true, code: "ENTITLEMENT_REQUIRED", mentions: []string{"FREE", "limit of clusters is 2"}},
		{name: "4th project on FREE", query: `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "p4"}) { project { id } ` + ue + ` } }`,
			vars: ids("t", "free.tenant"), userError: true, code: "ENTITLEMENT_REQUIRED", mentions: []string{"FREE", "limit of projects is 3"}},
		{name: "2nd protected environment on FREE", query: `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "gated", protected: true}) { environment { id } ` + ue + ` } }`,
			vars: ids("p", "free.project"), userError: true, code: "ENTITLEMENT_REQUIRED", mentions: []string{"FREE", "protected environments"}},
		{name: "downgrade below use", query: `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: FREE}) { tenant { id } ` + ue + ` } }`,
			vars: ids("t", "f.tenant"), userError: true, path: []string{"input", "plan"}, code: "ENTITLEMENT_REQUIRED", mentions: []string{"FREE", "members"}},
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := badInputs()
	EachStore(t, func(t *testing.T, env *Env) {
		f, free := env.NewFixture(t), newFreeTenant(t, env)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				vars := map[string]any{}
				if c.vars != nil {
					vars = c.vars(t, f, free)
				}
				// The free tenant is reached with its own token.
				token := f.Owner.Token
				for _, v := range vars {
					if v == free.TenantID || v == free.ProjectID || v == free.Owner.MemberID {
						token = free.Owner.Token
					}
				}
				before, beforeFree := f.AuditCount(t), free.AuditCount(t)
				state, stateFree := snapshot(t, f), snapshot(t, free)
				res := env.Do(t, token, c.query, vars)

				var code, msg string
				if c.userError {
					field := firstField(c.query)
					if len(res.Errors) > 0 {
						t.Fatalf("got errors %s, want userErrors on %s", res.errorList(), field)
					}
					if res.Status != http.StatusOK {
						t.Errorf("got HTTP %d, want 200", res.Status)
					}
					ue := res.UserErrors(field)
					if len(ue) == 0 {
						t.Fatalf("got no userErrors, want %s\n%s", c.code, res.Body)
					}
					code, msg = ue[0].Code, ue[0].Message
					if c.path != nil && !slices.Equal(ue[0].Field, c.path) {
						t.Errorf("userError field: got %v, want %v", ue[0].Field, c.path)
					}
					// A refused mutation returns no object.
					for k, v := range res.Get(field).(map[string]any) {
						if k != "userErrors" && v != nil {
							t.Errorf("payload %s: got %v, want null", k, v)
						}
					}
				} else {
					if len(res.Errors) == 0 {
						t.Fatalf("got no errors, want %s\n%s", c.code, res.Body)
					}
					code, msg = res.Errors[0].Code(), res.Errors[0].Message
					if got := res.Errors[0].PathString(); c.errPath != nil && got != strings.Join(c.errPath, ".") {
						t.Errorf("error path: got %q, want %q", got, strings.Join(c.errPath, "."))
					}
				}
				t.Logf("%s: %s", code, msg)
				if code != c.code {
					t.Errorf("code: got %s (%q), want %s", code, msg, c.code)
				}
				for _, m := range c.mentions {
					if !strings.Contains(msg, m) {
						t.Errorf("message %q does not mention %q", msg, m)
					}
				}
				if strings.Contains(strings.ToLower(msg), "sql") || strings.Contains(msg, "constraint") {
					t.Errorf("message %q leaks a database error", msg)
				}
				if got := f.AuditCount(t); got != before {
					t.Errorf("audit events: got %d, want %d (nothing written)", got, before)
				}
				if got := free.AuditCount(t); got != beforeFree {
					t.Errorf("FREE tenant audit events: got %d, want %d (nothing written)", got, beforeFree)
				}
				if got := snapshot(t, f); got != state {
					t.Errorf("tenant changed:\nbefore %s\nafter  %s", state, got)
				}
				if got := snapshot(t, free); got != stateFree {
					t.Errorf("FREE tenant changed:\nbefore %s\nafter  %s", stateFree, got)
				}
			})
		}
	})
}
