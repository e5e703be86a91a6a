package apitest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// Change sets through the API, on both stores (issue 32): five changes
// over two services and two environments (one protected) — variables, a
// secret, a domain, an image deploy — added with changeSetId, previewed
// as a whole, refused before an approval, never approved by an author,
// then applied as one desired revision of the cluster; the secret's value
// is never shown; another tenant sees nothing. A viewer's changeSetUpdated
// subscription sees each step; a project endpoint is told of them.
func TestChangeSetThroughTheAPI(t *testing.T) {
	t.Parallel()
	eachWebhookStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		editor, pm, owner := f.Users[Editor].Token, f.Users[ProjectManager].Token, f.Owner.Token
		endpoint, _ := f.newEndpoint(t, f.ProjectID, newReceiver(t).URL, "CHANGESET_SUBMITTED", "CHANGESET_APPROVED",
			"CHANGESET_REJECTED", "CHANGESET_APPLIED")
		sub := subscribeOn(t, env, f.Users[Viewer].Token, `subscription($p: ID!) { changeSetUpdated(projectId: $p) { id state } }`,
			map[string]any{"p": f.ProjectID})
		api, ledger := f.NewService(t, f.ProjectID, "api-cs"), f.NewService(t, f.ProjectID, "ledger")
		envs := []string{f.EnvironmentID, f.ProtectedEnvironmentID}
		for i, svc := range []string{api, ledger} {
			for _, e := range envs {
				res := f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id stage } `+ue+` } }`,
					map[string]any{"s": svc, "e": e, "d": Digest(int64(4100 + i))})
				if res.Str("deploy.deployment.stage") == "AWAITING_APPROVAL" {
					env.MustDo(t, pm, `mutation($d: ID!) { approveDeployment(input: {deploymentId: $d}) { deployment { id } `+ue+` } }`,
						map[string]any{"d": res.Str("deploy.deployment.id")})
				}
			}
		}
		revision := func() int {
			t.Helper()
			return int(decodeInto[shownState](t, f.Node(t, f.ClusterID, `... on Cluster { desiredState }`)["desiredState"]).Revision)
		}

		set := env.MustDo(t, editor, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "ledger goes live"}) { changeSet { id number state } `+ue+` } }`,
			map[string]any{"p": f.ProjectID})
		id := set.Str("openChangeSet.changeSet.id")
		// The subscription is live once it shows the set: a comment (made
		// after it was asked for) is a change it sends, whether its first
		// read or a note brings it.
		env.MustDo(t, editor, `mutation($c: ID!) { commentOnChangeSet(input: {changeSetId: $c, body: "first"}) { changeSet { id } `+ue+` } }`,
			map[string]any{"c": id})
		testutil.Eventually(t, 15*time.Second, "the subscription to show the open set", func() (bool, string) {
			return slices.Contains(sub.values("changeSetUpdated.id"), id), fmt.Sprint(sub.values("changeSetUpdated.state"))
		})
		add := func(token, query string, vars map[string]any) {
			t.Helper()
			vars["c"] = id
			env.MustDo(t, token, query, vars)
		}
		const secret = "ledger-signing-key-0123456789"
		add(editor, `mutation($p: ID!, $s: ID!, $c: ID) { setVariable(input: {projectId: $p, serviceId: $s, name: "FEATURE_LEDGER", value: "on", changeSetId: $c}) { variable { id } changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "s": api})
		add(editor, `mutation($p: ID!, $s: ID!, $c: ID, $v: String!) { setVariable(input: {projectId: $p, serviceId: $s, name: "SIGNING_KEY", value: $v, secret: true, changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "s": ledger, "v": secret})
		add(editor, `mutation($s: ID!, $c: ID) { updateService(input: {serviceId: $s, domains: [{host: "ledger-cs.example.com", process: "web"}], changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"s": ledger})
		add(editor, `mutation($s: ID!, $e: ID!, $d: String!, $c: ID) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d, changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"s": ledger, "e": f.EnvironmentID, "d": Digest(4199)})
		// An environment's variable is a project manager's: the project
		// manager is an author of the set too.
		add(pm, `mutation($p: ID!, $e: ID!, $c: ID) { setVariable(input: {projectId: $p, environmentId: $e, name: "REGION", value: "eu", changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "e": f.ProtectedEnvironmentID})

		const view = `query($c: ID!) { node(id: $c) { ... on ChangeSet { state changes { sequence kind summary value secret author { email } }
			preview { clusters { cluster { id } } releases { release { number service { name } environment { id } } diff { variables { name change secret } domains { name change } image { to } } } ` + ue + ` } } } }`
		got := env.MustDo(t, editor, view, map[string]any{"c": id})
		changes := got.Get("node.changes").([]any)
		if len(changes) != 5 {
			t.Fatalf("the set holds %d changes: %s", len(changes), got.Body)
		}
		if strings.Contains(string(got.Body), secret) {
			t.Fatal("the set shows the secret's value")
		}
		releases := got.Get("node.preview.releases").([]any)
		if len(releases) != 4 || len(got.Get("node.preview.clusters").([]any)) != 1 {
			t.Fatalf("the preview: %s; want 4 releases on one cluster", got.Body)
		}

		rev := revision()
		if r := env.Do(t, editor, `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`,
			map[string]any{"c": id}); r.Str("applyChangeSet.userErrors.0.code") != "CONFLICT" {
			t.Fatalf("applying before the approval: %s, want a CONFLICT", r.Body)
		}
		env.MustDo(t, editor, `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`, map[string]any{"c": id})
		if r := env.Do(t, pm, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`,
			map[string]any{"c": id}); r.Str("approveChangeSet.userErrors.0.code") != "FORBIDDEN" {
			t.Fatalf("an author's approval: %s, want FORBIDDEN", r.Body)
		}
		if r := env.Do(t, editor, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`,
			map[string]any{"c": id}); len(r.ErrorCodes()) == 0 || r.ErrorCodes()[0] != "FORBIDDEN" {
			t.Fatalf("an editor's approval: %s, want FORBIDDEN", r.Body)
		}
		if r := env.Do(t, env.NewFixture(t).Owner.Token, `query($c: ID!) { node(id: $c) { id } }`, map[string]any{"c": id}); r.Get("node") != nil {
			t.Fatalf("another tenant reads the set: %s", r.Body)
		}
		if got := revision(); got != rev {
			t.Fatalf("the revision moved %d → %d before the set was applied", rev, got)
		}
		env.MustDo(t, owner, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c, comment: "ship it"}) { changeSet { state } `+ue+` } }`, map[string]any{"c": id})
		applied := env.MustDo(t, editor, `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) { changeSet { state deployments { stage } comments(first: 100) { nodes { body decision } } } `+ue+` } }`,
			map[string]any{"c": id})
		if applied.Str("applyChangeSet.changeSet.state") != "APPLIED" || len(applied.Get("applyChangeSet.changeSet.deployments").([]any)) != 4 {
			t.Fatalf("applying: %s; want APPLIED with 4 deployments", applied.Body)
		}
		if strings.Contains(string(applied.Body), "AWAITING_APPROVAL") {
			t.Fatalf("a deployment of the approved set waits for another approval: %s", applied.Body)
		}
		if got := revision(); got != rev+1 {
			t.Fatalf("applying moved the revision %d → %d, want one revision", rev, got)
		}
		st := decodeInto[shownState](t, f.Node(t, f.ClusterID, `... on Cluster { desiredState }`)["desiredState"])
		if strings.Contains(mustJSON(t, st), secret) {
			t.Fatal("the desired state shows the secret's value")
		}

		// The viewer saw the set's steps, in order.
		testutil.Eventually(t, 15*time.Second, "the subscription to show the set's steps", func() (bool, string) {
			var states []string
			for i, sid := range sub.values("changeSetUpdated.id") {
				if sid == id && i < len(sub.values("changeSetUpdated.state")) {
					if st := sub.values("changeSetUpdated.state")[i]; len(states) == 0 || states[len(states)-1] != st {
						states = append(states, st)
					}
				}
			}
			// In order, ending APPLIED; steps that follow each other
			// faster than the subscriber reads arrive as the latest.
			in := []string{"OPEN", "SUBMITTED", "APPROVED", "APPLIED"}
			at := -1
			for _, st := range states {
				i := slices.Index(in, st)
				if i <= at {
					return false, fmt.Sprintf("out of order: %v", states)
				}
				at = i
			}
			return len(states) >= 2 && states[0] == "OPEN" && states[len(states)-1] == "APPLIED", fmt.Sprint(states)
		})
		// A rejected set is told of too; the endpoint got one message per
		// step, with ids and no secret.
		other := env.MustDo(t, editor, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "not this one"}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID}).Str("openChangeSet.changeSet.id")
		env.MustDo(t, editor, `mutation($p: ID!, $s: ID!, $c: ID) { setVariable(input: {projectId: $p, serviceId: $s, name: "NOPE", value: "1", changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "s": api, "c": other})
		// Removing a change it does not have names the input field.
		if r := env.Do(t, editor, `mutation($c: ID!) { removeChangeSetChange(input: {changeSetId: $c, sequence: 9}) { changeSet { id } `+ue+` } }`,
			map[string]any{"c": other}); len(r.UserErrors("removeChangeSetChange")) != 1 || strings.Join(r.UserErrors("removeChangeSetChange")[0].Field, ".") != "input.sequence" {
			t.Errorf("removing change 9 of a set of one: %s, want a userError at input.sequence", r.Body)
		}
		env.MustDo(t, editor, `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) { changeSet { id } `+ue+` } }`, map[string]any{"c": other})
		rev = revision()
		env.MustDo(t, owner, `mutation($c: ID!) { rejectChangeSet(input: {changeSetId: $c, comment: "no"}) { changeSet { id } `+ue+` } }`, map[string]any{"c": other})
		if r := env.Do(t, editor, `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`,
			map[string]any{"c": other}); r.Str("applyChangeSet.userErrors.0.code") != "CONFLICT" || revision() != rev {
			t.Fatalf("applying a rejected set: %s (revision %d → %d); want a CONFLICT and no revision", r.Body, rev, revision())
		}

		// A set made against a variable that changed since is refused,
		// naming the change; the direct change that moved it (a change set
		// of one: it reaches the protected environment) went first.
		stale := env.MustDo(t, editor, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "stale"}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID}).Str("openChangeSet.changeSet.id")
		env.MustDo(t, editor, `mutation($p: ID!, $s: ID!, $c: ID) { setVariable(input: {projectId: $p, serviceId: $s, name: "FEATURE_LEDGER", value: "off", changeSetId: $c}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "s": api, "c": stale})
		direct := env.MustDo(t, pm, `mutation($p: ID!, $s: ID!) { setVariable(input: {projectId: $p, serviceId: $s, name: "FEATURE_LEDGER", value: "half"}) { variable { id } changeSet { id state direct } `+ue+` } }`,
			map[string]any{"p": f.ProjectID, "s": api})
		if direct.Get("setVariable.variable") != nil || direct.Str("setVariable.changeSet.state") != "SUBMITTED" {
			t.Fatalf("a direct change reaching the protected environment: %s; want a change set of one, awaiting approval", direct.Body)
		}
		env.MustDo(t, owner, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`,
			map[string]any{"c": direct.Str("setVariable.changeSet.id")})
		env.MustDo(t, editor, `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) { changeSet { id } `+ue+` } }`, map[string]any{"c": stale})
		env.MustDo(t, owner, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`, map[string]any{"c": stale})
		rev = revision()
		r := env.Do(t, editor, `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) { changeSet { state } `+ue+` } }`, map[string]any{"c": stale})
		if r.Str("applyChangeSet.userErrors.0.code") != "CONFLICT" || !strings.Contains(r.Str("applyChangeSet.userErrors.0.message"), "variable FEATURE_LEDGER of service api-cs set") ||
			revision() != rev {
			t.Fatalf("applying a stale set: %s (revision %d → %d); want a CONFLICT naming the variable, and no revision", r.Body, rev, revision())
		}
		var kinds []string
		for _, m := range f.messages(t, endpoint) {
			kinds = append(kinds, m["eventType"].(string))
			if p := fmt.Sprint(m["payload"]); strings.Contains(p, secret) || !strings.Contains(p, "changeSetId") {
				t.Errorf("message %v: want the set's id and no secret", p)
			}
		}
		if want := []string{"CHANGESET_SUBMITTED", "CHANGESET_APPROVED", "CHANGESET_APPLIED", "CHANGESET_SUBMITTED", "CHANGESET_REJECTED",
			"CHANGESET_SUBMITTED", "CHANGESET_APPROVED", "CHANGESET_APPLIED", "CHANGESET_SUBMITTED", "CHANGESET_APPROVED"}; !slices.Equal(kinds, want) {
			t.Errorf("the endpoint's messages: %v, want %v", kinds, want)
		}

		// A direct change's preview shows the release it would make, and
		// what changes from the one in force.
		pv := env.MustDo(t, editor, `query($p: ID!, $s: ID!) { previewSetVariable(input: {projectId: $p, serviceId: $s, name: "PREVIEWED", value: "1"}) {
			clusters { releases { release { number } diff { variables { name change } } } } `+ue+` } }`, map[string]any{"p": f.ProjectID, "s": api})
		if got := mustJSON(t, pv.Get("previewSetVariable.clusters")); !strings.Contains(got, `"variables":[{"change":"ADDED","name":"PREVIEWED"}]`) {
			t.Errorf("the preview of a variable: %s; want the release it makes with PREVIEWED added", got)
		}
	})
}
