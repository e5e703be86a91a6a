package apitest

import (
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/desired"
)

// A release carries its configuration (issue 32). In a protected
// environment a variable or domain change, by an editor or a project
// manager, is a change set of one and reaches the cluster only once another
// person approves it (the desired revision does not move before); the same value
// makes no release; rolling back to release N runs N's variables, domains
// and secret versions; a release shows what it froze, a secret with no
// value, and its diff against another.
func TestReleasesCarryTheirConfiguration(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		editor, pm := f.Users[Editor].Token, f.Users[ProjectManager].Token
		svc := f.NewService(t, f.ProjectID, "billing") // deployed to the protected environment only
		gated := f.ProtectedEnvironmentID
		state := func() (int, desired.Service) {
			t.Helper()
			st := decodeInto[shownState](t, f.Node(t, f.ClusterID, `... on Cluster { desiredState }`)["desiredState"])
			return int(st.Revision), servicesOf(st.State)["billing"]
		}
		// newest is the newest deployment of billing in the protected
		// environment: its id, stage and release number.
		newest := func() (string, string, int) {
			t.Helper()
			n := f.Node(t, gated, `... on Environment { deployments(first: 20) { nodes { id stage release { number service { name } } } } }`)
			for _, d := range n["deployments"].(map[string]any)["nodes"].([]any) {
				d := d.(map[string]any)
				if rel := d["release"].(map[string]any); rel["service"].(map[string]any)["name"] == "billing" {
					return d["id"].(string), d["stage"].(string), int(d["release"].(map[string]any)["number"].(float64))
				}
			}
			t.Fatal("billing has no deployment in the protected environment")
			return "", "", 0
		}
		approve := func(token, id string) {
			t.Helper()
			env.MustDo(t, token, `mutation($d: ID!) { approveDeployment(input: {deploymentId: $d}) { deployment { id } `+ue+` } }`, map[string]any{"d": id})
		}
		// waits says the change answered res made a change set of one,
		// submitted, and that the cluster still runs revision rev; it
		// returns the set's id.
		waits := func(what string, res Response, field string, rev int) string {
			t.Helper()
			set, _ := res.Get(field + ".changeSet").(map[string]any)
			if set == nil || set["state"] != "SUBMITTED" || set["direct"] != true {
				t.Fatalf("%s: %s; want a direct change set awaiting approval", what, res.Body)
			}
			if got, _ := state(); got != rev {
				t.Fatalf("%s reached the cluster before its approval: revision %d, want %d", what, got, rev)
			}
			return set["id"].(string)
		}
		approveSet := func(token, id string) {
			t.Helper()
			res := env.MustDo(t, token, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c, comment: "ok"}) { changeSet { state } `+ue+` } }`, map[string]any{"c": id})
			if res.Str("approveChangeSet.changeSet.state") != "APPLIED" {
				t.Fatalf("approving a direct change's set: %s, want it APPLIED", res.Body)
			}
		}

		f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } `+ue+` } }`,
			map[string]any{"s": svc, "e": gated, "d": Digest(3201)})
		first, _, _ := newest()
		approve(pm, first)
		rev0, run := state()
		if run.Release != 1 {
			t.Fatalf("billing runs release %d, want 1", run.Release)
		}
		domain0 := run.Domains[0].Host

		// An editor's variable.
		setVar := func(token, name, value string, secret bool) Response {
			t.Helper()
			return env.MustDo(t, token, `mutation($p: ID!, $s: ID!, $n: String!, $v: String!, $x: Boolean) { setVariable(input: {projectId: $p, serviceId: $s, name: $n, value: $v, secret: $x}) {
				variable { id } changeSet { id state direct } `+ue+` } }`, map[string]any{"p": f.ProjectID, "s": svc, "n": name, "v": value, "x": secret})
		}
		id := waits("an editor's variable", setVar(editor, "FEATURE_FLAG", "on-in-prod", false), "setVariable", rev0)
		if r := env.Do(t, editor, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c}) { changeSet { id } `+ue+` } }`, map[string]any{"c": id}); len(r.ErrorCodes()) == 0 {
			t.Fatalf("the editor approved the change: %s", r.Body)
		}
		approveSet(pm, id)
		rev1, run := state()
		if ev, _ := envVar(run, "FEATURE_FLAG"); rev1 != rev0+1 || run.Release != 2 || ev.Value != "on-in-prod" {
			t.Fatalf("after the approval: revision %d, release %d, FEATURE_FLAG %q; want revision %d, release 2, on-in-prod", rev1, run.Release, ev.Value, rev0+1)
		}

		// The same value again makes no release, and no change set.
		if res := setVar(editor, "FEATURE_FLAG", "on-in-prod", false); res.Get("setVariable.changeSet") != nil {
			t.Fatalf("the same value made a change set: %s", res.Body)
		}
		if _, _, n := newest(); n != 2 {
			t.Fatalf("the same value made release %d", n)
		}

		// A project manager's domain change, and a secret.
		res := env.MustDo(t, pm, `mutation($s: ID!) { updateService(input: {serviceId: $s, domains: [{host: "pay.example.com", process: "web"}]}) { service { id } changeSet { id state direct } `+ue+` } }`,
			map[string]any{"s": svc})
		approveSet(f.Owner.Token, waits("a domain change", res, "updateService", rev1))
		approveSet(f.Owner.Token, waits("a secret", setVar(pm, "TOKEN", "first-secret-value", true), "setVariable", mustRev(state)))
		_, run = state()
		v4, _ := envVar(run, "TOKEN")
		approveSet(f.Owner.Token, waits("a second value of the secret", setVar(pm, "TOKEN", "second-secret-value", true), "setVariable", mustRev(state)))
		_, run = state()
		if v5, _ := envVar(run, "TOKEN"); v5.Version == v4.Version || run.Release != 5 || len(run.Domains) != 1 || run.Domains[0].Host != "pay.example.com" {
			t.Fatalf("release %d runs TOKEN version %s (release 4: %s) and domains %v", run.Release, v5.Version, v4.Version, run.Domains)
		}

		// Release 5 shows what it froze and what changed since release 1.
		rels := f.Node(t, svc, `... on Service { releases(first: 10) { nodes { id number variables { name scope value secret } } } }`)["releases"].(map[string]any)["nodes"].([]any)
		byNumber := map[int]map[string]any{}
		for _, r := range rels {
			r := r.(map[string]any)
			byNumber[int(r["number"].(float64))] = r
		}
		r5 := mustJSON(t, byNumber[5]["variables"])
		if !strings.Contains(r5, `{"name":"TOKEN","scope":"SERVICE","secret":true,"value":null}`) || !strings.Contains(r5, `"FEATURE_FLAG"`) ||
			strings.Contains(r5, "secret-value") {
			t.Fatalf("release 5's variables: %s; want FEATURE_FLAG and TOKEN without a value", r5)
		}
		diff := env.MustDo(t, f.Owner.Token, `query($r: ID!, $a: ID!) { node(id: $r) { ... on Release { diff(against: $a) {
			from { number } to { number } image { from to } processes { name change } domains { name change } variables { name change secret } } } } }`,
			map[string]any{"r": byNumber[5]["id"], "a": byNumber[4]["id"]}).Get("node.diff")
		if got := mustJSON(t, diff); got != `{"domains":[],"from":{"number":4},"image":null,"processes":[],"to":{"number":5},"variables":[{"change":"CHANGED","name":"TOKEN","secret":true}]}` {
			t.Errorf("release 5 against 4: %s", got)
		}
		diff = env.MustDo(t, f.Owner.Token, `query($r: ID!, $a: ID!) { node(id: $r) { ... on Release { diff(against: $a) {
			domains { name change } variables { name change secret } } } } }`,
			map[string]any{"r": byNumber[5]["id"], "a": byNumber[1]["id"]}).Get("node.diff")
		if got := mustJSON(t, diff); got != `{"domains":[{"change":"REMOVED","name":"`+domain0+`"},{"change":"ADDED","name":"pay.example.com"}],"variables":[{"change":"ADDED","name":"FEATURE_FLAG","secret":false},{"change":"ADDED","name":"TOKEN","secret":true}]}` {
			t.Errorf("release 5 against 1: %s", got)
		}
		if r := env.Do(t, f.Owner.Token, `query($r: ID!, $a: ID!) { node(id: $r) { ... on Release { diff(against: $a) { from { number } } } } }`,
			map[string]any{"r": byNumber[5]["id"], "a": f.ReleaseID}); len(r.ErrorCodes()) == 0 || r.ErrorCodes()[0] != "BAD_USER_INPUT" {
			t.Errorf("a diff against another service's release: %s, want BAD_USER_INPUT", r.Body)
		}

		// Rollback to release 4 runs its secret version; to release 1, its
		// variables and domain.
		rollback := func(n int) {
			t.Helper()
			env.MustDo(t, pm, `mutation($s: ID!, $e: ID!, $n: Int!) { rollback(input: {serviceId: $s, environmentId: $e, releaseNumber: $n}) { deployment { id } `+ue+` } }`,
				map[string]any{"s": svc, "e": gated, "n": n})
			id, _, _ := newest()
			approve(f.Owner.Token, id)
		}
		rollback(4)
		if _, run = state(); run.Release != 4 {
			t.Fatalf("after rolling back to release 4 billing runs release %d", run.Release)
		}
		if v, _ := envVar(run, "TOKEN"); v.Version != v4.Version {
			t.Errorf("release 4 rolled back to runs TOKEN version %s, want the one it froze, %s", v.Version, v4.Version)
		}
		rollback(1)
		_, run = state()
		if _, ok := envVar(run, "FEATURE_FLAG"); ok || run.Release != 1 || len(run.Domains) != 1 || run.Domains[0].Host != domain0 {
			t.Errorf("release 1 rolled back to runs release %d, FEATURE_FLAG set %v, domains %v; want release 1's: no flag, %s", run.Release, ok, run.Domains, domain0)
		}
		if strings.Contains(mustJSON(t, f.Node(t, f.ClusterID, `... on Cluster { desiredState }`)), "secret-value") {
			t.Error("the desired state shows a secret's value")
		}

		// An editor's change of processes waits the same way.
		rev := mustRev(state)
		res = env.MustDo(t, editor, `mutation($s: ID!) { updateService(input: {serviceId: $s, processes: [{name: "web", command: ["./api", "serve"],
			replicas: 5, port: 8080, readinessProbe: {path: "/healthz", port: 8080}}]}) { service { id } changeSet { id state direct } `+ue+` } }`,
			map[string]any{"s": svc})
		approveSet(pm, waits("an editor's process change", res, "updateService", rev))
		if got, run := state(); got != rev+1 || len(run.Processes) != 1 || run.Processes[0].Replicas != 5 {
			t.Errorf("after approving the process change: revision %d (want %d), processes %+v; want web with 5 replicas", got, rev+1, run.Processes)
		}
	})
}

func mustRev(state func() (int, desired.Service)) int {
	rev, _ := state()
	return rev
}
