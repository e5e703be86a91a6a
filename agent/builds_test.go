package agent

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/nebulactrl/nebula/internal/install"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	testBuild  = "01a230d4-7034-71f1-8195-2d9f0178cfee"
	testCommit = "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e"
	testDigest = "sha256:4242424242424242424242424242424242424242424242424242424242424242"
)

func testBuildJob(credential string) protocol.BuildJob {
	return protocol.BuildJob{ID: testBuild, Repository: "https://github.com/nebula-samples/shop-api.git", Commit: testCommit,
		ContextDir: "api", Dockerfile: "build/Dockerfile", Image: "registry.nebula-build.svc:5000/shop/api",
		Credential: credential, Builder: "moby/buildkit:v0.26.2-rootless",
		Deadline: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)}
}

// The Job a build runs as is checked against a golden file: the real
// BuildKit image cannot run here. `go test ./agent -run TestBuildJobGolden
// -update` rewrites it after a deliberate change.
func TestBuildJobGolden(t *testing.T) {
	job := BuildJob(testBuildJob("ghp_secret"), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	got, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/build-job.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the build Job differs from %s (run with -update after a deliberate change):\n%s", golden, got)
	}
	if strings.Contains(string(got), "ghp_secret") {
		t.Error("the credential is in the Job itself")
	}
	if d := *job.Spec.ActiveDeadlineSeconds; d != 1800 {
		t.Errorf("activeDeadlineSeconds = %d, want the 30 min to the deadline", d)
	}
}

// reports collects what a builder sends.
type reports struct {
	mu  sync.Mutex
	got []protocol.BuildReport
}

func (r *reports) send(b protocol.BuildReport) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, b)
	return nil
}

func (r *reports) all() []protocol.BuildReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// A builder runs the set it is given: the Job and the credential's Secret
// for a new build, the log of its pod, the digest its builder wrote when it
// ends; a build that leaves the set has its Job and Secret deleted.
func TestBuilderRunsTheSet(t *testing.T) {
	cs := fake.NewClientset()
	rec := &reports{}
	b := newBuilder(Same(cs), slog.New(slog.NewTextHandler(io.Discard, nil)), rec.send)
	b.poll = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.run(ctx)

	b.set(protocol.Builds{Builds: []protocol.BuildJob{testBuildJob("ghp_secret")}})
	name := jobName(testBuild)
	testutil.Eventually(t, 5*time.Second, "the build's Job", func() (bool, string) {
		_, err := cs.BatchV1().Jobs(install.BuildNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil, errString(err)
	})
	sec, err := cs.CoreV1().Secrets(install.BuildNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || sec.StringData["GIT_AUTH_TOKEN"] != "ghp_secret" {
		t.Fatalf("the credential's Secret: %v %v", sec, err)
	}

	// Its pod: pending, then running, then done with the digest.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-x1", Namespace: install.BuildNamespace,
		Labels: map[string]string{LabelBuild: testBuild}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "build",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}
	if _, err := cs.CoreV1().Pods(install.BuildNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "a report of the pending pod", func() (bool, string) {
		for _, r := range rec.all() {
			if r.Status == protocol.BuildRunning && r.Message == "waiting for the build pod: ContainerCreating" {
				return true, ""
			}
		}
		return false, ""
	})
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "build",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: testDigest + "\n"}}}}}
	if _, err := cs.CoreV1().Pods(install.BuildNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var end protocol.BuildReport
	testutil.Eventually(t, 5*time.Second, "the build's end", func() (bool, string) {
		all := rec.all()
		end = all[len(all)-1]
		return end.Status == protocol.BuildSucceeded, fmt.Sprint(all)
	})
	// The fake API server serves every pod log as "fake logs".
	var lines []string
	for _, r := range rec.all() {
		for _, l := range r.Lines {
			lines = append(lines, l.Text)
		}
	}
	if end.Digest != testDigest || !slices.Equal(lines, []string{"fake logs"}) || end.From != 1 {
		t.Errorf("end %+v after lines %q", end, lines)
	}

	// Out of the set: Job and Secret go.
	b.set(protocol.Builds{})
	testutil.Eventually(t, 5*time.Second, "the Job and Secret deleted", func() (bool, string) {
		_, err1 := cs.BatchV1().Jobs(install.BuildNamespace).Get(ctx, name, metav1.GetOptions{})
		_, err2 := cs.CoreV1().Secrets(install.BuildNamespace).Get(ctx, name, metav1.GetOptions{})
		return err1 != nil && err2 != nil, errString(err1) + " / " + errString(err2)
	})
}

// A new set is acted on at once, not at the next poll.
func TestBuilderActsOnANewSet(t *testing.T) {
	cs := fake.NewClientset()
	b := newBuilder(Same(cs), slog.New(slog.NewTextHandler(io.Discard, nil)), (&reports{}).send)
	b.poll = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.run(ctx)
	testutil.Eventually(t, 5*time.Second, "the first reconcile", func() (bool, string) {
		for _, a := range cs.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "jobs" {
				return true, ""
			}
		}
		return false, fmt.Sprint(cs.Actions())
	})
	b.set(protocol.Builds{Builds: []protocol.BuildJob{testBuildJob("")}})
	testutil.Eventually(t, 5*time.Second, "the build's Job", func() (bool, string) {
		_, err := cs.BatchV1().Jobs(install.BuildNamespace).Get(ctx, jobName(testBuild), metav1.GetOptions{})
		return err == nil, errString(err)
	})
}

// A failed builder reports why; a new session's follower skips the lines
// the control plane holds.
func TestBuilderFailureAndResume(t *testing.T) {
	cs := fake.NewClientset()
	rec := &reports{}
	b := newBuilder(Same(cs), slog.New(slog.NewTextHandler(io.Discard, nil)), rec.send)
	b.poll = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: install.BuildNamespace,
		Labels: map[string]string{LabelBuild: testBuild}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "build",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				Message: "ERROR: failed to solve: process \"/bin/sh -c go build\" did not complete successfully"}}}}}}
	if _, err := cs.CoreV1().Pods(install.BuildNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := testBuildJob("")
	j.LogFrom = 1 // the control plane holds the one line already
	go b.run(ctx)
	b.set(protocol.Builds{Builds: []protocol.BuildJob{j}})
	testutil.Eventually(t, 5*time.Second, "the failure", func() (bool, string) {
		all := rec.all()
		return len(all) > 0 && all[len(all)-1].Status == protocol.BuildFailed, fmt.Sprint(all)
	})
	all := rec.all()
	end := all[len(all)-1]
	if !strings.Contains(end.Message, "exited with 1") || !strings.Contains(end.Message, "did not complete successfully") || end.From != 1 {
		t.Errorf("the failure: %+v", end)
	}
	for _, r := range all {
		if len(r.Lines) > 0 {
			t.Errorf("lines the control plane holds were sent again: %+v", r)
		}
	}
	if _, err := cs.CoreV1().Secrets(install.BuildNamespace).Get(ctx, jobName(testBuild), metav1.GetOptions{}); err == nil {
		t.Error("a build without a credential got a Secret")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
