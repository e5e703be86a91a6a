package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/outbound"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// receiver is a webhook endpoint on loopback: it records every request
// and answers with its status (200 unless set otherwise).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	got      []received
	redirect string
}

type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body, at: time.Now()})
		status, redirect := r.status, r.redirect
		r.mu.Unlock()
		if redirect != "" {
			http.Redirect(w, req, redirect, http.StatusFound)
			return
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "receiver says %d", status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) answer(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// payload is a message's body as receivers see it.
type payload struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

func (rc received) payload(t *testing.T) payload {
	t.Helper()
	var p payload
	if err := json.Unmarshal(rc.body, &p); err != nil {
		t.Fatalf("a delivery's body %q: %v", rc.body, err)
	}
	return p
}

// webhookEnv is a control plane whose endpoints may be on loopback (the
// receivers are) and whose retries come fast.
func webhookEnv(t *testing.T, st *store.Store, tune ...func(*config.Config)) *Env {
	return NewEnvWith(t, st, func(c *config.Config) {
		c.Webhooks.AllowPrivate = true
		c.Webhooks.BackoffMin, c.Webhooks.BackoffMax = time.Millisecond, 5*time.Millisecond
		c.Webhooks.Timeout = 2 * time.Second
		for _, f := range tune {
			f(c)
		}
	})
}

// eachWebhookStore runs fn on a webhookEnv of each store, in parallel.
func eachWebhookStore(t *testing.T, fn func(t *testing.T, env *Env), tune ...func(*config.Config)) {
	t.Helper()
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, webhookEnv(t, s.Open(t), tune...))
		})
	}
}

// newEndpoint registers an endpoint of the tenant (project "") or a
// project for events, as the fixture's owner; it returns its id and secret.
func (f *Fixture) newEndpoint(t testing.TB, project, url string, events ...string) (id, secret string) {
	t.Helper()
	vars := map[string]any{"t": f.TenantID, "u": url, "e": events}
	if project != "" {
		vars["p"] = project
	}
	r := f.MustDo(t, `mutation($t: ID!, $p: ID, $u: String!, $e: [WebhookEventType!]!) {
		createWebhookEndpoint(input: {tenantId: $t, projectId: $p, url: $u, events: $e}) { endpoint { id } secret `+ue+` } }`, vars)
	secret = r.Str("createWebhookEndpoint.secret")
	f.addSecret(secret)
	return r.Str("createWebhookEndpoint.endpoint.id"), secret
}

// failedMessage makes a message for a project endpoint (a deployment
// that ends: deployment.ended) and marks it FAILED in the store, as the sender does after
// the retry window; it returns the message's global id.
func (f *Fixture) failedMessage(t *testing.T, endpoint string) string {
	t.Helper()
	d := deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
	f.MustDo(t, `mutation($d: ID!) { cancelDeployment(input: {deploymentId: $d}) { `+ue+` } }`, map[string]any{"d": d.ID})
	r := f.MustDo(t, `query($e: ID!) { node(id: $e) { ... on WebhookEndpoint { messages(first: 1) { nodes { id } } } } }`,
		map[string]any{"e": endpoint})
	id := r.Str("node.messages.nodes.0.id")
	raw, err := gid.Decode[model.MessageID](gid.Message, id)
	if err != nil {
		t.Fatalf("the endpoint has no message: %v", r.Data)
	}
	m, err := store.Messages.Get(t.Context(), f.Env.Store.Q(), raw)
	if err != nil {
		t.Fatal(err)
	}
	m.Status = model.MessageFailed
	if err := store.UpdateMessage(t.Context(), f.Env.Store.Q(), m); err != nil {
		t.Fatal(err)
	}
	return id
}

// deliverAll runs the sender's passes until no message is due: each pass
// sends what is due once.
func deliverAll(t *testing.T, p *control.Plane) outbound.OutboundReport {
	t.Helper()
	var all outbound.OutboundReport
	for range 50 {
		rep, err := p.Outbound.DeliverOutbound(t.Context())
		if err != nil {
			t.Fatalf("delivering: %v", err)
		}
		all.Delivered, all.Failed = all.Delivered+rep.Delivered, all.Failed+rep.Failed
		if rep.Delivered+rep.Failed == 0 {
			return all
		}
	}
	t.Fatal("the sender found messages due after 50 passes")
	return all
}

// messages reads an endpoint's messages, oldest first, with attempts.
func (f *Fixture) messages(t testing.TB, endpoint string) []map[string]any {
	t.Helper()
	r := f.MustDo(t, `query($e: ID!) { node(id: $e) { ... on WebhookEndpoint { messages(first: 100) { nodes {
		id webhookId eventType status attemptCount payload
		attempts { statusCode latencyMs responseExcerpt error redelivery } } } } } }`, map[string]any{"e": endpoint})
	var out []map[string]any
	for _, n := range r.List("node.messages.nodes") {
		out = append([]map[string]any{n.(map[string]any)}, out...)
	}
	return out
}

// Every kind of event reaches an endpoint that asked for it, once, with a
// signature the Standard Webhooks reference library accepts; the payload
// carries ids and the essentials; every attempt is readable.
func TestWebhookEventsSigned(t *testing.T) {
	t.Parallel()
	eachWebhookStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		rc := newReceiver(t)
		all := []string{"DEPLOYMENT_STAGE_CHANGED", "DEPLOYMENT_ENDED", "APPROVAL_REQUESTED", "CLUSTER_CONNECTED",
			"CLUSTER_DISCONNECTED", "BUILD_ENDED"}
		endpoint, secret := f.newEndpoint(t, "", rc.URL+"/hooks/nebula", all...)
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("the secret %q is no Standard Webhooks secret", secret)
		}

		agent, _ := connectStageAgent(t, f, "prod-eu") // cluster.connected
		_, raw := wsDeploy(t, f)                       // QUEUED, DELIVERING
		agent.waitDeployment(string(raw))
		for _, st := range []model.DeploymentStage{model.StageStarting, model.StageProbing, model.StageSwitchingTraffic,
			model.StageRetiring, model.StageSucceeded} {
			agent.report(string(raw), st) // …, deployment.ended
		}
		agent.handled()
		deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID) // approval requested
		svc := f.NewGitService(t, "shop-api", GitHubRepository)
		res := f.MustDo(t, `mutation($s: ID!, $e: ID!, $c: String) { deploy(input: {serviceId: $s, environmentId: $e, commit: $c}) {
			build { id } `+ue+` } }`, map[string]any{"s": svc, "e": f.EnvironmentID, "c": SampleCommit})
		build := rawID(t, "Build", res.Str("deploy.build.id"))
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(build)
		agent.buildReport(build, 0, protocol.BuildSucceeded, Digest(5), "", "#1 done") // build.ended
		env.Clock.Advance(model.DisconnectedAfter + time.Second)
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil { // cluster.disconnected
			t.Fatal(err)
		}

		rep := deliverAll(t, env.Plane)
		msgs := f.messages(t, endpoint)
		t.Logf("%d messages delivered", len(msgs))
		got := rc.requests()
		if rep.Delivered != len(msgs) || len(got) != len(msgs) || rep.Failed != 0 {
			t.Fatalf("%d messages, %d delivered, %d failed, %d requests", len(msgs), rep.Delivered, rep.Failed, len(got))
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		kinds := map[string]bool{}
		for i, rq := range got {
			if err := wh.Verify(rq.body, rq.header); err != nil {
				t.Errorf("request %d: the reference library refuses its signature: %v", i, err)
			}
			id := rq.header.Get("webhook-id")
			seen[id]++
			p := rq.payload(t)
			kinds[p.Type] = true
			if msgs[i]["webhookId"] != id {
				t.Errorf("request %d is %s, want the message made %d-th (%s): out of order", i, id, i, msgs[i]["webhookId"])
			}
			if rq.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(rq.header.Get("User-Agent"), "NebulaCtrl-Webhooks/") {
				t.Errorf("request %d's headers: %v", i, rq.header)
			}
			switch p.Type {
			case "deployment.stage_changed", "deployment.ended", "deployment.approval_requested":
				if _, err := gid.Decode[model.DeploymentID](gid.Deployment, fmt.Sprint(p.Data["deploymentId"])); err != nil || p.Data["stage"] == nil {
					t.Errorf("%s's data: %v", p.Type, p.Data)
				}
			case "cluster.connected", "cluster.disconnected":
				if p.Data["clusterId"] != f.ClusterID || p.Data["name"] != "prod-eu" {
					t.Errorf("%s's data: %v", p.Type, p.Data)
				}
			case "build.ended":
				if p.Data["status"] != "SUCCEEDED" || p.Data["imageDigest"] != Digest(5) || p.Data["commit"] != SampleCommit {
					t.Errorf("build.ended's data: %v", p.Data)
				}
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("message %s delivered %d times", id, n)
			}
		}
		for _, k := range []string{"deployment.stage_changed", "deployment.ended", "deployment.approval_requested",
			"cluster.connected", "cluster.disconnected", "build.ended"} {
			if !kinds[k] {
				t.Errorf("no %s was delivered (got %v)", k, kinds)
			}
		}
		for _, m := range msgs {
			a := m["attempts"].([]any)
			if m["status"] != "DELIVERED" || m["attemptCount"] != float64(1) || len(a) != 1 ||
				dig(a[0], "statusCode") != float64(200) || dig(a[0], "responseExcerpt") != "receiver says 200" || dig(a[0], "error") != "" {
				t.Errorf("message %v", m)
			}
		}
		// The secret is shown once: never again.
		e := f.Node(t, endpoint, `... on WebhookEndpoint { url events enabled secretRotatedAt }`)
		if b, _ := json.Marshal(e); strings.Contains(string(b), strings.TrimPrefix(secret, "whsec_")) {
			t.Error("the endpoint shows its secret")
		}
	})
}

// An endpoint that answers 503 for a while gets nothing lost: its first
// message is tried again and again (backing off) while the later ones
// wait behind it, and once it answers 200 it gets every message, each
// once, in the order they were made.
func TestWebhookReceiverDownThenBack(t *testing.T) {
	t.Parallel()
	eachWebhookStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		rc := newReceiver(t)
		rc.answer(http.StatusServiceUnavailable)
		endpoint, _ := f.newEndpoint(t, f.ProjectID, rc.URL, "DEPLOYMENT_STAGE_CHANGED")
		for range 4 {
			wsDeploy(t, f) // QUEUED, DELIVERING (and SUPERSEDED for the one before)
		}
		for pass := 0; pass < 5; pass++ {
			if _, err := env.Plane.Outbound.DeliverOutbound(t.Context()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(6 * time.Millisecond) // the backoff (at most 5 ms) runs out
		}
		msgs := f.messages(t, endpoint)
		if len(msgs) < 8 {
			t.Fatalf("%d messages, want 8 at least", len(msgs))
		}
		for i, m := range msgs {
			switch {
			case i == 0 && (m["status"] != "PENDING" || m["attemptCount"].(float64) < 2 || dig(m["attempts"], "0.statusCode") != float64(503) ||
				dig(m["attempts"], "0.error") != "HTTP 503"):
				t.Errorf("the first message while the receiver is down: %v", m)
			case i > 0 && m["attemptCount"] != float64(0):
				t.Errorf("message %d was attempted before the one ahead of it: %v", i, m)
			}
		}
		down := len(rc.requests())
		rc.answer(http.StatusNoContent)
		deliverAll(t, env.Plane)
		got := rc.requests()[down:]
		if len(got) != len(msgs) {
			t.Fatalf("%d deliveries once back, want %d", len(got), len(msgs))
		}
		for i, rq := range got {
			if id := rq.header.Get("webhook-id"); id != msgs[i]["webhookId"] {
				t.Errorf("delivery %d is %s, want %s (the order they were made in)", i, id, msgs[i]["webhookId"])
			}
		}
		// The first message's retries carried the same webhook-id.
		for _, rq := range rc.requests()[:down] {
			if rq.header.Get("webhook-id") != msgs[0]["webhookId"] {
				t.Errorf("while down, %s was sent: only the first message may be", rq.header.Get("webhook-id"))
			}
		}
	})
}

// A change that rolls back sends nothing: a preview runs the real deploy
// (its stage events included) in a transaction that always rolls back,
// and a deploy refused for bad input makes no event at all.
func TestWebhookRollbackSendsNothing(t *testing.T) {
	t.Parallel()
	eachWebhookStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		rc := newReceiver(t)
		endpoint, _ := f.newEndpoint(t, "", rc.URL, "DEPLOYMENT_STAGE_CHANGED", "APPROVAL_REQUESTED")
		for _, e := range []string{f.EnvironmentID, f.ProtectedEnvironmentID} {
			p := f.MustDo(t, `query($s: ID!, $e: ID!, $d: String!) { previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
				clusters { cluster { id } } `+ue+` } }`, map[string]any{"s": f.ServiceID, "e": e, "d": Digest(9)})
			_ = p
		}
		bad := env.Do(t, f.Owner.Token, `mutation($s: ID!, $e: ID!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: "latest"}) {
			`+ue+` } }`, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
		if len(bad.UserErrors("deploy")) == 0 {
			t.Fatalf("a deploy of a tag was accepted: %v", bad.Data)
		}
		deliverAll(t, env.Plane)
		if n := len(f.messages(t, endpoint)); n != 0 || len(rc.requests()) != 0 {
			t.Errorf("%d messages and %d deliveries for changes that rolled back", n, len(rc.requests()))
		}
		// The same deploy for real is told.
		deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
		deliverAll(t, env.Plane)
		var kinds []string
		for _, rq := range rc.requests() {
			kinds = append(kinds, rq.payload(t).Type)
		}
		if strings.Join(kinds, ",") != "deployment.stage_changed,deployment.stage_changed,deployment.approval_requested" {
			t.Errorf("the real deploy told %v", kinds)
		}
	})
}

// Without NEBULA_WEBHOOK_ALLOW_PRIVATE_NETWORKS an endpoint may not be on
// loopback, private or link-local addresses (server-side request
// forgery), however it is spelled; bad input changes nothing.
func TestWebhookEndpointRefusedAddresses(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	create := func(url string, events ...string) Response {
		t.Helper()
		return env.Do(t, f.Owner.Token, `mutation($t: ID!, $u: String!, $e: [WebhookEventType!]!) {
			createWebhookEndpoint(input: {tenantId: $t, url: $u, events: $e}) { endpoint { id } secret `+ue+` } }`,
			map[string]any{"t": f.TenantID, "u": url, "e": events})
	}
	before := f.AuditCount(t)
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:8080/hook", "NEBULA_WEBHOOK_ALLOW_PRIVATE_NETWORKS"},
		{"http://localhost/hook", "loopback, private or link-local"},
		{"http://[::1]/hook", "loopback, private or link-local"},
		{"http://10.1.2.3/hook", "loopback, private or link-local"},
		{"http://192.168.0.10/hook", "loopback, private or link-local"},
		{"http://169.254.169.254/latest/meta-data", "loopback, private or link-local"},
		{"http://0.0.0.0/hook", "loopback, private or link-local"},
		{"ftp://198.41.0.4/hook", "http:// or https://"},
		{"https://user:pass@198.41.0.4/hook", "credentials"},
		{"not a url at all", "http:// or https://"},
	} {
		r := create(c.url, "CLUSTER_CONNECTED")
		ue := r.UserErrors("createWebhookEndpoint")
		if len(ue) != 1 || ue[0].Code != "BAD_USER_INPUT" || !strings.Contains(ue[0].Message, c.want) || r.Get("createWebhookEndpoint.secret") != nil {
			t.Errorf("%s: %v", c.url, r.Data)
		}
	}
	for _, c := range []struct {
		events []string
		want   string
	}{{nil, "one at least"}, {[]string{"BUILD_ENDED", "BUILD_ENDED"}, "listed twice"}} {
		if ue := create("https://198.41.0.4/hook", append([]string{}, c.events...)...).UserErrors("createWebhookEndpoint"); len(ue) != 1 || !strings.Contains(ue[0].Message, c.want) {
			t.Errorf("events %v: %v", c.events, ue)
		}
	}
	// A project's endpoint cannot ask for the tenant's cluster events.
	r := env.Do(t, f.Owner.Token, `mutation($t: ID!, $p: ID!) { createWebhookEndpoint(input: {tenantId: $t, projectId: $p,
		url: "https://198.41.0.4/hook", events: [CLUSTER_DISCONNECTED]}) { `+ue+` } }`, map[string]any{"t": f.TenantID, "p": f.ProjectID})
	if ue := r.UserErrors("createWebhookEndpoint"); len(ue) != 1 || !strings.Contains(ue[0].Message, "the tenant's, not a project's") {
		t.Errorf("a project endpoint for cluster events: %v", r.Data)
	}
	if f.AuditCount(t) != before {
		t.Error("refused endpoints changed something")
	}
	// A public address is fine; moving it onto a private one is refused.
	ok := create("https://198.41.0.4/hook", "CLUSTER_CONNECTED")
	id := ok.Str("createWebhookEndpoint.endpoint.id")
	mv := env.Do(t, f.Owner.Token, `mutation($e: ID!) { updateWebhookEndpoint(input: {endpointId: $e, url: "http://10.0.0.1/"}) { `+ue+` } }`,
		map[string]any{"e": id})
	if ue := mv.UserErrors("updateWebhookEndpoint"); len(ue) != 1 || f.Node(t, id, `... on WebhookEndpoint { url }`)["url"] != "https://198.41.0.4/hook" {
		t.Errorf("moving an endpoint onto a private address: %v", mv.Data)
	}
}

// Two replicas on one PostgreSQL, both sending: every message goes out
// once, in each endpoint's order.
func TestWebhookTwoReplicasDeliverOnce(t *testing.T) {
	t.Parallel()
	env := webhookEnv(t, pgtest.Open(t))
	f := env.NewFixture(t)
	second := env.SecondPlane(t, core.WithOutbound(outbound.SettingsFrom(config.Webhooks{
		Timeout: 2 * time.Second, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond, RetryWindow: time.Hour,
		SecretOverlap: time.Hour, Retention: time.Hour, Poll: 5 * time.Millisecond, AllowPrivate: true}, "second")))
	rcs := []*receiver{newReceiver(t), newReceiver(t), newReceiver(t)}
	var endpoints []string
	for _, rc := range rcs {
		id, _ := f.newEndpoint(t, "", rc.URL, "DEPLOYMENT_STAGE_CHANGED")
		endpoints = append(endpoints, id)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, p := range []*control.Plane{env.Plane, second} {
		wg.Go(func() { p.Outbound.RunOutbound(ctx) })
	}
	for range 10 {
		wsDeploy(t, f)
	}
	testutil.Eventually(t, 30*time.Second, "every message delivered", func() (bool, string) {
		for _, e := range endpoints {
			for _, m := range f.messages(t, e) {
				if m["status"] != "DELIVERED" {
					return false, fmt.Sprintf("%v", m["status"])
				}
			}
		}
		return true, ""
	})
	cancel()
	wg.Wait()
	for i, rc := range rcs {
		msgs := f.messages(t, endpoints[i])
		got := rc.requests()
		if len(got) != len(msgs) {
			t.Errorf("endpoint %d: %d deliveries of %d messages", i, len(got), len(msgs))
			continue
		}
		for j, rq := range got {
			if rq.header.Get("webhook-id") != msgs[j]["webhookId"] || msgs[j]["attemptCount"] != float64(1) {
				t.Errorf("endpoint %d, delivery %d: %s (attempts %v), want %s once", i, j, rq.header.Get("webhook-id"),
					msgs[j]["attemptCount"], msgs[j]["webhookId"])
			}
		}
	}
}

// An endpoint that fails every attempt for the retry window is disabled
// (audited, said why), given no new message, and once enabled again gets
// what waited; its failed message can be redelivered, once, marked so. A
// redirect is a failure, never followed.
func TestWebhookDisabledAfterSustainedFailure(t *testing.T) {
	t.Parallel()
	eachWebhookStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		rc := newReceiver(t)
		elsewhere := newReceiver(t)
		rc.mu.Lock()
		rc.redirect = elsewhere.URL + "/stolen"
		rc.mu.Unlock()
		endpoint, _ := f.newEndpoint(t, f.ProjectID, rc.URL, "DEPLOYMENT_STAGE_CHANGED")
		wsDeploy(t, f)
		rep := deliverAll(t, env.Plane)
		msgs := f.messages(t, endpoint)
		if rep.Delivered != 0 || len(msgs) < 2 || msgs[0]["status"] != "PENDING" ||
			!strings.Contains(fmt.Sprint(dig(msgs[0]["attempts"], "0.error")), "redirects are not followed") {
			t.Fatalf("after a redirect: %v, %v", rep, msgs)
		}
		if len(elsewhere.requests()) != 0 {
			t.Fatal("the redirect was followed")
		}
		// The window passes with every attempt failing.
		rc.mu.Lock()
		rc.redirect = ""
		rc.mu.Unlock()
		rc.answer(http.StatusInternalServerError)
		env.Clock.Advance(24*time.Hour + time.Minute)
		rep = deliverAll(t, env.Plane)
		e := f.Node(t, endpoint, `... on WebhookEndpoint { enabled disabledReason disabledAt }`)
		if rep.Failed != 1 || e["enabled"] != false || !strings.Contains(fmt.Sprint(e["disabledReason"]), "failed for 24h0m0s") {
			t.Fatalf("after the window: %v, endpoint %v", rep, e)
		}
		audit := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 1, filter: {action: "webhook_endpoint.disabled_failing"}) {
			nodes { targetId actor { id } } } } } }`, map[string]any{"t": f.TenantID})
		if audit.Str("node.auditEvents.nodes.0.targetId") != endpoint || audit.Get("node.auditEvents.nodes.0.actor") != nil {
			t.Errorf("the disabling's audit event: %v", audit.Data)
		}
		// Disabled: no new message.
		made := len(msgs)
		wsDeploy(t, f)
		if n := len(f.messages(t, endpoint)); n != made {
			t.Errorf("a disabled endpoint got new messages: %d, was %d", n, made)
		}
		// Enabled again, working: the message that waited behind the
		// failed one goes out; the failed one on request, marked a
		// redelivery, with its webhook-id.
		rc.answer(http.StatusOK)
		f.MustDo(t, `mutation($e: ID!) { setWebhookEndpointEnabled(input: {endpointId: $e, enabled: true}) { `+ue+` } }`, map[string]any{"e": endpoint})
		before := len(rc.requests())
		deliverAll(t, env.Plane)
		msgs = f.messages(t, endpoint)
		if msgs[0]["status"] != "FAILED" || len(rc.requests()) != before+made-1 {
			t.Fatalf("once enabled: %d requests, want %d: %v", len(rc.requests())-before, made-1, msgs)
		}
		for _, m := range msgs[1:] {
			if m["status"] != "DELIVERED" {
				t.Errorf("a message that waited: %v", m)
			}
		}
		f.MustDo(t, `mutation($m: ID!) { redeliverWebhookMessage(input: {messageId: $m}) { message { status } `+ue+` } }`,
			map[string]any{"m": msgs[0]["id"]})
		deliverAll(t, env.Plane)
		msgs = f.messages(t, endpoint)
		last := rc.requests()[len(rc.requests())-1]
		attempts := msgs[0]["attempts"].([]any)
		if msgs[0]["status"] != "DELIVERED" || last.header.Get("webhook-id") != msgs[0]["webhookId"] ||
			dig(attempts[len(attempts)-1], "redelivery") != true || dig(attempts[0], "redelivery") != false {
			t.Errorf("the redelivery: %v, sent %s", msgs[0], last.header.Get("webhook-id"))
		}
	})
}

// A rotated secret: for the overlap, each message is signed with the new
// secret and the old (a receiver with either accepts it); after it, with
// the new one only.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	eachWebhookStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		rc := newReceiver(t)
		endpoint, old := f.newEndpoint(t, f.ProjectID, rc.URL, "DEPLOYMENT_STAGE_CHANGED")
		r := f.MustDo(t, `mutation($e: ID!) { rotateWebhookEndpointSecret(input: {endpointId: $e}) { secret endpoint { previousSecretValidUntil } `+ue+` } }`,
			map[string]any{"e": endpoint})
		fresh := r.Str("rotateWebhookEndpointSecret.secret")
		f.addSecret(fresh)
		if fresh == old || r.Get("rotateWebhookEndpointSecret.endpoint.previousSecretValidUntil") == nil {
			t.Fatalf("the rotation: %v", r.Data)
		}
		verifies := func(secret string, rq received) bool {
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			// The plane's clock moves below; the reference library checks
			// the timestamp against this machine's: check the signature.
			return wh.VerifyIgnoringTimestamp(rq.body, rq.header) == nil
		}
		wsDeploy(t, f)
		deliverAll(t, env.Plane)
		during := rc.requests()
		if len(during) == 0 || !verifies(old, during[0]) || !verifies(fresh, during[0]) || len(strings.Fields(during[0].header.Get("webhook-signature"))) != 2 {
			t.Fatalf("during the overlap the signature is %q", during[0].header.Get("webhook-signature"))
		}
		env.Clock.Advance(24*time.Hour + time.Minute)
		wsDeploy(t, f)
		deliverAll(t, env.Plane)
		after := rc.requests()[len(rc.requests())-1]
		if verifies(old, after) || !verifies(fresh, after) {
			t.Errorf("after the overlap the signature is %q", after.header.Get("webhook-signature"))
		}
	})
}
