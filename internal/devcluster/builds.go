package devcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	fakerest "k8s.io/client-go/rest/fake"
)

// The labels and annotations of the agent's build Jobs (agent/builds.go);
// written out here so that the simulation does not import the agent.
const (
	buildNamespace  = "nebula-build"
	labelBuild      = "nebula.dev/build"
	annotCommit     = "nebula.dev/commit"
	annotRepository = "nebula.dev/repository"
)

// builds plays the pods of build Jobs: each prints its script, a line per
// LineEvery, then ends with a digest made from its commit. The log is kept
// here and served as the pod's pods/log (withLogs).
type builds struct {
	LineEvery time.Duration

	mu   sync.Mutex
	pods map[string]*buildPod // by "namespace/name"
}

type buildPod struct {
	started time.Time
	script  []string
	digest  string
	ended   bool
}

// printed is the log so far, in the API server's form with timestamps.
func (p *buildPod) printed(every time.Duration, now time.Time) (lines []string, done bool) {
	n := int(now.Sub(p.started) / every)
	if n >= len(p.script) {
		n, done = len(p.script), true
	}
	for i, l := range p.script[:n] {
		at := p.started.Add(time.Duration(i+1) * every).UTC().Format(time.RFC3339Nano)
		lines = append(lines, at+" "+l)
	}
	return lines, done
}

// log is the log of a build pod so far; ok is false for other pods.
func (b *builds) log(namespace, name string) (string, bool) {
	b.mu.Lock()
	p := b.pods[namespace+"/"+name]
	b.mu.Unlock()
	if p == nil {
		return "", false
	}
	lines, _ := p.printed(b.LineEvery, time.Now())
	out := strings.Join(lines, "\n")
	if out != "" {
		out += "\n"
	}
	return out, true
}

// withLogs is the fake clientset with pods/log of build pods answered
// from the simulation (the fake's own answers "fake logs" for every pod,
// and its reactors are not told which pod is asked for).
type withLogs struct {
	kubernetes.Interface
	b *builds
}

// IsWatchListSemanticsUnSupported tells client-go's informers, as the fake
// clientset does, that its watches send no bookmarks (hidden by the
// wrapping otherwise, and an informer would wait for one forever).
func (c withLogs) IsWatchListSemanticsUnSupported() bool { return true }

func (c withLogs) CoreV1() corev1client.CoreV1Interface {
	return coreWithLogs{CoreV1Interface: c.Interface.CoreV1(), b: c.b}
}

type coreWithLogs struct {
	corev1client.CoreV1Interface
	b *builds
}

func (c coreWithLogs) Pods(namespace string) corev1client.PodInterface {
	return podsWithLogs{PodInterface: c.CoreV1Interface.Pods(namespace), namespace: namespace, b: c.b}
}

type podsWithLogs struct {
	corev1client.PodInterface
	namespace string
	b         *builds
}

// GetLogs answers once with what the pod printed so far: the fake cannot
// stream, so a follower reads again and skips what it has.
func (p podsWithLogs) GetLogs(name string, opts *corev1.PodLogOptions) *restclient.Request {
	out, ok := p.b.log(p.namespace, name)
	if !ok {
		return p.PodInterface.GetLogs(name, opts)
	}
	c := &fakerest.RESTClient{
		Client: fakerest.CreateHTTPClient(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}},
				Body: io.NopCloser(strings.NewReader(out))}, nil
		}),
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/log", p.namespace, name),
	}
	return c.Request()
}

// tick gives each build Job a pod, ends the pods whose script is printed,
// and removes the pods of Jobs that are gone (the fake collects no
// garbage).
func (b *builds) tick(ctx context.Context, cs kubernetes.Interface) error {
	jobs, err := cs.BatchV1().Jobs(buildNamespace).List(ctx, metav1.ListOptions{LabelSelector: labelBuild})
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		name := j.Name + "-sim"
		key := buildNamespace + "/" + name
		live[key] = true
		b.mu.Lock()
		p := b.pods[key]
		b.mu.Unlock()
		if p == nil {
			if err := b.start(ctx, cs, j, name, key); err != nil {
				return err
			}
			continue
		}
		if _, done := p.printed(b.LineEvery, time.Now()); done && !p.ended {
			if err := b.end(ctx, cs, name, p); err != nil {
				return err
			}
		}
	}
	b.mu.Lock()
	var gone []string
	for key := range b.pods {
		if !live[key] {
			gone = append(gone, key)
			delete(b.pods, key)
		}
	}
	b.mu.Unlock()
	for _, key := range gone {
		err := cs.CoreV1().Pods(buildNamespace).Delete(ctx, strings.TrimPrefix(key, buildNamespace+"/"), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (b *builds) start(ctx context.Context, cs kubernetes.Interface, j *batchv1.Job, name, key string) error {
	commit, repo := j.Annotations[annotCommit], j.Annotations[annotRepository]
	sum := sha256.Sum256([]byte(repo + "@" + commit))
	p := &buildPod{started: time.Now(), script: script(repo, commit), digest: "sha256:" + hex.EncodeToString(sum[:])}
	labels := map[string]string{"job-name": j.Name}
	for k, v := range j.Spec.Template.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: buildNamespace, Labels: labels, CreationTimestamp: now},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "build", Image: "nebula-dev/simulated-builder"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "build", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}},
	}
	// Known before it exists: the agent sees the pod as soon as it is
	// created and asks for its log, which the fake answers "fake logs"
	// for a pod the simulation does not know.
	b.mu.Lock()
	b.pods[key] = p
	b.mu.Unlock()
	if _, err := cs.CoreV1().Pods(buildNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.mu.Lock()
		delete(b.pods, key)
		b.mu.Unlock()
		return err
	}
	return nil
}

func (b *builds) end(ctx context.Context, cs kubernetes.Interface, name string, p *buildPod) error {
	pod, err := cs.CoreV1().Pods(buildNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "build", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: p.digest, FinishedAt: now}}}}
	if _, err := cs.CoreV1().Pods(buildNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return err
	}
	b.mu.Lock()
	p.ended = true
	b.mu.Unlock()
	return nil
}

// script is what a BuildKit build of the commit would print, said to be
// simulated.
func script(repo, commit string) []string {
	short := commit
	if len(short) > 12 {
		short = short[:12]
	}
	return []string{
		fmt.Sprintf("nebula dev: a simulated build of %s at %s (no BuildKit runs here)", repo, short),
		"#1 [internal] load build definition from Dockerfile",
		"#1 transferring dockerfile: 412B done",
		"#2 [internal] load metadata for docker.io/library/golang:1.26",
		"#3 [build 1/4] FROM docker.io/library/golang:1.26",
		"#4 [build 2/4] COPY go.mod go.sum ./",
		"#5 [build 3/4] RUN go mod download",
		"#6 [build 4/4] RUN go build -o /app ./cmd/app",
		"#7 exporting to image",
		"#7 exporting layers done",
		"#7 pushing manifest done",
	}
}
