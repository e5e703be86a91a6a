package apitest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// Small leaks: what one caller's answers may not tell them about what they
// cannot see — another tenant's users, a secret's value, another project's
// commands.

// normalized is a response body with what differs by nature between two
// calls (ids, times, token secrets and prefixes, and the listed literals,
// such as the emails) replaced by placeholders, so that two answers can be
// compared whole.
func normalized(t *testing.T, v any, literals ...string) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, l := range literals {
		s = strings.ReplaceAll(s, l, "<literal>")
	}
	for _, r := range []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`"(id|userId|targetId|memberId)":"[^"]*"`), `"$1":"<id>"`},
		{regexp.MustCompile(`"(createdAt|updatedAt|expiresAt|lastUsedAt)":"[^"]*"`), `"$1":"<time>"`},
		{regexp.MustCompile(`nbt_[A-Za-z0-9]+`), `<token>`},
	} {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// A tenant admin adding a member by email learns nothing about whether
// that email is a user of another tenant: the answer — and everything
// reachable from the member, afterwards too — is the same as for an email
// never seen, whatever kind the other tenant gave the user. The tenant
// sees the name and kind it gave; the other tenant keeps seeing its own.
func TestAddMemberDisclosesNoOtherTenantsUser(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		a, b := env.NewFixture(t), env.NewFixture(t)

		const memberFields = `member { id role createdAt tenant { id } user { id email name kind createdAt } }`
		add := func(t *testing.T, f *Fixture, email, name, kind string) Response {
			t.Helper()
			return env.Do(t, f.Owner.Token, `mutation($t: ID!, $email: String!, $name: String!, $kind: UserKind!) {
				addMember(input: {tenantId: $t, email: $email, name: $name, role: MEMBER, kind: $kind}) { `+memberFields+` `+ue+` } }`,
				map[string]any{"t": f.TenantID, "email": email, "name": name, "kind": kind})
		}
		// afterwards reads, as b's admin, what b can reach of the member
		// and its user right after adding it: the member again, the
		// audit event of the addition, and a token minted for the user.
		afterwards := func(t *testing.T, res Response) []any {
			t.Helper()
			member, user := res.Str("addMember.member.id"), res.Str("addMember.member.user.id")
			if member == "" {
				return nil // not added: the answer itself is compared
			}
			read := env.MustDo(t, b.Owner.Token, `query($m: ID!, $u: ID!) {
				m: node(id: $m) { ... on Member { role createdAt user { email name kind createdAt } } }
				u: node(id: $u) { ... on User { email name kind createdAt } } }`, map[string]any{"m": member, "u": user})
			audit := env.MustDo(t, b.Owner.Token, `query($t: ID!) { node(id: $t) { ... on Tenant {
				auditEvents(first: 1, filter: {action: "member.add"}) { nodes { action targetType details } } } } }`,
				map[string]any{"t": b.TenantID})
			token := env.Do(t, b.Owner.Token, `mutation($u: ID!) { createApiToken(input: {name: "probe", userId: $u}) {
				apiToken { id name prefix user { email name kind createdAt } } secret `+ue+` } }`, map[string]any{"u": user})
			return []any{read.Data, audit.Data, token.Data, token.ErrorCodes()}
		}

		for _, tc := range []struct{ name, theirKind, ourKind string }{
			{"a person added as a person", "HUMAN", "HUMAN"},
			{"a person added as an integration", "HUMAN", "INTEGRATION"},
			{"an integration added as a person", "INTEGRATION", "HUMAN"},
			{"an integration added as an integration", "INTEGRATION", "INTEGRATION"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				theirs := strings.ToLower(a.Unique("Theirs")) + "@elsewhere.test"
				add(t, a, theirs, "Named By A", tc.theirKind)
				fresh := a.Unique("fresh") + "@elsewhere.test"

				gotTheirs := add(t, b, "  "+strings.ToUpper(theirs)+" ", "Named By B", tc.ourKind)
				afterTheirs := afterwards(t, gotTheirs)
				gotFresh := add(t, b, fresh, "Named By B", tc.ourKind)
				afterFresh := afterwards(t, gotFresh)
				if n, f := normalized(t, gotTheirs.Data, theirs), normalized(t, gotFresh.Data, fresh); n != f {
					t.Errorf("adding another tenant's user:\n got %s\nwant %s (as for a new email)", n, f)
				}
				if n, f := normalized(t, gotTheirs.ErrorCodes()), normalized(t, gotFresh.ErrorCodes()); n != f {
					t.Errorf("error codes: got %s, want %s", n, f)
				}
				for _, res := range []Response{gotTheirs, gotFresh} {
					// The user as b knows them: since b added them.
					if u, m := res.Str("addMember.member.user.createdAt"), res.Str("addMember.member.createdAt"); u != m {
						t.Errorf("user.createdAt %s, want the member's createdAt %s", u, m)
					}
				}
				if n, f := normalized(t, afterTheirs, theirs), normalized(t, afterFresh, fresh); n != f {
					t.Errorf("what b reaches afterwards of another tenant's user:\n got %s\nwant %s (as for a new email)", n, f)
				}

				// a still sees the user as it named them.
				res := env.MustDo(t, a.Owner.Token, `query($t: ID!) { node(id: $t) { ... on Tenant {
					members(first: 100) { nodes { user { email name kind } } } } } }`, map[string]any{"t": a.TenantID})
				found := false
				for _, m := range res.List("node.members.nodes") {
					if dig(m, "user.email") == theirs {
						found = true
						if dig(m, "user.name") != "Named By A" || dig(m, "user.kind") != tc.theirKind {
							t.Errorf("tenant a sees its user as %v, want Named By A, %s", m, tc.theirKind)
						}
					}
				}
				if !found {
					t.Errorf("tenant a lost its member %s", theirs)
				}
			})
		}
	})
}

// A preview of setting a secret is no oracle: guessing the stored value
// and guessing wrong give the same answer, as do the writes themselves
// (a secret set is a new version, whatever its value was).
func TestSecretGuessesLookAlike(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		const right, wrong = "the-right-value", "a-wrong-guess"
		set := func(t *testing.T, value string) Response {
			t.Helper()
			return f.MustDo(t, `mutation($p: ID!, $s: ID!, $v: String!) {
				setVariable(input: {projectId: $p, serviceId: $s, name: "API_KEY", value: $v, secret: true}) {
					variable { id name secret value status updatedAt } `+ue+` } }`,
				map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": value})
		}
		set(t, right)

		const diff = `clusters { cluster { id } fromRevision added { kind namespace name } changed { kind namespace name }
			removed { kind namespace name } nowHeld { service reason } released { service } } ` + ue
		for _, tc := range []struct {
			name  string
			guess func(t *testing.T, value string) Response
		}{
			{"previewSetVariable", func(t *testing.T, v string) Response {
				return env.Do(t, f.Users[Editor].Token, `query($p: ID!, $s: ID!, $v: String!) {
					previewSetVariable(input: {projectId: $p, serviceId: $s, name: "API_KEY", value: $v, secret: true}) { `+diff+` } }`,
					map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": v})
			}},
			{"previewUpdateService", func(t *testing.T, v string) Response {
				return env.Do(t, f.Users[Editor].Token, `query($s: ID!, $v: String!) {
					previewUpdateService(input: {serviceId: $s, variables: [{name: "LOG_LEVEL", value: "info"},
						{name: "API_KEY", value: $v, secret: true}]}) { `+diff+` } }`,
					map[string]any{"s": f.ServiceID, "v": v})
			}},
			{"setVariable", func(t *testing.T, v string) Response {
				// The write answers like the preview: what changed.
				before := f.revision(t)
				res := set(t, v)
				after := f.revision(t)
				res.Data["_revisionMoved"] = after != before
				set(t, right) // the stored value is the right one again
				return res
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				gotRight, gotWrong := tc.guess(t, right), tc.guess(t, wrong)
				if r, w := normalized(t, gotRight.Data), normalized(t, gotWrong.Data); r != w {
					t.Errorf("the right guess answers\n%s\nand a wrong one\n%s\nwant the same", r, w)
				}
				if r, w := normalized(t, gotRight.ErrorCodes()), normalized(t, gotWrong.ErrorCodes()); r != w {
					t.Errorf("error codes: the right guess %s, a wrong one %s", r, w)
				}
				if strings.Contains(string(gotRight.Body)+string(gotWrong.Body), right) {
					t.Error("an answer holds the secret")
				}
			})
		}
	})
}

// Cluster.commands shows a command of a project (a restart of one of its
// services) only to callers who may read that project; to others it does
// not exist. Cluster-wide commands are the tenant's.
func TestClusterCommandsFollowProjectAccess(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		restart := f.MustDo(t, `mutation($c: ID!, $e: ID!, $s: ID!) { queueCommand(input: {clusterId: $c, kind: RESTART_PROCESS,
			environmentId: $e, serviceId: $s, process: "web"}) { command { id } `+ue+` } }`,
			map[string]any{"c": f.ClusterID, "e": f.EnvironmentID, "s": f.ServiceID}).Str("queueCommand.command.id")
		resync := f.MustDo(t, `mutation($c: ID!) { queueCommand(input: {clusterId: $c, kind: RESYNC}) { command { id } `+ue+` } }`,
			map[string]any{"c": f.ClusterID}).Str("queueCommand.command.id")

		for _, tc := range []struct {
			role        Role
			wantList    []string // newest first
			wantRestart bool
		}{
			{Admin, []string{resync, restart}, true},
			{Viewer, []string{resync, restart}, true},
			{Member, []string{resync}, false},
		} {
			t.Run(string(tc.role), func(t *testing.T) {
				tok := f.Users[tc.role].Token
				res := env.MustDo(t, tok, `query($c: ID!) { node(id: $c) { ... on Cluster {
					commands(first: 10) { nodes { id kind args { namespace service process } requestedBy { id } } } } } }`, map[string]any{"c": f.ClusterID})
				if got := res.IDs("node.commands.nodes"); strings.Join(got, ",") != strings.Join(tc.wantList, ",") {
					t.Errorf("commands: got %v, want %v", got, tc.wantList)
				}
				if body := string(res.Body); !tc.wantRestart && (strings.Contains(body, `"service":"api"`) || strings.Contains(body, `"namespace":"shop"`)) {
					t.Errorf("the restart's details show: %s", body)
				}
				one := env.Do(t, tok, `query($id: ID!) { node(id: $id) { ... on Command { kind args { namespace service process } requestedBy { id } } } }`,
					map[string]any{"id": restart})
				switch codes := one.ErrorCodes(); {
				case tc.wantRestart && len(codes) > 0:
					t.Errorf("node(restart command): got errors %v, want it", codes)
				case !tc.wantRestart && (len(codes) != 1 || codes[0] != "NOT_FOUND" || one.Get("node") != nil):
					t.Errorf("node(restart command): got %s, want null with NOT_FOUND", one.Body)
				}
			})
		}
	})
}
