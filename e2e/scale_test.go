package e2e

// TestAgentScale is the agent-at-scale benchmark of issues 10 and 29: one
// project of E environments × S services on the simulated cluster, every
// service deployed, and the agent that ships — every capability on (logs,
// events, drift, builds, inventory), the pods of every other environment
// serving a log and the others answering 400 as the simulated node does for
// a pod without one — measured phase by phase through the apiserver's
// request counters, the control plane's API and the agent's own metrics,
// CPU and memory, up to an idle window and the deletion of a service. It is
// a measurement, not an assertion: it fails only when the harness cannot do
// its part, and prints for each phase which of the issues' targets it
// meets. Results go to docs/benchmarks.md ("Agent at scale"); run it with
// `make bench-agent`.

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// What the agent labels its objects with (agent/apply.go); the benchmark
// reads them and does not import the agent.
const (
	scaleManaged = "app.kubernetes.io/managed-by=nebulactrl"
	labelService = "nebula.dev/service"
	labelRelease = "nebula.dev/release"
)

const (
	// scalePhaseTimeout bounds every wait of a phase: the agent before
	// issue 10's rework takes minutes per phase at 50 × 20.
	scalePhaseTimeout = 60 * time.Minute
	// A phase has settled when the apiserver saw quietFor without a
	// busy second (see settle).
	quietFor = 5 * time.Second
	// scaleLease is the Lease the agent replicas share.
	scaleLease = "nebula-agent-scale"
)

// scaleDigests are the two releases every service gets.
var scaleDigests = [...]string{
	"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
}

func TestAgentScale(t *testing.T) {
	spec := os.Getenv("NEBULA_AGENT_SCALE")
	if spec == "" {
		t.Skip("a benchmark of minutes, not part of make test: NEBULA_AGENT_SCALE=EnvxSvc runs it (5x10 quick, 50x20 issue 10's size); see make bench-agent")
	}
	needCluster(t)
	envs, svcs, err := parseScale(spec)
	if err != nil {
		t.Fatal(err)
	}
	b := newScaleBench(t, envs, svcs)
	b.setup()
	b.initialApply()
	b.variableChanged()
	b.resync("unchanged resync")
	b.newRelease()
	for i := 1; i <= 3; i++ {
		b.resync(fmt.Sprintf("resync %d after the new release", i))
	}
	b.idle()
	b.agentRestart()
	b.leaderChange()
	b.deleteService()
	b.summary()
}

// parseScale reads "EnvxSvc", e.g. "50x20".
func parseScale(s string) (envs, svcs int, err error) {
	e, v, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	envs, err1 := strconv.Atoi(e)
	svcs, err2 := strconv.Atoi(v)
	if !ok || err1 != nil || err2 != nil || envs < 1 || svcs < 1 || envs > 100 || svcs > 100 {
		return 0, 0, fmt.Errorf("NEBULA_AGENT_SCALE=%q: want environments x services, each 1-100, e.g. 50x20", s)
	}
	return envs, svcs, nil
}

type scaleEnv struct{ id, name, namespace string }

type scaleService struct {
	id, name string
	replicas int
}

// scaleDeployment is one deploy: a rollout of one service's release in one
// environment.
type scaleDeployment struct {
	id, raw string // global id; the control plane's own id (its logs)
	env     *scaleEnv
	svc     *scaleService
	release int
}

func (d *scaleDeployment) key() rolloutKey {
	return rolloutKey{d.env.namespace, d.svc.name, strconv.Itoa(d.release)}
}

type scaleBench struct {
	t          *testing.T
	ctx        context.Context
	envs, svcs int
	cp         *controlPlane
	cs         *kubernetes.Clientset
	watch      *clusterWatch

	tenant, cluster, project string
	tokenFile, kubeconfig    string
	agentArgs                []string
	// metrics is where each agent serves its metrics.
	metrics map[*proc]string
	agents  []*proc // every agent process, in start order
	leader  *proc

	envList  []*scaleEnv
	svcList  []*scaleService
	releases [][]*scaleDeployment // per release (0, 1): every deployment
	byRaw    map[string]*scaleDeployment

	// starting counts each deployment's STARTING events in the API, as
	// last read; a restart is read against it.
	starting map[string]int

	results []string // one line per phase, for the summary
}

func newScaleBench(t *testing.T, envs, svcs int) *scaleBench {
	return &scaleBench{t: t, ctx: context.Background(), envs: envs, svcs: svcs,
		byRaw: map[string]*scaleDeployment{}, starting: map[string]int{}, metrics: map[*proc]string{}}
}

func (b *scaleBench) objects() int { return b.envs + 3*b.envs*b.svcs }

func (b *scaleBench) pods() int {
	n := 0
	for _, s := range b.svcList {
		n += s.replicas
	}
	return n * b.envs
}

// printf prints a line of the report (Markdown, for docs/benchmarks.md)
// as it happens; each phase's summary line also goes to the test's log.
func (b *scaleBench) printf(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func (b *scaleBench) result(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	b.results = append(b.results, s)
	b.t.Log(s)
}

// ---------------------------------------------------------------- setup

// setup runs a control plane, registers the cluster and installs its agent
// as an operator would (manifests, token Secret, the service account's
// token), then creates the project and deploys every service everywhere,
// before any agent runs: the initial apply starts from the whole state.
func (b *scaleBench) setup() {
	t := b.t
	t.Helper()
	began := time.Now()
	// Production's heartbeat and silence (the other e2e tests use 1 s and
	// 3 s): a heartbeat lists the managed Deployments, and a loaded agent
	// must not be marked DISCONNECTED. No stall flags: they add events.
	b.cp = startControlPlaneEnv(t, "NEBULA_AGENT_HEARTBEAT=15s", "NEBULA_AGENT_DISCONNECTED_AFTER=60s",
		"NEBULA_LOG_LEVEL=info", "NEBULA_DEPLOYMENT_STALL_AFTER=24h")
	b.cs = admin(t)
	if dir := os.Getenv("NEBULA_SCALE_LOG_DIR"); dir != "" {
		t.Cleanup(func() { b.keepLogs(dir) })
	}
	data := b.cp.gql(t, `{ viewer { tenants { nodes { id } } } }`, nil)
	b.tenant = str(dig(data, "viewer", "tenants", "nodes").([]any)[0], "id")
	// The free plan allows 20 services.
	b.cp.gql(t, `mutation ($input: SetTenantPlanInput!) { setTenantPlan(input: $input) { tenant { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"tenantId": b.tenant, "plan": "ENTERPRISE"}})

	reg := b.cp.gql(t, `mutation ($input: RegisterClusterInput!) {
  registerCluster(input: $input) { cluster { id } connectToken userErrors { message } } }`,
		map[string]any{"input": map[string]any{"tenantId": b.tenant, "name": "scale",
			"labels": []any{map[string]any{"key": "site", "value": "scale"}}}})
	b.cluster = str(reg, "registerCluster", "cluster", "id")
	token := str(reg, "registerCluster", "connectToken")
	if b.cluster == "" || token == "" {
		t.Fatal("registerCluster returned no cluster or no connect token")
	}
	inst := b.cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster { install { manifests } } } }`,
		map[string]any{"id": b.cluster})
	applyManifests(t, str(inst, "node", "install", "manifests"))
	if _, err := b.cs.CoreV1().Secrets("nebula-system").Apply(b.ctx, secretApply("nebula-agent-token", "nebula-system", token),
		metav1.ApplyOptions{FieldManager: "e2e", Force: true}); err != nil {
		t.Fatalf("applying the agent's token Secret: %v", err)
	}
	b.kubeconfig = serviceAccountKubeconfigFor(t, b.cs, 12*time.Hour)
	b.tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(b.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	proj := b.cp.gql(t, `mutation ($input: CreateProjectInput!) { createProject(input: $input) { project { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"tenantId": b.tenant, "name": "scale"}})
	b.project = str(proj, "createProject", "project", "id")
	for i := range b.envs {
		name := fmt.Sprintf("e%02d", i)
		env := b.cp.gql(t, `mutation ($input: CreateEnvironmentInput!) {
  createEnvironment(input: $input) { environment { id placement { namespace problem } } userErrors { message } } }`,
			map[string]any{"input": map[string]any{"projectId": b.project, "name": name,
				"clusterSelector": []any{map[string]any{"key": "site", "value": "scale"}}}})
		e := &scaleEnv{id: str(env, "createEnvironment", "environment", "id"), name: name,
			namespace: str(env, "createEnvironment", "environment", "placement", "namespace")}
		if e.namespace == "" {
			t.Fatalf("environment %s lands nowhere: %s", name, str(env, "createEnvironment", "environment", "placement", "problem"))
		}
		b.envList = append(b.envList, e)
	}
	// Each service: one process, replicas alternating 1 and 2, an HTTP
	// readiness probe, one variable. No domain: the agent makes a Secret,
	// a Deployment and a Service per service and environment, plus a
	// Namespace per environment (50 × 20: 3,050 objects, as in the issue).
	for i := range b.svcs {
		s := &scaleService{name: fmt.Sprintf("s%02d", i), replicas: 1 + i%2}
		svc := b.cp.gql(t, `mutation ($input: CreateServiceInput!) { createService(input: $input) { service { id } userErrors { message } } }`,
			map[string]any{"input": map[string]any{
				"projectId": b.project, "name": s.name, "image": "registry.example.com/scale/" + s.name,
				"processes": []any{map[string]any{"name": "web", "command": []any{"./serve"}, "replicas": s.replicas, "port": 8080,
					"readinessProbe": map[string]any{"path": "/healthz", "port": 8080}}},
				"variables": []any{map[string]any{"name": "GREETING", "value": "hello"}},
			}})
		s.id = str(svc, "createService", "service", "id")
		b.svcList = append(b.svcList, s)
	}
	b.watch = watchCluster(t, b.cs)
	serving := b.serveLogs()
	deploys := time.Now()
	b.deployAll(0)
	b.printf("## Agent at scale: %d environments × %d services (NEBULA_AGENT_SCALE=%dx%d)\n", b.envs, b.svcs, b.envs, b.svcs)
	b.printf("%d managed objects (%d Namespaces + %d × Secret, Deployment, Service), %d pods; setup took %s (%d deploy mutations %s); load average %s",
		b.objects(), b.envs, b.envs*b.svcs, b.pods(), since(began), len(b.releases[0]), since(deploys), loadavg())
	b.printf("The pods of %d of the %d environments serve a log of %d lines, followed (kwok's ClusterLogs); the others' answer 400, as the simulated node does for a pod without a log.",
		serving, b.envs, scaleLogLines)
	b.agentArgs = []string{"--server", b.cp.url, "--token-file", b.tokenFile, "--kubeconfig", b.kubeconfig,
		"--lease", scaleLease,
		// Only the benchmark's RESYNC commands resync, so that every
		// phase counts its own requests; and no rollout is rolled back
		// because this machine is slow.
		"--resync", "24h", "--rollout-timeout", "60m", "--log-level", "info"}
	b.agentArgs = append(b.agentArgs, strings.Fields(os.Getenv("NEBULA_SCALE_AGENT_ARGS"))...)
	b.printf("agent: nebula agent %s (the kubeconfig holds a token of the agent's service account)", strings.Join(b.agentArgs, " "))
}

// scaleLogLines is the length of the log the serving pods print.
const scaleLogLines = 20

// serveLogs makes the pods of every other environment serve a log (kwok's
// ClusterLogs over their namespaces: a CRI-format file of scaleLogLines
// lines, followed, so that their streams stay open); the pods of the
// others answer 400. It returns how many environments serve one.
func (b *scaleBench) serveLogs() int {
	t := b.t
	file := filepath.Join(t.TempDir(), "scale.log")
	var lines strings.Builder
	at := time.Now().Add(-time.Minute).UTC()
	for i := range scaleLogLines {
		fmt.Fprintf(&lines, "%s stdout F GET /items/%d 200 %dus\n", at.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), i, 100+i)
	}
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var namespaces []any
	for i, e := range b.envList {
		if i%2 == 0 {
			namespaces = append(namespaces, e.namespace)
		}
	}
	dyn := dynamicClient(t)
	gvr := schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterlogs"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
		"metadata": map[string]any{"name": "nebula-scale"},
		"spec": map[string]any{"selector": map[string]any{"matchNamespaces": namespaces},
			"logs": []any{map[string]any{"containers": []any{"web"}, "logsFile": file, "follow": true}}},
	}}
	if _, err := dyn.Resource(gvr).Create(b.ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating kwok's ClusterLogs: %v", err)
	}
	t.Cleanup(func() { _ = dyn.Resource(gvr).Delete(context.Background(), "nebula-scale", metav1.DeleteOptions{}) })
	return len(namespaces)
}

// keepLogs copies the control plane's and the agents' logs into dir (they
// live in the test's temporary directories otherwise).
func (b *scaleBench) keepLogs(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Errorf("keeping the logs: %v", err)
		return
	}
	// Numbered in start order: a restarted agent keeps its name.
	for i, p := range append([]*proc{b.cp.proc}, b.agents...) {
		raw, err := os.ReadFile(p.log)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%s.log", i, p.name)), raw, 0o644)
		}
		if err != nil {
			b.t.Errorf("keeping the log of %s: %v", p.name, err)
		}
	}
	b.t.Logf("the logs of the control plane and the agents are in %s", dir)
}

// deployAll deploys release n+1 of every service in every environment.
func (b *scaleBench) deployAll(n int) {
	b.t.Helper()
	var all []*scaleDeployment
	for _, e := range b.envList {
		for _, s := range b.svcList {
			res := b.cp.gql(b.t, `mutation ($input: DeployInput!) {
  deploy(input: $input) { deployment { id } release { number } userErrors { message } } }`,
				map[string]any{"input": map[string]any{"serviceId": s.id, "environmentId": e.id, "imageDigest": scaleDigests[n]}})
			d := &scaleDeployment{id: str(res, "deploy", "deployment", "id"), env: e, svc: s,
				release: int(num(res, "deploy", "release", "number"))}
			// A service whose variable changed made a release of its own.
			if d.release < n+1 {
				b.t.Fatalf("deploy of %s to %s made release %d, want %d or more", s.name, e.name, d.release, n+1)
			}
			d.raw = rawID(b.t, d.id)
			b.byRaw[d.raw] = d
			all = append(all, d)
		}
	}
	b.releases = append(b.releases, all)
}

// rawID is the control plane's own id inside a global id (base64url of
// "Kind:id"), which its log lines carry.
func rawID(t *testing.T, id string) string {
	t.Helper()
	dec, err := base64.RawURLEncoding.DecodeString(id)
	_, raw, ok := strings.Cut(string(dec), ":")
	if err != nil || !ok {
		t.Fatalf("global id %q does not decode", id)
	}
	return raw
}

func (b *scaleBench) startAgent(identity string) *proc {
	b.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(b.t))
	args := append([]string{"agent", "--metrics-address", addr}, b.agentArgs...)
	p := start(b.t, "agent-"+identity, b.t.TempDir(), []string{"POD_NAME=" + identity}, args...)
	b.agents = append(b.agents, p)
	b.metrics[p] = addr
	return p
}

// leaderMetrics reads the leading agent's metrics.
func (b *scaleBench) leaderMetrics() []sample {
	return scrape(b.t, "http://"+b.metrics[b.leader]+"/metrics")
}

// ---------------------------------------------------------------- phases

// initialApply starts the agent on the whole state: acknowledged, all
// pods Ready, every rollout SUCCEEDED, settled.
func (b *scaleBench) initialApply() {
	rev := b.revisions().desired
	ph := b.begin("initial apply")
	b.leader = b.startAgent("a-1")
	ack := b.waitApplied(rev)
	ph.mark("acknowledged")
	ready := b.waitRolledOut(b.releases[0])
	ph.mark("all pods Ready")
	succeeded := b.waitSucceeded(b.releases[0])
	ph.mark("every rollout SUCCEEDED")
	settled := b.settle()
	ph.mark("quiet")
	delays, restarted := b.succeededDelays(b.releases[0])
	revs := b.revisions()

	ph.header()
	ph.row(fmt.Sprintf("whole state acknowledged (appliedRevision ≥ %d), from the agent's start", rev), since2(ph.start, ack),
		"≤ 30 s", verdict(ack.Sub(ph.start) <= 30*time.Second))
	ph.row(fmt.Sprintf("all %d pods Ready (the last one)", b.pods()), since2(ph.start, ready), "", "")
	ph.row("last SUCCEEDED reported", since2(ph.start, succeeded), "", "")
	ph.row(fmt.Sprintf("settled (the last busy second before %s of quiet)", quietFor), since2(ph.start, settled), "", "")
	b.delayRows(ph, delays)
	ph.row("rollouts started more than once (API)", fmt.Sprintf("%d of %d", restarted, len(b.releases[0])), "0", verdict(restarted == 0))
	ph.row("revisions after the first, up to settled (each SUCCEEDED recompiles the state)",
		fmt.Sprintf("%d (desired %d, applied %d)", revs.desired-rev, revs.desired, revs.applied), "", "")
	ph.finish()
	b.result("initial apply: acknowledged %s, pods Ready %s, last SUCCEEDED %s; SUCCEEDED delay %s",
		since2(ph.start, ack), since2(ph.start, ready), since2(ph.start, succeeded), delayText(delays))
}

// variableChanged sets the variable of one service (in every environment:
// it is a service's variable) and measures until the agent acknowledged
// the revision and the cluster settled.
func (b *scaleBench) variableChanged() {
	svc := b.svcList[len(b.svcList)/2]
	objs := b.countServiceObjects(svc.name)
	total := 0
	for _, n := range objs {
		total += n
	}
	b.readStarting()
	cp0 := b.cpLogSize()
	agent0 := b.agentLogSizes()
	ph := b.begin("one variable changed")
	b.cp.gql(b.t, `mutation ($input: SetVariableInput!) { setVariable(input: $input) { variable { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"projectId": b.project, "serviceId": svc.id, "name": "GREETING", "value": "changed"}})
	rev := b.revisions().desired
	ack := b.waitApplied(rev)
	ph.mark("acknowledged")
	// A release carries its configuration: the variable is release 2 of
	// the service in every environment, rolled out beside release 1.
	var ds []*scaleDeployment
	for _, d := range b.releases[0] {
		if d.svc == svc {
			ds = append(ds, &scaleDeployment{env: d.env, svc: d.svc, release: d.release + 1})
		}
	}
	rolled := b.waitRolledOut(ds)
	ph.mark("pods rolled")
	settled := b.settle()
	ph.mark("quiet")
	r := b.restartedRollouts(cp0, agent0)

	writesAck := ph.between(0, 1).agentWrites()
	writes := ph.between(0, len(ph.marks)-1).agentWrites()
	ph.header()
	ph.row(fmt.Sprintf("acknowledged (appliedRevision ≥ %d), from the mutation", rev), since2(ph.start, ack),
		"≤ 2 s", verdict(ack.Sub(ph.start) <= 2*time.Second))
	ph.row(fmt.Sprintf("service %s's pods rolled in %d environments", svc.name, b.envs), since2(ph.start, rolled), "", "")
	ph.row("settled", since2(ph.start, settled), "", "")
	ph.row(fmt.Sprintf("the service's objects (by label: %s)", objText(objs)), strconv.Itoa(total), "", "")
	ph.row("agent writes until acknowledged (APPLY, PATCH, POST, DELETE on its kinds)", fmt.Sprintf("%.0f", writesAck),
		fmt.Sprintf("≤ %d (2 × %d)", 2*total, total), verdict(writesAck <= float64(2*total)))
	ph.row("agent writes until settled", fmt.Sprintf("%.0f", writes), fmt.Sprintf("≤ %d", 2*total), verdict(writes <= float64(2*total)))
	ph.row("LIST until acknowledged / until settled", fmt.Sprintf("%.0f / %.0f", ph.between(0, 1).count(verbIn("LIST"), anyKind),
		ph.between(0, len(ph.marks)-1).count(verbIn("LIST"), anyKind)), "", "")
	b.restartRows(ph, r)
	ph.finish()
	b.result("one variable changed: acknowledged %s, %.0f agent writes for %d objects, %d rollouts restarted",
		since2(ph.start, ack), writes, total, r.restarted())
}

// resync queues a RESYNC command with nothing changed and counts what the
// agent sends the apiserver for it.
func (b *scaleBench) resync(name string) {
	b.readStarting()
	cp0 := b.cpLogSize()
	agent0 := b.agentLogSizes()
	ph := b.begin(name)
	cmd := b.cp.gql(b.t, `mutation ($input: QueueCommandInput!) { queueCommand(input: $input) { command { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"clusterId": b.cluster, "kind": "RESYNC"}})
	id := str(cmd, "queueCommand", "command", "id")
	var result string
	done := b.poll(fmt.Sprintf("the RESYNC command %s is answered", id), 250*time.Millisecond, func() (bool, string) {
		n := dig(b.cp.gql(b.t, `query ($id: ID!) { node(id: $id) { ... on Command { status result } } }`, map[string]any{"id": id}), "node")
		result = str(n, "result")
		s := str(n, "status")
		return s == "APPLIED" || s == "FAILED", s + " " + result
	})
	ph.mark("answered")
	settled := b.settle()
	ph.mark("quiet")
	r := b.restartedRollouts(cp0, agent0)

	all := ph.between(0, len(ph.marks)-1)
	cmdWin := ph.between(0, 1)
	writes := all.count(verbIn("APPLY", "PATCH"), agentKind)
	lists := all.count(verbIn("LIST"), anyKind)
	ph.header()
	ph.row(fmt.Sprintf("command answered (%q)", clip(firstLine(result), 100)), since2(ph.start, done), "", "")
	ph.row("settled", since2(ph.start, settled), "", "")
	ph.row("APPLY + PATCH on the agent's kinds (to the answer / to settled)",
		fmt.Sprintf("%.0f / %.0f", cmdWin.count(verbIn("APPLY", "PATCH"), agentKind), writes), "0", verdict(writes == 0))
	ph.row("LIST (to the answer / to settled)", fmt.Sprintf("%.0f / %.0f", cmdWin.count(verbIn("LIST"), anyKind), lists),
		"independent of the number of objects", "compare two sizes")
	b.restartRows(ph, r)
	ph.finish()
	b.result("%s: answered %s, %.0f APPLY+PATCH, %.0f LIST, %d rollouts restarted",
		name, since2(ph.start, done), writes, lists, r.restarted())
}

// newRelease deploys release 2 of every service everywhere: old and new
// pods side by side, then the old ones retired.
func (b *scaleBench) newRelease() {
	ph := b.begin("new release of every service")
	b.deployAll(1)
	ph.mark("deploy mutations done")
	ready := b.waitRolledOut(b.releases[1])
	ph.mark("all new pods Ready")
	succeeded := b.waitSucceeded(b.releases[1])
	ph.mark("every rollout SUCCEEDED")
	settled := b.settle()
	ph.mark("quiet")
	delays, restarted := b.succeededDelays(b.releases[1])
	ph.header()
	ph.row(fmt.Sprintf("%d deploy mutations done", len(b.releases[1])), since2(ph.start, ph.marks[1].at), "", "")
	ph.row("all new pods Ready (the last one)", since2(ph.start, ready), "", "")
	ph.row("last SUCCEEDED reported", since2(ph.start, succeeded), "", "")
	ph.row("settled", since2(ph.start, settled), "", "")
	b.delayRows(ph, delays)
	ph.row("rollouts started more than once (API)", fmt.Sprintf("%d of %d", restarted, len(b.releases[1])), "0", verdict(restarted == 0))
	ph.finish()
	b.result("new release: pods Ready %s, last SUCCEEDED %s; SUCCEEDED delay %s",
		since2(ph.start, ready), since2(ph.start, succeeded), delayText(delays))
}

// agentRestart kills the agent (SIGKILL, as a crash or an OOM kill) and
// starts it again with the same identity, as a restarted container.
func (b *scaleBench) agentRestart() {
	b.readStarting()
	cp0 := b.cpLogSize()
	agent0 := b.agentLogSizes()
	_, opened := sessions(b.t, b.cp)
	ph := b.begin("agent restart")
	b.leader.kill()
	identity := strings.TrimPrefix(b.leader.name, "agent-")
	b.leader = b.startAgent(identity)
	connected := b.waitSession(opened)
	ph.mark("session open")
	settled := b.settle()
	ph.mark("quiet")
	r := b.restartedRollouts(cp0, agent0)
	all := ph.between(0, len(ph.marks)-1)
	ph.header()
	ph.row("session open again, from the kill", since2(ph.start, connected), "", "")
	ph.row("settled", since2(ph.start, settled), "", "")
	ph.row("APPLY + PATCH on the agent's kinds", fmt.Sprintf("%.0f", all.count(verbIn("APPLY", "PATCH"), agentKind)), "", "")
	ph.row("LIST", fmt.Sprintf("%.0f", all.count(verbIn("LIST"), anyKind)), "", "")
	b.restartRows(ph, r)
	ph.finish()
	b.result("agent restart: settled %s, %d rollouts restarted", since2(ph.start, settled), r.restarted())
}

// leaderChange starts a second replica on the Lease and kills the leader
// without releasing it; the follower takes over once the Lease runs out.
func (b *scaleBench) leaderChange() {
	b.readStarting()
	cp0 := b.cpLogSize()
	agent0 := b.agentLogSizes()
	_, opened := sessions(b.t, b.cp)
	ph := b.begin("leader change")
	follower := b.startAgent("a-2")
	old := b.leader
	if h := leaseHolder(b.t, b.cs, scaleLease); h != strings.TrimPrefix(old.name, "agent-") {
		b.t.Fatalf("the Lease %s is held by %q, not by the running agent %s", scaleLease, h, old.name)
	}
	killed := time.Now()
	old.kill()
	// (These GETs of the Lease are the benchmark's own.)
	b.poll("the follower takes the Lease", 500*time.Millisecond, func() (bool, string) {
		h := leaseHolder(b.t, b.cs, scaleLease)
		return h == "a-2", h
	})
	b.leader = follower
	ph.mark("Lease taken")
	connected := b.waitSession(opened)
	ph.mark("session open")
	settled := b.settle()
	ph.mark("quiet")
	r := b.restartedRollouts(cp0, agent0)
	all := ph.between(0, len(ph.marks)-1)
	ph.header()
	ph.row("the follower's session open, from the kill", fmt.Sprintf("%s (Lease taken after %s)", since2(killed, connected),
		since2(killed, ph.marks[1].at)), "", "")
	ph.row("settled", since2(ph.start, settled), "", "")
	ph.row("APPLY + PATCH on the agent's kinds", fmt.Sprintf("%.0f", all.count(verbIn("APPLY", "PATCH"), agentKind)), "", "")
	ph.row("LIST", fmt.Sprintf("%.0f", all.count(verbIn("LIST"), anyKind)), "", "")
	b.restartRows(ph, r)
	ph.finish()
	b.result("leader change: session %s after the kill, %d rollouts restarted", since2(killed, connected), r.restarted())
}

// idleAfter is how long the newest pods have run when the idle window
// begins: the backoff of a log that cannot be read has grown then as it
// does in a cluster left alone (it doubles from 1 s to 2 min).
const idleAfter = 3 * time.Minute

// idle measures a window in which nothing changes: what the agent asks of
// the apiserver while it only follows what the cluster reports.
func (b *scaleBench) idle() {
	const window = 30 * time.Second
	newest := b.watch.newestReady()
	if wait := idleAfter - time.Since(newest); wait > 0 {
		// Waiting for the backoffs to grow, not for a result.
		time.Sleep(wait)
	}
	m0 := b.leaderMetrics()
	ph := b.begin("unchanged 30 s window")
	time.Sleep(window) // the window: what happens in it is the measurement
	ph.mark("window over")
	m1 := b.leaderMetrics()
	reqs := ph.between(0, 1)
	logs := reqs.count(func(string) bool { return true }, func(k reqKey) bool { return k.resource == "pods" && k.subresource == "log" })
	writes := reqs.agentWrites()
	pods := b.pods()
	ph.header()
	ph.row("the window began, after the newest pod got Ready", since2(newest, ph.start), "", "")
	ph.row(fmt.Sprintf("pods/log requests (%d pods)", pods), fmt.Sprintf("%.0f (%.2f per pod)", logs, logs/float64(pods)),
		"≤ 1 per pod", verdict(logs <= float64(pods)))
	ph.row("agent writes (APPLY, PATCH, POST, DELETE on its kinds)", fmt.Sprintf("%.0f", writes), "0", verdict(writes == 0))
	ph.row("LIST", fmt.Sprintf("%.0f", reqs.count(verbIn("LIST"), anyKind)), "", "")
	ph.row("containers followed / log streams open (agent's metrics, at the end)", fmt.Sprintf("%.0f / %.0f",
		sum(m1, "nebula_agent_log_containers"), sum(m1, "nebula_agent_log_streams_open")), "", "")
	ph.row("streams asked for again in the window / log bytes read (agent's metrics)", fmt.Sprintf("%.0f / %.0f",
		sum(m1, "nebula_agent_log_stream_retries_total")-sum(m0, "nebula_agent_log_stream_retries_total"),
		sum(m1, "nebula_agent_log_bytes_total")-sum(m0, "nebula_agent_log_bytes_total")), "", "")
	ph.finish()
	b.result("unchanged window: %.0f pods/log requests for %d pods, %.0f writes", logs, pods, writes)
}

// deleteService deletes one service (in every environment) and measures
// until the agent acknowledged the state without it and none of its
// objects and pods is left.
func (b *scaleBench) deleteService() {
	svc := b.svcList[1]
	objs := b.countServiceObjects(svc.name)
	total := 0
	for _, n := range objs {
		total += n
	}
	ph := b.begin("one service deleted")
	b.cp.gql(b.t, `mutation ($input: DeleteServiceInput!) { deleteService(input: $input) { deletedServiceId userErrors { message } } }`,
		map[string]any{"input": map[string]any{"serviceId": svc.id}})
	rev := b.revisions().desired
	ack := b.waitApplied(rev)
	ph.mark("acknowledged")
	left := b.countServiceObjects(svc.name)
	atAck := 0
	for _, n := range left {
		atAck += n
	}
	gone, remaining := b.waitGone(svc.name)
	ph.mark("pods gone")
	settled := b.settle()
	ph.mark("quiet")
	deletes := ph.between(0, 1).count(verbIn("DELETE"), agentKind)
	ph.header()
	ph.row(fmt.Sprintf("acknowledged (appliedRevision ≥ %d), from the mutation", rev), since2(ph.start, ack),
		"≤ 10 s", verdict(ack.Sub(ph.start) <= 10*time.Second))
	ph.row(fmt.Sprintf("its objects left when acknowledged (of %d: %s)", total, objText(objs)), fmt.Sprintf("%d (%s)", atAck, objText(left)),
		"0", verdict(atAck == 0))
	ph.row("its pods and objects all gone", fmt.Sprintf("%s (%d left)", since2(ph.start, gone), remaining), "0 left", verdict(remaining == 0))
	ph.row("DELETE on the agent's kinds until acknowledged", fmt.Sprintf("%.0f", deletes), fmt.Sprintf("%d", total), verdict(int(deletes) == total))
	ph.row("settled", since2(ph.start, settled), "", "")
	ph.finish()
	b.result("one service deleted: acknowledged %s with %d of its objects left, all gone %s (%d left)",
		since2(ph.start, ack), atAck, since2(ph.start, gone), remaining)
}

// waitGone waits until none of a service's objects and pods is left (for
// at most ten minutes: what is left then is the result).
func (b *scaleBench) waitGone(service string) (time.Time, int) {
	deadline := time.Now().Add(10 * time.Minute)
	opts := metav1.ListOptions{LabelSelector: scaleManaged + "," + labelService + "=" + service}
	for {
		n := 0
		for _, c := range b.countServiceObjects(service) {
			n += c
		}
		pods, err := b.cs.CoreV1().Pods("").List(b.ctx, opts)
		if err != nil {
			b.t.Fatal(err)
		}
		n += len(pods.Items)
		if n == 0 || time.Now().After(deadline) {
			return time.Now(), n
		}
		time.Sleep(250 * time.Millisecond) // polling the cluster
	}
}

func (b *scaleBench) summary() {
	b.printf("### Summary (%dx%d)\n", b.envs, b.svcs)
	for _, r := range b.results {
		b.printf("- %s", r)
	}
	b.printf("")
}

// ---------------------------------------------------------------- waiting

// poll checks cond every interval until it holds, for at most
// scalePhaseTimeout; it returns when it first held.
func (b *scaleBench) poll(what string, every time.Duration, cond func() (bool, string)) time.Time {
	b.t.Helper()
	deadline := time.Now().Add(scalePhaseTimeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		ok, detail := cond()
		if ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %s waiting until %s; last: %s", scalePhaseTimeout, what, tail(detail, 20))
		}
		<-tick.C
	}
}

type revisions struct{ desired, applied int64 }

func (b *scaleBench) revisions() revisions {
	c := dig(b.cp.gql(b.t, `query ($id: ID!) { node(id: $id) { ... on Cluster { desiredRevision appliedRevision } } }`,
		map[string]any{"id": b.cluster}), "node")
	return revisions{num(c, "desiredRevision"), num(c, "appliedRevision")}
}

// waitApplied waits until the agent acknowledged revision rev (or a later
// one).
func (b *scaleBench) waitApplied(rev int64) time.Time {
	return b.poll(fmt.Sprintf("the agent acknowledged revision %d", rev), 100*time.Millisecond, func() (bool, string) {
		r := b.revisions()
		return r.applied >= rev, fmt.Sprintf("desired %d, applied %d", r.desired, r.applied)
	})
}

// waitSession waits until the control plane opened one more agent session
// than opened.
func (b *scaleBench) waitSession(opened float64) time.Time {
	return b.poll("the agent's session opens", 100*time.Millisecond, func() (bool, string) {
		live, n := sessions(b.t, b.cp)
		return live == 1 && n > opened, fmt.Sprintf("live %v, opened %v (before: %v)", live, n, opened)
	})
}

// waitRolledOut waits until the Deployment of each rollout is rolled out
// with all its pods Ready, and returns when the last of their pods became
// Ready.
func (b *scaleBench) waitRolledOut(ds []*scaleDeployment) time.Time {
	want := map[rolloutKey]bool{}
	for _, d := range ds {
		want[d.key()] = true
	}
	b.poll(fmt.Sprintf("%d Deployments are rolled out with every pod Ready", len(ds)), 250*time.Millisecond, func() (bool, string) {
		n, missing := b.watch.rolledOut(want)
		return n == len(want), fmt.Sprintf("%d of %d rolled out; e.g. %s", n, len(want), missing)
	})
	var last time.Time
	for k := range want {
		if at, _ := b.watch.lastReady(k); at.After(last) {
			last = at
		}
	}
	return last
}

// waitSucceeded waits until every deployment is SUCCEEDED in the API and
// returns the time of the last SUCCEEDED event.
func (b *scaleBench) waitSucceeded(ds []*scaleDeployment) time.Time {
	ids := map[string]bool{}
	for _, d := range ds {
		ids[d.id] = true
	}
	b.poll(fmt.Sprintf("%d deployments are SUCCEEDED", len(ds)), 2*time.Second, func() (bool, string) {
		stages := map[string]int{}
		done := 0
		for _, d := range b.deploymentStages() {
			if ids[d.id] {
				stages[d.stage]++
				if d.stage == "SUCCEEDED" {
					done++
				}
			}
		}
		if stages["FAILED"]+stages["ROLLED_BACK"] > 0 {
			b.t.Fatalf("rollouts ended without success: %v", stages)
		}
		return done == len(ids), fmt.Sprint(stages)
	})
	var last time.Time
	for _, d := range b.events(ds) {
		for _, e := range d.events {
			if e.stage == "SUCCEEDED" && e.at.After(last) {
				last = e.at
			}
		}
	}
	return last
}

// settle waits until the apiserver is quiet: quietFor without a busy
// second. A second is busy with any write to anything but Leases, Events
// and Nodes (which the agent's and kwok's heartbeats renew) or with more
// than one LIST of anything but Nodes (a heartbeat of the agent lists the
// Nodes and its Deployments every 15 s). It returns the start of the
// quiet: when the phase's work ended, to the second.
func (b *scaleBench) settle() time.Time {
	b.t.Helper()
	deadline := time.Now().Add(scalePhaseTimeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prev := b.requests()
	quiet := time.Now()
	for {
		<-tick.C
		now := time.Now()
		cur := b.requests()
		d := cur.minus(prev)
		prev = cur
		writes := d.count(verbIn("APPLY", "PATCH", "POST", "PUT", "DELETE", "DELETECOLLECTION"), func(k reqKey) bool {
			switch k.resource {
			case "leases", "events", "nodes", "tokenreviews", "subjectaccessreviews", "selfsubjectreviews", "":
				return false
			}
			return true
		})
		if writes > 0 || d.count(verbIn("LIST"), func(k reqKey) bool { return k.resource != "nodes" }) > 1 {
			quiet = now
		} else if now.Sub(quiet) >= quietFor {
			return quiet
		}
		if now.After(deadline) {
			b.t.Fatalf("the apiserver did not go quiet within %s; the last second: %s", scalePhaseTimeout, d.top(8))
		}
	}
}

// ---------------------------------------------------------------- the API's view

type stageRow struct{ id, stage string }

// deploymentStages reads every deployment's stage, environment by
// environment.
func (b *scaleBench) deploymentStages() []stageRow {
	var out []stageRow
	for _, e := range b.envList {
		b.pages(e.id, `deployments(first: 100, after: $after) { pageInfo { hasNextPage endCursor } nodes { id stage } }`,
			func(n any) { out = append(out, stageRow{str(n, "id"), str(n, "stage")}) })
	}
	return out
}

type apiEvent struct {
	stage   string
	blocked bool
	at      time.Time
}

type deploymentEvents struct {
	d      *scaleDeployment
	events []apiEvent
}

// events reads the events of the given deployments.
func (b *scaleBench) events(ds []*scaleDeployment) []deploymentEvents {
	want := map[string]*scaleDeployment{}
	envs := map[*scaleEnv]bool{}
	for _, d := range ds {
		want[d.id] = d
		envs[d.env] = true
	}
	var out []deploymentEvents
	for _, e := range b.envList {
		if !envs[e] {
			continue
		}
		b.pages(e.id, `deployments(first: 20, after: $after) { pageInfo { hasNextPage endCursor }
  nodes { id events(first: 1000) { nodes { stage blocker at } } } }`, func(n any) {
			d := want[str(n, "id")]
			if d == nil {
				return
			}
			de := deploymentEvents{d: d}
			evs, _ := dig(n, "events", "nodes").([]any)
			for _, ev := range evs {
				at, err := time.Parse(time.RFC3339Nano, str(ev, "at"))
				if err != nil {
					b.t.Fatalf("event time %q: %v", str(ev, "at"), err)
				}
				de.events = append(de.events, apiEvent{stage: str(ev, "stage"), blocked: dig(ev, "blocker") != nil, at: at})
			}
			out = append(out, de)
		})
	}
	if len(out) != len(ds) {
		b.t.Fatalf("read the events of %d deployments, want %d", len(out), len(ds))
	}
	return out
}

// pages runs a connection of an environment page by page.
func (b *scaleBench) pages(env, selection string, each func(node any)) {
	var after any
	for {
		data := b.cp.gql(b.t, `query ($id: ID!, $after: String) { node(id: $id) { ... on Environment { `+selection+` } } }`,
			map[string]any{"id": env, "after": after})
		conn := dig(data, "node", "deployments")
		nodes, _ := dig(conn, "nodes").([]any)
		for _, n := range nodes {
			each(n)
		}
		if dig(conn, "pageInfo", "hasNextPage") != true {
			return
		}
		after = str(conn, "pageInfo", "endCursor")
	}
}

// startings counts the STARTING events an agent reported (an event with a
// blocker is the control plane's own note).
func startings(evs []apiEvent) int {
	n := 0
	for _, e := range evs {
		if e.stage == "STARTING" && !e.blocked {
			n++
		}
	}
	return n
}

// succeededDelays gives, per rollout, the time from its last pod becoming
// Ready to its SUCCEEDED event, and how many rollouts the API shows
// started more than once.
func (b *scaleBench) succeededDelays(ds []*scaleDeployment) (delays []time.Duration, restarted int) {
	for _, de := range b.events(ds) {
		if startings(de.events) > 1 {
			restarted++
		}
		b.starting[de.d.id] = startings(de.events)
		ready, n := b.watch.lastReady(de.d.key())
		if n == 0 {
			b.t.Fatalf("no Ready pod of %v was seen", de.d.key())
		}
		for _, e := range de.events {
			if e.stage == "SUCCEEDED" {
				delays = append(delays, e.at.Sub(ready))
			}
		}
	}
	return delays, restarted
}

// readStarting reads every deployment's STARTING count, the base a phase's
// restarts are counted from.
func (b *scaleBench) readStarting() {
	var all []*scaleDeployment
	for _, r := range b.releases {
		all = append(all, r...)
	}
	for _, de := range b.events(all) {
		b.starting[de.d.id] = startings(de.events)
	}
}

// restarts is what a phase did to rollouts that had finished.
type restarts struct {
	api      map[string]bool // deployments with a new STARTING event
	refused  map[string]bool // STARTING reports the control plane refused (logged)
	agentLog map[string]bool // STARTING in the agents' logs
	reports  int             // refused STARTING reports, with repeats
}

// restarted counts the deployments the control plane heard a STARTING of:
// every deployment was SUCCEEDED when the phase began, so each is a
// restarted rollout.
func (r restarts) restarted() int {
	n := len(r.refused)
	for id := range r.api {
		if !r.refused[id] {
			n++
		}
	}
	return n
}

func (b *scaleBench) restartedRollouts(cpFrom int64, agentFrom map[*proc]int64) restarts {
	r := restarts{api: map[string]bool{}, refused: map[string]bool{}, agentLog: map[string]bool{}}
	before := maps.Clone(b.starting)
	b.readStarting()
	for id, n := range b.starting {
		if n > before[id] {
			r.api[rawID(b.t, id)] = true
		}
	}
	refused := regexp.MustCompile(`msg="refused an agent's stage report".* deployment_id=(\S+) .*\bto=STARTING\b`)
	for _, line := range logLines(b.t, b.cp.log, cpFrom) {
		if m := refused.FindStringSubmatch(line); m != nil {
			r.refused[m[1]] = true
			r.reports++
		}
	}
	started := regexp.MustCompile(`msg=rollout deployment=(\S+) .*\bstage=STARTING\b`)
	for _, p := range b.agents {
		for _, line := range logLines(b.t, p.log, agentFrom[p]) {
			if m := started.FindStringSubmatch(line); m != nil {
				r.agentLog[m[1]] = true
			}
		}
	}
	return r
}

func (b *scaleBench) restartRows(ph *phase, r restarts) {
	total := len(b.releases[len(b.releases)-1]) // the rollouts the state names
	ph.row("restarted rollouts (deployments whose STARTING the control plane heard after SUCCEEDED)",
		fmt.Sprintf("%d of %d", r.restarted(), total), "0", verdict(r.restarted() == 0))
	ph.row("… refused STARTING reports in the control plane's log (deployments, reports) / new STARTING events in the API / deployments with a STARTING in the agents' logs",
		fmt.Sprintf("%d, %d / %d / %d", len(r.refused), r.reports, len(r.api), len(r.agentLog)), "", "")
}

func (b *scaleBench) cpLogSize() int64 { return fileSize(b.t, b.cp.log) }

func (b *scaleBench) agentLogSizes() map[*proc]int64 {
	out := map[*proc]int64{}
	for _, p := range b.agents {
		out[p] = fileSize(b.t, p.log)
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// logLines reads a log from an offset.
func logLines(t *testing.T, path string, from int64) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return out
}

// countServiceObjects counts, by label, what the agent made for a service
// in all environments (Namespaces are the environments').
func (b *scaleBench) countServiceObjects(service string) map[string]int {
	opts := metav1.ListOptions{LabelSelector: scaleManaged + "," + labelService + "=" + service}
	out := map[string]int{}
	if l, err := b.cs.CoreV1().Secrets("").List(b.ctx, opts); err == nil {
		out["Secret"] = len(l.Items)
	} else {
		b.t.Fatal(err)
	}
	if l, err := b.cs.AppsV1().Deployments("").List(b.ctx, opts); err == nil {
		out["Deployment"] = len(l.Items)
	} else {
		b.t.Fatal(err)
	}
	if l, err := b.cs.CoreV1().Services("").List(b.ctx, opts); err == nil {
		out["Service"] = len(l.Items)
	} else {
		b.t.Fatal(err)
	}
	if l, err := b.cs.NetworkingV1().Ingresses("").List(b.ctx, opts); err == nil {
		out["Ingress"] = len(l.Items)
	} else {
		b.t.Fatal(err)
	}
	return out
}

func objText(m map[string]int) string {
	var parts []string
	for _, k := range []string{"Secret", "Deployment", "Service", "Ingress"} {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// ---------------------------------------------------------------- the cluster's view

type rolloutKey struct{ namespace, service, release string }

// clusterWatch follows the managed Pods and Deployments with informers:
// when each pod was first seen Ready, and whether Deployments are rolled
// out. Its requests are WATCHes after the first LIST, made before any
// phase begins.
type clusterWatch struct {
	mu    sync.Mutex
	ready map[types.UID]podReady
	deps  cache.Store
}

type podReady struct {
	key rolloutKey
	at  time.Time
}

func watchCluster(t *testing.T, cs *kubernetes.Clientset) *clusterWatch {
	t.Helper()
	w := &clusterWatch{ready: map[types.UID]podReady{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = scaleManaged }))
	pods := f.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !podIsReady(p) {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.ready[p.UID]; !ok {
			w.ready[p.UID] = podReady{rolloutKey{p.Namespace, p.Labels[labelService], p.Labels[labelRelease]}, now}
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	w.deps = f.Apps().V1().Deployments().Informer().GetStore()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	for typ, ok := range f.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("the informer of %v did not sync", typ)
		}
	}
	return w
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lastReady is when the last pod of a rollout was first seen Ready, and
// how many of its pods were.
func (w *clusterWatch) lastReady(k rolloutKey) (time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	n := 0
	for _, r := range w.ready {
		if r.key == k {
			n++
			if r.at.After(last) {
				last = r.at
			}
		}
	}
	return last, n
}

// newestReady is when the last pod was first seen Ready.
func (w *clusterWatch) newestReady() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, r := range w.ready {
		if r.at.After(last) {
			last = r.at
		}
	}
	return last
}

// rolledOut counts the rollouts whose Deployment has the new spec rolled
// out and every pod Ready, and names one that has not.
func (w *clusterWatch) rolledOut(want map[rolloutKey]bool) (int, string) {
	n := 0
	var missing []string
	found := map[rolloutKey]bool{}
	for _, obj := range w.deps.List() {
		d := obj.(*appsv1.Deployment)
		k := rolloutKey{d.Namespace, d.Labels[labelService], d.Labels[labelRelease]}
		if !want[k] {
			continue
		}
		found[k] = true
		r := ptrOr(d.Spec.Replicas, 1)
		if d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == r && d.Status.ReadyReplicas == r && d.Status.Replicas == r {
			n++
		} else if len(missing) == 0 {
			missing = append(missing, fmt.Sprintf("%s/%s %d/%d ready, %d updated", d.Namespace, d.Name, d.Status.ReadyReplicas, r, d.Status.UpdatedReplicas))
		}
	}
	if len(missing) == 0 {
		for k := range want {
			if !found[k] {
				missing = append(missing, fmt.Sprintf("%v not created", k))
				break
			}
		}
	}
	return n, strings.Join(missing, "")
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// ---------------------------------------------------------------- counters

// reqKey is one series of apiserver_request_total, summed over codes,
// scopes and versions.
type reqKey struct{ verb, resource, subresource string }

func (k reqKey) String() string {
	r := k.resource
	if k.subresource != "" {
		r += "/" + k.subresource
	}
	return k.verb + " " + r
}

type reqCounts map[reqKey]float64

// requests reads the apiserver's request counters.
func (b *scaleBench) requests() reqCounts {
	out := reqCounts{}
	for _, s := range apiserverMetrics(b.t, b.cs) {
		if s.name == "apiserver_request_total" {
			out[reqKey{s.labels["verb"], s.labels["resource"], s.labels["subresource"]}] += s.value
		}
	}
	if len(out) == 0 {
		b.t.Fatal("the apiserver's /metrics has no apiserver_request_total")
	}
	return out
}

func (c reqCounts) minus(o reqCounts) reqCounts {
	out := reqCounts{}
	for k, v := range c {
		if d := v - o[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func verbIn(verbs ...string) func(string) bool {
	return func(v string) bool { return slices.Contains(verbs, v) }
}

// agentKind: the kinds the agent writes. The apiserver counts a create as
// POST and an update as PUT. The deployment controller PUTs Deployments
// too (its revision annotation) and never APPLYs, PATCHes, POSTs or DELETEs
// them; the garbage collector deletes ReplicaSets and Pods, not these.
func agentKind(k reqKey) bool {
	switch k.resource {
	case "namespaces", "secrets", "deployments", "services", "ingresses", "configmaps":
		return k.subresource == ""
	}
	return false
}

func anyKind(reqKey) bool { return true }

func (c reqCounts) count(verb func(string) bool, kind func(reqKey) bool) float64 {
	n := 0.0
	for k, v := range c {
		if verb(k.verb) && kind(k) {
			n += v
		}
	}
	return n
}

// agentWrites: what only the agent writes (see agentKind).
func (c reqCounts) agentWrites() float64 {
	return c.count(verbIn("APPLY", "PATCH", "POST", "DELETE"), agentKind)
}

func (c reqCounts) sorted() []reqKey {
	keys := make([]reqKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y reqKey) int {
		return cmp.Or(cmp.Compare(x.verb, y.verb), cmp.Compare(c[y], c[x]), cmp.Compare(x.String(), y.String()))
	})
	return keys
}

func (c reqCounts) top(n int) string {
	keys := c.sorted()
	slices.SortFunc(keys, func(x, y reqKey) int { return cmp.Compare(c[y], c[x]) })
	var parts []string
	for i, k := range keys {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// ---------------------------------------------------------------- processes

// cpuSample is a process's CPU time and memory.
type cpuSample struct {
	cpu       time.Duration
	rss, peak int64 // kB: VmRSS, VmHWM
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux this runs on (the kernel's ABI, whatever CONFIG_HZ).
const userHZ = 100

// procSample reads /proc/<pid>/stat and /proc/<pid>/status; ok is false
// when the process is gone.
func procSample(pid int) (s cpuSample, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, false
	}
	// The command name in parentheses may hold spaces: fields count from
	// after its closing parenthesis (state is field 3, utime 14, stime 15).
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) < 13 {
		return s, false
	}
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	s.cpu = time.Duration(ut+st) * time.Second / userHZ
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				s.rss = v
			} else {
				s.peak = v
			}
		}
	}
	return s, true
}

// agentSample sums the CPU of every agent process, the exited ones by
// their rusage, and gives the leader's memory.
func (b *scaleBench) agentSample() cpuSample {
	var sum cpuSample
	for _, p := range b.agents {
		select {
		case <-p.done:
			if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				sum.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			}
			continue
		default:
		}
		s, ok := procSample(p.cmd.Process.Pid)
		if !ok {
			continue
		}
		sum.cpu += s.cpu
		if p == b.leader {
			sum.rss, sum.peak = s.rss, s.peak
		}
	}
	return sum
}

// clusterSamples reads the simulated cluster's components and the control
// plane.
func (b *scaleBench) clusterSamples() map[string]cpuSample {
	out := map[string]cpuSample{}
	if s, ok := procSample(b.cp.cmd.Process.Pid); ok {
		out["control plane"] = s
	}
	raw, err := os.ReadFile(filepath.Join(sim.dir, "pids"))
	if err != nil {
		return out // only the agent's own numbers then
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		if s, ok := procSample(pid); ok {
			out[f[0]] = s
		}
	}
	return out
}

// ---------------------------------------------------------------- phases' reports

type snapshot struct {
	at      time.Time
	name    string
	req     reqCounts
	agent   cpuSample
	cluster map[string]cpuSample
	// leader and its metrics (nil when they could not be read).
	leader  *proc
	metrics []sample
}

// phase is one measured stretch: snapshots of the counters at its start
// and at each mark.
type phase struct {
	b     *scaleBench
	name  string
	start time.Time
	marks []snapshot // marks[0] is the start
	rows  []string
}

func (b *scaleBench) snapshot(name string) snapshot {
	s := snapshot{at: time.Now(), name: name, req: b.requests(), agent: b.agentSample(), cluster: b.clusterSamples(), leader: b.leader}
	if b.leader != nil {
		s.metrics, _ = scrapeIf("http://" + b.metrics[b.leader] + "/metrics")
	}
	return s
}

func (b *scaleBench) begin(name string) *phase {
	s := b.snapshot("start")
	return &phase{b: b, name: name, start: s.at, marks: []snapshot{s}}
}

func (ph *phase) mark(name string) { ph.marks = append(ph.marks, ph.b.snapshot(name)) }

// between is the requests from one mark to another.
func (ph *phase) between(i, j int) reqCounts { return ph.marks[j].req.minus(ph.marks[i].req) }

func (ph *phase) header() {
	ph.rows = append(ph.rows, fmt.Sprintf("### %s (%dx%d)", ph.name, ph.b.envs, ph.b.svcs), "",
		"| measure | value | target | |", "|---|--:|---|---|")
}

// row adds a measure with its value and, when there is one, the target
// and whether the value meets it.
func (ph *phase) row(label, value, target, verdict string) {
	ph.rows = append(ph.rows, fmt.Sprintf("| %s | %s | %s | %s |", label, value, target, verdict))
}

// finish adds the requests, the CPU and the memory from the start to each
// mark, and prints the phase.
func (ph *phase) finish() {
	first, last := ph.marks[0], ph.marks[len(ph.marks)-1]
	ph.rows = append(ph.rows, "", "CPU during the phase (s, to each mark) and the agent's memory:", "")
	head := "| process |"
	sep := "|---|"
	for _, m := range ph.marks[1:] {
		head += fmt.Sprintf(" to %s (%s) |", m.name, since2(first.at, m.at))
		sep += "--:|"
	}
	ph.rows = append(ph.rows, head, sep)
	cpuRow := func(name string, get func(snapshot) (cpuSample, bool)) {
		s0, ok := get(first)
		if !ok {
			return
		}
		row := "| " + name + " |"
		for _, m := range ph.marks[1:] {
			s, ok := get(m)
			if !ok {
				row += " |"
				continue
			}
			row += fmt.Sprintf(" %.1f |", (s.cpu - s0.cpu).Seconds())
		}
		ph.rows = append(ph.rows, row)
	}
	cpuRow("agent", func(s snapshot) (cpuSample, bool) { return s.agent, true })
	for _, c := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "control plane"} {
		cpuRow(c, func(s snapshot) (cpuSample, bool) { v, ok := s.cluster[c]; return v, ok })
	}
	ph.rows = append(ph.rows, "", fmt.Sprintf("Agent (leader) memory at the end: RSS %.0f MB, peak %.0f MB. Load average at the end: %s.",
		float64(last.agent.rss)/1024, float64(last.agent.peak)/1024, loadavg()))
	if first.leader == last.leader && first.metrics != nil && last.metrics != nil {
		// The agent's requests as its two clients' rate limits saw them:
		// how many, and how many waited over 10 ms for their budget.
		line := "Requests of the agent's clients (its metrics), and those that waited over 10 ms for their budget:"
		for _, client := range []string{"write", "read", "logs"} {
			count := func(m []sample, le string) float64 {
				if le == "" {
					return sum(m, "nebula_agent_kube_throttle_seconds_count", "client", client)
				}
				return sum(m, "nebula_agent_kube_throttle_seconds_bucket", "client", client, "le", le)
			}
			n := count(last.metrics, "") - count(first.metrics, "")
			slow := n - (count(last.metrics, "0.01") - count(first.metrics, "0.01"))
			waited := sum(last.metrics, "nebula_agent_kube_throttle_seconds_sum", "client", client) -
				sum(first.metrics, "nebula_agent_kube_throttle_seconds_sum", "client", client)
			line += fmt.Sprintf(" %s %.0f, %.0f waited (%.1f s in all);", client, n, slow, waited)
		}
		ph.rows = append(ph.rows, "", strings.TrimSuffix(line, ";")+".")
	}

	ph.rows = append(ph.rows, "", "apiserver requests (apiserver_request_total, after − before; all clients):", "")
	head = "| verb | resource |"
	sep = "|---|---|"
	for _, m := range ph.marks[1:] {
		head += " to " + m.name + " |"
		sep += "--:|"
	}
	ph.rows = append(ph.rows, head, sep)
	total := last.req.minus(first.req)
	for _, k := range total.sorted() {
		if k.verb == "WATCH" || k.resource == "" {
			continue // long-lived or not an object: counted when they end
		}
		r := k.resource
		if k.subresource != "" {
			r += "/" + k.subresource
		}
		row := fmt.Sprintf("| %s | %s |", k.verb, r)
		for _, m := range ph.marks[1:] {
			row += fmt.Sprintf(" %.0f |", m.req.minus(first.req)[k])
		}
		ph.rows = append(ph.rows, row)
	}
	ph.rows = append(ph.rows, "")
	for _, r := range ph.rows {
		ph.b.printf("%s", r)
	}
}

func verdict(met bool) string {
	if met {
		return "meets"
	}
	return "misses"
}

func (b *scaleBench) delayRows(ph *phase, delays []time.Duration) {
	if len(delays) == 0 {
		ph.row("SUCCEEDED after the rollout's last pod Ready", "none", "≤ 5 s", "misses")
		return
	}
	p := percentiles(delays)
	ph.row("SUCCEEDED after the rollout's last pod Ready: median", p[0].Round(10*time.Millisecond).String(), "", "")
	ph.row("… p99", p[1].Round(10*time.Millisecond).String(), "≤ 5 s", verdict(p[1] <= 5*time.Second))
	ph.row(fmt.Sprintf("… max (%d rollouts)", len(delays)), p[2].Round(10*time.Millisecond).String(), "", "")
}

func delayText(delays []time.Duration) string {
	if len(delays) == 0 {
		return "none"
	}
	p := percentiles(delays)
	return fmt.Sprintf("median %s, p99 %s, max %s", p[0].Round(100*time.Millisecond), p[1].Round(100*time.Millisecond), p[2].Round(100*time.Millisecond))
}

// percentiles gives the median, the 99th percentile (nearest rank) and
// the maximum.
func percentiles(ds []time.Duration) [3]time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return [3]time.Duration{rank(0.5), rank(0.99), s[len(s)-1]}
}

// loadavg is the machine's 1, 5 and 15 minute load averages: other
// sessions share its cores.
func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

func since2(from, to time.Time) string { return to.Sub(from).Round(100 * time.Millisecond).String() }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
