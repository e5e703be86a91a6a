package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nebulactrl/nebula/internal/install"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/wake"
)

// Builds run as Kubernetes Jobs in install.BuildNamespace, one per build,
// named after the build. The control plane sends the whole set the
// cluster should run; the agent creates the Jobs it lacks, deletes those
// of builds not in the set (a cancelled or timed-out build), follows each
// build pod's log and reports it in ordered batches, and reports how the
// build ended: the image digest the builder wrote to its termination
// message, or why it failed.

// LabelBuild names the build a Job, its pod and its Secret belong to.
const LabelBuild = "nebula.dev/build"

// buildDigest is what a build's termination message must hold.
var buildDigest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// builder runs one session's builds.
type builder struct {
	// kube.Write makes and removes the Jobs; kube.Read reads their pods,
	// kube.Logs follows their logs.
	kube Clients
	send func(protocol.BuildReport) error
	log  *slog.Logger
	// poll is how often a build's pod is looked at while it is not
	// running yet, and the set reconciled without a change.
	poll time.Duration
	// batch bounds a report: at most this many lines, sent at least this
	// often while lines come.
	batchLines int
	batchEvery time.Duration

	kick wake.Signal
	mu   sync.Mutex
	want map[string]protocol.BuildJob
	// follows are the builds whose pod is followed, by id.
	follows map[string]context.CancelFunc
}

func newBuilder(kube Clients, log *slog.Logger, send func(protocol.BuildReport) error) *builder {
	return &builder{kube: kube, send: send, log: log, poll: time.Second, batchLines: 200, batchEvery: 250 * time.Millisecond,
		kick: wake.New(), want: map[string]protocol.BuildJob{}, follows: map[string]context.CancelFunc{}}
}

// set takes the builds the cluster should run now.
func (b *builder) set(m protocol.Builds) {
	want := make(map[string]protocol.BuildJob, len(m.Builds))
	for _, j := range m.Builds {
		want[j.ID] = j
	}
	b.mu.Lock()
	b.want = want
	b.mu.Unlock()
	b.kick.Poke()
}

// run reconciles the builds with the cluster until ctx ends: at every new
// set, and every poll.
func (b *builder) run(ctx context.Context) {
	t := time.NewTicker(10 * b.poll)
	defer t.Stop()
	defer func() {
		b.mu.Lock()
		for _, cancel := range b.follows {
			cancel()
		}
		b.mu.Unlock()
	}()
	for {
		if err := b.reconcile(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("reconciling builds", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-b.kick.C():
		case <-t.C:
		}
	}
}

// reconcile makes the Jobs of the build namespace the set's, and follows
// each build of the set.
func (b *builder) reconcile(ctx context.Context) error {
	b.mu.Lock()
	want := b.want
	b.mu.Unlock()
	jobs, err := b.kube.Write.BatchV1().Jobs(install.BuildNamespace).List(ctx, metav1.ListOptions{LabelSelector: LabelBuild})
	if err != nil {
		return fmt.Errorf("listing build jobs: %w", err)
	}
	have := map[string]bool{}
	var errs []error
	for _, j := range jobs.Items {
		id := j.Labels[LabelBuild]
		have[id] = true
		if _, ok := want[id]; ok {
			continue
		}
		// Not the control plane's to run any more: cancelled, timed out,
		// or ended and reported.
		if err := b.remove(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	for id, j := range want {
		if !have[id] {
			if err := b.create(ctx, j); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		b.mu.Lock()
		if _, ok := b.follows[id]; !ok {
			fctx, cancel := context.WithCancel(ctx)
			b.follows[id] = cancel
			go b.follow(fctx, j)
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	for id, cancel := range b.follows {
		if _, ok := want[id]; !ok {
			cancel()
			delete(b.follows, id)
		}
	}
	b.mu.Unlock()
	return errors.Join(errs...)
}

// jobName is the Job (and Secret) of a build.
func jobName(id string) string {
	short := strings.ReplaceAll(id, "-", "")
	if len(short) > 40 {
		short = short[len(short)-40:]
	}
	return "nebula-build-" + short
}

// create makes a build's Secret (when it reads a private repository) and
// its Job.
func (b *builder) create(ctx context.Context, j protocol.BuildJob) error {
	if j.Credential != "" {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: jobName(j.ID), Namespace: install.BuildNamespace,
			Labels: map[string]string{LabelManagedBy: ManagedBy, LabelBuild: j.ID}},
			Type: corev1.SecretTypeOpaque, StringData: map[string]string{"GIT_AUTH_TOKEN": j.Credential}}
		if _, err := b.kube.Write.CoreV1().Secrets(install.BuildNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the credential of build %s: %w", j.ID, err)
		}
	}
	_, err := b.kube.Write.BatchV1().Jobs(install.BuildNamespace).Create(ctx, BuildJob(j, time.Now()), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the job of build %s: %w", j.ID, err)
	}
	b.log.Info("build started", "build", j.ID, "commit", j.Commit, "job", jobName(j.ID))
	return nil
}

// remove deletes a build's Job, its pods, and its Secret.
func (b *builder) remove(ctx context.Context, id string) error {
	bg := metav1.DeletePropagationBackground
	err := b.kube.Write.BatchV1().Jobs(install.BuildNamespace).Delete(ctx, jobName(id), metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the job of build %s: %w", id, err)
	}
	err = b.kube.Write.CoreV1().Secrets(install.BuildNamespace).Delete(ctx, jobName(id), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the credential of build %s: %w", id, err)
	}
	b.log.Info("build job removed", "build", id)
	return nil
}

// BuildJob is the Job that runs one build: rootless BuildKit, building the
// commit straight from the repository (the credential, if any, as
// BuildKit's GIT_AUTH_TOKEN secret) and pushing to the image repository,
// tagged with the commit; the digest it pushed goes to the termination
// message. It stops at the build's deadline, runs once, and is removed an
// hour after it ends if the agent has not removed it by then.
func BuildJob(j protocol.BuildJob, now time.Time) *batchv1.Job {
	name := jobName(j.ID)
	labels := map[string]string{LabelManagedBy: ManagedBy, LabelBuild: j.ID}
	deadline := max(int64(j.Deadline.Sub(now)/time.Second), 60)
	source := j.Repository + "#" + j.Commit
	if j.ContextDir != "" && j.ContextDir != "." {
		source += ":" + j.ContextDir
	}
	build := []string{"buildctl-daemonless.sh", "build", "--progress", "plain",
		"--frontend", "dockerfile.v0",
		"--opt", "context=" + source,
		"--opt", "filename=" + j.Dockerfile,
		"--output", "type=image,name=" + j.Image + ":" + j.Commit + ",push=true",
		"--metadata-file", "/tmp/build/metadata.json"}
	var env []corev1.EnvVar
	env = append(env, corev1.EnvVar{Name: "BUILDKITD_FLAGS", Value: "--oci-worker-no-process-sandbox"})
	if j.Credential != "" {
		build = append(build, "--secret", "id=GIT_AUTH_TOKEN,env=GIT_AUTH_TOKEN")
		env = append(env, corev1.EnvVar{Name: "GIT_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name},
				Key: "GIT_AUTH_TOKEN"}}})
	}
	// The builder's metadata names the digest it pushed; it goes to the
	// termination message, where the agent reads it.
	script := strings.Join(quoteAll(build), " ") + " && " +
		`sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]*\)".*/\1/p' /tmp/build/metadata.json > /dev/termination-log`
	unconfined := corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: install.BuildNamespace, Labels: labels,
			Annotations: map[string]string{"nebula.dev/commit": j.Commit, "nebula.dev/repository": j.Repository}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(0)),
			ActiveDeadlineSeconds:   ptr(deadline),
			TTLSecondsAfterFinished: ptr(int32(3600)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr(false),
					Containers: []corev1.Container{{
						Name:    "build",
						Image:   j.Builder,
						Command: []string{"sh", "-c", script},
						Env:     env,
						SecurityContext: &corev1.SecurityContext{
							RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)),
							SeccompProfile:  &unconfined,
							AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						VolumeMounts: []corev1.VolumeMount{
							{Name: "buildkitd", MountPath: "/home/user/.local/share/buildkit"},
							{Name: "out", MountPath: "/tmp/build"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "buildkitd", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// quoteAll quotes each argument for sh.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// follow follows a build's pod: its log, in batches, then how it ended.
// The log is read from its start, the lines the control plane holds
// skipped, so that a new session or a new leader goes on where it stood.
func (b *builder) follow(ctx context.Context, j protocol.BuildJob) {
	sent := j.LogFrom
	var waiting string
	for ctx.Err() == nil {
		pod, err := b.pod(ctx, j.ID)
		switch {
		case err != nil:
			b.log.Warn("reading a build pod", "build", j.ID, "error", err)
		case pod == nil:
		case pod.Status.Phase == corev1.PodPending:
			if why := pendingReason(pod); why != waiting {
				waiting = why
				b.report(protocol.BuildReport{ID: j.ID, From: sent, Status: protocol.BuildRunning,
					Message: "waiting for the build pod: " + why})
			}
		default:
			n, err := b.stream(ctx, j, pod.Name, sent)
			sent = n
			if err != nil && ctx.Err() == nil {
				b.log.Warn("following a build log", "build", j.ID, "error", err)
			}
			if end, ok := b.ended(ctx, j.ID); ok {
				end.From = sent
				b.report(end)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.poll):
		}
	}
}

// pod is the pod of a build's Job, nil while there is none.
func (b *builder) pod(ctx context.Context, id string) (*corev1.Pod, error) {
	l, err := b.kube.Read.CoreV1().Pods(install.BuildNamespace).List(ctx, metav1.ListOptions{LabelSelector: LabelBuild + "=" + id})
	if err != nil || len(l.Items) == 0 {
		return nil, err
	}
	slices.SortFunc(l.Items, func(x, y corev1.Pod) int { return x.CreationTimestamp.Compare(y.CreationTimestamp.Time) })
	return &l.Items[len(l.Items)-1], nil
}

func pendingReason(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return strings.TrimSpace(w.Reason + " " + w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return "scheduling"
}

// stream reads a build pod's log to its end (the pod's), sending the lines
// after line from; it returns the number of lines sent in all.
//
// A kubelet ends a followed log when the container exits, but not every
// node does (kwok's, and a kubelet that lost its runtime, follow on), so the
// pod is looked at every poll too: once it has ended, the log is read until
// it has been quiet for a poll, and the stream closed.
func (b *builder) stream(ctx context.Context, j protocol.BuildJob, pod string, from int64) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := b.kube.Logs.CoreV1().Pods(install.BuildNamespace).GetLogs(pod, &corev1.PodLogOptions{Follow: true, Timestamps: true}).Stream(ctx)
	if err != nil {
		return from, err
	}
	defer rc.Close()
	lines := make(chan protocol.LogLine)
	done := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- logLine(sc.Text()):
			case <-ctx.Done():
				return
			}
		}
		done <- sc.Err()
	}()
	var read int64 // lines of the log read, from its start
	sent := from
	var batch []protocol.LogLine
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if b.report(protocol.BuildReport{ID: j.ID, From: sent, Lines: batch, Status: protocol.BuildRunning}) {
			sent += int64(len(batch))
		}
		batch = nil
	}
	tick := time.NewTicker(b.batchEvery)
	defer tick.Stop()
	look := time.NewTicker(b.poll)
	defer look.Stop()
	var ended bool
	last := time.Now() // a line was last read
	for {
		select {
		case <-look.C:
			if !ended {
				_, ended = b.ended(ctx, j.ID)
			}
			if ended && time.Since(last) >= b.poll {
				flush()
				return sent, nil
			}
		case l, ok := <-lines:
			if !ok {
				flush()
				select {
				case err := <-done:
					return sent, err
				default:
					return sent, ctx.Err()
				}
			}
			read++
			last = time.Now()
			if read <= from {
				continue // the control plane holds it
			}
			batch = append(batch, l)
			if len(batch) >= b.batchLines {
				flush()
			}
		case <-tick.C:
			flush()
		case <-ctx.Done():
			return sent, ctx.Err()
		}
	}
}

// logLine splits the timestamp the API server puts before a line.
func logLine(s string) protocol.LogLine {
	if ts, text, ok := strings.Cut(s, " "); ok {
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			return protocol.LogLine{At: at.UTC(), Text: text}
		}
	}
	return protocol.LogLine{At: time.Now().UTC(), Text: s}
}

// ended tells how a build ended, if its Job did: succeeded with the digest
// its builder wrote, or failed with why.
func (b *builder) ended(ctx context.Context, id string) (protocol.BuildReport, bool) {
	r := protocol.BuildReport{ID: id}
	pod, err := b.pod(ctx, id)
	if err != nil || pod == nil {
		return r, false
	}
	for _, s := range pod.Status.ContainerStatuses {
		t := s.State.Terminated
		if s.Name != "build" || t == nil {
			continue
		}
		msg := strings.TrimSpace(t.Message)
		switch {
		case t.ExitCode == 0 && buildDigest.MatchString(msg):
			r.Status, r.Digest = protocol.BuildSucceeded, msg
		case t.ExitCode == 0:
			r.Status, r.Message = protocol.BuildFailed, "the builder ended without naming the image it pushed"
		default:
			r.Status = protocol.BuildFailed
			r.Message = strings.TrimSpace(fmt.Sprintf("the builder exited with %d (%s) %s", t.ExitCode, t.Reason, clipMessage(msg)))
		}
		return r, true
	}
	if pod.Status.Phase == corev1.PodFailed {
		r.Status = protocol.BuildFailed
		r.Message = strings.TrimSpace("the build pod failed: " + pod.Status.Reason + " " + pod.Status.Message)
		return r, true
	}
	return r, false
}

// report sends a report and says whether it went out.
func (b *builder) report(r protocol.BuildReport) bool {
	if err := b.send(r); err != nil {
		b.log.Warn("reporting a build", "build", r.ID, "error", err)
		return false
	}
	return true
}
