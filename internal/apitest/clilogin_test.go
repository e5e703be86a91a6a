package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/people"
)

// cliStart starts a CLI's sign-in as `nebula login --web` does (no
// cookie, no token): its code, secret and link.
func cliStart(t *testing.T, env *Env) (code, secret, url string) {
	t.Helper()
	cli := &browser{t: t, env: env}
	a := cli.post("/auth/cli/start", map[string]string{})
	code, _ = a.body["code"].(string)
	secret, _ = a.body["secret"].(string)
	url, _ = a.body["verificationUrl"].(string)
	if a.status != http.StatusOK || len(code) != 9 || !strings.HasPrefix(secret, "nbd_") || !strings.HasSuffix(url, "/#/cli/"+code) {
		t.Fatalf("starting a CLI sign-in: %d %s", a.status, a.raw)
	}
	return code, secret, url
}

// cliPoll polls as the CLI does: the status and, once confirmed, the token.
func cliPoll(t *testing.T, env *Env, secret string) (int, string) {
	t.Helper()
	a := (&browser{t: t, env: env}).post("/auth/cli/token", map[string]string{"secret": secret})
	tok, _ := a.body["token"].(string)
	return a.status, tok
}

// The CLI signs in through the browser: it starts a sign-in, a person
// signed in to the console confirms its code, and the CLI's poll picks
// up a personal token of theirs, once. An API token cannot confirm one
// (it could mint itself successors); a wrong, used or expired code
// confirms nothing; it is audited.
func TestCLILoginThroughTheConsole(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		person, _, _ := signedInAs(t, f, "cli-user", "MEMBER")
		who := person.gql(`{ viewer { user { id email } } }`, nil)
		email, userID := dig(who.body, "data.viewer.user.email"), dig(who.body, "data.viewer.user.id")
		code, secret, _ := cliStart(t, env)
		if status, _ := cliPoll(t, env, secret); status != http.StatusAccepted {
			t.Fatalf("polling before the confirmation: %d", status)
		}
		const approve = `mutation($c: String!, $t: ID!) { approveCliLogin(input: {code: $c, tenantId: $t}) { apiToken { id name prefix expiresAt } ` + ue + ` } }`

		// An API token neither sees nor confirms it.
		if codes := env.Do(t, f.Owner.Token, `query($c: String!) { cliLogin(code: $c) { code } }`, map[string]any{"c": code}).ErrorCodes(); len(codes) != 1 || codes[0] != "FORBIDDEN" {
			t.Errorf("cliLogin with an API token: %v", codes)
		}
		if codes := env.Do(t, f.Owner.Token, approve, map[string]any{"c": code, "t": f.TenantID}).ErrorCodes(); len(codes) != 1 || codes[0] != "FORBIDDEN" {
			t.Errorf("approveCliLogin with an API token: %v", codes)
		}
		// The person reads it (typed in lower case, without the dash), and
		// a wrong code confirms nothing.
		seen := person.gql(`query($c: String!) { cliLogin(code: $c) { code clientAddress userAgent expiresAt } }`,
			map[string]any{"c": strings.ToLower(strings.ReplaceAll(code, "-", ""))})
		if dig(seen.body, "data.cliLogin.code") != code || dig(seen.body, "data.cliLogin.clientAddress") != "127.0.0.1" {
			t.Errorf("the sign-in as the console shows it: %s", seen.raw)
		}
		wrong := person.gql(approve, map[string]any{"c": "BCDF-GHJK", "t": f.TenantID})
		if dig(wrong.body, "data.approveCliLogin.userErrors.0.code") != "BAD_USER_INPUT" {
			t.Errorf("a wrong code: %s", wrong.raw)
		}
		ok := person.gql(approve, map[string]any{"c": code, "t": f.TenantID})
		name, _ := dig(ok.body, "data.approveCliLogin.apiToken.name").(string)
		if !strings.HasPrefix(name, "nebula CLI from ") || dig(ok.body, "data.approveCliLogin.apiToken.expiresAt") == nil {
			t.Fatalf("confirming: %s", ok.raw)
		}
		if b, _ := json.Marshal(ok.body); strings.Contains(string(b), "nbt_") && !strings.Contains(string(b), `"prefix":"nbt_`) {
			t.Error("the confirmation shows the token's secret")
		}
		// The CLI picks the token up, once; it is the person's.
		status, token := cliPoll(t, env, secret)
		if status != http.StatusOK || !strings.HasPrefix(token, "nbt_") {
			t.Fatalf("polling after the confirmation: %d", status)
		}
		f.addSecret(token)
		viewer := env.MustDo(t, token, `{ viewer { user { email } tenants { nodes { id } } } }`, nil)
		if got := viewer.Str("viewer.user.email"); got != email {
			t.Errorf("the token signs in as %q, want %q", got, email)
		}
		if got := viewer.IDs("viewer.tenants.nodes"); len(got) != 1 || got[0] != f.TenantID {
			t.Errorf("the CLI's token acts in %v, want only the tenant confirmed for", got)
		}
		if status, again := cliPoll(t, env, secret); status != http.StatusGone || again != "" {
			t.Errorf("a second pick-up: %d", status)
		}
		if again := person.gql(approve, map[string]any{"c": code, "t": f.TenantID}); dig(again.body, "data.approveCliLogin.userErrors.0.code") != "BAD_USER_INPUT" {
			t.Errorf("confirming a used code: %s", again.raw)
		}
		// Expired: confirming is refused, polling says it is over.
		late, lateSecret, _ := cliStart(t, env)
		env.Clock.Advance(11 * time.Minute)
		if r := person.gql(approve, map[string]any{"c": late, "t": f.TenantID}); dig(r.body, "data.approveCliLogin.userErrors.0.code") != "BAD_USER_INPUT" {
			t.Errorf("confirming an expired code: %s", r.raw)
		}
		if status, _ := cliPoll(t, env, lateSecret); status != http.StatusGone {
			t.Errorf("polling an expired sign-in: %d", status)
		}
		if status, _ := cliPoll(t, env, "nbd_not-a-secret"); status != http.StatusGone {
			t.Errorf("polling with a made-up secret: %d", status)
		}
		// Audited: the person confirmed it, naming the token made.
		audit := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 1, filter: {action: "cli_login.approve"}) {
			nodes { actor { id } targetType details } } } } }`, map[string]any{"t": f.TenantID})
		if audit.Str("node.auditEvents.nodes.0.actor.id") != userID || audit.Str("node.auditEvents.nodes.0.targetType") != "ApiToken" {
			t.Errorf("the audit event: %v", audit.Data)
		}
	})
}

// CLI sign-in codes cannot be guessed fast (issue 30, row 8): in one
// request of 40 aliased cliLogin lookups, 10 that match nothing are
// answered, the other 30 refused with RATE_LIMITED; afterwards even a real
// code is refused to that session, while another person's session finds
// it and confirms it.
func TestCLILoginCodesRateLimited(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		guesser, _, _ := signedInAs(t, f, "guesser", "MEMBER")
		code, _, _ := cliStart(t, env)
		var q strings.Builder
		q.WriteString("{")
		for i := range 40 {
			fmt.Fprintf(&q, " g%d: cliLogin(code: \"BCDF-%04d\") { code }", i, i)
		}
		q.WriteString(" }")
		a := guesser.gql(q.String(), nil)
		limited, answered := 0, 0
		for _, e := range dig(a.body, "errors").([]any) {
			if dig(e, "extensions.code") == "RATE_LIMITED" {
				limited++
			}
		}
		for i := range 40 {
			if d, ok := dig(a.body, "data").(map[string]any); ok {
				if _, present := d[fmt.Sprintf("g%d", i)]; present && d[fmt.Sprintf("g%d", i)] == nil {
					answered++
				}
			}
		}
		if limited != 30 {
			t.Errorf("40 aliased guesses: %d refused with RATE_LIMITED, want 30 (%d answered)", limited, answered)
		}
		if r := guesser.gql(`query($c: String!) { cliLogin(code: $c) { code } }`, map[string]any{"c": code}); errorCode(r) != "RATE_LIMITED" {
			t.Errorf("the real code after the guesses: %s, want RATE_LIMITED", r.raw)
		}
		other, _, _ := signedInAs(t, f, "confirmer", "MEMBER")
		if r := other.gql(`query($c: String!) { cliLogin(code: $c) { code } }`, map[string]any{"c": code}); dig(r.body, "data.cliLogin.code") != code {
			t.Errorf("another person's session looking the code up: %s", r.raw)
		}
	})
}

// CLI sign-ins waiting for their code are bounded per address (10), as
// one step: 60 started at once from one address leave exactly 10
// waiting, the others refused with 429, a reason and Retry-After; the
// addresses of one IPv6 /64 (one host's, usually) share the bound; once
// they expire an address starts again.
func TestCLILoginStartsLimited(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		var refusal answer
		for range 60 {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, env.Server.URL+"/auth/cli/start", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				resp, err := env.Server.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var body map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == http.StatusTooManyRequests {
					refusal = answer{status: resp.StatusCode, header: resp.Header, body: body}
				}
			})
		}
		wg.Wait()
		if statuses[http.StatusOK] != 10 || statuses[http.StatusTooManyRequests] != 50 {
			t.Fatalf("60 starts at once from one address: %v, want 10 × 200 and 50 × 429", statuses)
		}
		msg, _ := dig(refusal.body, "errors.0.message").(string)
		if !strings.Contains(msg, "already waiting") || refusal.header.Get("Retry-After") == "" {
			t.Errorf("the refusal: %v %v", refusal.header, refusal.body)
		}

		// One /64, many addresses: one bound. Another /64 has its own.
		start := func(addr string) error {
			_, err := env.Plane.People.StartCLILogin(context.Background(), people.Client{Address: addr, UserAgent: "nebula-cli"})
			return err
		}
		for i := range 12 {
			err := start(fmt.Sprintf("2001:db8:1:2::%x", i+1))
			var rl people.RateLimited
			if i < 10 && err != nil {
				t.Errorf("start %d from the /64: %v", i, err)
			}
			if i >= 10 && !errors.As(err, &rl) {
				t.Errorf("start %d from the /64, past its bound: %v, want RateLimited", i, err)
			}
		}
		if err := start("2001:db8:1:3::1"); err != nil {
			t.Errorf("a start from another /64: %v", err)
		}

		env.Clock.Advance(11 * time.Minute)
		if code, _, _ := cliStart(t, env); code == "" {
			t.Error("no start once the waiting ones expired")
		}
	})
}
