package apitest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// Two `nebula serve` processes on one PostgreSQL, as a deployment with
// several replicas runs them: an agent connected to the first reports a
// deployment's stages, a subscriber on the second sees every one; both
// run the background jobs, and an expired approval is cancelled once;
// builds pushed to the second are handed to the agent once each, one at a
// time as NEBULA_BUILDS_PER_CLUSTER says.
func TestTwoProcessesOnOnePostgres(t *testing.T) {
	url := pgtest.URL(t)
	bin := filepath.Join(t.TempDir(), "nebula")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nebula")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nebula: %v\n%s", err, out)
	}
	key := seal.GenerateKey()
	serve := func(name string) (base string, stdout func() string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin, "serve")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "NEBULA_ADDR="+addr, "NEBULA_DATABASE_URL="+url, "NEBULA_MASTER_KEY="+key,
			"NEBULA_JOB_INTERVAL=200ms", "NEBULA_APPROVAL_TTL=2s", "NEBULA_LOG_LEVEL=warn",
			"NEBULA_BUILDS_PER_CLUSTER=1", "NEBULA_PUBLIC_URL="+"http://"+addr)
		var mu sync.Mutex
		var out bytes.Buffer
		pipe, _ := cmd.StdoutPipe()
		logf, _ := os.Create(filepath.Join(t.TempDir(), name+".log"))
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				mu.Lock()
				out.WriteString(sc.Text() + "\n")
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("--- %s log ---\n%s", name, b)
			}
		})
		base = "http://" + addr
		testutil.Eventually(t, 30*time.Second, name+" is ready", func() (bool, string) {
			resp, err := http.Get(base + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == 200, resp.Status
		})
		return base, func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	}
	a, outA := serve("a")
	b, _ := serve("b")
	token := regexp.MustCompile(`nbt_[A-Za-z0-9]+`).FindString(outA())
	if token == "" {
		t.Fatalf("replica a printed no admin token:\n%s", outA())
	}
	// Clients of either process.
	ea, eb := &Env{Server: &httptest.Server{URL: a}}, &Env{Server: &httptest.Server{URL: b}}
	gql := func(e *Env, tok, q string, vars map[string]any) Response {
		t.Helper()
		return e.MustDo(t, tok, q, vars)
	}
	tenant := gql(ea, token, `{ viewer { tenants { nodes { id } } } }`, nil).Str("viewer.tenants.nodes.0.id")
	reg := gql(ea, token, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "two", labels: [{key: "env", value: "two"}]}) {
		cluster { id } connectToken } }`, map[string]any{"t": tenant})
	connect := reg.Str("registerCluster.connectToken")
	project := gql(ea, token, `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "two"}) { project { id } } }`,
		map[string]any{"t": tenant}).Str("createProject.project.id")
	env1 := gql(ea, token, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "open", clusterSelector: [{key: "env", value: "two"}]}) {
		environment { id } } }`, map[string]any{"p": project}).Str("createEnvironment.environment.id")
	prot := gql(ea, token, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "locked", protected: true,
		clusterSelector: [{key: "env", value: "two"}]}) { environment { id } } }`, map[string]any{"p": project}).Str("createEnvironment.environment.id")
	svc := gql(ea, token, `mutation($p: ID!) { createService(input: {projectId: $p, name: "api", image: "registry.example.com/two/api",
		processes: [{name: "web", replicas: 1, port: 80}]}) { service { id } } }`, map[string]any{"p": project}).Str("createService.service.id")

	// An agent connects to replica a.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a, "http")+"/agent/v1/connect", http.Header{"Authorization": {"Bearer " + connect}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	hello, _ := protocol.Encode(protocol.TypeHello, protocol.Hello{Protocols: []int{1}, Capabilities: protocol.Known})
	if err := ws.WriteMessage(websocket.TextMessage, hello); err != nil {
		t.Fatal(err)
	}
	var setsMu sync.Mutex
	var sets []protocol.Builds // the build sets the agent was sent
	go func() {
		for {
			_, frame, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if m, err := protocol.Decode(frame); err == nil {
				if b, ok := m.(*protocol.Builds); ok {
					setsMu.Lock()
					sets = append(sets, *b)
					setsMu.Unlock()
				}
			}
		}
	}()

	dep := gql(ea, token, `mutation($s: ID!, $e: ID!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: "`+Digest(1)+`"}) {
		deployment { id } } }`, map[string]any{"s": svc, "e": env1}).Str("deploy.deployment.id")
	rawDep, _ := gid.Decode[model.DeploymentID](gid.Deployment, dep)

	// A subscriber on replica b.
	s := subscribeOn(t, eb, token, `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { stage } }`, map[string]any{"d": dep})
	s.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "DELIVERING"})
	for _, st := range []string{"STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"} {
		frame, _ := protocol.Encode(protocol.TypeStage, protocol.Stage{Deployment: string(rawDep), Stage: st, Message: st, At: time.Now()})
		if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
			t.Fatal(err)
		}
	}
	s.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "DELIVERING", "STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"})

	// Jobs: both replicas run them every 200 ms; a deployment waiting for
	// approval for longer than its 2 s is cancelled once.
	awaitApproval := func(digest int64) string {
		t.Helper()
		r := gql(ea, token, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			deployment { id stage } } }`, map[string]any{"s": svc, "e": prot, "d": Digest(digest)})
		if r.Str("deploy.deployment.stage") != "AWAITING_APPROVAL" {
			t.Fatalf("a deploy to the protected environment: %s", r.Body)
		}
		return r.Str("deploy.deployment.id")
	}
	deployment := func(id string) Response {
		t.Helper()
		return gql(eb, token, `query($d: ID!) { node(id: $d) { ... on Deployment { stage events { nodes { stage } } } } }`, map[string]any{"d": id})
	}
	cancelled := func(id string) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, "the expired approval is cancelled", func() (bool, string) {
			r := deployment(id)
			return r.Str("node.stage") == "CANCELLED", string(r.Body)
		})
	}
	first := awaitApproval(2)
	cancelled(first)
	// The jobs go on: once an approval asked for after that cancellation
	// has expired and been cancelled too, a later pass of the job has run,
	// which would have cancelled the first deployment again.
	second := awaitApproval(3)
	cancelled(second)
	if r := deployment(first); len(r.List("node.events.nodes")) != 3 {
		t.Errorf("%d events after the approval expired, want 3 (QUEUED, AWAITING_APPROVAL, CANCELLED once): %s", len(r.List("node.events.nodes")), r.Body)
	}
	audit := gql(ea, token, `query($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 50, filter: {action: "deployment.approval_expired"}) {
		nodes { targetId } } } } }`, map[string]any{"t": tenant})
	expired := map[string]int{}
	for _, e := range audit.List("node.auditEvents.nodes") {
		id, _ := dig(e, "targetId").(string)
		expired[id]++
	}
	if len(expired) != 2 || expired[first] != 1 || expired[second] != 1 {
		t.Errorf("approval_expired audit events by deployment %v, want one for each of %s and %s: %s", expired, first, second, audit.Body)
	}

	// Builds: two Git services, each pushed to through replica b; both
	// replicas run the scheduler every 200 ms, the cluster takes one build
	// at a time.
	var builds []string
	for _, name := range []string{"shop-a", "shop-b"} {
		gs := gql(ea, token, `mutation($p: ID!, $n: String!, $e: ID!) { createService(input: {projectId: $p, name: $n,
			image: "registry.example.com/two/`+name+`", processes: [{name: "web", port: 80}],
			git: {repository: "`+GitHubRepository+`", branch: "main", deployOnPush: [$e]}}) { service { id } } }`,
			map[string]any{"p": project, "n": name, "e": env1}).Str("createService.service.id")
		hook := gql(ea, token, `mutation($p: ID!, $s: ID!) { createWebhook(input: {projectId: $p, serviceId: $s}) { webhook { url } secret } }`,
			map[string]any{"p": project, "s": gs})
		ans := eb.Deliver(t, hook.Str("createWebhook.webhook.url"), Delivery{Provider: "GITHUB", Event: "push",
			DeliveryID: "two-" + name, Secret: hook.Str("createWebhook.secret"), Body: SamplePush(t, "github-push.json")})
		if ans.Outcome != "BUILD_QUEUED" || len(ans.Builds) != 1 {
			t.Fatalf("the push to %s: %+v", name, ans)
		}
		builds = append(builds, ans.Builds[0])
	}
	// jobsRun waits until each replica finished n more passes of the
	// jobs than when it was called (nebula_job_passes_total).
	jobsRun := func(a, b string, n int) {
		t.Helper()
		from := map[string]int{a: jobPasses(t, a), b: jobPasses(t, b)}
		for _, base := range []string{a, b} {
			testutil.Eventually(t, 20*time.Second, fmt.Sprintf("%d passes of the jobs on %s", n, base), func() (bool, string) {
				got := jobPasses(t, base)
				return got >= from[base]+n, fmt.Sprint(got - from[base])
			})
		}
	}
	buildState := func(raw string) (status string, attempts int) {
		t.Helper()
		r := gql(eb, token, `query($b: ID!) { node(id: $b) { ... on Build { status attempts } } }`, map[string]any{"b": gid.Encode(gid.Build, raw)})
		n, _ := dig(r.Data, "node.attempts").(float64)
		return r.Str("node.status"), int(n)
	}
	running := func() (run []string) {
		t.Helper()
		for _, b := range builds {
			st, n := buildState(b)
			if st == "RUNNING" {
				run = append(run, b)
				if n != 1 {
					t.Errorf("build %s was handed out %d times", b, n)
				}
			}
		}
		return run
	}
	testutil.Eventually(t, 10*time.Second, "a build is handed to the agent", func() (bool, string) {
		r := running()
		return len(r) > 0, fmt.Sprint(r)
	})
	// Ten more passes of the jobs on each replica, each a chance to hand
	// out the second build.
	jobsRun(a, b, 10)
	handed := running()
	if len(handed) != 1 {
		t.Fatalf("%d builds running on a cluster that takes one at a time: %v", len(handed), handed)
	}
	frame, _ := protocol.Encode(protocol.TypeBuildReport, protocol.BuildReport{ID: handed[0], Status: protocol.BuildSucceeded,
		Digest: Digest(9)})
	if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the other build is handed out once the first ended", func() (bool, string) {
		r := running()
		st, _ := buildState(handed[0])
		return len(r) == 1 && r[0] != handed[0] && st == "SUCCEEDED", fmt.Sprint(r, st)
	})
	jobsRun(a, b, 5)
	running()
	setsMu.Lock()
	defer setsMu.Unlock()
	for _, s := range sets {
		if len(s.Builds) > 1 {
			t.Errorf("the agent was sent %d builds at once: %+v", len(s.Builds), s)
		}
	}
}

// jobPasses reads a replica's nebula_job_passes_total.
func jobPasses(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^nebula_job_passes_total (\d+)`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("%s/metrics has no nebula_job_passes_total", base)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
