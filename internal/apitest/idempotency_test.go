package apitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/idempotency"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
)

// Idempotency keys, through HTTP, on both stores: a mutation sent with an
// Idempotency-Key runs once, whatever its retries.

const createProjectQ = `mutation($t: ID!, $name: String!) {
	createProject(input: {tenantId: $t, name: $name}) { project { id name } userErrors { field message code } }
}`

const deployQ = `mutation($s: ID!, $e: ID!, $d: String!) {
	deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
		release { id number } deployment { id stage } userErrors { field message code } }
}`

// deployments counts the deployments of the fixture service.
func (f *Fixture) deployments(t testing.TB) int {
	t.Helper()
	raw := mustRaw[model.ServiceID](t, gid.Service, f.ServiceID)
	var envs []string
	for _, id := range []string{f.EnvironmentID, f.ProtectedEnvironmentID} {
		envs = append(envs, string(mustRaw[model.EnvironmentID](t, gid.Environment, id)))
	}
	pages, err := store.DeploymentsOfEnvironments(context.Background(), f.Env.Store.Q(), envs, store.PageArgs{First: store.MaxPage}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pg := range pages {
		if pg.HasNext {
			t.Fatal("more deployments than a page holds")
		}
		n += countOf(pg.Items, func(d *model.Deployment) bool { return d.ServiceID == raw })
	}
	return n
}

// countOf counts the items for which match holds.
func countOf[T any](items []*T, match func(*T) bool) int {
	n := 0
	for _, it := range items {
		if match(it) {
			n++
		}
	}
	return n
}

// keyed posts a GraphQL request with the given Idempotency-Key header
// values (none when keys is empty) and decodes the answer.
func (e *Env) keyed(t testing.TB, token, query string, vars map[string]any, keys ...string) Response {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	return e.keyedRaw(t, token, body, keys...)
}

func (e *Env) keyedRaw(t testing.TB, token string, body []byte, keys ...string) Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Server.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for _, k := range keys {
		req.Header.Add("Idempotency-Key", k)
	}
	resp, err := e.Server.Client().Do(req)
	if err != nil {
		t.Fatalf("posting to /graphql: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	var dec struct {
		Data       map[string]any `json:"data"`
		Errors     []GraphQLError `json:"errors"`
		Extensions map[string]any `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &dec); err != nil {
		t.Fatalf("decoding response (HTTP %d): %v\n%s", resp.StatusCode, err, raw)
	}
	out.Data, out.Errors, out.Extensions = dec.Data, dec.Errors, dec.Extensions
	return out
}

// wantKeyError fails unless r is one error with the HTTP status, code and
// extensions.idempotency given.
func wantKeyError(t testing.TB, what string, r Response, status int, code, reason string) {
	t.Helper()
	if r.Status != status || len(r.Errors) != 1 || r.Errors[0].Code() != code || r.Errors[0].Extensions["idempotency"] != reason {
		t.Errorf("%s: got HTTP %d %s, want HTTP %d with code %s and idempotency %s", what, r.Status, r.Body, status, code, reason)
	}
}

func replayed(r Response) bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// projects counts the fixture tenant's projects named name (all with "").
func (f *Fixture) projects(t testing.TB, name string) int {
	t.Helper()
	raw, _ := gid.Decode[model.TenantID](gid.Tenant, f.TenantID)
	pg, err := store.ProjectsOf(context.Background(), f.Env.Store.Q(), raw, store.PageArgs{First: store.MaxPage})
	if err != nil || pg.HasNext {
		t.Fatalf("listing projects: %v (more than a page: %v)", err, pg.HasNext)
	}
	return countOf(pg.Items, func(p *model.Project) bool { return name == "" || p.Name == name })
}

// actorCtx is the context a request of token gets after authentication.
func (e *Env) actorCtx(t testing.TB, token string) context.Context {
	t.Helper()
	a, err := e.Plane.People.Authenticate(context.Background(), token, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return authz.WithActor(context.Background(), a)
}

// claimAsAnother claims key for the request (query, vars) as another
// request would, on this or another replica: through control, with the
// hash the server computes.
func (e *Env) claimAsAnother(t testing.TB, ctx context.Context, key, query string, vars map[string]any) *idempotency.KeyClaim {
	t.Helper()
	raw, _ := json.Marshal(vars)
	hash, err := server.RequestHash(query, "", raw)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := e.Plane.Idempotency.ClaimKey(ctx, idempotency.KeyRequest{Key: key, RequestHash: hash, Operation: "createProject", TTL: 24 * time.Hour})
	if err != nil || ans.Verdict != idempotency.KeyRun {
		t.Fatalf("claiming the key: got verdict %v, %v; want it claimed", ans.Verdict, err)
	}
	return ans.Claim
}

// A retry gets the first response byte for byte and changes nothing; the
// key is bound to its request.
func TestIdempotencyReplay(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		vars := map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9001)}
		audit, deps := f.AuditCount(t), f.deployments(t)

		first := env.keyed(t, f.Owner.Token, deployQ, vars, "key-1")
		if first.Status != http.StatusOK || len(first.Errors) > 0 || first.Str("deploy.deployment.id") == "" || replayed(first) {
			t.Fatalf("first request: HTTP %d %s (replayed %v)", first.Status, first.Body, replayed(first))
		}
		for i := range 2 {
			again := env.keyed(t, f.Owner.Token, deployQ, vars, "key-1")
			if again.Status != http.StatusOK || !bytes.Equal(again.Body, first.Body) || !replayed(again) {
				t.Errorf("retry %d: got HTTP %d %s (replayed %v), want the first response %s replayed", i, again.Status, again.Body, replayed(again), first.Body)
			}
			if again.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
				t.Errorf("retry %d: Content-Type %q, want %q", i, again.Header.Get("Content-Type"), first.Header.Get("Content-Type"))
			}
		}
		// The key in its quoted form (RFC 8941, as the IETF draft
		// sends it) is the same key.
		if r := env.keyed(t, f.Owner.Token, deployQ, vars, `"key-1"`); !replayed(r) || !bytes.Equal(r.Body, first.Body) {
			t.Errorf("the quoted key: got HTTP %d %s, want the replay", r.Status, r.Body)
		}
		if n := f.deployments(t); n != deps+1 {
			t.Errorf("deployments after the retries: got %d, want %d", n, deps+1)
		}
		if got := f.AuditCount(t); got != audit+1 {
			t.Errorf("audit events: got %d, want %d (one for the one change)", got, audit+1)
		}

		// The same key with another request is refused; nothing runs.
		other := env.keyed(t, f.Owner.Token, deployQ, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9002)}, "key-1")
		wantKeyError(t, "the key with other variables", other, http.StatusUnprocessableEntity, "BAD_USER_INPUT", "KEY_REUSED")
		if !strings.Contains(other.Errors[0].Message, "idempotency key reused with a different request") {
			t.Errorf("message %q", other.Errors[0].Message)
		}
		otherQ := env.keyed(t, f.Owner.Token, deployQ+" ", vars, "key-1")
		wantKeyError(t, "the key with another query text", otherQ, http.StatusUnprocessableEntity, "BAD_USER_INPUT", "KEY_REUSED")
		if n := f.deployments(t); n != deps+1 || f.AuditCount(t) != audit+1 {
			t.Errorf("a refused reuse changed something: %d deployments, %d audit events", n, f.AuditCount(t))
		}

		// A mutation that did not commit keeps no key: its retry runs
		// again (and gets the same userErrors), and a corrected request
		// may use the key.
		bad := map[string]any{"t": f.TenantID, "name": "Not A Name"}
		for i := range 2 {
			r := env.keyed(t, f.Owner.Token, createProjectQ, bad, "key-2")
			if r.Status != http.StatusOK || len(r.UserErrors("createProject")) == 0 || replayed(r) {
				t.Errorf("invalid input, try %d: got HTTP %d %s, want userErrors, not a replay", i, r.Status, r.Body)
			}
		}
		fixed := env.keyed(t, f.Owner.Token, createProjectQ, map[string]any{"t": f.TenantID, "name": "fixed"}, "key-2")
		if fixed.Status != http.StatusOK || fixed.Str("createProject.project.id") == "" || replayed(fixed) {
			t.Errorf("the corrected request: got HTTP %d %s", fixed.Status, fixed.Body)
		}
		// So for a top-level error: a viewer may not create projects.
		viewer := f.Users[Viewer].Token
		for i := range 2 {
			r := env.keyed(t, viewer, createProjectQ, map[string]any{"t": f.TenantID, "name": "forbidden"}, "key-3")
			if len(r.Errors) != 1 || r.Errors[0].Code() != "FORBIDDEN" || replayed(r) {
				t.Errorf("forbidden, try %d: got HTTP %d %s, want FORBIDDEN, not a replay", i, r.Status, r.Body)
			}
		}

		// A query with a key just runs: nothing is kept.
		for i := range 2 {
			r := env.keyed(t, f.Owner.Token, `{ viewer { user { email } } }`, nil, "key-4")
			if r.Status != http.StatusOK || r.Str("viewer.user.email") == "" || replayed(r) {
				t.Errorf("a query with a key, try %d: got HTTP %d %s (replayed %v)", i, r.Status, r.Body, replayed(r))
			}
		}
	})
}

// Requests with one key at once run the mutation once: each gets the
// response, its replay, or "in progress".
func TestIdempotencyConcurrent(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		audit, deps := f.AuditCount(t), f.deployments(t)
		vars := map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9003)}
		const n = 8
		res := concurrently(n, func(int) Response {
			return env.keyed(t, f.Owner.Token, deployQ, vars, "race")
		})
		if got := f.deployments(t); got != deps+1 {
			t.Fatalf("deployments: got %d, want %d", got, deps+1)
		}
		if got := f.AuditCount(t); got != audit+1 {
			t.Errorf("audit events: got %d, want %d", got, audit+1)
		}
		final := env.keyed(t, f.Owner.Token, deployQ, vars, "race")
		id := final.Str("deploy.deployment.id")
		if final.Status != http.StatusOK || id == "" || !replayed(final) {
			t.Fatalf("a retry after the race: got HTTP %d %s, want the replay", final.Status, final.Body)
		}
		ran, replays, busy := 0, 0, 0
		for i, r := range res {
			switch {
			case r.Status == http.StatusOK:
				if !bytes.Equal(r.Body, final.Body) {
					t.Errorf("request %d: got %s, want the one response %s", i, r.Body, final.Body)
				}
				if replayed(r) {
					replays++
				} else {
					ran++
				}
			case r.Status == http.StatusConflict:
				busy++
				wantKeyError(t, "a request while another ran", r, http.StatusConflict, "CONFLICT", "IN_PROGRESS")
				if r.Header.Get("Retry-After") == "" || r.Errors[0].Extensions["retryable"] != true {
					t.Errorf("in progress: got Retry-After %q, extensions %v; want both to say retry", r.Header.Get("Retry-After"), r.Errors[0].Extensions)
				}
			default:
				t.Errorf("request %d: got HTTP %d %s", i, r.Status, r.Body)
			}
		}
		if ran != 1 {
			t.Errorf("got %d requests that ran the mutation, want 1", ran)
		}
		t.Logf("%d ran, %d replayed, %d in progress", ran, replays, busy)
	})
}

// A key held by a request in flight (on this replica or another) answers
// "in progress"; once its lease ran out a retry takes it over, and the
// first can no longer commit.
func TestIdempotencyInProgress(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		vars := map[string]any{"t": f.TenantID, "name": "held"}
		ctx := env.actorCtx(t, f.Owner.Token)
		slow := env.claimAsAnother(t, ctx, "held", createProjectQ, vars)

		r := env.keyed(t, f.Owner.Token, createProjectQ, vars, "held")
		wantKeyError(t, "while another request holds the key", r, http.StatusConflict, "CONFLICT", "IN_PROGRESS")
		r = env.keyed(t, f.Owner.Token, createProjectQ, map[string]any{"t": f.TenantID, "name": "other"}, "held")
		wantKeyError(t, "another request with the held key", r, http.StatusUnprocessableEntity, "BAD_USER_INPUT", "KEY_REUSED")
		if n := f.projects(t, ""); n != 1 { // the fixture's
			t.Fatalf("projects while the key is held: got %d, want 1", n)
		}

		env.Clock.Advance(idempotency.KeyLease + time.Second)
		r = env.keyed(t, f.Owner.Token, createProjectQ, vars, "held")
		if r.Status != http.StatusOK || r.Str("createProject.project.id") == "" || replayed(r) {
			t.Fatalf("a retry after the lease: got HTTP %d %s, want it to run", r.Status, r.Body)
		}
		// The slow request wakes up and tries to commit: refused.
		if _, err := env.Plane.Delivery.CreateProject(idempotency.WithKey(ctx, slow), mustRaw[model.TenantID](t, gid.Tenant, f.TenantID), "held-too", ""); err == nil {
			t.Error("the request whose key was taken over committed")
		}
		if !slow.TakenOver() {
			t.Error("the slow claim does not know it was taken over")
		}
		if n, m := f.projects(t, "held"), f.projects(t, "held-too"); n != 1 || m != 0 {
			t.Errorf("projects: got %d held and %d held-too, want 1 and 0", n, m)
		}
		if again := env.keyed(t, f.Owner.Token, createProjectQ, vars, "held"); !replayed(again) || !bytes.Equal(again.Body, r.Body) {
			t.Errorf("a retry after the take-over: got HTTP %d %s, want the replay", again.Status, again.Body)
		}
	})
}

// A mutation that committed but whose response was never stored (its
// process died, or the database went away, in between) is never run
// again: its retry is told the change was made.
func TestIdempotencyResponseLost(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		vars := map[string]any{"t": f.TenantID, "name": "lost"}
		ctx := env.actorCtx(t, f.Owner.Token)
		claim := env.claimAsAnother(t, ctx, "lost", createProjectQ, vars)
		// The mutation commits under the key; then nothing: the
		// response is never stored.
		p, err := env.Plane.Delivery.CreateProject(idempotency.WithKey(ctx, claim), mustRaw[model.TenantID](t, gid.Tenant, f.TenantID), "lost", "")
		if err != nil || !claim.Recorded() {
			t.Fatalf("creating the project under the key: %v (recorded %v)", err, claim.Recorded())
		}
		audit := f.AuditCount(t)

		// Within the lease its request may still be storing it.
		r := env.keyed(t, f.Owner.Token, createProjectQ, vars, "lost")
		wantKeyError(t, "within the lease", r, http.StatusConflict, "CONFLICT", "IN_PROGRESS")

		env.Clock.Advance(idempotency.KeyLease + time.Second)
		for i := range 2 {
			r = env.keyed(t, f.Owner.Token, createProjectQ, vars, "lost")
			wantKeyError(t, "after the lease", r, http.StatusConflict, "CONFLICT", "RESPONSE_LOST")
			if len(r.Errors) == 1 {
				ext := r.Errors[0].Extensions
				if ext["action"] != "project.create" || ext["targetId"] != gid.Encode(gid.Project, p.ID) || ext["retryable"] == true {
					t.Errorf("try %d: extensions %v, want the action, the project's id and no retry", i, ext)
				}
			}
		}
		if n := f.projects(t, "lost"); n != 1 || f.AuditCount(t) != audit {
			t.Errorf("after the retries: %d projects, %d audit events; want 1 and %d", n, f.AuditCount(t), audit)
		}
		r = env.keyed(t, f.Owner.Token, createProjectQ, map[string]any{"t": f.TenantID, "name": "lost-2"}, "lost")
		wantKeyError(t, "the lost key with another request", r, http.StatusUnprocessableEntity, "BAD_USER_INPUT", "KEY_REUSED")
	})
}

// Responses holding a one-time secret are not kept: the retry is told the
// change was made, and the database never holds the secret.
func TestIdempotencyOneTimeSecret(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		q := `mutation($name: String!) { createApiToken(input: {name: $name}) { apiToken { id } secret userErrors { field message code } } }`
		vars := map[string]any{"name": "keyed"}
		first := env.keyed(t, f.Owner.Token, q, vars, "token")
		secret, id := first.Str("createApiToken.secret"), first.Str("createApiToken.apiToken.id")
		if first.Status != http.StatusOK || secret == "" || id == "" {
			t.Fatalf("creating a token: HTTP %d %s", first.Status, first.Body)
		}
		r := env.keyed(t, f.Owner.Token, q, vars, "token")
		wantKeyError(t, "the retry", r, http.StatusConflict, "CONFLICT", "RESPONSE_NOT_KEPT")
		if strings.Contains(string(r.Body), secret) {
			t.Error("the retry shows the secret")
		}
		if len(r.Errors) == 1 && (r.Errors[0].Extensions["action"] != "api_token.create" || r.Errors[0].Extensions["targetId"] != id) {
			t.Errorf("extensions %v, want the action and the token's id %s", r.Errors[0].Extensions, id)
		}
		tenant, _ := gid.Decode[model.TenantID](gid.Tenant, f.TenantID)
		local, _ := gid.Decode[model.LocalUserID](gid.User, f.Owner.UserID)
		raw, err := store.UserOfLocalID(context.Background(), env.Store.Q(), tenant, local)
		if err != nil {
			t.Fatalf("the owner's user: %v", err)
		}
		pg, err := store.TokensOf(context.Background(), env.Store.Q(), tenant, raw, store.PageArgs{First: store.MaxPage})
		n := countOf(pg.Items, func(k *model.APIToken) bool { return k.Name == "keyed" })
		if err != nil || n != 1 {
			t.Errorf("tokens named keyed: got %d (%v), want 1", n, err)
		}
		sum := sha256.Sum256([]byte("token"))
		key, err := store.KeyFor(context.Background(), env.Store.Q(), store.KeyScope{Tenant: tenant, User: raw, KeyHash: sum[:]})
		if err != nil {
			t.Fatalf("the stored key: %v", err)
		}
		if key.State != store.KeyWithheld || len(key.ResponseBody) != 0 || bytes.Contains(key.ResponseBody, []byte(secret)) {
			t.Errorf("the stored key: state %s, %d bytes of response; want withheld, none", key.State, len(key.ResponseBody))
		}

		// createTenant commits outside a tenant's change: it refuses a key.
		tenants, _ := store.CountTenants(context.Background(), env.Store.Q())
		r = env.keyed(t, env.BootstrapToken, `mutation { createTenant(input: {name: "keyed"}) { tenant { id } secret userErrors { message } } }`, nil, "tenant")
		wantKeyError(t, "createTenant with a key", r, http.StatusBadRequest, "BAD_USER_INPUT", "UNSUPPORTED_REQUEST")
		if n, _ := store.CountTenants(context.Background(), env.Store.Q()); n != tenants {
			t.Errorf("tenants: got %d, want %d", n, tenants)
		}
	})
}

// A key is its user's in the tenant their token acts in: another user, or
// the same user in another tenant, has a key of the same name of their own.
func TestIdempotencyScope(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		a, b := env.NewFixture(t), env.NewFixture(t)
		mine := env.keyed(t, a.Owner.Token, createProjectQ, map[string]any{"t": a.TenantID, "name": "mine"}, "shared")
		if mine.Status != http.StatusOK || mine.Str("createProject.project.id") == "" {
			t.Fatalf("first use: HTTP %d %s", mine.Status, mine.Body)
		}
		// Another user of the tenant sends the very same request with
		// the key: it runs (and finds the name taken), no replay.
		r := env.keyed(t, a.Users[Admin].Token, createProjectQ, map[string]any{"t": a.TenantID, "name": "mine"}, "shared")
		if ue := r.UserErrors("createProject"); r.Status != http.StatusOK || replayed(r) || len(ue) != 1 || ue[0].Code != "CONFLICT" {
			t.Errorf("another user of the tenant: got HTTP %d %s, want it to run and find the name taken", r.Status, r.Body)
		}
		r = env.keyed(t, a.Users[Admin].Token, createProjectQ, map[string]any{"t": a.TenantID, "name": "theirs"}, "shared")
		if r.Status != http.StatusOK || replayed(r) || r.Str("createProject.project.name") != "theirs" {
			t.Errorf("another user of the tenant, another request: got HTTP %d %s, want it to run", r.Status, r.Body)
		}
		// The same user in another tenant: the key is new there.
		r = env.keyed(t, b.Owner.Token, createProjectQ, map[string]any{"t": b.TenantID, "name": "mine"}, "shared")
		if r.Status != http.StatusOK || replayed(r) || r.Str("createProject.project.name") != "mine" {
			t.Errorf("the same user in another tenant: got HTTP %d %s, want it to run", r.Status, r.Body)
		}
		if n := b.projects(t, "mine"); n != 1 {
			t.Errorf("projects named mine in the other tenant: got %d, want 1", n)
		}
		if r := env.keyed(t, a.Owner.Token, createProjectQ, map[string]any{"t": a.TenantID, "name": "mine"}, "shared"); !replayed(r) || !bytes.Equal(r.Body, mine.Body) {
			t.Errorf("the first user's retry: got HTTP %d %s, want the replay", r.Status, r.Body)
		}
	})
}

// Keys are forgotten once their window closes: deleted by the job, and
// treated as unused before it runs.
func TestIdempotencyExpiry(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ctx := context.Background()
		count := func() int {
			n, err := store.CountKeys(ctx, env.Store.Q())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, key := range []string{"a", "b"} {
			r := env.keyed(t, f.Owner.Token, createProjectQ, map[string]any{"t": f.TenantID, "name": "exp-" + key}, key)
			if r.Status != http.StatusOK || r.Str("createProject.project.id") == "" {
				t.Fatalf("key %s: HTTP %d %s", key, r.Status, r.Body)
			}
		}
		rep, err := env.Plane.RunJobsOnce(ctx)
		if err != nil || rep.Keys != 0 || count() != 2 {
			t.Fatalf("a run within the window: %+v, %v, %d keys; want none deleted", rep, err, count())
		}
		env.Clock.Advance(24*time.Hour + time.Minute)

		// Before the job: the expired key is as good as unused.
		r := env.keyed(t, f.Owner.Token, createProjectQ, map[string]any{"t": f.TenantID, "name": "exp-a2"}, "a")
		if r.Status != http.StatusOK || r.Str("createProject.project.name") != "exp-a2" || replayed(r) {
			t.Errorf("an expired key with another request: got HTTP %d %s, want it to run", r.Status, r.Body)
		}
		// The job deletes the other (a's new use is in its window).
		if rep, err = env.Plane.RunJobsOnce(ctx); err != nil || rep.Keys != 1 || count() != 1 {
			t.Errorf("the job after the window: %+v, %v, %d keys left; want 1 deleted, 1 left", rep, err, count())
		}
		r = env.keyed(t, f.Owner.Token, createProjectQ, map[string]any{"t": f.TenantID, "name": "exp-b"}, "b")
		if ue := r.UserErrors("createProject"); r.Status != http.StatusOK || replayed(r) || len(ue) != 1 || ue[0].Code != "CONFLICT" {
			t.Errorf("the forgotten key b: got HTTP %d %s, want the mutation to run again (the name is taken)", r.Status, r.Body)
		}
	})
}

// Bad keys and requests a key cannot cover are refused, and nothing runs.
func TestIdempotencyBadRequests(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		audit := f.AuditCount(t)
		vars := map[string]any{"t": f.TenantID, "name": "bad"}
		for _, tc := range []struct {
			name string
			keys []string
		}{
			{"empty", []string{""}},
			{"too long", []string{strings.Repeat("k", 256)}},
			{"a space", []string{"a b"}},
			{"not ASCII", []string{"clé"}},
			{"a bad string", []string{`"abc`}},
			{"two headers", []string{"a", "b"}},
		} {
			r := env.keyed(t, f.Owner.Token, createProjectQ, vars, tc.keys...)
			wantKeyError(t, tc.name, r, http.StatusBadRequest, "BAD_USER_INPUT", "INVALID_KEY")
		}
		r := env.keyed(t, f.Owner.Token, `{ viewer { user { email } } }`, nil, "a b")
		wantKeyError(t, "a bad key on a query", r, http.StatusBadRequest, "BAD_USER_INPUT", "INVALID_KEY")

		two := `mutation($t: ID!) {
			a: createProject(input: {tenantId: $t, name: "bad"}) { project { id } }
			b: createProject(input: {tenantId: $t, name: "bad-2"}) { project { id } } }`
		r = env.keyed(t, f.Owner.Token, two, map[string]any{"t": f.TenantID}, "two")
		wantKeyError(t, "two mutation fields", r, http.StatusBadRequest, "BAD_USER_INPUT", "UNSUPPORTED_REQUEST")
		body, _ := json.Marshal(map[string]any{"variables": vars, "extensions": map[string]any{
			"persistedQuery": map[string]any{"version": 1, "sha256Hash": strings.Repeat("0", 64)}}})
		// An unknown persisted query's hash: the link's cue to send the
		// text; the key is not claimed (TestPersistedMutationWithIdempotencyKey).
		r = env.keyedRaw(t, f.Owner.Token, body, "apq")
		if len(r.Errors) != 1 || r.Errors[0].Code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Errorf("a persisted query's unknown hash with a key: %s, want PERSISTED_QUERY_NOT_FOUND", r.Body)
		}
		r = env.keyedRaw(t, f.Owner.Token, []byte(`{"query": 1}`), "not-graphql")
		wantKeyError(t, "a body that is no GraphQL request", r, http.StatusBadRequest, "BAD_USER_INPUT", "UNSUPPORTED_REQUEST")

		if n := f.projects(t, ""); n != 1 || f.AuditCount(t) != audit {
			t.Errorf("after the refused requests: %d projects, %d audit events; want the fixture's 1 and %d", n, f.AuditCount(t), audit)
		}
		if n, _ := store.CountKeys(context.Background(), env.Store.Q()); n != 0 {
			t.Errorf("keys stored: got %d, want none", n)
		}
	})
}

func mustRaw[T ~string](t testing.TB, kind, id string) T {
	t.Helper()
	raw, err := gid.Decode[T](kind, id)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
