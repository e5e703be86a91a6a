package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/testutil"
)

const buildNamespace = "nebula-build"

// push sends a GitHub push of commit to main, signed with the hook's
// secret, as GitHub does.
func push(t *testing.T, url, secret, delivery, commit string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../internal/webhook/testdata/github-push.json")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	body["after"] = commit
	b, _ := json.Marshal(body)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(b)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var a map[string]any
	if err := json.Unmarshal(out, &a); err != nil || resp.StatusCode != http.StatusAccepted || a["outcome"] != "BUILD_QUEUED" {
		t.Fatalf("the push: %d %s", resp.StatusCode, out)
	}
	return a
}

// buildPod waits for the pod of the build Job and returns it; build is
// the GraphQL id the hook answered with.
func buildPod(t *testing.T, cs *kubernetes.Clientset, build string) *corev1.Pod {
	t.Helper()
	build, err := gid.Decode[string](gid.Build, build)
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	testutil.Eventually(t, 60*time.Second, "the build's pod runs", func() (bool, string) {
		l, err := cs.CoreV1().Pods(buildNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "nebula.dev/build=" + build})
		if err != nil || len(l.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		pod = &l.Items[0]
		return pod.Status.Phase == corev1.PodRunning, string(pod.Status.Phase)
	})
	return pod
}

// finish plays the builder: the pod's container ends with the code and
// termination message (kwok's build-pod-finish Stage, hack/simcluster).
func finish(t *testing.T, cs *kubernetes.Clientset, pod *corev1.Pod, exit, message string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		"nebula.dev/build-exit": exit, "nebula.dev/build-message": message}}})
	if _, err := cs.CoreV1().Pods(buildNamespace).Patch(context.Background(), pod.Name, types.MergePatchType, patch,
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// buildLog plays the build's output: kwok serves the pod's log (pods/log,
// through the API server, which reaches kwok's kubelet endpoint on
// loopback) from a CRI-format file named by a Logs object of the pod; the
// lines write appends reach a following reader.
func buildLog(t *testing.T, pod *corev1.Pod) (write func(lines ...string)) {
	t.Helper()
	return podLog(t, pod, "build")
}

// podLog serves a container's log from a file of its own (kwok's Logs,
// as buildLog); write appends lines, stamped now.
func podLog(t *testing.T, pod *corev1.Pod, container string) (write func(lines ...string)) {
	t.Helper()
	dyn := dynamicClient(t)
	file := filepath.Join(t.TempDir(), pod.Name+"-"+container+".log")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
		"metadata": map[string]any{"name": pod.Name, "namespace": pod.Namespace},
		"spec": map[string]any{"logs": []any{map[string]any{
			"containers": []any{container}, "logsFile": file, "follow": true}}},
	}}
	gvr := schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}
	if _, err := dyn.Resource(gvr).Namespace(pod.Namespace).Create(context.Background(), logs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func(lines ...string) {
		t.Helper()
		var b strings.Builder
		for _, l := range lines {
			// the CRI log format: time, stream, F(ull line), text
			fmt.Fprintf(&b, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), l)
		}
		fh, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}
}

type logLine struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

type stageEvent struct {
	Sequence int    `json:"sequence"`
	Stage    string `json:"stage"`
	Blocker  string `json:"blocker"`
}

// untilLines waits until the build-log operation id holds n lines.
func untilLines(s *subscriber, id string, n int) []logLine {
	s.t.Helper()
	var got []logLine
	s.until(id, fmt.Sprintf("%d build-log lines", n), 30*time.Second, func(ms []wsMessage) bool {
		got = data[logLine](s.t, ms, "buildLog")
		return len(got) >= n
	})
	return got
}

// A push to a Git service's tracked branch builds it on the cluster: the
// agent runs the build as a Job in nebula-build (with exactly the install
// manifests' RBAC), the real job controller and kwok play the build pod,
// its log reaches a subscriber live, the digest the builder wrote comes
// back, and the release it makes waits for approval in the protected
// environment, then rolls out: one deploymentEvents subscription sees it
// all in order. A failing build ends FAILED with its log tail; a cancelled
// build's Job is deleted.
func TestBuildOnCluster(t *testing.T) {
	needCluster(t)
	cp := startControlPlaneEnv(t, "NEBULA_JOB_INTERVAL=200ms")
	f := setup(t, cp, "sim-b")
	cs := admin(t)
	ctx := context.Background()
	f.startAgent(t, "build-1", "nebula-agent-build")
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	cp.gql(t, `mutation ($input: UpdateEnvironmentInput!) { updateEnvironment(input: $input) { environment { protected } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"environmentId": f.env, "protected": true}})

	cp.gql(t, `mutation ($input: UpdateServiceInput!) { updateService(input: $input) { service { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"serviceId": f.service, "git": map[string]any{
			"repository": "https://github.com/nebula-samples/shop-api.git", "branch": "main",
			"deployOnPush": []any{f.env}, "credential": "ghp_e2eDeployToken"}}})
	hook := cp.gql(t, `mutation ($input: CreateWebhookInput!) { createWebhook(input: $input) { webhook { url } secret userErrors { message } } }`,
		map[string]any{"input": map[string]any{"projectId": f.project, "serviceId": f.service}})
	url, secret := str(hook, "createWebhook", "webhook", "url"), str(hook, "createWebhook", "secret")

	// The push: a Job in nebula-build, its credential in a Secret of its own.
	commit := "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e"
	a := push(t, url, secret, "e2e-1", commit)
	build := a["builds"].([]any)[0].(string)
	depID := str(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Build { deployment { id } } } }`,
		map[string]any{"id": build}), "node", "deployment", "id")
	// A dashboard follows the deployment and the build's log live.
	sub := cp.subscriber(t)
	sub.start("events", `subscription ($id: ID!) { deploymentEvents(deploymentId: $id) { sequence stage blocker } }`,
		map[string]any{"id": depID})
	sub.start("log", `subscription ($id: ID!) { buildLog(buildId: $id) { number text } }`, map[string]any{"id": build})

	pod := buildPod(t, cs, build)
	job := pod.Labels["job-name"]
	if sec, err := cs.CoreV1().Secrets(buildNamespace).Get(ctx, job, metav1.GetOptions{}); err != nil || string(sec.Data["GIT_AUTH_TOKEN"]) != "ghp_e2eDeployToken" {
		t.Errorf("the build's credential Secret: %v", err)
	}
	// The builder writes; each line reaches the subscriber while the build
	// runs.
	write := buildLog(t, pod)
	write("#1 [internal] load build definition from Dockerfile", "#2 [internal] load metadata for docker.io/library/golang:1.26")
	got := untilLines(sub, "log", 2)
	write("#3 [build 1/4] RUN go build ./cmd/api")
	got = untilLines(sub, "log", 3)
	if _, err := cs.BatchV1().Jobs(buildNamespace).Get(ctx, job, metav1.GetOptions{}); err != nil {
		t.Errorf("the build's Job is gone while its log is followed: %v", err)
	}
	write("#4 exporting to image", "#4 pushing manifest for registry.example.com/shop/api done")
	digest := "sha256:" + strings.Repeat("ab", 32)
	finish(t, cs, pod, "0", digest)
	// The log subscription completes when the build ends, every line once,
	// numbered in order.
	got = data[logLine](t, sub.until("log", "the build log's end", 30*time.Second, completed), "buildLog")
	if len(got) != 5 || got[0].Number != 1 || got[4].Number != 5 || got[2].Text != "#3 [build 1/4] RUN go build ./cmd/api" {
		t.Errorf("the build log as followed: %+v", got)
	}

	// The protected environment: the build's release waits for approval,
	// then rolls out.
	sub.until("events", "the deployment awaiting approval", 60*time.Second, func(ms []wsMessage) bool {
		evs := data[stageEvent](t, ms, "deploymentEvents")
		return len(evs) > 0 && evs[len(evs)-1].Stage == "AWAITING_APPROVAL"
	})
	cp.gql(t, `mutation ($input: DecideDeploymentInput!) { approveDeployment(input: $input) { deployment { stage } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"deploymentId": depID, "comment": "built from main"}})
	evs := data[stageEvent](t, sub.until("events", "the deployment's end", 90*time.Second, completed), "deploymentEvents")
	var stages []string
	for i, e := range evs {
		if e.Sequence != i+1 {
			t.Errorf("event %d has sequence %d: %+v", i, e.Sequence, evs)
		}
		if len(stages) == 0 || stages[len(stages)-1] != e.Stage {
			stages = append(stages, e.Stage)
		}
	}
	want := []string{"QUEUED", "BUILDING", "AWAITING_APPROVAL", "DELIVERING", "STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"}
	if !slices.Equal(stages, want) {
		t.Errorf("one subscription saw the stages %v, want %v", stages, want)
	}
	d := getDeployment(t, cs, f.namespace, "api-web-r1")
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/shop/api@"+digest {
		t.Errorf("the rolled out image is %q, want the build's", img)
	}
	// The build's Job is removed once the build is reported.
	testutil.Eventually(t, 30*time.Second, "the finished build's Job is removed", func() (bool, string) {
		_, err := cs.BatchV1().Jobs(buildNamespace).Get(ctx, job, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	// A failing build: FAILED with what the builder said and its log's tail.
	a = push(t, url, secret, "e2e-2", strings.Repeat("1", 40))
	build = a["builds"].([]any)[0].(string)
	pod = buildPod(t, cs, build)
	sub.start("log2", `subscription ($id: ID!) { buildLog(buildId: $id) { number text } }`, map[string]any{"id": build})
	buildLog(t, pod)("#5 [build 2/4] RUN go build ./cmd/api", "#5 0.91 cmd/api/main.go:12:2: undefined: serve")
	untilLines(sub, "log2", 2)
	finish(t, cs, pod, "1", "ERROR: failed to solve: go build: exit status 1")
	depID = str(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Build { deployment { id } } } }`,
		map[string]any{"id": build}), "node", "deployment", "id")
	f.waitStage(t, depID, "FAILED", 60*time.Second)
	if _, _, msg := f.events(t, depID); !strings.Contains(msg, "failed to solve") || !strings.Contains(msg, "undefined: serve") {
		t.Errorf("the failed deployment says %q, want the builder's message and the log's tail", msg)
	}

	// A cancelled build: its Job is deleted.
	a = push(t, url, secret, "e2e-3", strings.Repeat("2", 40))
	build = a["builds"].([]any)[0].(string)
	pod = buildPod(t, cs, build)
	sub.start("log3", `subscription ($id: ID!) { buildLog(buildId: $id) { number text } }`, map[string]any{"id": build})
	depID = str(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Build { deployment { id } } } }`,
		map[string]any{"id": build}), "node", "deployment", "id")
	cp.gql(t, `mutation ($input: CancelDeploymentInput!) { cancelDeployment(input: $input) { deployment { stage } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"deploymentId": depID, "reason": "wrong commit"}})
	testutil.Eventually(t, 30*time.Second, "the cancelled build's Job is deleted", func() (bool, string) {
		_, err := cs.BatchV1().Jobs(buildNamespace).Get(ctx, pod.Labels["job-name"], metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	sub.until("log3", "the cancelled build's log to end", 30*time.Second, completed)
	if st := str(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Build { status } } }`, map[string]any{"id": build}), "node", "status"); st != "CANCELLED" {
		t.Errorf("the cancelled build is %s", st)
	}
}
