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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

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

// buildPod waits for the pod of the build Job and returns it.
func buildPod(t *testing.T, cs *kubernetes.Clientset, build string) *corev1.Pod {
	t.Helper()
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

// A push to a Git service's tracked branch builds it on the cluster: the
// agent runs the build as a Job in nebula-build (with exactly the install
// manifests' RBAC), the real job controller and kwok play the build pod,
// the digest the builder wrote comes back, and the release it makes rolls
// out. A failing build ends FAILED with its message; a cancelled build's
// Job is deleted.
func TestBuildOnCluster(t *testing.T) {
	needCluster(t)
	cp := startControlPlaneEnv(t, "NEBULA_JOB_INTERVAL=200ms")
	f := setup(t, cp, "sim-b")
	cs := admin(t)
	ctx := context.Background()
	f.startAgent(t, "build-1", "nebula-agent-build")
	f.waitStatus(t, "CONNECTED", 30*time.Second)

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
	pod := buildPod(t, cs, build)
	job := pod.Labels["job-name"]
	if sec, err := cs.CoreV1().Secrets(buildNamespace).Get(ctx, job, metav1.GetOptions{}); err != nil || string(sec.Data["GIT_AUTH_TOKEN"]) != "ghp_e2eDeployToken" {
		t.Errorf("the build's credential Secret: %v", err)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	finish(t, cs, pod, "0", digest)

	res := cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Service { builds(first: 1) { nodes { status deployment { id } } } } } }`,
		map[string]any{"id": f.service})
	depID := dig(res, "node", "builds", "nodes").([]any)[0].(map[string]any)["deployment"].(map[string]any)["id"].(string)
	want := []string{"QUEUED", "BUILDING", "DELIVERING", "STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"}
	if got := f.waitStage(t, depID, "SUCCEEDED", 90*time.Second); !slices.Equal(got, want) {
		t.Errorf("the pushed deployment's stages %v, want %v", got, want)
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

	// A failing build: FAILED with what the builder said.
	a = push(t, url, secret, "e2e-2", strings.Repeat("1", 40))
	pod = buildPod(t, cs, a["builds"].([]any)[0].(string))
	finish(t, cs, pod, "1", "ERROR: failed to solve: go build: exit status 1")
	res = cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Service { builds(first: 1) { nodes { deployment { id } } } } } }`,
		map[string]any{"id": f.service})
	depID = dig(res, "node", "builds", "nodes").([]any)[0].(map[string]any)["deployment"].(map[string]any)["id"].(string)
	f.waitStage(t, depID, "FAILED", 60*time.Second)
	if _, _, msg := f.events(t, depID); !strings.Contains(msg, "failed to solve") {
		t.Errorf("the failed deployment says %q", msg)
	}

	// A cancelled build: its Job is deleted.
	a = push(t, url, secret, "e2e-3", strings.Repeat("2", 40))
	pod = buildPod(t, cs, a["builds"].([]any)[0].(string))
	res = cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Service { builds(first: 1) { nodes { deployment { id } } } } } }`,
		map[string]any{"id": f.service})
	depID = dig(res, "node", "builds", "nodes").([]any)[0].(map[string]any)["deployment"].(map[string]any)["id"].(string)
	cp.gql(t, `mutation ($input: CancelDeploymentInput!) { cancelDeployment(input: $input) { deployment { stage } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"deploymentId": depID, "reason": "wrong commit"}})
	testutil.Eventually(t, 30*time.Second, "the cancelled build's Job is deleted", func() (bool, string) {
		_, err := cs.BatchV1().Jobs(buildNamespace).Get(ctx, pod.Labels["job-name"], metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
