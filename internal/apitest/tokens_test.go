package apitest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Tokens outlive nothing that made them: a token expires no later than the
// token that minted it; a user has at most NEBULA_MAX_TOKENS_PER_USER live
// tokens in a tenant; a tenant admin lists and revokes every token of a
// member.

// revokeMemberApiTokens is one audit event per committed call, with the
// action of revoking a token (TestAuditOnePerMutation lists it here, as
// audit_test.go's script reaches that action through revokeApiToken).
const mintToken = `mutation($name: String!, $u: ID, $days: Int) { createApiToken(input: {name: $name, userId: $u, expiresInDays: $days}) {
	apiToken { id expiresAt } secret ` + ue + ` } }`

// mint creates a token with the token given, for userID ("" for the
// caller), expiring in days (0 for never).
func mint(t *testing.T, f *Fixture, token, userID string, days int) Response {
	t.Helper()
	vars := map[string]any{"name": f.Unique("minted")}
	if userID != "" {
		vars["u"] = userID
	}
	if days != 0 {
		vars["days"] = days
	}
	res := f.Env.Do(t, token, mintToken, vars)
	if s := res.Str("createApiToken.secret"); s != "" {
		f.addSecret(s)
	}
	return res
}

// A token minted with a token that expires expires no later than it,
// whatever it asked for, down a chain of tokens and into a new tenant; when
// the first one ends, so do they all.
func TestMintedTokensExpireWithTheirMinter(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		bot := f.NewCaller(t, "bot", "MEMBER")

		day := mint(t, f, f.Owner.Token, "", 1) // the owner: a person and a tenant admin
		daySecret := day.Str("createApiToken.secret")
		dayEnds := parseTime(t, "the day token's expiresAt", day.Str("createApiToken.apiToken.expiresAt"))

		var children []string // secrets that must end with the day token
		var chained string
		for _, tc := range []struct {
			name   string
			token  func() string
			query  string
			vars   map[string]any
			prefix string // the payload's field holding apiToken and secret
		}{
			{"own, never expiring", func() string { return daySecret }, mintToken,
				map[string]any{"name": "forever"}, "createApiToken"},
			{"own, in ten years", func() string { return daySecret }, mintToken,
				map[string]any{"name": "decade", "days": 3650}, "createApiToken"},
			{"for an integration", func() string { return daySecret }, mintToken,
				map[string]any{"name": "bot's", "u": bot.UserID}, "createApiToken"},
			{"a new tenant's", func() string { return daySecret },
				`mutation($name: String!) { createTenant(input: {name: $name}) { apiToken { id expiresAt } secret ` + ue + ` } }`,
				map[string]any{"name": f.Unique("spin-off")}, "createTenant"},
			{"minted by a minted token", func() string { return chained }, mintToken,
				map[string]any{"name": "grandchild"}, "createApiToken"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := env.MustDo(t, tc.token(), tc.query, tc.vars)
				secret := res.Str(tc.prefix + ".secret")
				f.addSecret(secret)
				children = append(children, secret)
				if chained == "" {
					chained = secret
				}
				raw := res.Str(tc.prefix + ".apiToken.expiresAt")
				if raw == "" {
					t.Fatalf("expiresAt: got null, want at most the minting token's %s", dayEnds.Format(time.RFC3339Nano))
				}
				if got := parseTime(t, "expiresAt", raw); got.After(dayEnds) {
					t.Errorf("expiresAt: got %s, want at most the minting token's %s", raw, dayEnds.Format(time.RFC3339Nano))
				}
			})
		}

		t.Run("a token that never expires mints as asked", func(t *testing.T) {
			res := mint(t, f, f.Owner.Token, "", 0)
			if got := res.Get("createApiToken.apiToken.expiresAt"); got != nil || len(res.UserErrors("createApiToken")) > 0 {
				t.Errorf("got %s, want a token without expiry", res.Body)
			}
		})

		t.Run("all end with it", func(t *testing.T) {
			env.Clock.Advance(25 * time.Hour)
			for i, secret := range append([]string{daySecret}, children...) {
				if _, ok := env.Authenticates(t, secret); ok {
					t.Errorf("token %d still authenticates after the day token expired", i)
				}
			}
			if _, ok := env.Authenticates(t, f.Owner.Token); !ok {
				t.Error("the owner's token without expiry stopped working")
			}
		})
	})
}

// A user has at most 25 (the default NEBULA_MAX_TOKENS_PER_USER) tokens
// that work in a tenant: one more is refused, whoever mints it, and
// changes nothing; a revoked or expired token frees its place.
func TestTokensPerUserCapped(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		bot := f.NewCaller(t, "bot", "MEMBER") // one token
		var ids []string
		for range 24 {
			ids = append(ids, env.MustDo(t, bot.Token, mintToken, map[string]any{"name": f.Unique("sibling")}).Str("createApiToken.apiToken.id"))
		}
		live := func(t *testing.T) int {
			t.Helper()
			res := env.MustDo(t, bot.Token, `{ viewer { apiTokens(first: 100) { nodes { revokedAt expiresAt } } } }`, nil)
			n := 0
			for _, tok := range res.List("viewer.apiTokens.nodes") {
				if dig(tok, "revokedAt") == nil {
					if exp, _ := dig(tok, "expiresAt").(string); exp == "" || parseTime(t, "expiresAt", exp).After(env.Clock.Now()) {
						n++
					}
				}
			}
			return n
		}
		refused := func(t *testing.T, token, userID string, field []string) {
			t.Helper()
			audit, before := f.AuditCount(t), live(t)
			res := mint(t, f, token, userID, 0)
			wantUserError(t, res, "createApiToken", "CONFLICT", field, "25")
			if res.Get("createApiToken.secret") != nil || res.Get("createApiToken.apiToken") != nil {
				t.Errorf("a refused token was handed out: %s", res.Body)
			}
			if got := f.AuditCount(t); got != audit {
				t.Errorf("audit events: got %d more, want none", got-audit)
			}
			if got := live(t); got != before {
				t.Errorf("live tokens: got %d, want %d", got, before)
			}
		}

		t.Run("the integration minting its 26th", func(t *testing.T) { refused(t, bot.Token, "", nil) })
		t.Run("its admin minting one for it", func(t *testing.T) {
			refused(t, f.Owner.Token, bot.UserID, []string{"input", "userId"})
		})
		t.Run("another user is not held back", func(t *testing.T) {
			if res := mint(t, f, f.Users[Viewer].Token, "", 0); len(res.UserErrors("createApiToken")) > 0 || len(res.Errors) > 0 {
				t.Errorf("the viewer minting its own: %s", res.Body)
			}
		})
		t.Run("a revoked token frees its place", func(t *testing.T) {
			env.MustDo(t, bot.Token, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id } `+ue+` } }`,
				map[string]any{"id": ids[0]})
			if res := mint(t, f, bot.Token, "", 1); len(res.UserErrors("createApiToken")) > 0 {
				t.Fatalf("minting after a revocation: %s", res.Body)
			}
			refused(t, bot.Token, "", nil)
		})
		t.Run("an expired token frees its place", func(t *testing.T) {
			env.Clock.Advance(25 * time.Hour) // the token of a day above expired
			if res := mint(t, f, bot.Token, "", 0); len(res.UserErrors("createApiToken")) > 0 {
				t.Fatalf("minting after an expiry: %s", res.Body)
			}
			refused(t, bot.Token, "", nil)
		})
	})
}

// The cap is a setting (NEBULA_MAX_TOKENS_PER_USER, given to the plane).
func TestTokensPerUserSetting(t *testing.T) {
	t.Parallel()
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			plane, err := control.New(s.Open(t), slog.New(slog.NewTextHandler(io.Discard, nil)), core.WithMaxTokensPerUser(3))
			if err != nil {
				t.Fatal(err)
			}
			boot, err := plane.People.Bootstrap(ctx, "acme", "admin@acme.test")
			if err != nil {
				t.Fatal(err)
			}
			actor, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			ctx = authz.WithActor(ctx, actor)
			for i := 2; i <= 4; i++ { // the bootstrap token is the first
				_, _, err := plane.People.CreateAPIToken(ctx, people.CreateTokenInput{Name: "t"})
				var p core.Problem
				switch {
				case i <= 3 && err != nil:
					t.Fatalf("token %d: got %v, want it made", i, err)
				case i == 4 && (!errors.As(err, &p) || p.Code != core.CodeConflict):
					t.Errorf("token %d: got %v, want a CONFLICT problem", i, err)
				}
			}
		})
	}
}

// A tenant admin sees every token of a member — siblings the member minted
// itself included — and revokes them all at once: one audit event, and
// the member's open connections are told to check their token now.
func TestMemberTokensListedAndRevoked(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f, other := env.NewFixture(t), env.NewFixture(t)
		bot := f.NewCaller(t, "bot", "MEMBER")
		tokens, secrets := []string{bot.TokenID}, []string{bot.Token}
		for range 3 { // siblings its admin never saw minted
			res := env.MustDo(t, bot.Token, mintToken, map[string]any{"name": f.Unique("sibling")})
			tokens = append(tokens, res.Str("createApiToken.apiToken.id"))
			secrets = append(secrets, res.Str("createApiToken.secret"))
			f.addSecret(res.Str("createApiToken.secret"))
		}
		// One it revoked itself.
		gone := env.MustDo(t, bot.Token, mintToken, map[string]any{"name": f.Unique("gone")}).Str("createApiToken.apiToken.id")
		env.MustDo(t, bot.Token, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id } `+ue+` } }`,
			map[string]any{"id": gone})

		const list = `query($m: ID!, $first: Int, $after: String) { node(id: $m) { ... on Member {
			apiTokens(first: $first, after: $after) { nodes { id name prefix createdAt lastUsedAt expiresAt revokedAt user { id } }
				pageInfo { hasNextPage endCursor } } } } }`
		t.Run("listed to the admin", func(t *testing.T) {
			res := env.MustDo(t, f.Owner.Token, list, map[string]any{"m": bot.MemberID})
			want := append(slices.Clone(tokens), gone)
			if got := res.IDs("node.apiTokens.nodes"); !slices.Equal(got, want) {
				t.Errorf("tokens: got %v, want %v (oldest first)", got, want)
			}
			for _, n := range res.List("node.apiTokens.nodes") {
				if dig(n, "user.id") != bot.UserID {
					t.Errorf("token %v of user %v, want %s", dig(n, "id"), dig(n, "user.id"), bot.UserID)
				}
				if revoked := dig(n, "revokedAt") != nil; revoked != (dig(n, "id") == gone) {
					t.Errorf("token %v: revoked %v", dig(n, "id"), revoked)
				}
			}
			for _, sec := range secrets {
				if strings.Contains(string(res.Body), sec) {
					t.Error("the list shows a token's secret")
				}
			}
		})
		t.Run("paged", func(t *testing.T) {
			first := env.MustDo(t, f.Owner.Token, list, map[string]any{"m": bot.MemberID, "first": 3})
			rest := env.MustDo(t, f.Owner.Token, list, map[string]any{"m": bot.MemberID, "first": 3,
				"after": first.Str("node.apiTokens.pageInfo.endCursor")})
			got := append(first.IDs("node.apiTokens.nodes"), rest.IDs("node.apiTokens.nodes")...)
			if !slices.Equal(got, append(slices.Clone(tokens), gone)) || first.Get("node.apiTokens.pageInfo.hasNextPage") != true ||
				rest.Get("node.apiTokens.pageInfo.hasNextPage") != false {
				t.Errorf("pages: got %v, then hasNextPage %v/%v", got, first.Get("node.apiTokens.pageInfo.hasNextPage"),
					rest.Get("node.apiTokens.pageInfo.hasNextPage"))
			}
		})
		t.Run("listed to the member itself", func(t *testing.T) {
			res := env.MustDo(t, bot.Token, list, map[string]any{"m": bot.MemberID})
			if got := len(res.IDs("node.apiTokens.nodes")); got != len(tokens)+1 {
				t.Errorf("got %d tokens, want %d", got, len(tokens)+1)
			}
		})
		t.Run("forbidden to another member", func(t *testing.T) {
			res := env.Do(t, f.Users[Editor].Token, list, map[string]any{"m": bot.MemberID})
			if codes := res.ErrorCodes(); !slices.Equal(codes, []string{"FORBIDDEN"}) || res.Get("node.apiTokens") != nil || res.Get("node") == nil {
				t.Errorf("got %s, want the member with apiTokens null and FORBIDDEN", res.Body)
			}
		})

		const revoke = `mutation($m: ID!) { revokeMemberApiTokens(input: {memberId: $m}) {
			member { id } revokedApiTokens { id revokedAt user { id } } ` + ue + ` } }`
		t.Run("revoked at once", func(t *testing.T) {
			// The audit history names the bot by the tenant's id for it;
			// the bus by the user's own.
			rawUser := rawID(t, gid.User, bot.UserID)
			user, err := store.UserOfLocalID(t.Context(), env.Store.Q(), model.TenantID(rawID(t, gid.Tenant, f.TenantID)), model.LocalUserID(rawUser))
			if err != nil {
				t.Fatalf("the bot's user: %v", err)
			}
			note := env.Plane.Bus().Subscribe(bus.User(string(user)))
			defer note.Close()
			before := f.AuditCount(t)
			res := env.MustDo(t, f.Owner.Token, revoke, map[string]any{"m": bot.MemberID})
			if got := res.Str("revokeMemberApiTokens.member.id"); got != bot.MemberID {
				t.Errorf("member: got %q, want %s", got, bot.MemberID)
			}
			if got := res.IDs("revokeMemberApiTokens.revokedApiTokens"); !slices.Equal(got, tokens) {
				t.Errorf("revoked: got %v, want %v (not the one revoked before)", got, tokens)
			}
			for _, n := range res.List("revokeMemberApiTokens.revokedApiTokens") {
				if dig(n, "revokedAt") == nil {
					t.Errorf("token %v: revokedAt null", dig(n, "id"))
				}
			}
			for i, sec := range secrets {
				if _, ok := env.Authenticates(t, sec); ok {
					t.Errorf("token %d still authenticates", i)
				}
			}
			for _, c := range []*Caller{&f.Owner, f.Users[Viewer]} {
				if _, ok := env.Authenticates(t, c.Token); !ok {
					t.Errorf("%s's token stopped working", c.Email)
				}
			}
			if got := f.AuditCount(t); got != before+1 {
				t.Fatalf("audit events: got %d more, want 1", got-before)
			}
			evs, _, _ := auditPage(t, env, f.Owner.Token, f.TenantID, 1, "", nil)
			ev := evs[0]
			if ev.Action != "api_token.revoke" || ev.TargetType != "Member" || ev.TargetID != bot.MemberID ||
				ev.actorID() != f.Owner.UserID || ev.Details["userId"] != rawUser || ev.Details["count"] != float64(len(tokens)) {
				t.Errorf("audit event: got %+v, want api_token.revoke of Member %s by %s, details userId %s and count %d",
					ev, bot.MemberID, f.Owner.UserID, rawUser, len(tokens))
			}
			select {
			case <-note.C:
			case <-time.After(10 * time.Second):
				t.Error("no note to the member's connections within 10 s")
			}
		})
		t.Run("nothing left to revoke", func(t *testing.T) {
			before := f.AuditCount(t)
			res := env.Do(t, f.Owner.Token, revoke, map[string]any{"m": bot.MemberID})
			wantUserError(t, res, "revokeMemberApiTokens", "CONFLICT", []string{"input", "memberId"}, "no API token")
			if got := f.AuditCount(t); got != before {
				t.Errorf("audit events: got %d more, want none", got-before)
			}
		})
		t.Run("bad input", func(t *testing.T) {
			before := f.AuditCount(t)
			for _, tc := range []struct {
				name, id, code string
			}{
				{"another tenant's member", other.Users[Viewer].MemberID, "NOT_FOUND"},
				{"not an id", "nope", "BAD_USER_INPUT"},
				{"a project's id", f.ProjectID, "BAD_USER_INPUT"},
			} {
				res := env.Do(t, f.Owner.Token, revoke, map[string]any{"m": tc.id})
				got := res.ErrorCodes()
				for _, u := range res.UserErrors("revokeMemberApiTokens") {
					got = append(got, u.Code)
				}
				if !slices.Equal(got, []string{tc.code}) {
					t.Errorf("%s: got codes %v, want [%s]", tc.name, got, tc.code)
				}
			}
			if got := f.AuditCount(t); got != before {
				t.Errorf("audit events: got %d more, want none", got-before)
			}
			if _, ok := env.Authenticates(t, other.Users[Viewer].Token); !ok {
				t.Error("the other tenant's member lost its token")
			}
		})
	})
}
