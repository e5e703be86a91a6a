package apitest

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		revoked := f.NewCaller(t, "revoked", "MEMBER")
		env.MustDo(t, f.Owner.Token, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { `+ue+` } }`,
			map[string]any{"id": revoked.TokenID})
		removed := f.NewCaller(t, "removed", "MEMBER")
		env.MustDo(t, f.Owner.Token, `mutation($id: ID!) { removeMember(input: {memberId: $id}) { `+ue+` } }`,
			map[string]any{"id": removed.MemberID})
		valid := f.Users[Admin].Token

		cases := []struct {
			name, authorization string
		}{
			{"no header", ""},
			{"empty bearer", "Bearer "},
			{"basic scheme", "Basic " + valid},
			{"token without scheme", valid},
			{"garbage", "Bearer garbage"},
			{"unknown token", "Bearer nbt_" + strings.Repeat("A", 43)},
			{"truncated token", "Bearer " + valid[:len(valid)-1]},
			{"token with a suffix", "Bearer " + valid + "x"},
			{"overlong token", "Bearer nbt_" + strings.Repeat("A", 500)},
			{"revoked token", "Bearer " + revoked.Token},
			{"token of a removed member", "Bearer " + removed.Token},
		}
		queries := []struct{ name, query string }{
			{"query", `{ viewer { user { id } } }`},
			{"mutation", `mutation($t: ID!) { updateTenant(input: {tenantId: $t, name: "hijacked"}) { ` + ue + ` } }`},
		}
		for _, c := range cases {
			for _, q := range queries {
				t.Run(c.name+"/"+q.name, func(t *testing.T) {
					before := f.AuditCount(t)
					res := env.DoAuth(t, c.authorization, q.query, map[string]any{"t": f.TenantID})
					if res.Status != http.StatusUnauthorized {
						t.Errorf("got HTTP %d, want 401", res.Status)
					}
					if got := res.ErrorCodes(); !slices.Equal(got, []string{"UNAUTHENTICATED"}) {
						t.Errorf("got error codes %v, want [UNAUTHENTICATED]", got)
					}
					if res.Data != nil {
						t.Errorf("got data %v, want none", res.Data)
					}
					if h := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
						t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", h)
					}
					if strings.Contains(string(res.Body), "nbt_") {
						t.Errorf("the refusal echoes a token: %s", res.Body)
					}
					if got := f.AuditCount(t); got != before {
						t.Errorf("audit events: got %d, want %d", got, before)
					}
				})
			}
		}
		t.Run("scheme is case-insensitive", func(t *testing.T) {
			res := env.DoAuth(t, "bearer "+valid, `{ viewer { user { id } } }`, nil)
			if res.Status != http.StatusOK || res.Str("viewer.user.id") != f.Users[Admin].UserID {
				t.Errorf("got HTTP %d %s, want the admin's viewer", res.Status, res.Body)
			}
		})
	})
}

// A role change takes effect on the caller's next request: grants are read
// per request, never cached across them.
func TestRoleChangeNextRequest(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		updateProject := `mutation($p: ID!, $d: String!) { updateProject(input: {projectId: $p, description: $d}) { ` + ue + ` } }`
		createService := `mutation($p: ID!, $n: String!) { createService(input: {projectId: $p, name: $n, image: "registry.example.com/x",
			processes: [{name: "web"}]}) { ` + ue + ` } }`
		updateTenant := `mutation($t: ID!, $n: String!) { updateTenant(input: {tenantId: $t, name: $n}) { ` + ue + ` } }`
		readProject := `query($p: ID!) { node(id: $p) { id } }`
		pm, viewer, admin := f.Users[ProjectManager], f.Users[Viewer], f.Users[Admin]

		expect := func(step string, c *Caller, query string, vars map[string]any, want access) {
			t.Helper()
			res := env.Do(t, c.Token, query, vars)
			switch {
			case want == allowed && len(res.Errors) > 0:
				t.Errorf("%s: got %s, want success", step, res.errorList())
			case want != allowed && (len(res.Errors) == 0 || res.Errors[0].Code() != string(want)):
				t.Errorf("%s: got %s %s, want %s", step, res.errorList(), res.Body, want)
			}
		}
		owner := func(query string, vars map[string]any) { t.Helper(); f.MustDo(t, query, vars) }

		expect("pm updates the project", pm, updateProject, map[string]any{"p": f.ProjectID, "d": "one"}, allowed)
		owner(`mutation($id: ID!) { updateProjectMemberRole(input: {projectMemberId: $id, role: VIEWER}) { `+ue+` } }`,
			map[string]any{"id": pm.ProjectMemberID})
		expect("demoted pm updates the project", pm, updateProject, map[string]any{"p": f.ProjectID, "d": "two"}, forbidden)
		expect("demoted pm still reads the project", pm, readProject, map[string]any{"p": f.ProjectID}, allowed)
		owner(`mutation($id: ID!) { removeProjectMember(input: {projectMemberId: $id}) { `+ue+` } }`,
			map[string]any{"id": pm.ProjectMemberID})
		expect("removed pm reads the project", pm, readProject, map[string]any{"p": f.ProjectID}, notFound)

		expect("viewer creates a service", viewer, createService, map[string]any{"p": f.ProjectID, "n": "svc-one"}, forbidden)
		owner(`mutation($id: ID!) { updateProjectMemberRole(input: {projectMemberId: $id, role: EDITOR}) { `+ue+` } }`,
			map[string]any{"id": viewer.ProjectMemberID})
		expect("promoted viewer creates a service", viewer, createService, map[string]any{"p": f.ProjectID, "n": "svc-two"}, allowed)

		expect("admin renames the tenant", admin, updateTenant, map[string]any{"t": f.TenantID, "n": "one"}, allowed)
		owner(`mutation($id: ID!) { updateMemberRole(input: {memberId: $id, role: MEMBER}) { `+ue+` } }`,
			map[string]any{"id": admin.MemberID})
		expect("demoted admin renames the tenant", admin, updateTenant, map[string]any{"t": f.TenantID, "n": "two"}, forbidden)
		expect("demoted admin reads the project", admin, readProject, map[string]any{"p": f.ProjectID}, notFound)
	})
}

// A token's secret is shown once, in the payload that created it.
func TestTokensShownOnce(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		c := f.Users[Editor]
		res := env.MustDo(t, c.Token, `mutation { createApiToken(input: {name: "laptop", expiresInDays: 7}) {
			apiToken { id name prefix expiresAt revokedAt user { id } } secret `+ue+` } }`, nil)
		secret, prefix, id := res.Str("createApiToken.secret"), res.Str("createApiToken.apiToken.prefix"), res.Str("createApiToken.apiToken.id")
		if !strings.HasPrefix(secret, "nbt_") || len(secret) < 40 {
			t.Fatalf("secret %q does not look like a token", secret)
		}
		if prefix == "" || !strings.HasPrefix(secret, prefix) || len(prefix) >= len(secret)/2 {
			t.Errorf("prefix %q: want a short prefix of the secret", prefix)
		}
		if res.Str("createApiToken.apiToken.expiresAt") == "" {
			t.Errorf("expiresAt: got none for a 7-day token")
		}
		if got := res.Str("createApiToken.apiToken.user.id"); got != c.UserID {
			t.Errorf("token user: got %q, want the caller %q", got, c.UserID)
		}
		if got, _ := env.Authenticates(t, secret); got != c.UserID {
			t.Errorf("the new token authenticates as %q, want %q", got, c.UserID)
		}

		// Nowhere else: not in the token list, the node, or the audit trail.
		reads := []struct {
			name, token, query string
		}{
			{"viewer.apiTokens", secret, `{ viewer { token { id prefix name } apiTokens { nodes { id name prefix lastUsedAt } } } }`},
			{"node as owner", c.Token, `query($id: ID!) { node(id: $id) { ... on ApiToken { id name prefix user { id } } } }`},
			{"node as admin", f.Users[Admin].Token, `query($id: ID!) { node(id: $id) { ... on ApiToken { id name prefix } } }`},
			{"audit trail", f.Owner.Token, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 100) { nodes { details } } } } }`},
		}
		for _, r := range reads {
			got := env.MustDo(t, r.token, r.query, map[string]any{"id": id, "t": f.TenantID})
			if strings.Contains(string(got.Body), secret) || strings.Contains(string(got.Body), secret[len(prefix):]) {
				t.Errorf("%s shows the secret: %s", r.name, got.Body)
			}
			if !strings.Contains(string(got.Body), prefix) {
				t.Errorf("%s does not show the prefix %q: %s", r.name, prefix, got.Body)
			}
		}
		used := env.MustDo(t, secret, `{ viewer { token { id lastUsedAt } } }`, nil)
		if used.Str("viewer.token.id") != id || used.Str("viewer.token.lastUsedAt") == "" {
			t.Errorf("viewer.token: got %v, want the new token with lastUsedAt set", used.Get("viewer.token"))
		}
		list := env.MustDo(t, c.Token, `{ viewer { apiTokens { nodes { id } } } }`, nil)
		if ids := list.IDs("viewer.apiTokens.nodes"); !slices.Contains(ids, id) || !slices.Contains(ids, c.TokenID) {
			t.Errorf("viewer.apiTokens: got %v, want both of the caller's tokens", ids)
		}

		// Revoked: refused from the next request, still listed as revoked.
		rev := env.MustDo(t, c.Token, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id revokedAt } `+ue+` } }`,
			map[string]any{"id": id})
		if rev.Str("revokeApiToken.apiToken.revokedAt") == "" {
			t.Errorf("revokedAt: got none after revoking")
		}
		if _, ok := env.Authenticates(t, secret); ok {
			t.Errorf("the revoked token is still accepted")
		}
		n := f.Node(t, id, `... on ApiToken { revokedAt }`)
		if n == nil || n["revokedAt"] == nil {
			t.Errorf("node of the revoked token: got %v, want it with revokedAt", n)
		}
		if _, ok := env.Authenticates(t, c.Token); !ok {
			t.Errorf("revoking one token refused the caller's other token")
		}
	})
}
