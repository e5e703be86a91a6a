package apitest

import (
	"strings"
	"testing"
)

// Targeting is explained, never guessed: an environment's placement names
// its one cluster and namespace, or why there is none, with the candidates.
func TestPlacement(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		placement := func(id string) map[string]any {
			return f.Node(t, id, "... on Environment { placement { cluster { name } namespace problem } }")["placement"].(map[string]any)
		}
		// The fixture environment picks prod-eu and the "shop" target.
		pl := placement(f.EnvironmentID)
		if pl["cluster"].(map[string]any)["name"] != "prod-eu" || pl["namespace"] != "shop" || pl["problem"] != nil {
			t.Errorf("placement %v, want prod-eu/shop", pl)
		}
		// A second cluster with env=prod makes the protected environment
		// (selector env=prod) ambiguous.
		f.MustDo(t, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "prod-us", labels: [{key: "env", value: "prod"}]}) { userErrors { message } } }`,
			map[string]any{"t": f.TenantID})
		pl = placement(f.ProtectedEnvironmentID)
		problem, _ := pl["problem"].(string)
		if pl["cluster"] != nil || !strings.Contains(problem, "prod-eu") || !strings.Contains(problem, "prod-us") {
			t.Errorf("ambiguous placement %v, want no cluster and a problem naming both candidates", pl)
		}
		r := env.Do(t, f.Owner.Token, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } userErrors { message code } } }`,
			map[string]any{"s": f.ServiceID, "e": f.ProtectedEnvironmentID, "d": Digest(31337)})
		ue := r.UserErrors("deploy")
		if len(ue) != 1 || !strings.Contains(ue[0].Message, "prod-us") || r.Get("deploy.deployment") != nil {
			t.Errorf("deploy to an ambiguous environment: %s, want a userError naming the candidates", r.Body)
		}
		// A namespace selector that matches no target on the cluster.
		r = f.MustDo(t, `mutation($e: ID!) { updateEnvironment(input: {environmentId: $e, namespaceSelector: [{key: "tier", value: "batch"}]}) { userErrors { message } } }`,
			map[string]any{"e": f.EnvironmentID})
		pl = placement(f.EnvironmentID)
		if problem, _ := pl["problem"].(string); pl["cluster"] != nil || !strings.Contains(problem, "tier=batch") {
			t.Errorf("placement %v, want a problem naming the namespace selector", pl)
		}
	})
}

// Where the tenant admin defined namespace targets on a cluster, an
// environment there takes one of them: a project manager who clears the
// namespace selector, or leaves it out, is refused and nothing changes.
// On a cluster without targets the default namespace stays.
func TestNamespaceTargetsHold(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		pm := f.Users[ProjectManager].Token
		placement := func(id string) map[string]any {
			return f.Node(t, id, "... on Environment { placement { cluster { name } namespace problem } }")["placement"].(map[string]any)
		}
		refused := func(what string, r Response, field string) {
			t.Helper()
			ue := r.UserErrors(field)
			if len(ue) != 1 || strings.Join(ue[0].Field, ".") != "input.namespaceSelector" ||
				!strings.Contains(ue[0].Message, "cluster prod-eu") || !strings.Contains(ue[0].Message, "shop, shop-gated") {
				t.Errorf("%s: %s, want the namespace selector refused naming prod-eu and its targets", what, r.Body)
			}
		}
		r := env.Do(t, pm, `mutation($e: ID!) { updateEnvironment(input: {environmentId: $e, namespaceSelector: []}) { environment { id } userErrors { field message code } } }`,
			map[string]any{"e": f.EnvironmentID})
		refused("clearing the namespace selector", r, "updateEnvironment")
		if pl := placement(f.EnvironmentID); pl["namespace"] != "shop" {
			t.Errorf("after the refusal the environment places in %v, want shop", pl)
		}
		r = env.Do(t, pm, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "sneaky", clusterSelector: [{key: "env", value: "prod"}]}) { environment { id } userErrors { field message code } } }`,
			map[string]any{"p": f.ProjectID})
		refused("an environment without a namespace selector", r, "createEnvironment")
		envs := f.Node(t, f.ProjectID, "... on Project { environments(first: 20) { nodes { name } } }")["environments"].(map[string]any)["nodes"].([]any)
		if len(envs) != 2 {
			t.Errorf("the refused environment was stored: %v", envs)
		}

		f.MustDo(t, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "dev-eu", labels: [{key: "env", value: "dev"}]}) { userErrors { message } } }`,
			map[string]any{"t": f.TenantID})
		r = env.MustDo(t, pm, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "dev", clusterSelector: [{key: "env", value: "dev"}]}) { environment { id } userErrors { field message code } } }`,
			map[string]any{"p": f.ProjectID})
		if pl := placement(r.Str("createEnvironment.environment.id")); pl["namespace"] != "shop-dev" {
			t.Errorf("on a cluster without targets the environment places in %v, want shop-dev", pl)
		}
	})
}
