package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// browser is a person's browser against the control plane: it keeps the
// session cookie and says where its requests come from as browsers do.
type browser struct {
	t      *testing.T
	env    *Env
	cookie *http.Cookie
	// crossSite makes the next requests come from another site's page.
	crossSite bool
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// request sends a request as the browser would from a page of the
// control plane (or, with crossSite, of evil.example).
func (b *browser) request(method, path, contentType, body string) answer {
	b.t.Helper()
	req, err := http.NewRequest(method, b.env.Server.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if b.crossSite {
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
	} else {
		req.Header.Set("Origin", b.env.Server.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	resp, err := b.env.Server.Client().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == "nebula_session" {
			if c.MaxAge < 0 || c.Value == "" {
				b.cookie = nil
			} else {
				b.cookie = c
			}
		}
	}
	out := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func (b *browser) post(path string, body map[string]string) answer {
	b.t.Helper()
	j, _ := json.Marshal(body)
	return b.request("POST", path, "application/json", string(j))
}

// gql runs a GraphQL request with the browser's cookie and no token.
func (b *browser) gql(query string, vars map[string]any) answer {
	b.t.Helper()
	j, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b.request("POST", "/graphql", "application/json", string(j))
}

func errorCode(a answer) string {
	code, _ := dig(a.body, "errors.0.extensions.code").(string)
	return code
}

// People sign in: a tenant admin invites a person, who sets a passphrase
// through the one-time link and is signed in (an HttpOnly, SameSite
// cookie); the session works for GraphQL and its websocket from the
// control plane's own pages only, never from another site's; a person
// signs out and in with email and passphrase; failures read the same for
// an unknown account; too many are refused for a while; a passphrase set
// in one tenant opens only that tenant; a removed member's session ends
// at once, open connections included.
func TestSignIn(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		other := env.NewFixture(t) // another tenant
		const email = "ada@shop.example"
		invite := func(f *Fixture, email, role string) (memberID, invitationID, link string) {
			t.Helper()
			r := f.MustDo(t, `mutation($t: ID!, $e: String!, $r: TenantRole) { inviteMember(input: {tenantId: $t, email: $e, name: "Ada", role: $r}) {
				member { id role user { email } } invitation { id status expiresAt } link `+ue+` } }`,
				map[string]any{"t": f.TenantID, "e": email, "r": role})
			link = r.Str("inviteMember.link")
			if !strings.Contains(link, "/invitation#nbi_") || r.Str("inviteMember.invitation.status") != "OPEN" {
				t.Fatalf("inviteMember: %s", r.Body)
			}
			return r.Str("inviteMember.member.id"), r.Str("inviteMember.invitation.id"), link
		}
		secretOf := func(link string) string { return link[strings.Index(link, "#")+1:] }
		memberID, invitationID, link := invite(f, email, "MEMBER")

		ada := &browser{t: t, env: env}
		// A passphrase too short changes nothing.
		if a := ada.post("/auth/invitation", map[string]string{"invitation": secretOf(link), "passphrase": "short"}); a.status != 400 || ada.cookie != nil {
			t.Fatalf("a short passphrase: %d %s", a.status, a.raw)
		}
		// Another site's page cannot use the link.
		ada.crossSite = true
		if a := ada.post("/auth/invitation", map[string]string{"invitation": secretOf(link), "passphrase": "a long enough passphrase"}); a.status != 403 || ada.cookie != nil {
			t.Fatalf("accepting from another site: %d %s", a.status, a.raw)
		}
		ada.crossSite = false
		const pass = "correct horse battery staple"
		a := ada.post("/auth/invitation", map[string]string{"invitation": secretOf(link), "passphrase": pass})
		if a.status != 200 || ada.cookie == nil {
			t.Fatalf("accepting the invitation: %d %s", a.status, a.raw)
		}
		c := ada.cookie
		if !strings.HasPrefix(c.Value, "nbs_") || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
			t.Errorf("the session cookie: %+v; want nbs_…, HttpOnly, SameSite=Lax, Path=/, not Secure over plain HTTP", c)
		}
		if strings.Contains(a.raw, c.Value) {
			t.Error("the sign-in answer shows the session secret beside its cookie")
		}
		// The link works once.
		again := &browser{t: t, env: env}
		if a := again.post("/auth/invitation", map[string]string{"invitation": secretOf(link), "passphrase": pass}); a.status != 400 || again.cookie != nil {
			t.Errorf("the link used a second time: %d %s", a.status, a.raw)
		}
		if st := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { invitations { nodes { id status acceptedAt } } } } }`,
			map[string]any{"t": f.TenantID}).Str("node.invitations.nodes.0.status"); st != "ACCEPTED" {
			t.Errorf("the invitation is %s, want ACCEPTED", st)
		}
		if ue := env.Do(t, f.Owner.Token, `mutation($i: ID!) { revokeInvitation(input: {invitationId: $i}) { invitation { id } `+ue+` } }`,
			map[string]any{"i": invitationID}).UserErrors("revokeInvitation"); len(ue) != 1 || ue[0].Code != "CONFLICT" {
			t.Errorf("revoking a used invitation: %+v, want CONFLICT", ue)
		}
		// Only tenant admins see and make invitations.
		if r := env.Do(t, f.Users[ProjectManager].Token, `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "x@shop.example", name: "X"}) { link `+ue+` } }`,
			map[string]any{"t": f.TenantID}); r.Str("inviteMember.link") != "" || len(r.ErrorCodes()) == 0 {
			t.Errorf("a project manager invited someone: %s", r.Body)
		}

		// Signed in: GraphQL with the cookie alone, in this tenant only.
		me := ada.gql(`{ viewer { user { email } token { id } session { id method current tenants { id } } sessions(first: 100) { nodes { id current } } } }`, nil)
		if me.status != 200 || dig(me.body, "data.viewer.user.email") != email || dig(me.body, "data.viewer.token") != nil ||
			dig(me.body, "data.viewer.session.current") != true || dig(me.body, "data.viewer.session.tenants.0.id") != f.TenantID ||
			len(dig(me.body, "data.viewer.session.tenants").([]any)) != 1 {
			t.Fatalf("the viewer signed in: %d %s", me.status, me.raw)
		}
		// Another site's page gets nothing with the person's cookie: not a
		// JSON request (refused before anything runs), not a form, not a
		// simple text/plain post.
		ada.crossSite = true
		if a := ada.gql(`mutation { createApiToken(input: {name: "stolen"}) { secret } }`, nil); a.status != 403 {
			t.Errorf("a cross-site JSON mutation with the cookie: %d %s", a.status, a.raw)
		}
		form := url.Values{"query": {`mutation { createApiToken(input: {name: "stolen"}) { secret } }`}}.Encode()
		for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain"} {
			if a := ada.request("POST", "/graphql", ct, form); a.status < 400 {
				t.Errorf("a cross-site %s post with the cookie: %d %s", ct, a.status, a.raw)
			}
		}
		ada.crossSite = false
		if n := len(f.MustDo(t, `query($m: ID!) { node(id: $m) { ... on Member { apiTokens { nodes { id } } } } }`,
			map[string]any{"m": memberID}).List("node.apiTokens.nodes")); n != 0 {
			t.Fatalf("the forged requests made %d API tokens", n)
		}
		// A personal API token made from the session works as a bearer
		// token, shown once.
		tok := ada.gql(`mutation { createApiToken(input: {name: "laptop"}) { secret apiToken { prefix } userErrors { message } } }`, nil)
		secret, _ := dig(tok.body, "data.createApiToken.secret").(string)
		if !strings.HasPrefix(secret, "nbt_") {
			t.Fatalf("a personal token from the session: %s", tok.raw)
		}
		if who := env.MustDo(t, secret, `{ viewer { user { email } } }`, nil).Str("viewer.user.email"); who != email {
			t.Errorf("the personal token signs in as %q", who)
		}

		// Signing out ends the session: the old cookie is worth nothing.
		stolen := *ada.cookie
		if a := ada.post("/auth/signout", nil); a.status != 204 || ada.cookie != nil {
			t.Fatalf("signing out: %d %s", a.status, a.raw)
		}
		replay := &browser{t: t, env: env, cookie: &stolen}
		if a := replay.gql(`{ viewer { user { email } } }`, nil); a.status != 401 {
			t.Errorf("the cookie after signing out: %d %s", a.status, a.raw)
		}

		// Signing in with email and passphrase; failures read the same
		// whether or not the account exists.
		wrong := ada.post("/auth/signin", map[string]string{"email": email, "passphrase": "not the passphrase at all"})
		unknown := ada.post("/auth/signin", map[string]string{"email": "nobody@shop.example", "passphrase": "not the passphrase at all"})
		if wrong.status != 401 || unknown.status != 401 || wrong.raw != unknown.raw {
			t.Errorf("a wrong passphrase: %d %s; an unknown account: %d %s; want the same 401", wrong.status, wrong.raw, unknown.status, unknown.raw)
		}
		if a := ada.post("/auth/signin", map[string]string{"email": strings.ToUpper(email), "passphrase": pass}); a.status != 200 || ada.cookie == nil {
			t.Fatalf("signing in: %d %s", a.status, a.raw)
		}
		audit := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 20) { nodes { action details } } } } }`,
			map[string]any{"t": f.TenantID})
		actions := map[string]int{}
		for _, n := range audit.List("node.auditEvents.nodes") {
			actions[dig(n, "action").(string)]++
		}
		if actions["member.invite"] != 1 || actions["invitation.accept"] != 1 || actions["session.create"] != 2 ||
			actions["session.signin_failed"] != 1 || actions["session.revoke"] != 1 {
			t.Errorf("audited %v; want the invitation, its acceptance, two sign-ins, the sign-out and the failed one", actions)
		}
		if strings.Contains(string(audit.Body), secretOf(link)) || strings.Contains(string(audit.Body), ada.cookie.Value) {
			t.Error("the audit shows a link or session secret")
		}

		// A passphrase opens only the tenant it was set for: Ada, invited
		// to the other tenant too, signs in there with another passphrase.
		_, _, link2 := invite(other, email, "ADMIN")
		ada2 := &browser{t: t, env: env}
		if a := ada2.post("/auth/invitation", map[string]string{"invitation": secretOf(link2), "passphrase": "another long passphrase"}); a.status != 200 {
			t.Fatalf("accepting the second invitation: %d %s", a.status, a.raw)
		}
		one := &browser{t: t, env: env}
		one.post("/auth/signin", map[string]string{"email": email, "passphrase": pass})
		if ts := dig(one.gql(`{ viewer { session { tenants { id } } tenants { nodes { id } } } }`, nil).body, "data.viewer"); len(dig(ts, "session.tenants").([]any)) != 1 ||
			dig(ts, "session.tenants.0.id") != f.TenantID || len(dig(ts, "tenants.nodes").([]any)) != 1 {
			t.Errorf("signed in with the first tenant's passphrase, the session reaches %v", ts)
		}
		if a := one.gql(`query($t: ID!) { node(id: $t) { id } }`, map[string]any{"t": other.TenantID}); dig(a.body, "data.node") != nil {
			t.Errorf("the other tenant is visible to a session that did not prove its passphrase: %s", a.raw)
		}

		// Too many failures for an account: refused for a while, even
		// with the right passphrase.
		bob := &browser{t: t, env: env}
		for range 10 {
			bob.post("/auth/signin", map[string]string{"email": email, "passphrase": "guessing guessing guessing"})
		}
		if a := bob.post("/auth/signin", map[string]string{"email": email, "passphrase": pass}); a.status != 429 || a.header.Get("Retry-After") == "" || bob.cookie != nil {
			t.Errorf("after 10 failures: %d %s (Retry-After %q)", a.status, a.raw, a.header.Get("Retry-After"))
		}

		// Removing the member ends their session here at once, and the
		// websocket it holds.
		dialer := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		h := http.Header{"Origin": {env.Server.URL}, "Cookie": {"nebula_session=" + ada.cookie.Value}}
		ws, _, err := dialer.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/graphql", h)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		_ = ws.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{}})
		var ack map[string]any
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := ws.ReadJSON(&ack); err != nil || ack["type"] != "connection_ack" {
			t.Fatalf("a websocket on the session cookie: %v %v", ack, err)
		}
		// From another site's page the cookie does not ride along.
		h.Set("Origin", "https://evil.example")
		if evil, resp, err := dialer.Dial("ws"+strings.TrimPrefix(env.Server.URL, "http")+"/graphql", h); err == nil {
			_ = evil.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{}})
			_, msg, err := evil.ReadMessage()
			if err == nil {
				t.Errorf("a websocket from another site's page was answered %s", msg)
			}
			evil.Close()
		} else if resp != nil && resp.StatusCode != 403 {
			t.Errorf("a websocket from another site: %d", resp.StatusCode)
		}
		f.MustDo(t, `mutation($m: ID!) { removeMember(input: {memberId: $m}) { removedMemberId `+ue+` } }`, map[string]any{"m": memberID})
		closed := make(chan int, 1)
		go func() {
			_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					var ce *websocket.CloseError
					if ok := asCloseError(err, &ce); ok {
						closed <- ce.Code
					} else {
						closed <- 0
					}
					return
				}
			}
		}()
		select {
		case code := <-closed:
			if code != 4403 {
				t.Errorf("the removed member's websocket closed with %d, want 4403", code)
			}
		case <-time.After(15 * time.Second):
			t.Error("the removed member's websocket stayed open")
		}
		if a := ada.gql(`{ viewer { user { email } } }`, nil); a.status != 401 {
			t.Errorf("the removed member's session: %d %s", a.status, a.raw)
		}
		testutil.Eventually(t, 5*time.Second, "the invitation list still shows the history", func() (bool, string) {
			r := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { invitations { nodes { id } } } } }`, map[string]any{"t": f.TenantID})
			return len(r.List("node.invitations.nodes")) == 1, string(r.Body)
		})
	})
}

func asCloseError(err error, ce **websocket.CloseError) bool {
	e, ok := err.(*websocket.CloseError)
	if ok {
		*ce = e
	}
	return ok
}

// signedInPerson invites a new person into the fixture's tenant as a
// MEMBER (as its owner) and has them accept through the link: their
// browser, signed in, their member id and their session's global id.
func signedInPerson(t *testing.T, f *Fixture, name string) (b *browser, memberID, sessionID string) {
	t.Helper()
	return signedInAs(t, f, name, "MEMBER")
}

// signedInAs is signedInPerson with a tenant role.
func signedInAs(t *testing.T, f *Fixture, name, tenantRole string) (b *browser, memberID, sessionID string) {
	t.Helper()
	r := f.MustDo(t, `mutation($t: ID!, $e: String!, $n: String!, $r: TenantRole) { inviteMember(input: {tenantId: $t, email: $e, name: $n, role: $r}) {
		member { id } link `+ue+` } }`, map[string]any{"t": f.TenantID, "e": f.Unique(name) + "@people.example", "n": name, "r": tenantRole})
	link := r.Str("inviteMember.link")
	b = &browser{t: t, env: f.Env}
	a := b.post("/auth/invitation", map[string]string{"invitation": link[strings.Index(link, "#")+1:], "passphrase": "a passphrase for " + name})
	id, _ := dig(a.body, "session.id").(string)
	if a.status != 200 || id == "" || b.cookie == nil {
		t.Fatalf("%s accepting their invitation: %d %s", name, a.status, a.raw)
	}
	return b, r.Str("inviteMember.member.id"), id
}

// projectPerson signs in a new member of the fixture's tenant who holds
// projectRole in its project.
func projectPerson(t *testing.T, f *Fixture, name, projectRole string) *browser {
	t.Helper()
	b, _, _ := signedInPerson(t, f, name)
	who := b.gql(`{ viewer { user { id } } }`, nil)
	f.MustDo(t, `mutation($p: ID!, $u: ID!, $r: ProjectRole!) { addProjectMember(input: {projectId: $p, userId: $u, role: $r}) { projectMember { id } `+ue+` } }`,
		map[string]any{"p": f.ProjectID, "u": dig(who.body, "data.viewer.user.id"), "r": projectRole})
	return b
}
