package apitest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
		log(first: 100) { lines { number text } endLine hasNextPage truncated }
		release { number imageDigest }
		deployment { id stage message events(first: 20) { stage } } } } }`, map[string]any{"b": build})
	return r.Get("node").(map[string]any)
}

func stages(b map[string]any) []string {
	var out []string
	for _, e := range b["deployment"].(map[string]any)["events"].([]any) {
		out = append(out, e.(map[string]any)["stage"].(string))
	}
	return out
}

func logText(b map[string]any) []string {
	var out []string
	for _, l := range b["log"].(map[string]any)["lines"].([]any) {
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
