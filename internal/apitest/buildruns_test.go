package apitest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// lastBuilds is the newest set of builds the agent got.
func (a *stageAgent) lastBuilds() (protocol.Builds, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.builds) == 0 {
		return protocol.Builds{}, false
	}
	return a.builds[len(a.builds)-1], true
}

// waitBuilds waits for a set of builds whose ids are want.
func (a *stageAgent) waitBuilds(want ...string) protocol.Builds {
	a.t.Helper()
	var got protocol.Builds
	testutil.Eventually(a.t, 15*time.Second, "the agent gets builds "+strings.Join(want, ", "), func() (bool, string) {
		b, _ := a.lastBuilds()
		got = b
		var ids []string
		for _, j := range b.Builds {
			ids = append(ids, j.ID)
		}
		slices.Sort(ids)
		w := slices.Clone(want)
		slices.Sort(w)
		return slices.Equal(ids, w), fmt.Sprint(ids)
	})
	return got
}

// buildReport sends a report of a build: lines after from, and a status.
func (a *stageAgent) buildReport(id string, from int64, status, digest, message string, lines ...string) {
	a.t.Helper()
	r := protocol.BuildReport{ID: id, From: from, Status: status, Digest: digest, Message: message}
	for _, l := range lines {
		r.Lines = append(r.Lines, protocol.LogLine{At: time.Now().UTC(), Text: l})
	}
	a.send(protocol.TypeBuildReport, r)
	a.handled()
}

// buildState reads a build's status, message, digest, log and its
// deployment's stage and events.
func buildState(t *testing.T, f *Fixture, build string) map[string]any {
	t.Helper()
	r := f.MustDo(t, `query($b: ID!) { node(id: $b) { ... on Build { status message imageDigest attempts
		log(first: 100) { nodes { number text } pageInfo { hasNextPage endCursor } truncated }
		release { number imageDigest }
		deployment { id stage message events(first: 20) { nodes { stage } } } } } }`, map[string]any{"b": build})
	return r.Get("node").(map[string]any)
}

func stages(b map[string]any) []string {
	var out []string
	for _, e := range dig(b, "deployment.events.nodes").([]any) {
		out = append(out, e.(map[string]any)["stage"].(string))
	}
	return out
}

func logText(b map[string]any) []string {
	var out []string
	for _, l := range dig(b, "log.nodes").([]any) {
		m := l.(map[string]any)
		out = append(out, fmt.Sprint(m["number"], " ", m["text"]))
	}
	return out
}

// A push to a Git service builds on the environment's cluster: the
// deployment waits at BUILDING while the agent runs the build and streams
// its log; a success gives the release its image and the deployment goes
// on (to approval in a protected environment); a failure ends it FAILED
// with the log's end; a cancelled deployment stops its build.
func TestBuildRuns(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		const credential = "ghp_TheDeployTokenOfShopAPI0123456789"
		svc := f.NewGitService(t, "shop-api", GitHubRepository, f.ProtectedEnvironmentID)
		f.MustDo(t, `mutation($s: ID!, $e: ID!, $c: String!) { updateService(input: {serviceId: $s, git: {repository: "`+GitHubRepository+`",
			branch: "main", contextDir: "api", deployOnPush: [$e], credential: $c}}) { userErrors { message } } }`,
			map[string]any{"s": svc, "e": f.ProtectedEnvironmentID, "c": credential})
		_, url, secret := f.NewWebhook(t, svc)
		agent, _ := connectStageAgent(t, f, "prod-eu")
		push := func(id, commit string) string {
			t.Helper()
			a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: id, Secret: secret,
				Body: EditJSON(t, SamplePush(t, "github-push.json"), map[string]any{"after": commit})})
			if a.Outcome != "BUILD_QUEUED" || len(a.Builds) != 1 {
				t.Fatalf("push %s: %+v", id, a)
			}
			return a.Builds[0]
		}
		gidOf := func(raw string) string { return gid.Encode(gid.Build, raw) }

		// The push: a deployment waiting at BUILDING, the build queued.
		b1 := push("d-1", SampleCommit)
		st := buildState(t, f, gidOf(b1))
		if st["status"] != "QUEUED" || st["deployment"].(map[string]any)["stage"] != "BUILDING" ||
			st["release"].(map[string]any)["imageDigest"] != "" {
			t.Fatalf("after the push: %v", st)
		}
		// The scheduler hands it to the cluster's agent, with the
		// credential (over the agent's channel only).
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		set := agent.waitBuilds(b1)
		j := set.Builds[0]
		if j.Repository != GitHubRepository || j.Commit != SampleCommit || j.ContextDir != "api" || j.Dockerfile != "Dockerfile" ||
			j.Credential != credential || j.Image != "registry.nebula-build.svc:5000/shop/api" || j.LogFrom != 0 || j.Builder == "" {
			t.Errorf("the build as the agent got it: %+v", j)
		}
		if st := buildState(t, f, gidOf(b1)); st["status"] != "RUNNING" || st["attempts"] != float64(1) {
			t.Errorf("after the scheduler: %v", st)
		}

		// The log: lines sent again after a reconnect are stored once; a
		// report that skips lines is refused and the agent hears where the
		// log stands.
		agent.buildReport(b1, 0, protocol.BuildRunning, "", "cloning", "#1 load build definition", "#2 resolve image", "#3 clone")
		agent.buildReport(b1, 1, protocol.BuildRunning, "", "", "#2 resolve image", "#3 clone", "#4 RUN go build")
		agent.buildReport(b1, 9, protocol.BuildRunning, "", "", "#10 lost")
		testutil.Eventually(t, 10*time.Second, "the builds again, with the log's end", func() (bool, string) {
			b, _ := agent.lastBuilds()
			return len(b.Builds) == 1 && b.Builds[0].LogFrom == 4, fmt.Sprint(b)
		})
		want := []string{"1 #1 load build definition", "2 #2 resolve image", "3 #3 clone", "4 #4 RUN go build"}
		if got := logText(buildState(t, f, gidOf(b1))); !slices.Equal(got, want) {
			t.Errorf("log = %q, want %q", got, want)
		}
		digest := Digest(4242)
		agent.buildReport(b1, 4, protocol.BuildSucceeded, digest, "", "#5 pushing", "done")
		st = buildState(t, f, gidOf(b1))
		if st["status"] != "SUCCEEDED" || st["imageDigest"] != digest || st["release"].(map[string]any)["imageDigest"] != digest {
			t.Errorf("after the success: %v", st)
		}
		if got := stages(st); !slices.Equal(got, []string{"QUEUED", "BUILDING", "AWAITING_APPROVAL"}) {
			t.Errorf("deployment stages %v, want QUEUED, BUILDING, AWAITING_APPROVAL", got)
		}
		agent.waitBuilds() // nothing left to run

		// A failing build: FAILED with the end of its log.
		b2 := push("d-2", strings.Repeat("a", 40))
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(b2)
		agent.buildReport(b2, 0, protocol.BuildFailed, "", "the builder exited with 1",
			"#7 RUN go build", "main.go:3: undefined: Serve")
		st = buildState(t, f, gidOf(b2))
		dep := st["deployment"].(map[string]any)
		if st["status"] != "FAILED" || dep["stage"] != "FAILED" || !strings.Contains(dep["message"].(string), "main.go:3: undefined: Serve") ||
			!strings.Contains(dep["message"].(string), "the builder exited with 1") {
			t.Errorf("after the failure: %v", st)
		}

		// Cancelling a deployment at BUILDING stops its build: the agent's
		// set no longer has it.
		b3 := push("d-3", strings.Repeat("b", 40))
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(b3)
		st = buildState(t, f, gidOf(b3))
		f.MustDo(t, `mutation($d: ID!) { cancelDeployment(input: {deploymentId: $d, reason: "wrong commit"}) { deployment { stage } userErrors { message } } }`,
			map[string]any{"d": st["deployment"].(map[string]any)["id"]})
		agent.waitBuilds()
		if st := buildState(t, f, gidOf(b3)); st["status"] != "CANCELLED" || st["deployment"].(map[string]any)["stage"] != "CANCELLED" {
			t.Errorf("after the cancel: %v", st)
		}
		// A late report of the cancelled build changes nothing.
		agent.buildReport(b3, 0, protocol.BuildSucceeded, Digest(1), "")
		if st := buildState(t, f, gidOf(b3)); st["status"] != "CANCELLED" || st["imageDigest"] != "" {
			t.Errorf("a late report moved the cancelled build: %v", st)
		}
		// The credential is in no answer and no audit detail.
		r := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 100) { nodes { details } } } } }`,
			map[string]any{"t": f.TenantID})
		if strings.Contains(fmt.Sprint(r.Data), credential) {
			t.Error("the credential is in the audit history")
		}
	})
}

// The scheduler runs at most two builds (the default) on a cluster at
// once, oldest first; a build that runs past its timeout ends TIMED_OUT;
// one whose agent went away runs again when it is back; with two control
// planes on one database each build is handed out once.
func TestBuildScheduler(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for _, repo := range []string{"shop-api", "shop-web", "shop-cron"} {
			f.NewGitService(t, repo, "https://github.com/nebula-samples/"+repo, f.EnvironmentID)
		}
		_, url, secret := f.NewWebhook(t, "")
		agent, _ := connectStageAgent(t, f, "prod-eu")
		var ids []string
		for i, repo := range []string{"shop-api", "shop-web", "shop-cron"} {
			body := EditJSON(t, SamplePush(t, "github-push.json"), map[string]any{
				"after":      fmt.Sprintf("%040d", i+1),
				"repository": map[string]any{"clone_url": "https://github.com/nebula-samples/" + repo + ".git"},
			})
			a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "s-" + repo, Secret: secret, Body: body})
			if len(a.Builds) != 1 {
				t.Fatalf("push to %s: %+v", repo, a)
			}
			ids = append(ids, a.Builds[0])
		}
		status := func(id string) string {
			return buildState(t, f, gid.Encode(gid.Build, id))["status"].(string)
		}

		// Two control planes run the jobs at once: two builds run, the
		// third waits, and none is handed out twice.
		second := env.SecondPlane(t)
		errs := make(chan error, 2)
		for _, p := range []interface {
			RunJobsOnce(context.Context) (core.JobReport, error)
		}{env.Plane, second} {
			go func() { _, err := p.RunJobsOnce(t.Context()); errs <- err }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if _, err := second.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := []string{status(ids[0]), status(ids[1]), status(ids[2])}
		if !slices.Equal(got, []string{"RUNNING", "RUNNING", "QUEUED"}) {
			t.Fatalf("statuses %v, want the two oldest running", got)
		}
		for _, id := range ids[:2] {
			if n := buildState(t, f, gid.Encode(gid.Build, id))["attempts"]; n != float64(1) {
				t.Errorf("build %s handed out %v times", id, n)
			}
		}
		agent.waitBuilds(ids[0], ids[1])

		// The first ends: the third gets its slot.
		agent.buildReport(ids[0], 0, protocol.BuildSucceeded, Digest(7), "", "done")
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(ids[1], ids[2])

		// The agent goes away; once its cluster is disconnected and the
		// builds silent, they are queued again, and run once it is back.
		agent.conn.Close()
		env.Clock.Advance(3 * time.Minute)
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids[1:] {
			st := buildState(t, f, gid.Encode(gid.Build, id))
			if st["status"] != "QUEUED" || !strings.Contains(st["message"].(string), "went away") {
				t.Errorf("build %s after its agent went away: %v %v", id, st["status"], st["message"])
			}
		}
		back, _ := connectStageAgent(t, f, "prod-eu")
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		back.waitBuilds(ids[1], ids[2])
		if n := buildState(t, f, gid.Encode(gid.Build, ids[1]))["attempts"]; n != float64(2) {
			t.Errorf("attempts after the agent came back: %v, want 2", n)
		}

		// A build that runs past the timeout ends TIMED_OUT, and so does
		// its deployment's wait (FAILED).
		back.buildReport(ids[1], 0, protocol.BuildRunning, "", "", "step 1")
		env.Clock.Advance(31 * time.Minute)
		back.buildReport(ids[2], 0, protocol.BuildRunning, "", "", "still here") // its agent is there
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		st := buildState(t, f, gid.Encode(gid.Build, ids[1]))
		if st["status"] != "TIMED_OUT" || st["deployment"].(map[string]any)["stage"] != "FAILED" {
			t.Errorf("after the timeout: %v", st)
		}
		back.waitBuilds(ids[2])
	})
}

// A build's log is kept up to its bounds: past them, a marker line says it
// was cut and the rest is dropped; an over-long line is cut and says so.
func TestBuildLogBounds(t *testing.T) {
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			env := NewEnvWith(t, s.Open(t), func(c *config.Config) {
				c.Builds.MaxLogLines, c.Builds.MaxLineBytes = 100, 300
			})
			f := env.NewFixture(t)
			svc := f.NewGitService(t, "shop-api", GitHubRepository, f.EnvironmentID)
			_, url, secret := f.NewWebhook(t, svc)
			agent, _ := connectStageAgent(t, f, "prod-eu")
			a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "big", Secret: secret,
				Body: SamplePush(t, "github-push.json")})
			if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			agent.waitBuilds(a.Builds[0])
			lines := []string{strings.Repeat("x", 1000)}
			for i := 2; i <= 150; i++ {
				lines = append(lines, fmt.Sprintf("line %d", i))
			}
			agent.buildReport(a.Builds[0], 0, protocol.BuildRunning, "", "", lines...)
			agent.buildReport(a.Builds[0], 150, protocol.BuildRunning, "", "", "line 151")
			b := gid.Encode(gid.Build, a.Builds[0])
			r := f.MustDo(t, `query($b: ID!) { node(id: $b) { ... on Build {
				first: log(first: 1) { nodes { number text } truncated }
				upTo95: log(first: 95) { pageInfo { endCursor } }
				last: log(last: 5) { nodes { number } pageInfo { hasPreviousPage hasNextPage startCursor } truncated } } } }`,
				map[string]any{"b": b})
			first := r.List("node.first.nodes")[0].(map[string]any)["text"].(string)
			if len(first) > 300+40 || !strings.HasSuffix(first, "[line cut at 300 bytes]") {
				t.Errorf("the long line was kept as %d bytes: …%s", len(first), first[max(0, len(first)-40):])
			}
			if r.Get("node.first.truncated") != true {
				t.Error("the log does not say it was cut")
			}
			// Forwards after line 95 to the end; backwards from the end,
			// and before line 96.
			after95 := r.Str("node.upTo95.pageInfo.endCursor")
			e := f.MustDo(t, `query($b: ID!, $after: String, $before: String) { node(id: $b) { ... on Build {
				end: log(first: 10, after: $after) { nodes { number text } pageInfo { hasNextPage endCursor } }
				back: log(last: 2, before: $before) { nodes { number } pageInfo { hasPreviousPage } } } } }`,
				map[string]any{"b": b, "after": after95, "before": r.Str("node.last.pageInfo.startCursor")})
			var end []string
			for _, l := range e.List("node.end.nodes") {
				m := l.(map[string]any)
				end = append(end, fmt.Sprint(m["number"], " ", m["text"]))
			}
			want := []string{"96 line 96", "97 line 97", "98 line 98", "99 line 99",
				"100 [nebula: the log is cut here: a build keeps at most 100 lines and 10485760 bytes]"}
			if !slices.Equal(end, want) || e.Get("node.end.pageInfo.hasNextPage") != false {
				t.Errorf("the log's end: %q (more: %v)", end, e.Get("node.end.pageInfo.hasNextPage"))
			}
			numbers := func(r Response, path string) []float64 {
				var out []float64
				for _, n := range r.List(path) {
					out = append(out, dig(n, "number").(float64))
				}
				return out
			}
			if got := numbers(r, "node.last.nodes"); !slices.Equal(got, []float64{96, 97, 98, 99, 100}) ||
				r.Get("node.last.pageInfo.hasPreviousPage") != true || r.Get("node.last.pageInfo.hasNextPage") != false || r.Get("node.last.truncated") != true {
				t.Errorf("the last 5 lines: %v %s", got, r.Body)
			}
			if got := numbers(e, "node.back.nodes"); !slices.Equal(got, []float64{94, 95}) || e.Get("node.back.pageInfo.hasPreviousPage") != true {
				t.Errorf("the 2 lines before line 96: %v %s", got, e.Body)
			}
			// Bad page arguments are refused, the log's own bounds included.
			for name, args := range map[string]string{
				"first and last":    `first: 1, last: 1`,
				"first: 1001":       `first: 1001`,
				"last: -1":          `last: -1`,
				"a cursor not made": `after: "bm9wZQ"`,
				"an event's cursor": `before: "ZXZlbnQ6MQ"`, // event:1, a deployment event's
			} {
				bad := env.Do(t, f.Owner.Token, `query($b: ID!) { node(id: $b) { ... on Build { log(`+args+`) { nodes { number } } } } }`, map[string]any{"b": b})
				if codes := bad.ErrorCodes(); !slices.Equal(codes, []string{"BAD_USER_INPUT"}) {
					t.Errorf("%s, log(%s): %v %s, want BAD_USER_INPUT", name, args, codes, bad.Body)
				}
			}
			if ok := env.Do(t, f.Owner.Token, `query($b: ID!) { node(id: $b) { ... on Build { log(first: 1000) { nodes { number } } } } }`,
				map[string]any{"b": b}); len(ok.ErrorCodes()) != 0 || len(ok.List("node.log.nodes")) != 100 {
				t.Errorf("log(first: 1000): %.300s, want the 100 lines kept", ok.Body)
			}
		})
	}
}

// A build's log streams live to a subscriber, who resumes after a
// disconnect from the last line it got: no gap, no duplicate; the
// subscription completes once the build ended. The deployment's own
// events follow the build too.
func TestBuildLogSubscription(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		svc := f.NewGitService(t, "shop-api", GitHubRepository, f.EnvironmentID)
		_, url, secret := f.NewWebhook(t, svc)
		agent, _ := connectStageAgent(t, f, "prod-eu")
		a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "live", Secret: secret,
			Body: SamplePush(t, "github-push.json")})
		build := gid.Encode(gid.Build, a.Builds[0])
		dep := buildState(t, f, build)["deployment"].(map[string]any)["id"]
		events := subscribeOn(t, env, f.Owner.Token, `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { stage } }`,
			map[string]any{"d": dep})
		events.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "BUILDING"})

		const q = `subscription($b: ID!, $after: Int) { buildLog(buildId: $b, after: $after) { number text } }`
		first := subscribeOn(t, env, f.Owner.Token, q, map[string]any{"b": build})
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(a.Builds[0])
		agent.buildReport(a.Builds[0], 0, protocol.BuildRunning, "", "", "#1 load", "#2 clone", "#3 build")
		first.waitValues(t, "buildLog.text", []string{"#1 load", "#2 clone", "#3 build"})
		first.c.Close()
		<-first.done

		// Lines written while nobody listened, then the resumed subscriber.
		agent.buildReport(a.Builds[0], 3, protocol.BuildRunning, "", "", "#4 test", "#5 export")
		resumed := subscribeOn(t, env, f.Owner.Token, q, map[string]any{"b": build, "after": 3})
		resumed.waitValues(t, "buildLog.text", []string{"#4 test", "#5 export"})
		agent.buildReport(a.Builds[0], 5, protocol.BuildSucceeded, Digest(99), "", "#6 pushed")
		resumed.waitValues(t, "buildLog.text", []string{"#4 test", "#5 export", "#6 pushed"})
		testutil.Eventually(t, 10*time.Second, "the subscription completes", func() (bool, string) {
			resumed.mu.Lock()
			defer resumed.mu.Unlock()
			last := resumed.msgs[len(resumed.msgs)-1]
			return last["type"] == "complete", fmt.Sprint(last)
		})
		// A viewer reads the log too; the numbers run on without a gap.
		r := env.MustDo(t, f.Users[Viewer].Token, `query($b: ID!) { node(id: $b) { ... on Build { log { nodes { number } } } } }`,
			map[string]any{"b": build})
		if n := len(r.List("node.log.nodes")); n != 6 {
			t.Errorf("the viewer reads %d lines, want 6", n)
		}
		events.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "BUILDING", "DELIVERING"})
		// The build's success put its release into the desired state: the
		// revision it made names it as its cause.
		cause := f.MustDo(t, `query($c: ID!) { node(id: $c) { ... on Cluster { revisions(first: 1) { nodes { cause { action targetId details } } } } } }`,
			map[string]any{"c": f.ClusterID}).Get("node.revisions.nodes.0.cause")
		if c, _ := cause.(map[string]any); c == nil || c["action"] != "build.succeeded" || c["targetId"] != build ||
			c["details"].(map[string]any)["imageDigest"] != Digest(99) {
			t.Errorf("the newest revision's cause is %v, want build.succeeded of %s with its digest", cause, build)
		}
	})
}

// A tenant's plan caps its builds running at once: on FREE one runs and
// the next waits, saying why, though its cluster has room.
func TestBuildsPlanLimit(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for _, repo := range []string{"shop-api", "shop-web"} {
			f.NewGitService(t, repo, "https://github.com/nebula-samples/"+repo, f.EnvironmentID)
		}
		_, url, secret := f.NewWebhook(t, "")
		connectStageAgent(t, f, "prod-eu")
		var ids []string
		for i, repo := range []string{"shop-api", "shop-web"} {
			a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "p-" + repo, Secret: secret,
				Body: EditJSON(t, SamplePush(t, "github-push.json"), map[string]any{"after": fmt.Sprintf("%040d", i+1),
					"repository": map[string]any{"clone_url": "https://github.com/nebula-samples/" + repo + ".git"}})})
			ids = append(ids, a.Builds[0])
		}
		f.MustDo(t, `mutation($m: ID!) { removeMember(input: {memberId: $m}) { userErrors { message } } }`,
			map[string]any{"m": f.Users[Member].MemberID}) // FREE allows 5 members
		f.MustDo(t, `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: FREE}) { userErrors { message } } }`,
			map[string]any{"t": f.TenantID})
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		first, second := buildState(t, f, gid.Encode(gid.Build, ids[0])), buildState(t, f, gid.Encode(gid.Build, ids[1]))
		if first["status"] != "RUNNING" || second["status"] != "QUEUED" ||
			second["message"] != "waiting: the FREE plan runs 1 build(s) at once" {
			t.Errorf("on FREE: %v (%v), %v (%v)", first["status"], first["message"], second["status"], second["message"])
		}
		r := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { plan { limits { resource limit used } } } } }`,
			map[string]any{"t": f.TenantID})
		var shown string
		for _, l := range r.List("node.plan.limits") {
			m := l.(map[string]any)
			if m["resource"] == "CONCURRENT_BUILDS" {
				shown = fmt.Sprint(m["used"], "/", m["limit"])
			}
		}
		if shown != "1/1" {
			t.Errorf("the plan shows concurrent builds %q, want 1/1", shown)
		}
	})
}

// deploy names a commit of a Git service: the build runs first, the
// deployment waits at BUILDING; bad requests change nothing.
func TestDeployCommit(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		svc := f.NewGitService(t, "shop-api", GitHubRepository)
		const q = `mutation($s: ID!, $e: ID!, $c: String, $d: String) { deploy(input: {serviceId: $s, environmentId: $e, commit: $c, imageDigest: $d}) {
			deployment { id stage } release { number imageDigest } build { id status commit } userErrors { field message code } } }`
		commit := strings.Repeat("c", 40)
		for _, c := range []struct {
			name string
			vars map[string]any
			code string
		}{
			{"both", map[string]any{"s": svc, "e": f.EnvironmentID, "c": commit, "d": Digest(1)}, "BAD_USER_INPUT"},
			{"neither", map[string]any{"s": svc, "e": f.EnvironmentID}, "BAD_USER_INPUT"},
			{"a short commit", map[string]any{"s": svc, "e": f.EnvironmentID, "c": "abc123"}, "BAD_USER_INPUT"},
			{"an image service", map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "c": commit}, "BAD_USER_INPUT"},
		} {
			before := f.AuditCount(t)
			r := env.Do(t, f.Users[Editor].Token, q, c.vars)
			if ue := r.UserErrors("deploy"); len(ue) != 1 || ue[0].Code != c.code {
				t.Errorf("%s: %v", c.name, r.Data)
			}
			if f.AuditCount(t) != before {
				t.Errorf("%s changed something", c.name)
			}
		}
		if codes := env.Do(t, f.Users[Viewer].Token, q, map[string]any{"s": svc, "e": f.EnvironmentID, "c": commit}).ErrorCodes(); !slices.Equal(codes, []string{"FORBIDDEN"}) {
			t.Errorf("a viewer deployed a commit: %v", codes)
		}
		r := env.MustDo(t, f.Users[Editor].Token, q, map[string]any{"s": svc, "e": f.EnvironmentID, "c": strings.ToUpper(commit)})
		if r.Str("deploy.deployment.stage") != "BUILDING" || r.Str("deploy.build.status") != "QUEUED" ||
			r.Str("deploy.build.commit") != commit || r.Str("deploy.release.imageDigest") != "" {
			t.Errorf("deploy of a commit: %v", r.Data)
		}
		again := env.Do(t, f.Users[Editor].Token, q, map[string]any{"s": svc, "e": f.EnvironmentID, "c": commit})
		if ue := again.UserErrors("deploy"); len(ue) != 1 || ue[0].Code != "CONFLICT" {
			t.Errorf("the same commit while it builds: %v", again.Data)
		}
		// The preview checks the same and changes no cluster.
		p := env.MustDo(t, f.Users[Editor].Token, `query($s: ID!, $e: ID!, $c: String) { previewDeploy(input: {serviceId: $s, environmentId: $e, commit: $c}) {
			clusters { cluster { id } } userErrors { code } } }`, map[string]any{"s": svc, "e": f.EnvironmentID, "c": strings.Repeat("d", 40)})
		if n := len(p.List("previewDeploy.clusters")); n != 0 {
			t.Errorf("a preview of a commit changes %d clusters", n)
		}
		// Releases of a build that did not succeed cannot be redeployed.
		rb := env.Do(t, f.Users[Editor].Token, `mutation($d: ID!) { redeploy(input: {deploymentId: $d}) { userErrors { message code } } }`,
			map[string]any{"d": r.Str("deploy.deployment.id")})
		if ue := rb.UserErrors("redeploy"); len(ue) != 1 || !strings.Contains(ue[0].Message, "has no image") {
			t.Errorf("redeploy of a release without an image: %v", rb.Data)
		}
	})
}

// deploy of the branch head reads the tracked branch's commit from the
// repository (a real Git server: git http-backend on loopback) with the
// service's credential, and builds it; what cannot be read is a clear user
// error that changes nothing, and by default the control plane does not
// reach into its own network.
func TestDeployBranchHead(t *testing.T) {
	srv, root := testutil.GitServer(t, "ghp_headToken")
	head := testutil.GitRepo(t, root, "private.git")
	const q = `mutation($s: ID!, $e: ID!, $c: String, $h: Boolean) { deploy(input: {serviceId: $s, environmentId: $e, commit: $c, branchHead: $h}) {
		deployment { id stage } build { commit status } userErrors { field message code } } }`
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			env := NewEnvWith(t, s.Open(t), func(c *config.Config) { c.Builds.GitPrivate = true })
			f := env.NewFixture(t)
			svc := f.NewGitService(t, "shop-api", srv.URL+"/private.git")
			f.addSecret("ghp_headToken")

			refused := func(name string, vars map[string]any, want string) {
				t.Helper()
				before := f.AuditCount(t)
				r := env.Do(t, f.Users[Editor].Token, q, vars)
				if ue := r.UserErrors("deploy"); len(ue) != 1 || ue[0].Code != "BAD_USER_INPUT" || !strings.Contains(ue[0].Message, want) {
					t.Errorf("%s: %v, want a user error saying %q", name, r.Data, want)
				}
				if f.AuditCount(t) != before {
					t.Errorf("%s changed something", name)
				}
			}
			// Without the credential the repository refuses.
			refused("no credential", map[string]any{"s": svc, "e": f.EnvironmentID, "h": true}, "check the service's Git credential")
			refused("a commit and the head", map[string]any{"s": svc, "e": f.EnvironmentID, "h": true, "c": head}, "give one of")
			refused("an image service", map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "h": true}, "not built from Git")

			f.MustDo(t, `mutation($s: ID!) { updateService(input: {serviceId: $s, git: {repository: "`+srv.URL+`/private.git", branch: "main", credential: "ghp_headToken"}}) {
				service { id } userErrors { message } } }`, map[string]any{"s": svc})
			// The preview reads the head too and changes nothing.
			p := env.MustDo(t, f.Users[Editor].Token, `query($s: ID!, $e: ID!) { previewDeploy(input: {serviceId: $s, environmentId: $e, branchHead: true}) {
				clusters { cluster { id } } userErrors { code message } } }`, map[string]any{"s": svc, "e": f.EnvironmentID})
			if ue := p.List("previewDeploy.userErrors"); len(ue) != 0 {
				t.Errorf("the preview of the branch head: %v", p.Data)
			}
			r := env.MustDo(t, f.Users[Editor].Token, q, map[string]any{"s": svc, "e": f.EnvironmentID, "h": true})
			if r.Str("deploy.build.commit") != head || r.Str("deploy.deployment.stage") != "BUILDING" {
				t.Errorf("deploy of the branch head %s: %v", head, r.Data)
			}

			// A branch the repository does not have.
			f.MustDo(t, `mutation($s: ID!) { updateService(input: {serviceId: $s, git: {repository: "`+srv.URL+`/private.git", branch: "release"}}) {
				service { id } userErrors { message } } }`, map[string]any{"s": svc})
			refused("a missing branch", map[string]any{"s": svc, "e": f.EnvironmentID, "h": true}, `no branch "release"`)
		})
	}
	// By default a repository on the control plane's own network is not
	// read.
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	svc := f.NewGitService(t, "shop-api", srv.URL+"/private.git")
	r := env.Do(t, f.Users[Editor].Token, q, map[string]any{"s": svc, "e": f.EnvironmentID, "h": true})
	if ue := r.UserErrors("deploy"); len(ue) != 1 || !strings.Contains(ue[0].Message, "loopback, private or link-local") {
		t.Errorf("a loopback repository by default: %v", r.Data)
	}
}

// Deleting a service whose build runs takes the build out of its
// cluster's set at once: the agent stops the Job.
func TestDeletedServiceStopsItsBuild(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		svc := f.NewGitService(t, "shop-api", GitHubRepository, f.EnvironmentID)
		_, url, secret := f.NewWebhook(t, svc)
		agent, _ := connectStageAgent(t, f, "prod-eu")
		a := env.Deliver(t, url, Delivery{Provider: "GITHUB", Event: "push", DeliveryID: "doomed", Secret: secret,
			Body: SamplePush(t, "github-push.json")})
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(a.Builds[0])
		f.MustDo(t, `mutation($s: ID!) { deleteService(input: {serviceId: $s}) { userErrors { message } } }`, map[string]any{"s": svc})
		agent.waitBuilds()
	})
}

// A Git credential is bound to the repository it was given for (issue 30,
// row 4): an editor cannot move a service with a stored credential to
// another repository (FORBIDDEN, nothing changes); changing only its
// branch keeps the credential; a tenant admin's move drops the credential
// unless one comes with it, and a deploy of the branch head then sends no
// credential to the new host.
func TestGitCredentialFollowsItsRepository(t *testing.T) {
	srv, root := testutil.GitServer(t, "ghp_headToken")
	testutil.GitRepo(t, root, "private.git")
	var mu sync.Mutex
	var sent []string // the Authorization headers the other host saw
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	t.Cleanup(other.Close)
	for _, s := range Stores(t) {
		t.Run(s.Name, func(t *testing.T) {
			env := NewEnvWith(t, s.Open(t), func(c *config.Config) { c.Builds.GitPrivate = true })
			f := env.NewFixture(t)
			svc := f.NewGitService(t, "shop-api", srv.URL+"/private.git")
			f.addSecret("ghp_headToken")
			const update = `mutation($s: ID!, $r: String!, $b: String!) { updateService(input: {serviceId: $s, git: {repository: $r, branch: $b}}) {
				service { git { repository branch hasCredential } } userErrors { field message code } } }`
			f.MustDo(t, `mutation($s: ID!) { updateService(input: {serviceId: $s, git: {repository: "`+srv.URL+`/private.git", branch: "main", credential: "ghp_headToken"}}) {
				service { id } userErrors { message } } }`, map[string]any{"s": svc})
			git := func() map[string]any {
				return f.MustDo(t, `query($s: ID!) { node(id: $s) { ... on Service { git { repository branch hasCredential } } } }`,
					map[string]any{"s": svc}).Get("node.git").(map[string]any)
			}

			// The editor moves it: refused, nothing changes.
			before := f.AuditCount(t)
			r := env.Do(t, f.Users[Editor].Token, update, map[string]any{"s": svc, "r": other.URL + "/attacker.git", "b": "main"})
			if ue := r.UserErrors("updateService"); len(ue) != 1 || ue[0].Code != "FORBIDDEN" || !strings.Contains(ue[0].Message, "tenant admin") {
				t.Errorf("an editor moving a service with a credential: %v, want FORBIDDEN", r.Data)
			}
			if g := git(); g["repository"] != srv.URL+"/private.git" || g["hasCredential"] != true || f.AuditCount(t) != before {
				t.Errorf("after the refused move: %v", g)
			}
			// The editor changes the branch: the credential stays.
			env.MustDo(t, f.Users[Editor].Token, update, map[string]any{"s": svc, "r": srv.URL + "/private.git", "b": "feature"})
			if g := git(); g["branch"] != "feature" || g["hasCredential"] != true {
				t.Errorf("after the editor's branch change: %v", g)
			}
			// The tenant admin moves it: the credential is dropped.
			f.MustDo(t, update, map[string]any{"s": svc, "r": other.URL + "/attacker.git", "b": "main"})
			if g := git(); g["repository"] != other.URL+"/attacker.git" || g["hasCredential"] != false {
				t.Errorf("after the admin's move: %v, want no credential", g)
			}
			r = env.Do(t, f.Users[Editor].Token, `mutation($s: ID!, $e: ID!) { deploy(input: {serviceId: $s, environmentId: $e, branchHead: true}) {
				deployment { id } userErrors { message } } }`, map[string]any{"s": svc, "e": f.EnvironmentID})
			mu.Lock()
			got := slices.Clone(sent)
			mu.Unlock()
			if len(got) == 0 {
				t.Fatalf("the deploy of the branch head did not reach the new host: %v", r.Data)
			}
			for _, h := range got {
				if h != "" {
					t.Errorf("the new host was sent an Authorization header (%d bytes)", len(h))
				}
			}
		})
	}
}
