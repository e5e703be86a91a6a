package apitest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// ssoBrowser signs in through the identity provider as a browser would:
// it starts at the control plane, follows the redirects to the provider's
// login page, posts the username and password there, and follows the
// redirects back. It returns the last page and the control plane's
// session cookie, if any.
func ssoBrowser(t *testing.T, env *Env, username, password string) (status int, page string, session *http.Cookie) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(env.Server.URL + "/auth/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Request.URL.Query().Get("authRequestID")
	if resp.StatusCode != 200 || id == "" || !strings.Contains(string(body), "password") {
		t.Fatalf("the start did not reach the provider's login page: %d %s\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	if q := resp.Request.URL; !strings.HasPrefix(q.Path, "/login/") {
		t.Fatalf("ended at %s, not the provider's login", q)
	}
	login := *resp.Request.URL
	login.RawQuery = ""
	resp, err = c.PostForm(login.String(), url.Values{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	base, _ := url.Parse(env.Server.URL)
	for _, ck := range jar.Cookies(base) {
		if ck.Name == "nebula_session" {
			session = ck
		}
	}
	return resp.StatusCode, string(body), session
}

// Single sign-on through a real OpenID provider (zitadel's op package on
// loopback) with coreos/go-oidc on our side: a person in a mapped group
// signs in and is a member with the group's role; the strongest group
// wins and a group change moves the role; a disallowed email domain, an
// unverified email and no mapped group are refused and create nothing;
// a session expires; a removed member's session ends.
func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	op := testutil.StartOIDCProvider(t)
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) { testOIDCSignIn(t, op, s) })
	}
}

func testOIDCSignIn(t *testing.T, op *testutil.OIDCProvider, s StoreOpener) {
	{
		// The tenant the groups map to is named (by its name) in the
		// settings the control plane starts with; it is made below.
		env := NewEnvWith(t, s.Open(t), func(c *config.Config) {
			c.OIDC = config.OIDC{Issuer: op.Issuer, ClientID: "nebula-" + t.Name(), ClientSecret: "client-secret-for-tests",
				AllowedDomains: []string{"shop.example"}, GroupsClaim: "groups",
				Roles: map[string][]config.OIDCGrant{
					"platform":   {{Tenant: "sso-" + strings.ReplaceAll(t.Name(), "/", "-"), Role: "ADMIN"}},
					"developers": {{Tenant: "sso-" + strings.ReplaceAll(t.Name(), "/", "-"), Role: "MEMBER"}},
				}}
		})
		op.RegisterClient("nebula-"+t.Name(), "client-secret-for-tests", env.Server.URL+"/auth/oidc/callback")
		tenantName := "sso-" + strings.ReplaceAll(t.Name(), "/", "-")
		r := env.MustDo(t, env.BootstrapToken, `mutation($n: String!) { createTenant(input: {name: $n}) { tenant { id } secret `+ue+` } }`,
			map[string]any{"n": tenantName})
		tenant, admin := r.Str("createTenant.tenant.id"), r.Str("createTenant.secret")
		members := func() map[string]string {
			out := map[string]string{}
			res := env.MustDo(t, admin, `query($t: ID!) { node(id: $t) { ... on Tenant { members(first: 100) { nodes { role user { email } } } } } }`,
				map[string]any{"t": tenant})
			for _, m := range res.List("node.members.nodes") {
				out[dig(m, "user.email").(string)] = dig(m, "role").(string)
			}
			return out
		}
		suffix := strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
		op.AddUser("dev-"+suffix, "dev-password", "dev-"+suffix+"@shop.example", true, "developers", "readers")
		op.AddUser("lead-"+suffix, "lead-password", "lead-"+suffix+"@shop.example", true, "developers", "platform")
		op.AddUser("outsider-"+suffix, "out-password", "outsider-"+suffix+"@elsewhere.example", true, "platform")
		op.AddUser("unverified-"+suffix, "unv-password", "unverified-"+suffix+"@shop.example", false, "platform")
		op.AddUser("nogroup-"+suffix, "nog-password", "nogroup-"+suffix+"@shop.example", true, "readers")

		// The sign-in page offers single sign-on.
		if resp, err := http.Get(env.Server.URL + "/auth/methods"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/auth/methods: %v", err)
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `"oidc":true`) {
				t.Errorf("/auth/methods: %s", b)
			}
		}
		// The developer is also a member of another tenant (the bootstrap
		// one, which no group maps to): single sign-on neither opens it
		// nor changes their role there.
		devEmail := "dev-" + suffix + "@shop.example"
		acme := env.MustDo(t, env.BootstrapToken, `{ viewer { tenants { nodes { id } } } }`, nil).Str("viewer.tenants.nodes.0.id")
		env.MustDo(t, env.BootstrapToken, `mutation($t: ID!, $e: String!) { addMember(input: {tenantId: $t, email: $e, name: "Dev", role: MEMBER}) {
			member { id } `+ue+` } }`, map[string]any{"t": acme, "e": devEmail})
		acmeRole := func() string {
			res := env.MustDo(t, env.BootstrapToken, `query($t: ID!) { node(id: $t) { ... on Tenant { members(first: 100) { nodes { role user { email } } } } } }`,
				map[string]any{"t": acme})
			for _, m := range res.List("node.members.nodes") {
				if dig(m, "user.email") == devEmail {
					return dig(m, "role").(string)
				}
			}
			return ""
		}

		// A developer signs in: a member, with the group's role.
		status, page, dev := ssoBrowser(t, env, "dev-"+suffix, "dev-password")
		// (The cookie's attributes are the sign-in's own, checked by TestSignIn.)
		if status != 200 || dev == nil || !strings.HasPrefix(dev.Value, "nbs_") || !strings.Contains(page, "<title>NebulaCtrl</title>") {
			t.Fatalf("the developer's sign-in: %d, cookie %+v\n%.300s", status, dev, page)
		}
		b := &browser{t: t, env: env, cookie: dev}
		me := b.gql(`{ viewer { user { email } session { method tenants { id } } tenants { nodes { id } } } }`, nil)
		if dig(me.body, "data.viewer.user.email") != devEmail || dig(me.body, "data.viewer.session.method") != "OIDC" ||
			dig(me.body, "data.viewer.session.tenants.0.id") != tenant || len(dig(me.body, "data.viewer.session.tenants").([]any)) != 1 ||
			len(dig(me.body, "data.viewer.tenants.nodes").([]any)) != 1 {
			t.Fatalf("signed in by single sign-on, want the mapped tenant only: %s", me.raw)
		}
		if other := b.gql(`query($t: ID!) { node(id: $t) { id } }`, map[string]any{"t": acme}); dig(other.body, "data.node") != nil {
			t.Errorf("the single sign-on session reads a tenant no group maps to: %s", other.raw)
		}
		if got := members()[devEmail]; got != "MEMBER" {
			t.Errorf("the developer's role: %q, want MEMBER", got)
		}
		// The lead is in developers and platform: the stronger wins.
		if status, _, c := ssoBrowser(t, env, "lead-"+suffix, "lead-password"); status != 200 || c == nil {
			t.Fatalf("the lead's sign-in: %d", status)
		}
		if got := members()["lead-"+suffix+"@shop.example"]; got != "ADMIN" {
			t.Errorf("the lead's role: %q, want ADMIN", got)
		}
		// The provider is the source of truth: a group change moves the
		// role at the next sign-in, audited.
		op.AddUser("dev-"+suffix, "dev-password", devEmail, true, "developers", "platform")
		if status, _, c := ssoBrowser(t, env, "dev-"+suffix, "dev-password"); status != 200 || c == nil {
			t.Fatalf("the developer's sign-in as a platform member: %d", status)
		}
		if got := members()[devEmail]; got != "ADMIN" {
			t.Errorf("after joining platform, the developer's role: %q, want ADMIN", got)
		}
		if got := acmeRole(); got != "MEMBER" {
			t.Errorf("the developer's role in a tenant no group maps to: %q, want MEMBER as it was", got)
		}
		op.AddUser("dev-"+suffix, "dev-password", devEmail, true, "developers")
		ssoBrowser(t, env, "dev-"+suffix, "dev-password")
		if got := members()[devEmail]; got != "MEMBER" {
			t.Errorf("after leaving platform, the developer's role: %q, want MEMBER", got)
		}
		// Refused, and nothing made: another domain, an unverified email,
		// no mapped group.
		before := members()
		for _, c := range []struct{ user, pass, says string }{
			{"outsider-" + suffix, "out-password", "email domain is not allowed"},
			{"unverified-" + suffix, "unv-password", "no verified email"},
			{"nogroup-" + suffix, "nog-password", "none of your groups"},
		} {
			status, page, cookie := ssoBrowser(t, env, c.user, c.pass)
			if status != 403 || cookie != nil || !strings.Contains(page, c.says) {
				t.Errorf("%s: %d, cookie %v, page %.300s; want 403 saying %q", c.user, status, cookie != nil, page, c.says)
			}
		}
		if after := members(); len(after) != len(before) {
			t.Errorf("refused sign-ins changed the members: %v → %v", before, after)
		}
		// An identity whose verified email is an integration's gets no
		// session as it, and the integration's role stays (issue 30, row
		// 6): invitations refuse integrations, and so does single sign-on.
		botEmail := "bot-" + suffix + "@shop.example"
		env.MustDo(t, admin, `mutation($t: ID!, $e: String!) { addMember(input: {tenantId: $t, email: $e, name: "CI bot", role: ADMIN, kind: INTEGRATION}) {
			member { id } `+ue+` } }`, map[string]any{"t": tenant, "e": botEmail})
		op.AddUser("bot-"+suffix, "bot-password", botEmail, true, "developers")
		status, page, cookie := ssoBrowser(t, env, "bot-"+suffix, "bot-password")
		if status != 403 || cookie != nil || !strings.Contains(page, "none of your groups") {
			t.Errorf("single sign-on as an integration's email: %d, cookie %v, page %.300s; want 403 and no session", status, cookie != nil, page)
		}
		if got := members()[botEmail]; got != "ADMIN" {
			t.Errorf("after single sign-on with its email the integration's role is %q, want ADMIN", got)
		}

		// The provider sends the browser back to the public URL, whatever
		// Host a request names (issue 30, the bugs: it was built from
		// the Host header).
		req, _ := http.NewRequest("GET", env.Server.URL+"/auth/oidc/start", nil)
		req.Host = "evil.example"
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		if resp, err := noFollow.Do(req); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if got := loc.Query().Get("redirect_uri"); got != env.Server.URL+"/auth/oidc/callback" {
				t.Errorf("with Host: evil.example the provider is told to send the browser to %q, want the public URL's callback", got)
			}
		}

		// A tampered callback (another state) is refused.
		if resp, err := http.Get(env.Server.URL + "/auth/oidc/callback?code=x&state=forged"); err != nil || resp.StatusCode != 400 {
			t.Errorf("a callback that did not start here: %v %v", resp.StatusCode, err)
		}

		// The session expires.
		env.Clock.Advance(13 * time.Hour)
		if a := b.gql(`{ viewer { user { email } } }`, nil); a.status != 401 {
			t.Errorf("after 13 hours the session still works: %d", a.status)
		}
		env.Clock.Advance(-13 * time.Hour)

		// Removed, the member's session ends at once.
		_, _, dev = ssoBrowser(t, env, "dev-"+suffix, "dev-password")
		b.cookie = dev
		if a := b.gql(`{ viewer { user { email } } }`, nil); a.status != 200 {
			t.Fatalf("signed in again: %d %s", a.status, a.raw)
		}
		var memberID string
		res := env.MustDo(t, admin, `query($t: ID!) { node(id: $t) { ... on Tenant { members(first: 100) { nodes { id user { email } } } } } }`,
			map[string]any{"t": tenant})
		for _, m := range res.List("node.members.nodes") {
			if dig(m, "user.email") == devEmail {
				memberID = dig(m, "id").(string)
			}
		}
		env.MustDo(t, admin, `mutation($m: ID!) { removeMember(input: {memberId: $m}) { removedMemberId `+ue+` } }`, map[string]any{"m": memberID})
		if a := b.gql(`{ viewer { user { email } } }`, nil); a.status != 401 {
			t.Errorf("the removed member's session: %d %s", a.status, a.raw)
		}
		// The audit says who single sign-on added and when.
		audit := env.MustDo(t, admin, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 50, filter: {action: "member.sso_sync"}) { nodes { details } } } } }`,
			map[string]any{"t": tenant})
		if n := len(audit.List("node.auditEvents.nodes")); n != 4 {
			t.Errorf("%d member.sso_sync events, want 4: the developer and the lead added, the developer's role up and down", n)
		}
	}
}

// Single sign-on in headless Chromium (web/test/oidc.mjs): the sign-in
// page's link to the provider, its login form, back to the console.
func TestOIDCInBrowser(t *testing.T) {
	t.Parallel()
	browserTests(t)
	op := testutil.StartOIDCProvider(t)
	env := NewEnvWith(t, OpenSQLite(t), func(c *config.Config) {
		c.OIDC = config.OIDC{Issuer: op.Issuer, ClientID: "nebula-browser", ClientSecret: "client-secret-for-tests",
			GroupsClaim: "groups", Roles: map[string][]config.OIDCGrant{"platform": {{Tenant: "acme", Role: "MEMBER"}}}}
	})
	op.RegisterClient("nebula-browser", "client-secret-for-tests", env.Server.URL+"/auth/oidc/callback")
	op.AddUser("ada", "ada-password", "ada@shop.example", true, "platform")
	runBrowser(t, "oidc.mjs", "NEBULA_URL="+env.Server.URL, "OIDC_USER=ada", "OIDC_PASSWORD=ada-password", "OIDC_EMAIL=ada@shop.example")
}
