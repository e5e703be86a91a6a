package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/testutil"
)

const (
	digest1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digest2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	digest3 = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// fixture is one tenant's cluster with a project that lands on it.
type fixture struct {
	cp                         *controlPlane
	tenant, cluster, token     string
	project, env, service      string
	namespace, clusterName     string
	tokenFile, agentKubeconfig string
}

// setup registers a cluster, installs its agent's manifests into the
// simulated cluster (as the console's command would), and creates a
// project whose environment lands on it with a service "api".
func setup(t *testing.T, cp *controlPlane, name string) *fixture {
	t.Helper()
	f := &fixture{cp: cp, clusterName: name}
	data := cp.gql(t, `{ viewer { tenants { nodes { id } } } }`, nil)
	tenantID := dig(data, "viewer", "tenants", "nodes").([]any)[0].(map[string]any)["id"].(string)
	f.tenant = tenantID

	reg := cp.gql(t, `mutation ($input: RegisterClusterInput!) {
  registerCluster(input: $input) { cluster { id status } connectToken userErrors { message } } }`,
		map[string]any{"input": map[string]any{"tenantId": tenantID, "name": name,
			"labels": []any{map[string]any{"key": "site", "value": name}}}})
	f.cluster = str(reg, "registerCluster", "cluster", "id")
	f.token = str(reg, "registerCluster", "connectToken")
	if f.cluster == "" || !strings.HasPrefix(f.token, "nbc_") {
		t.Fatalf("registerCluster: %v", reg)
	}
	if s := str(reg, "registerCluster", "cluster", "status"); s != "PENDING" {
		t.Errorf("a new cluster is %s, want PENDING", s)
	}

	// The install bundle: version-pinned, and never carrying the token.
	inst := cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster { install { version image manifests command } } } }`,
		map[string]any{"id": f.cluster})
	manifests := str(inst, "node", "install", "manifests")
	command := str(inst, "node", "install", "command")
	if strings.Contains(manifests, f.token) || strings.Contains(command, f.token) || strings.Contains(manifests, "nbc_") {
		t.Fatal("the install bundle contains the connect token")
	}
	if !strings.Contains(manifests, "image: "+str(inst, "node", "install", "image")) || !strings.Contains(command, "$NEBULA_CONNECT_TOKEN") {
		t.Fatalf("install bundle: image %q not pinned in the manifests, or command %q", str(inst, "node", "install", "image"), command)
	}
	applyManifests(t, manifests)
	// What the command's second half does: the Secret the pods mount.
	cs := admin(t)
	_, err := cs.CoreV1().Secrets("nebula-system").Apply(context.Background(),
		secretApply("nebula-agent-token", "nebula-system", f.token), metav1.ApplyOptions{FieldManager: "e2e", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	// The agent runs here as a local process (no kubelet), with the
	// service account's own token: exactly the RBAC of the manifests.
	f.agentKubeconfig = serviceAccountKubeconfig(t, cs)
	f.tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f.tokenFile, []byte(f.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	proj := cp.gql(t, `mutation ($input: CreateProjectInput!) { createProject(input: $input) { project { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"tenantId": tenantID, "name": "shop-" + name}})
	f.project = str(proj, "createProject", "project", "id")
	env := cp.gql(t, `mutation ($input: CreateEnvironmentInput!) { createEnvironment(input: $input) { environment { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"projectId": f.project, "name": "prod",
			"clusterSelector": []any{map[string]any{"key": "site", "value": name}}}})
	f.env = str(env, "createEnvironment", "environment", "id")
	f.namespace = "shop-" + name + "-prod"
	svc := cp.gql(t, `mutation ($input: CreateServiceInput!) { createService(input: $input) { service { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{
			"projectId": f.project, "name": "api", "image": "registry.example.com/shop/api",
			"processes": []any{
				map[string]any{"name": "web", "command": []any{"./api", "serve"}, "replicas": 2, "port": 8080,
					"readinessProbe": map[string]any{"path": "/healthz", "port": 8080}},
				map[string]any{"name": "worker", "command": []any{"./api", "work"}, "replicas": 1},
			},
			"variables": []any{
				map[string]any{"name": "LOG_LEVEL", "value": "info"},
				map[string]any{"name": "API_KEY", "value": "k-123", "secret": true},
			},
			"domains": []any{map[string]any{"host": "api." + name + ".example.com", "process": "web"}},
		}})
	f.service = str(svc, "createService", "service", "id")
	return f
}

func (f *fixture) startAgent(t *testing.T, identity, lease string, flags ...string) *proc {
	t.Helper()
	return start(t, "agent-"+identity, t.TempDir(), []string{"POD_NAME=" + identity}, append([]string{"agent",
		"--server", f.cp.url, "--token-file", f.tokenFile, "--kubeconfig", f.agentKubeconfig,
		"--lease", lease, "--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "500ms",
		"--backoff-max", "2s", "--rollout-timeout", "6s", "--log-level", "debug"}, flags...)...)
}

func (f *fixture) deploy(t *testing.T, digest string) string {
	t.Helper()
	res := f.cp.gql(t, `mutation ($input: DeployInput!) { deploy(input: $input) { deployment { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"serviceId": f.service, "environmentId": f.env, "imageDigest": digest}})
	return str(res, "deploy", "deployment", "id")
}

// events reads a deployment's stage and its events' stages.
func (f *fixture) events(t *testing.T, id string) (stage string, stages []string, last string) {
	t.Helper()
	d := dig(f.cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Deployment { stage message events { nodes { stage message } } } } }`,
		map[string]any{"id": id}), "node")
	evs, _ := dig(d, "events", "nodes").([]any)
	for _, e := range evs {
		stages = append(stages, str(e, "stage"))
	}
	return str(d, "stage"), stages, str(d, "message")
}

func (f *fixture) waitStage(t *testing.T, id, want string, timeout time.Duration) []string {
	t.Helper()
	var stages []string
	testutil.Eventually(t, timeout, "the deployment is "+want, func() (bool, string) {
		stage, s, msg := f.events(t, id)
		stages = s
		return stage == want, fmt.Sprintf("%s (%s) after %v", stage, msg, s)
	})
	return stages
}

// clusterState reads what GraphQL shows of the cluster.
func (f *fixture) clusterState(t *testing.T) map[string]any {
	t.Helper()
	return dig(f.cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster {
  status lastHeartbeatAt lastHeartbeatAge desiredRevision appliedRevision applyErrors { revision errors { object message } } activeRevision { number hash confirmed }
  inventory { agentVersion kubernetesVersion capabilities nodes(first: 100) { nodes { name ready } } workloads(first: 100) { nodes { namespace name replicas readyReplicas } } } } } }`,
		map[string]any{"id": f.cluster}), "node").(map[string]any)
}

func (f *fixture) waitStatus(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, "the cluster is "+want, func() (bool, string) {
		c := f.clusterState(t)
		return str(c, "status") == want, fmt.Sprint(c)
	})
}

// waitApplied waits until the agent acknowledged the desired revision.
func (f *fixture) waitApplied(t *testing.T) int64 {
	t.Helper()
	var rev int64
	testutil.Eventually(t, 30*time.Second, "the agent applied the desired revision", func() (bool, string) {
		c := f.clusterState(t)
		rev = num(c, "desiredRevision")
		return rev > 0 && num(c, "appliedRevision") == rev, fmt.Sprint(c)
	})
	return rev
}

func TestAgentEndToEnd(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-a")
	cs := admin(t)
	ctx := context.Background()

	agentA := f.startAgent(t, "a-1", "nebula-agent")
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	c := f.clusterState(t)
	if v := str(c, "inventory", "kubernetesVersion"); !strings.HasPrefix(v, "v1.37") {
		t.Errorf("inventory Kubernetes version %q", v)
	}
	nodes, _ := dig(c, "inventory", "nodes", "nodes").([]any)
	if len(nodes) != 1 || str(nodes[0], "name") != sim.node || dig(nodes[0], "ready") != true {
		t.Errorf("inventory nodes %v, want %s ready", nodes, sim.node)
	}
	if dig(c, "lastHeartbeatAt") == nil || dig(c, "lastHeartbeatAge") == nil {
		t.Errorf("no heartbeat time or age: %v", c)
	}

	// A change is published, applied, acknowledged; the objects are in
	// the API server with the expected spec and roll out to Ready pods.
	f.deploy(t, digest1)
	rev1 := f.waitApplied(t)
	dep := getDeployment(t, cs, f.namespace, "api-web-r1")
	ctr := dep.Spec.Template.Spec.Containers[0]
	if *dep.Spec.Replicas != 2 || ctr.Image != "registry.example.com/shop/api@"+digest1 ||
		strings.Join(ctr.Command, " ") != "./api serve" || ctr.ReadinessProbe == nil || ctr.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("Deployment api-web-r1: replicas %d, container %+v", *dep.Spec.Replicas, ctr)
	}
	if dep.Labels["app.kubernetes.io/managed-by"] != "nebulactrl" || dep.Labels["nebula.dev/cluster"] == "" {
		t.Errorf("Deployment labels %v", dep.Labels)
	}
	getDeployment(t, cs, f.namespace, "api-worker-r1")
	svc, err := cs.CoreV1().Services(f.namespace).Get(ctx, "api-web", metav1.GetOptions{})
	if err != nil || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Selector["nebula.dev/release"] != "1" {
		t.Errorf("Service api-web: %v %+v", err, svc)
	}
	if _, err := cs.CoreV1().Services(f.namespace).Get(ctx, "api-worker", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a process without a port got a Service: %v", err)
	}
	ing, err := cs.NetworkingV1().Ingresses(f.namespace).Get(ctx, "api", metav1.GetOptions{})
	if err != nil || ing.Spec.Rules[0].Host != "api.sim-a.example.com" || ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "api-web" {
		t.Errorf("Ingress api: %v %+v", err, ing)
	}
	sec, err := cs.CoreV1().Secrets(f.namespace).Get(ctx, "api-env-r1", metav1.GetOptions{})
	if err != nil || string(sec.Data["API_KEY"]) != "k-123" || string(sec.Data["LOG_LEVEL"]) != "info" {
		t.Errorf("Secret api-env-r1: %v (keys %d)", err, len(sec.Data))
	}
	testutil.Eventually(t, 30*time.Second, "api-web-r1 has 2 Ready pods", func() (bool, string) {
		d := getDeployment(t, cs, f.namespace, "api-web-r1")
		return d.Status.ReadyReplicas == 2, fmt.Sprintf("%+v", d.Status)
	})
	testutil.Eventually(t, 10*time.Second, "the inventory lists the managed workloads", func() (bool, string) {
		w, _ := dig(f.clusterState(t), "inventory", "workloads", "nodes").([]any)
		for _, x := range w {
			if str(x, "name") == "api-web-r1" && num(x, "readyReplicas") == 2 {
				return true, ""
			}
		}
		return false, fmt.Sprint(w)
	})

	// A command: restart the web process.
	cmd := cp.gql(t, `mutation ($input: QueueCommandInput!) { queueCommand(input: $input) { command { id status } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"clusterId": f.cluster, "kind": "RESTART_PROCESS",
			"environmentId": f.env, "serviceId": f.service, "process": "web"}})
	cmdID := str(cmd, "queueCommand", "command", "id")
	testutil.Eventually(t, 15*time.Second, "the restart command is applied", func() (bool, string) {
		n := dig(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Command { status result } } }`, map[string]any{"id": cmdID}), "node")
		return str(n, "status") == "APPLIED", fmt.Sprint(n)
	})
	if a := getDeployment(t, cs, f.namespace, "api-web-r1").Spec.Template.Annotations["nebula.dev/restartedAt"]; a == "" {
		t.Error("the restarted Deployment has no restartedAt annotation")
	}

	// The agent dies: the cluster shows DISCONNECTED after the silence, and
	// nothing in the cluster is deleted.
	agentA.kill()
	f.waitStatus(t, "DISCONNECTED", 15*time.Second)
	getDeployment(t, cs, f.namespace, "api-web-r1")

	// Changes made meanwhile wait for it.
	f.deploy(t, digest2)
	c = f.clusterState(t)
	if num(c, "desiredRevision") <= rev1 || num(c, "appliedRevision") != rev1 {
		t.Fatalf("after a deploy to a disconnected cluster: desired %d, applied %d (was %d)", num(c, "desiredRevision"), num(c, "appliedRevision"), rev1)
	}

	// Restarted, it catches up to the latest revision and prunes the old
	// release.
	f.startAgent(t, "a-2", "nebula-agent")
	rev2 := f.waitApplied(t)
	f.waitStatus(t, "CONNECTED", 10*time.Second)
	if rev2 <= rev1 {
		t.Fatalf("revision after catching up %d, before %d", rev2, rev1)
	}
	// The heartbeat confirms what runs: the hash the agent computed of
	// the state it applied is the revision's own, and it is kept across
	// restarts with the applied revision.
	hist := dig(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster {
		revisions(first: 1) { nodes { number hash outcomes { agent result } } } } } }`, map[string]any{"id": f.cluster}),
		"node", "revisions", "nodes").([]any)[0]
	if num(hist, "number") != rev2 || str(hist, "hash") == "" {
		t.Fatalf("the newest revision in the history: %v, want %d", hist, rev2)
	}
	if o, _ := dig(hist, "outcomes").([]any); len(o) == 0 || str(o[0], "agent") != "a-2" || str(o[0], "result") != "APPLIED" {
		t.Errorf("revision %d's outcomes: %v, want APPLIED by a-2", rev2, o)
	}
	testutil.Eventually(t, 15*time.Second, "a heartbeat confirms the active revision", func() (bool, string) {
		a := dig(f.clusterState(t), "activeRevision")
		return num(a, "number") == rev2 && str(a, "hash") == str(hist, "hash") && dig(a, "confirmed") == true, fmt.Sprint(a)
	})
	if cm, err := cs.CoreV1().ConfigMaps("nebula-system").Get(ctx, "nebula-agent-state", metav1.GetOptions{}); err != nil {
		t.Errorf("reading the agent's state ConfigMap: %v", err)
	} else if cm.Data["appliedHash"] != str(hist, "hash") {
		t.Errorf("the agent's state ConfigMap has appliedHash %q, want %s", cm.Data["appliedHash"], str(hist, "hash"))
	}
	if img := getDeployment(t, cs, f.namespace, "api-web-r2").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, digest2) {
		t.Errorf("api-web-r2 runs %s", img)
	}
	testutil.Eventually(t, 10*time.Second, "api-web-r1 is pruned", func() (bool, string) {
		_, err := cs.AppsV1().Deployments(f.namespace).Get(ctx, "api-web-r1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	svc, _ = cs.CoreV1().Services(f.namespace).Get(ctx, "api-web", metav1.GetOptions{})
	if svc.Spec.Selector["nebula.dev/release"] != "2" {
		t.Errorf("Service api-web selects release %s, want 2", svc.Spec.Selector["nebula.dev/release"])
	}

	// Objects the agent does not manage are never touched by pruning.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system: %v", err)
	}
	if strings.Contains(agentA.logText(), f.token) || strings.Contains(cp.logText(), f.token) {
		t.Error("a log line carries the connect token")
	}
}

func TestAgentLeaderTakeover(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-b")
	const lease = "nebula-agent-b"
	cs := admin(t)

	agents := map[string]*proc{
		"b-1": f.startAgent(t, "b-1", lease),
		"b-2": f.startAgent(t, "b-2", lease),
	}
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	leader, transitions := leaseHolder(t, cs, lease), leaseTransitions(t, cs, lease)
	if agents[leader] == nil {
		t.Fatalf("the lease is held by %q, not by one of the agents", leader)
	}
	follower := "b-1"
	if leader == "b-1" {
		follower = "b-2"
	}
	first := f.deploy(t, digest1)
	f.waitApplied(t)
	f.waitStage(t, first, "SUCCEEDED", 30*time.Second)

	// One session at a time: the follower campaigns and defers to the
	// leader, the control plane opened exactly one session, and the other
	// replica never connected. A replica connects only once it holds the
	// lease, and the lease has not changed hands since the leader took it.
	testutil.Eventually(t, 10*time.Second, "the follower defers to "+leader, func() (bool, string) {
		log := agents[follower].logText()
		for line := range strings.Lines(log) {
			if strings.Contains(line, `msg="another replica leads"`) && strings.Contains(line, "leader="+leader) {
				return true, ""
			}
		}
		return false, log
	})
	if live, opened := sessions(t, cp); live != 1 || opened != 1 {
		t.Fatalf("with two replicas: %v live sessions, %v opened; want 1 and 1", live, opened)
	}
	if strings.Contains(agents[follower].logText(), "msg=connected") {
		t.Fatalf("the follower %s held a session", follower)
	}
	if h, n := leaseHolder(t, cs, lease), leaseTransitions(t, cs, lease); h != leader || n != transitions {
		t.Fatalf("the lease is held by %q after %d transitions, want %s after %d: it changed hands", h, n, leader, transitions)
	}

	// The leader dies without releasing the lease; the other takes over
	// once the lease runs out, connects, and applies what comes next.
	killed := time.Now()
	agents[leader].kill()
	testutil.Eventually(t, 20*time.Second, "the follower takes the lease", func() (bool, string) {
		h := leaseHolder(t, cs, lease)
		return h == follower, h
	})
	testutil.Eventually(t, 20*time.Second, "the follower holds the session", func() (bool, string) {
		live, opened := sessions(t, cp)
		return live == 1 && opened == 2, fmt.Sprintf("live %v opened %v", live, opened)
	})
	t.Logf("takeover: the follower's session opened %s after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	third := f.deploy(t, digest3)
	f.waitApplied(t)
	f.waitStage(t, third, "SUCCEEDED", 30*time.Second)
	// The new leader found the first rollout finished in the cluster: it
	// started only the new one.
	if n := strings.Count(agents[follower].logText(), "stage=STARTING"); n != 1 {
		t.Errorf("the new leader reported STARTING %d times, want once (the new deployment only):\n%s", n, agents[follower].logText())
	}
	if _, stages, _ := f.events(t, first); strings.Count(strings.Join(stages, ","), "STARTING") != 1 {
		t.Errorf("the first deployment's events %v: its rollout started again", stages)
	}
	if img := getDeployment(t, cs, f.namespace, "api-web-r2").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, digest3) {
		t.Errorf("after the takeover api-web-r2 runs %s", img)
	}
	f.waitStatus(t, "CONNECTED", 5*time.Second)
	// The revision history tells which replica applied what.
	revs := dig(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster {
		revisions(first: 100) { nodes { number outcomes { agent result } } } } } }`, map[string]any{"id": f.cluster}),
		"node", "revisions", "nodes").([]any)
	appliedBy := map[string]bool{}
	for _, r := range revs {
		outcomes, _ := dig(r, "outcomes").([]any)
		for _, o := range outcomes {
			appliedBy[str(o, "agent")] = appliedBy[str(o, "agent")] || str(o, "result") == "APPLIED"
		}
	}
	if newest, _ := dig(revs[0], "outcomes").([]any); len(newest) == 0 || str(newest[0], "agent") != follower {
		t.Errorf("the newest revision's outcomes %v, want it applied by the new leader %s", newest, follower)
	}
	if !appliedBy[leader] || !appliedBy[follower] {
		t.Errorf("the history shows revisions applied by %v, want both %s and %s", appliedBy, leader, follower)
	}
}

// TestDeploymentRollout: a deployment that really rolls out, stage by
// stage, and one whose readiness probes fail and is rolled back.
func TestDeploymentRollout(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-c")
	cs := admin(t)
	ctx := context.Background()
	f.startAgent(t, "c-1", "nebula-agent-c")
	f.waitStatus(t, "CONNECTED", 30*time.Second)

	full := []string{"QUEUED", "DELIVERING", "STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"}
	first := f.deploy(t, digest1)
	if got := f.waitStage(t, first, "SUCCEEDED", 30*time.Second); strings.Join(got, ",") != strings.Join(full, ",") {
		t.Errorf("first deployment's stages %v, want %v", got, full)
	}
	second := f.deploy(t, digest2)
	if got := f.waitStage(t, second, "SUCCEEDED", 30*time.Second); strings.Join(got, ",") != strings.Join(full, ",") {
		t.Errorf("second deployment's stages %v, want %v", got, full)
	}
	// The agent saw 2/2 ready before SUCCEEDED; the Deployment's status
	// as read here may lag or flap a moment (kube-controller-manager
	// retries status writes it read too old, seen once in CI).
	testutil.Eventually(t, 10*time.Second, "api-web-r2 has 2 ready pods after SUCCEEDED", func() (bool, string) {
		d := getDeployment(t, cs, f.namespace, "api-web-r2")
		return d.Status.ReadyReplicas == 2, fmt.Sprintf("%d ready", d.Status.ReadyReplicas)
	})
	testutil.Eventually(t, 10*time.Second, "release 1 is retired", func() (bool, string) {
		_, err := cs.AppsV1().Deployments(f.namespace).Get(ctx, "api-web-r1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if stage, _, _ := f.events(t, first); stage != "SUPERSEDED" && stage != "SUCCEEDED" {
		t.Errorf("the first deployment is %s after the second succeeded", stage)
	}

	// A configuration change is a release (issue 32): release 3 is release
	// 2's image with a web process that never becomes Ready (the simulated
	// cluster keeps pods whose command ends in --simulate-unready
	// unready). It is rolled back as a whole, and traffic never leaves
	// release 2, which runs its own configuration again.
	f.cp.gql(t, `mutation ($input: UpdateServiceInput!) { updateService(input: $input) { service { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"serviceId": f.service, "processes": []any{
			map[string]any{"name": "web", "command": []any{"./api", "serve", "--simulate-unready"}, "replicas": 2, "port": 8080,
				"readinessProbe": map[string]any{"path": "/healthz", "port": 8080}},
			map[string]any{"name": "worker", "command": []any{"./api", "work"}, "replicas": 1},
		}}})
	newest := dig(f.cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Environment { deployments(first: 1) { nodes { id release { number imageDigest } } } } } }`,
		map[string]any{"id": f.env}), "node", "deployments", "nodes").([]any)[0]
	third := str(newest, "id")
	if rel := dig(newest, "release"); dig(rel, "number") != float64(3) || dig(rel, "imageDigest") != digest2 {
		t.Fatalf("the process change's deployment is of %v, want release 3 of release 2's image", rel)
	}
	stages := f.waitStage(t, third, "ROLLED_BACK", 40*time.Second)
	want := []string{"QUEUED", "DELIVERING", "STARTING", "PROBING", "ROLLED_BACK"}
	if strings.Join(stages, ",") != strings.Join(want, ",") {
		t.Errorf("failed deployment's stages %v, want %v", stages, want)
	}
	// The pod's own reason is in it: the agent may read (and watch) pods.
	if _, _, msg := f.events(t, third); !strings.Contains(msg, "readiness probes did not pass") || !strings.Contains(msg, "web 0/2 ready") ||
		!strings.Contains(msg, "(pod api-web-r3-") || !strings.Contains(msg, "release 2") {
		t.Errorf("rollback message %q does not say why and where traffic is", msg)
	}
	svc, err := cs.CoreV1().Services(f.namespace).Get(ctx, "api-web", metav1.GetOptions{})
	if err != nil || svc.Spec.Selector["nebula.dev/release"] != "2" {
		t.Errorf("after the rollback Service api-web: %v, selects release %v", err, svc.Spec.Selector)
	}
	testutil.Eventually(t, 15*time.Second, "release 3 is removed and release 2 runs", func() (bool, string) {
		_, err := cs.AppsV1().Deployments(f.namespace).Get(ctx, "api-web-r3", metav1.GetOptions{})
		d, err2 := cs.AppsV1().Deployments(f.namespace).Get(ctx, "api-web-r2", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && err2 == nil && d.Status.ReadyReplicas == 2, fmt.Sprint(err, err2)
	})
	// The control plane took release 3 out: the cluster's desired state is
	// release 2 again, applied.
	f.waitApplied(t)
	state := dig(f.cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster { desiredState } } }`, map[string]any{"id": f.cluster}),
		"node", "desiredState")
	if b, _ := json.Marshal(state); !strings.Contains(string(b), `"release":2`) || strings.Contains(string(b), "--simulate-unready") {
		t.Errorf("desired state after the rollback: %s; want release 2 with its own processes", b)
	}
}

func getDeployment(t *testing.T, cs *kubernetes.Clientset, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment %s/%s: %v", ns, name, err)
	}
	return d
}

func leaseHolder(t *testing.T, cs *kubernetes.Clientset, name string) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("nebula-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaseTransitions reads how many times the Lease changed hands.
func leaseTransitions(t *testing.T, cs *kubernetes.Clientset, name string) int32 {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("nebula-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the lease %s: %v", name, err)
	}
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// sessions reads the control plane's agent session metrics.
func sessions(t *testing.T, cp *controlPlane) (live, opened float64) {
	t.Helper()
	m := scrape(t, cp.url+"/metrics")
	return sum(m, "nebula_agent_sessions"), sum(m, "nebula_agent_sessions_opened_total")
}

func secretApply(name, ns, token string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, ns).WithStringData(map[string]string{"token": token})
}
