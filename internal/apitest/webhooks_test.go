package apitest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// builds lists a service's builds as (status, commit) of each, newest
// first.
func builds(t *testing.T, f *Fixture, svc string) []string {
	t.Helper()
	r := f.MustDo(t, `query($s: ID!) { node(id: $s) { ... on Service { builds(first: 100) {
		nodes { status commit environment { id } delivery { id } } } } } }`, map[string]any{"s": svc})
	var out []string
	for _, n := range r.List("node.builds.nodes") {
		m := n.(map[string]any)
		out = append(out, fmt.Sprint(m["status"], " ", m["commit"]))
	}
	return out
}

// deliveries reads a hook's deliveries, newest first.
func deliveries(t *testing.T, f *Fixture, hook string) []map[string]any {
	t.Helper()
	r := f.MustDo(t, `query($h: ID!) { node(id: $h) { ... on Webhook { deliveries(first: 100) { nodes {
		id provider deliveryId event ref commit outcome reason builds { id status } redeliveryOf { id } receivedAt } } } } }`,
		map[string]any{"h": hook})
	var out []map[string]any
	for _, n := range r.List("node.deliveries.nodes") {
		out = append(out, n.(map[string]any))
	}
	return out
}

// A push from each provider, signed with the hook's secret, queues a build
// of the commit for each environment the service deploys pushes to; what
// is not a push to the tracked branch, or not trusted, is recorded with its
// reason and builds nothing.
func TestWebhookDeliveries(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		zero := strings.Repeat("0", 40)
		providers := []struct {
			name, provider, event, tagEvent, file, repo string
			tag                                         []byte
		}{
			{"github", "GITHUB", "push", "push", "github-push.json", GitHubRepository, nil},
			{"gitlab", "GITLAB", "Push Hook", "Tag Push Hook", "gitlab-push.json", GitLabRepository, SamplePush(t, "gitlab-tag-push.json")},
			{"gitea", "GITEA", "push", "push", "gitea-push.json", GiteaRepository, nil},
		}
		for _, p := range providers {
			t.Run(p.name, func(t *testing.T) {
				svc := f.NewGitService(t, f.Unique(p.name), p.repo, f.EnvironmentID, f.ProtectedEnvironmentID)
				hook, url, secret := f.NewWebhook(t, svc)
				if !strings.HasPrefix(secret, "nbwh_") || !strings.HasSuffix(url, "/hooks/"+HookID(t, hook)) {
					t.Fatalf("secret %q, url %q", secret, url)
				}
				body := SamplePush(t, p.file)
				push := func(id string, b []byte, event string) HookAnswer {
					return env.Deliver(t, url, Delivery{Provider: p.provider, Event: event, DeliveryID: id, Body: b, Secret: secret})
				}
				tag := p.tag
				if tag == nil {
					tag = EditJSON(t, body, map[string]any{"ref": "refs/tags/v1.4.0", "created": true})
				}
				deletion := EditJSON(t, body, map[string]any{"after": zero, "deleted": true, "checkout_sha": nil})
				other := EditJSON(t, body, map[string]any{"ref": "refs/heads/feature/cart"})

				// Nothing that is not a push to main of the repository, or
				// not trusted, builds.
				refusedOrIgnored := []struct {
					what    string
					answer  HookAnswer
					status  int
					outcome string
					reason  string
				}{
					{"a bad signature", env.Deliver(t, url, Delivery{Provider: p.provider, Event: p.event, DeliveryID: "bad-sig",
						Body: body, Secret: "not-the-secret"}), http.StatusUnauthorized, "REFUSED", "the signature does not match"},
					{"a tag", push("tag", tag, p.tagEvent), http.StatusAccepted, "IGNORED", "a tag push (v1.4.0)"},
					{"a deletion", push("deletion", deletion, p.event), http.StatusAccepted, "IGNORED", "the push deleted refs/heads/main"},
					{"another branch", push("branch", other, p.event), http.StatusAccepted, "IGNORED",
						"a push to branch feature/cart, not the tracked branch main"},
					{"an oversized body", push("big", append(body, make([]byte, 1<<20)...), p.event),
						http.StatusRequestEntityTooLarge, "REFUSED", "the body is over 1048576 bytes"},
					{"not a push", push("issue-1", []byte(`{"action":"opened"}`), "issues"), http.StatusAccepted, "IGNORED", "a \"issues\" event"},
				}
				for _, c := range refusedOrIgnored {
					if c.answer.Status != c.status || c.answer.Outcome != c.outcome || !strings.HasPrefix(c.answer.Reason, c.reason) {
						t.Errorf("%s: answered %d %s %q, want %d %s %q…", c.what, c.answer.Status, c.answer.Outcome, c.answer.Reason,
							c.status, c.outcome, c.reason)
					}
					if len(c.answer.Builds) != 0 {
						t.Errorf("%s queued builds %v", c.what, c.answer.Builds)
					}
				}
				if got := builds(t, f, svc); len(got) != 0 {
					t.Fatalf("builds before any push to main: %v", got)
				}

				// The push to main: a build per environment.
				a := push("d-1", body, p.event)
				if a.Status != http.StatusAccepted || a.Outcome != "BUILD_QUEUED" || len(a.Builds) != 2 {
					t.Fatalf("the push to main: %+v", a)
				}
				want := []string{"QUEUED " + SampleCommit, "QUEUED " + SampleCommit}
				if got := builds(t, f, svc); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("builds = %v, want %v", got, want)
				}
				// The same delivery again is a replay; so is the same signed
				// push under a new delivery id (issue 30, row 9: the id is
				// not signed), which builds nothing.
				if a := push("d-1", body, p.event); a.Status != http.StatusConflict || a.Outcome != "REFUSED" ||
					!strings.Contains(a.Reason, "a replay") {
					t.Errorf("a replayed delivery: %+v", a)
				}
				if a := push("d-2", body, p.event); a.Status != http.StatusConflict || a.Outcome != "REFUSED" ||
					!strings.Contains(a.Reason, "pushed to refs/heads/main already") || len(a.Builds) != 0 {
					t.Errorf("the same push under a new delivery id: %+v", a)
				}
				if got := builds(t, f, svc); len(got) != 2 {
					t.Errorf("replays and duplicates built: %v", got)
				}

				// Every delivery is recorded, newest first, refused ones
				// without what they claimed to build.
				ds := deliveries(t, f, hook)
				var outcomes []string
				for _, d := range ds {
					outcomes = append(outcomes, d["outcome"].(string))
				}
				wantOutcomes := "[REFUSED REFUSED BUILD_QUEUED IGNORED REFUSED IGNORED IGNORED IGNORED REFUSED]"
				if fmt.Sprint(outcomes) != wantOutcomes {
					t.Errorf("deliveries %v, want %s", outcomes, wantOutcomes)
				}
				queued := ds[2]
				if queued["provider"] != p.provider || queued["deliveryId"] != "d-1" || queued["event"] != p.event ||
					queued["ref"] != "refs/heads/main" || queued["commit"] != SampleCommit || len(queued["builds"].([]any)) != 2 {
					t.Errorf("the push's delivery: %v", queued)
				}
			})
		}

		t.Run("unknown hook", func(t *testing.T) {
			a := env.Post(t, env.Server.URL+"/hooks/01234567-89ab-7def-8123-456789abcdef", Delivery{Provider: "GITHUB",
				Event: "push", DeliveryID: "x", Body: []byte("{}"), Secret: "s"}.Header(), []byte("{}"))
			if a.Status != http.StatusNotFound {
				t.Errorf("a delivery to no hook: %+v", a)
			}
		})
	})
}

// A project's hook builds each of its Git services whose repository the
// push names, however the repository's URL is written; a rotated secret
// stops the old one at once; a tenant admin can redeliver.
func TestProjectWebhookAndRedelivery(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		api := f.NewGitService(t, "shop-api", "git@github.com:Nebula-Samples/shop-api", f.EnvironmentID)
		other := f.NewGitService(t, "shop-web", "https://github.com/nebula-samples/shop-web", f.EnvironmentID)
		hook, url, secret := f.NewWebhook(t, "")
		body := SamplePush(t, "github-push.json")
		a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "p-1", Body: body, Secret: secret})
		if a.Outcome != "BUILD_QUEUED" || len(a.Builds) != 1 {
			t.Fatalf("the project's hook: %+v", a)
		}
		if got := builds(t, f, api); len(got) != 1 {
			t.Errorf("the named repository's service built %v", got)
		}
		if got := builds(t, f, other); len(got) != 0 {
			t.Errorf("another repository's service built %v", got)
		}

		// Rotation: the old secret stops, the new one works.
		r := f.MustDo(t, `mutation($h: ID!) { rotateWebhookSecret(input: {webhookId: $h}) { secret webhook { rotatedAt } userErrors { message } } }`,
			map[string]any{"h": hook})
		fresh := r.Str("rotateWebhookSecret.secret")
		if fresh == "" || fresh == secret {
			t.Fatalf("rotation gave %q", fresh)
		}
		const developHead = "3b8e1d4f6a2c9e7b5d0f1a3c8e6b4d2f9a7c5e1b"
		branch := EditJSON(t, body, map[string]any{"ref": "refs/heads/develop", "after": developHead})
		if a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "p-2", Body: branch, Secret: secret}); a.Status != http.StatusUnauthorized {
			t.Errorf("the old secret after rotation: %+v", a)
		}
		a = env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "p-3", Body: branch, Secret: fresh})
		if a.Outcome != "IGNORED" {
			t.Fatalf("the new secret: %+v", a)
		}

		// The service's tracked branch becomes develop: a tenant admin
		// redelivers the ignored push, which now builds.
		f.MustDo(t, `mutation($s: ID!, $e: ID!) { updateService(input: {serviceId: $s, git: {repository: "https://github.com/nebula-samples/shop-api",
			branch: "develop", deployOnPush: [$e]}}) { userErrors { message } } }`, map[string]any{"s": api, "e": f.EnvironmentID})
		ignored := deliveries(t, f, hook)[0]
		if ignored["deliveryId"] != "p-3" {
			t.Fatalf("newest delivery %v", ignored)
		}
		q := `mutation($d: ID!) { redeliverWebhookDelivery(input: {deliveryId: $d}) { delivery { id outcome reason redeliveryOf { id } builds { id } } userErrors { message code } } }`
		for _, role := range []Role{ProjectManager, Editor, Viewer} {
			r := env.Do(t, f.Users[role].Token, q, map[string]any{"d": ignored["id"]})
			if codes := r.ErrorCodes(); len(codes) != 1 || codes[0] != "FORBIDDEN" {
				t.Errorf("%s redelivered: %v %v", role, codes, r.Data)
			}
		}
		r = f.MustDo(t, q, map[string]any{"d": ignored["id"]})
		if r.Str("redeliverWebhookDelivery.delivery.outcome") != "BUILD_QUEUED" ||
			r.Str("redeliverWebhookDelivery.delivery.redeliveryOf.id") != ignored["id"] {
			t.Errorf("redelivery: %v", r.Data)
		}
		if got := builds(t, f, api); len(got) != 2 {
			t.Errorf("after the redelivery the service has builds %v, want 2", got)
		}
		// A refused delivery kept nothing to redeliver.
		refused := deliveries(t, f, hook)[2]
		if refused["outcome"] != "REFUSED" {
			t.Fatalf("expected the refused delivery, got %v", refused)
		}
		r = env.Do(t, f.Owner.Token, q, map[string]any{"d": refused["id"]})
		if ue := r.UserErrors("redeliverWebhookDelivery"); len(ue) != 1 || !strings.Contains(ue[0].Message, "kept no body") {
			t.Errorf("redelivering a refused delivery: %v", r.Data)
		}

		// Builds started by a hook are audited with the hook as the actor.
		r = f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 100) { nodes { action actor { id } details } } } } }`,
			map[string]any{"t": f.TenantID})
		var queuedByHook int
		for _, n := range r.List("node.auditEvents.nodes") {
			m := n.(map[string]any)
			d, _ := m["details"].(map[string]any)
			if m["action"] == "build.queue" && d["actor"] == "webhook:"+HookID(t, hook) {
				queuedByHook++
			}
		}
		if queuedByHook != 2 {
			t.Errorf("build.queue events with the hook as actor: %d, want 2", queuedByHook)
		}
	})
}

// A Git source is checked like any input: a bad one is refused with the
// field it concerns and changes nothing; the credential is never shown.
func TestGitSourceInput(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		otherProjectEnv := ""
		{
			p := f.NewProject(t)
			r := f.MustDo(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "elsewhere"}) { environment { id } } }`,
				map[string]any{"p": p})
			otherProjectEnv = r.Str("createEnvironment.environment.id")
		}
		q := `mutation($s: ID!, $g: GitSourceInput!) { updateService(input: {serviceId: $s, git: $g}) { service { id git { repository } }
			userErrors { field message code } } }`
		for _, c := range []struct {
			name  string
			git   map[string]any
			field string
		}{
			{"not a URL", map[string]any{"repository": "shop-api", "branch": "main"}, "input.git.repository"},
			{"credentials in the URL", map[string]any{"repository": "https://bot:hunter2@github.com/acme/shop", "branch": "main"}, "input.git.repository"},
			{"a branch with a space", map[string]any{"repository": GitHubRepository, "branch": "my branch"}, "input.git.branch"},
			{"a branch with ..", map[string]any{"repository": GitHubRepository, "branch": "a..b"}, "input.git.branch"},
			{"a context outside", map[string]any{"repository": GitHubRepository, "branch": "main", "contextDir": "../etc"}, "input.git.contextDir"},
			{"an absolute Dockerfile", map[string]any{"repository": GitHubRepository, "branch": "main", "dockerfile": "/Dockerfile"}, "input.git.dockerfile"},
			{"another project's environment", map[string]any{"repository": GitHubRepository, "branch": "main", "deployOnPush": []string{otherProjectEnv}}, "input.git.deployOnPush.0"},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := f.AuditCount(t)
				r := env.Do(t, f.Owner.Token, q, map[string]any{"s": f.ServiceID, "g": c.git})
				ue := r.UserErrors("updateService")
				if len(ue) == 0 || strings.Join(ue[0].Field, ".") != c.field || ue[0].Code != "BAD_USER_INPUT" {
					t.Errorf("got %v, want a BAD_USER_INPUT on %s", r.Data, c.field)
				}
				if r.Get("updateService.service") != nil || f.AuditCount(t) != before {
					t.Errorf("a refused change changed something: %v", r.Data)
				}
			})
		}
		if n := f.Node(t, f.ServiceID, `... on Service { git { repository } }`); n["git"] != nil {
			t.Errorf("after refused changes the service has a Git source: %v", n["git"])
		}

		const credential = "ghp_SuperSecretDeployToken1234567890"
		r := f.MustDo(t, q, map[string]any{"s": f.ServiceID, "g": map[string]any{"repository": GitHubRepository, "branch": "main",
			"credential": credential, "deployOnPush": []string{f.EnvironmentID}}})
		if r.Get("updateService.service.git") == nil {
			t.Fatalf("a valid Git source: %v", r.Data)
		}
		n := f.Node(t, f.ServiceID, `... on Service { git { repository branch contextDir dockerfile hasCredential deployOnPush { id } } }`)
		g := n["git"].(map[string]any)
		if g["hasCredential"] != true || g["contextDir"] != "." || g["dockerfile"] != "Dockerfile" || len(g["deployOnPush"].([]any)) != 1 {
			t.Errorf("git = %v", g)
		}
		// Kept when left out, removed when empty.
		f.MustDo(t, q, map[string]any{"s": f.ServiceID, "g": map[string]any{"repository": GitHubRepository, "branch": "release"}})
		if n := f.Node(t, f.ServiceID, `... on Service { git { branch hasCredential } }`); n["git"].(map[string]any)["hasCredential"] != true {
			t.Errorf("a change without a credential dropped it: %v", n)
		}
		f.MustDo(t, q, map[string]any{"s": f.ServiceID, "g": map[string]any{"repository": GitHubRepository, "branch": "release", "credential": ""}})
		if n := f.Node(t, f.ServiceID, `... on Service { git { hasCredential } }`); n["git"].(map[string]any)["hasCredential"] != false {
			t.Errorf("an empty credential did not remove it: %v", n)
		}
		f.MustDo(t, `mutation($s: ID!) { updateService(input: {serviceId: $s, removeGit: true}) { userErrors { message } } }`, map[string]any{"s": f.ServiceID})
		if n := f.Node(t, f.ServiceID, `... on Service { git { branch } }`); n["git"] != nil {
			t.Errorf("removeGit left %v", n["git"])
		}
		// The credential appears in no answer and no audit detail.
		r = f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 100) { nodes { action details } } } } }`,
			map[string]any{"t": f.TenantID})
		if strings.Contains(fmt.Sprint(r.Data), credential) {
			t.Error("the Git credential is in the audit history")
		}
	})
}
