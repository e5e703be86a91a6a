package apitest

import (
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// historyRevision is a revision as the history query below selects it.
type historyRevision struct {
	Number    int
	Hash      string
	CreatedAt time.Time
	Cause     *struct {
		Action     string
		TargetType string
		TargetID   string
		Actor      *struct{ ID string }
	}
	Outcomes []struct {
		Agent  string
		Result string
		At     time.Time
		Errors []struct{ Object, Message string }
	}
}

const historyFields = `number hash createdAt cause { action targetType targetId actor { id } }
	outcomes { agent result at errors { object message } }`

// waitState waits until the agent was sent revision n, and returns it.
func (a *stageAgent) waitState(n int) protocol.Desired {
	a.t.Helper()
	var got protocol.Desired
	testutil.Eventually(a.t, 15*time.Second, "the agent gets its state", func() (bool, string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, d := range a.desired {
			if d.Revision == int64(n) {
				got = d
				return true, ""
			}
		}
		return false, "no state of that revision yet"
	})
	return got
}

// The revision history of a cluster: every revision, newest first and
// paged, with the audited change that caused it (a mutation, or an agent's
// report that ended a rollout), what the agent did with it, its state and a
// diff against any other revision; the heartbeat's hash confirms the
// active revision, and a hash that is not the revision's says so.
func TestRevisionHistory(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		agent, _ := connectStageAgent(t, f, "prod-eu")
		start := f.revision(t)
		secretValue := "s3cr3t-history-" + f.Unique("v")

		// Three changes: a deploy, a secret (a release of the service with
		// it, deployed), and the agent failing that release's rollout (it
		// leaves the desired state, and the deploy's release is back).
		depID, rawDep := wsDeploy(t, f)
		agent.waitDeployment(string(rawDep))
		f.MustDo(t, `mutation($p: ID!, $s: ID!, $v: String!) { setVariable(input: {projectId: $p, serviceId: $s, name: "DB_PASSWORD", value: $v, secret: true}) {
			variable { id } `+ue+` } }`, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": secretValue})
		cfgID := f.Node(t, f.EnvironmentID, "... on Environment { deployments(first: 1) { nodes { id } } }")["deployments"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["id"].(string)
		rawCfg := mustRaw[model.DeploymentID](t, gid.Deployment, cfgID)
		if cfgID == depID {
			t.Fatal("the secret made no deployment")
		}
		agent.waitDeployment(string(rawCfg))
		agent.report(string(rawCfg), model.StageFailed)
		agent.handled()
		top := f.revision(t)
		if top != start+3 {
			t.Fatalf("after a deploy, a secret and a failed rollout the revision is %d, want %d", top, start+3)
		}

		// What the agent does with them: revision top-2 applied; top-1
		// failed, then applied; top applied.
		agent.send(protocol.TypeAck, protocol.Ack{Revision: int64(top - 2), Result: protocol.ResultApplied})
		agent.send(protocol.TypeAck, protocol.Ack{Revision: int64(top - 1), Result: protocol.ResultFailed,
			Errors: []protocol.ObjectError{{Object: "Secret shop-prod/api-env", Message: "admission webhook denied it"}}})
		agent.handled()
		// The failure, typed, on the cluster until a revision applies.
		applyErrors := func() any {
			return f.MustDo(t, `query($c: ID!) { node(id: $c) { ... on Cluster { applyErrors { revision errors { object message } } } } }`,
				map[string]any{"c": f.ClusterID}).Get("node.applyErrors")
		}
		if got := applyErrors(); dig(got, "revision") != float64(top-1) || dig(got, "errors.0.object") != "Secret shop-prod/api-env" ||
			dig(got, "errors.0.message") != "admission webhook denied it" {
			t.Errorf("applyErrors after the failed apply: %v", got)
		}
		agent.send(protocol.TypeAck, protocol.Ack{Revision: int64(top - 1), Result: protocol.ResultApplied})
		agent.send(protocol.TypeAck, protocol.Ack{Revision: int64(top - 1), Result: protocol.ResultApplied})  // again, after a reconnect
		agent.send(protocol.TypeAck, protocol.Ack{Revision: int64(top + 40), Result: protocol.ResultApplied}) // no such revision
		agent.handled()
		if got := applyErrors(); got != nil {
			t.Errorf("applyErrors once the revision applied: %v, want null", got)
		}

		var endCursor, startCursor string
		page := func(vars map[string]any) ([]historyRevision, bool) {
			t.Helper()
			r := f.MustDo(t, `query($c: ID!, $first: Int, $after: String, $last: Int, $before: String) { node(id: $c) { ... on Cluster {
				revisions(first: $first, after: $after, last: $last, before: $before) { nodes { `+historyFields+` }
					pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } } }`, vars)
			endCursor, startCursor = r.Str("node.revisions.pageInfo.endCursor"), r.Str("node.revisions.pageInfo.startCursor")
			return decodeInto[[]historyRevision](t, r.Get("node.revisions.nodes")),
				r.Get("node.revisions.pageInfo.hasNextPage") == true || r.Get("node.revisions.pageInfo.hasPreviousPage") == true
		}
		first, more := page(map[string]any{"c": f.ClusterID, "first": 3})
		firstEnd := endCursor
		if len(first) != 3 || !more {
			t.Fatalf("the first page of 3: %d revisions, hasMore %v; want 3 and more (the fixture made %d before)", len(first), more, start)
		}
		for i, r := range first {
			if r.Number != top-i {
				t.Errorf("revision %d of the first page is %d, want %d (newest first)", i, r.Number, top-i)
			}
			if len(r.Hash) != 64 {
				t.Errorf("revision %d: hash %q", r.Number, r.Hash)
			}
		}
		// Causes: the audited changes, with who made them.
		for i, want := range []struct{ action, targetType string }{
			{"deployment.rollout_ended", "Deployment"}, {"variable.set", "Variable"}, {"deployment.create", "Deployment"},
		} {
			c := first[i].Cause
			switch {
			case c == nil:
				t.Errorf("revision %d has no cause, want %s", first[i].Number, want.action)
			case c.Action != want.action || c.TargetType != want.targetType:
				t.Errorf("revision %d was caused by %s on a %s, want %s on a %s", first[i].Number, c.Action, c.TargetType, want.action, want.targetType)
			}
		}
		if c := first[0].Cause; c != nil && (c.Actor != nil || c.TargetID != cfgID) {
			t.Errorf("the failed rollout's cause: actor %v, target %s; want no user and deployment %s", c.Actor, c.TargetID, cfgID)
		}
		if c := first[2].Cause; c != nil && (c.Actor == nil || c.Actor.ID != f.Owner.UserID || c.TargetID != depID) {
			t.Errorf("the deploy's cause: actor %v, target %s; want %s and %s", c.Actor, c.TargetID, f.Owner.UserID, depID)
		}
		// Outcomes: per agent, the first of each result, oldest first.
		const agentName = "nebula-agent-7f9c4-x2p"
		if o := first[2].Outcomes; len(o) != 1 || o[0].Agent != agentName || o[0].Result != "APPLIED" || len(o[0].Errors) != 0 {
			t.Errorf("outcomes of revision %d: %+v, want one APPLIED by %s", first[2].Number, o, agentName)
		}
		if o := first[1].Outcomes; len(o) != 2 || o[0].Result != "FAILED" || o[1].Result != "APPLIED" ||
			len(o[0].Errors) != 1 || o[0].Errors[0].Message != "admission webhook denied it" || o[0].At.After(o[1].At) {
			t.Errorf("outcomes of revision %d: %+v, want FAILED (with its error) then APPLIED", first[1].Number, o)
		}
		if o := first[0].Outcomes; len(o) != 0 {
			t.Errorf("revision %d, never acknowledged, has outcomes %+v", first[0].Number, o)
		}

		// The next page goes on where the first ended, down to revision 1.
		rest, more := page(map[string]any{"c": f.ClusterID, "first": 100, "after": firstEnd})
		if more || len(rest) != start || rest[0].Number != top-3 || rest[len(rest)-1].Number != 1 {
			t.Errorf("the rest: %d revisions from %d, hasMore %v; want %d from %d down to 1", len(rest), rest[0].Number, more, start, top-3)
		}
		// Backwards: the oldest two, then the two newer than them.
		oldest, more := page(map[string]any{"c": f.ClusterID, "last": 2})
		if !more || len(oldest) != 2 || oldest[0].Number != 2 || oldest[1].Number != 1 {
			t.Errorf("the oldest two: %+v (more %v), want 2 and 1, and more", oldest, more)
		}
		newer, _ := page(map[string]any{"c": f.ClusterID, "last": 2, "before": startCursor})
		if len(newer) != 2 || newer[0].Number != 4 || newer[1].Number != 3 {
			t.Errorf("the two newer than 2: %+v, want 4 and 3", newer)
		}
		if r := f.Env.Do(t, f.Owner.Token, `query($c: ID!) { node(id: $c) { ... on Cluster { revisions(first: 101) { pageInfo { hasNextPage } } } } }`,
			map[string]any{"c": f.ClusterID}); len(r.ErrorCodes()) == 0 || r.ErrorCodes()[0] != "BAD_USER_INPUT" {
			t.Errorf("a page of 101: codes %v, want BAD_USER_INPUT", r.ErrorCodes())
		}

		// One revision: state and diffs. The secret's revision changes
		// the Secret (secret values count through their versions) and
		// shows no value.
		r := f.MustDo(t, `query($c: ID!, $n: Int!) { node(id: $c) { ... on Cluster { revision(number: $n) {
			number hash state
			diff { from to added { kind name } changed { kind name } removed { kind name } nowHeld { service } released { service } }
			whole: diff(against: 0) { from added { kind } changed { kind } removed { kind } } } } } }`,
			map[string]any{"c": f.ClusterID, "n": top - 1})
		if strings.Contains(string(r.Body), secretValue) {
			t.Fatalf("the revision history shows the secret's value: %s", r.Body)
		}
		if !strings.Contains(mustJSON(t, r.Get("node.revision.state")), `"DB_PASSWORD"`) {
			t.Errorf("revision %d's state lacks the secret variable's name: %s", top-1, mustJSON(t, r.Get("node.revision.state")))
		}
		type object struct{ Kind, Name string }
		d := decodeInto[struct {
			From, To                int
			Added, Changed, Removed []object
			NowHeld, Released       []struct{ Service string }
		}](t, r.Get("node.revision.diff"))
		if d.From != top-2 || d.To != top-1 {
			t.Errorf("diff from %d to %d, want %d to %d", d.From, d.To, top-2, top-1)
		}
		secretTouched := false
		for _, o := range append(d.Added, d.Changed...) {
			secretTouched = secretTouched || o.Kind == "Secret"
		}
		// A secret is a release: the new release's Deployment and Secret
		// replace the old one's.
		replaced := len(d.Removed) == 2 && d.Removed[0].Kind == "Deployment" && d.Removed[1].Kind == "Secret"
		if !secretTouched || !replaced {
			t.Errorf("the secret's revision: added %v, changed %v, removed %v; want the Secret added or changed, and the old release's Deployment and Secret removed", d.Added, d.Changed, d.Removed)
		}
		whole := decodeInto[struct {
			From                    int
			Added, Changed, Removed []struct{ Kind string }
		}](t, r.Get("node.revision.whole"))
		if whole.From != 0 || len(whole.Added) < 3 || len(whole.Changed)+len(whole.Removed) != 0 {
			t.Errorf("diff against the empty state: %+v, want everything added", whole)
		}
		// The failed rollout's revision goes back: its Deployment leaves
		// and the one that ran before it returns.
		back := f.MustDo(t, `query($c: ID!, $n: Int!) { node(id: $c) { ... on Cluster { revision(number: $n) {
			diff { added { kind name } removed { kind name } } } } } }`, map[string]any{"c": f.ClusterID, "n": top})
		if len(back.List("node.revision.diff.added")) == 0 || len(back.List("node.revision.diff.removed")) == 0 {
			t.Errorf("the failed rollout's revision: %s; want a Deployment removed and the earlier one added", back.Get("node.revision.diff"))
		}
		// Against any other revision, in either direction.
		if r := f.MustDo(t, `query($c: ID!, $n: Int!, $a: Int!) { node(id: $c) { ... on Cluster { revision(number: $n) {
			diff(against: $a) { from to } } } } }`, map[string]any{"c": f.ClusterID, "n": 1, "a": top}); r.Get("node.revision.diff.from") != float64(top) {
			t.Errorf("diff of revision 1 against %d: %s", top, r.Body)
		}
		for _, bad := range []int{top + 5, -1} {
			r := f.Env.Do(t, f.Owner.Token, `query($c: ID!, $n: Int!, $a: Int!) { node(id: $c) { ... on Cluster { revision(number: $n) {
				diff(against: $a) { from } } } } }`, map[string]any{"c": f.ClusterID, "n": top, "a": bad})
			if codes := r.ErrorCodes(); len(codes) == 0 || codes[0] != "BAD_USER_INPUT" {
				t.Errorf("a diff against revision %d: codes %v, want BAD_USER_INPUT", bad, codes)
			}
		}
		if r := f.MustDo(t, `query($c: ID!, $n: Int!) { node(id: $c) { ... on Cluster { revision(number: $n) { number } } } }`,
			map[string]any{"c": f.ClusterID, "n": top + 5}); r.Get("node.revision") != nil {
			t.Errorf("a revision the cluster never had: %s, want null", r.Body)
		}

		// The heartbeat's hash. The agent hashes the state it was sent
		// (secrets open) as the control plane hashed it (redacted).
		active := func() map[string]any {
			t.Helper()
			v, _ := f.Node(t, f.ClusterID, `... on Cluster { activeRevision { number hash confirmed reportedAt } }`)["activeRevision"].(map[string]any)
			return v
		}
		if a := active(); a != nil {
			t.Errorf("before a heartbeat with a hash, activeRevision is %v, want null", a)
		}
		sent := agent.waitState(top)
		hash := sent.State.Hash()
		if hash != first[0].Hash {
			t.Fatalf("the agent's hash of revision %d is %s, the history says %s", top, hash, first[0].Hash)
		}
		heartbeat := func(rev int, hash string) {
			agent.send(protocol.TypeHeartbeat, protocol.Heartbeat{AppliedRevision: int64(rev), AppliedHash: hash, SentAt: time.Now().UTC()})
			agent.handled()
		}
		heartbeat(top, hash)
		if a := active(); a == nil || a["number"] != float64(top) || a["hash"] != hash || a["confirmed"] != true {
			t.Errorf("after a heartbeat with revision %d's own hash, activeRevision is %v, want it confirmed", top, a)
		}
		// The agent says it runs revision top-1 with top's hash: not
		// confirmed.
		heartbeat(top-1, hash)
		if a := active(); a == nil || a["number"] != float64(top-1) || a["confirmed"] != false {
			t.Errorf("after a heartbeat with another revision's hash, activeRevision is %v, want it unconfirmed", a)
		}
		// Something that is not a hash is not kept.
		heartbeat(top, "not a hash")
		if a := active(); a != nil {
			t.Errorf("after a heartbeat without a hash, activeRevision is %v, want null", a)
		}
	})
}
