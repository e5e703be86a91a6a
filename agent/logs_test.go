package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
	tu "github.com/nebulactrl/nebula/internal/testutil"
)

// sentLogs collects the logs messages a follower sends.
type sentLogs struct {
	mu  sync.Mutex
	got []protocol.Logs
}

func (s *sentLogs) send(m protocol.Logs) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, m)
	return nil
}

// streams flattens what was sent: per stream entry, its gap and lines.
func (s *sentLogs) streams() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.got {
		for _, st := range m.Streams {
			e := fmt.Sprintf("%s/%s/%s r%d %s:", st.Environment, st.Service, st.Pod, st.Release, st.Container)
			if st.Gap != "" {
				e += " gap(" + st.Gap + ")"
			}
			for _, l := range st.Lines {
				e += " " + l.Text
			}
			out = append(out, e)
		}
	}
	return out
}

// targetSet is the containers a test's follower follows, changed as the
// test goes.
type targetSet struct {
	mu sync.Mutex
	m  map[streamKey]string
}

func (ts *targetSet) get() map[streamKey]string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make(map[streamKey]string, len(ts.m))
	for k, v := range ts.m {
		out[k] = v
	}
	return out
}

func (ts *targetSet) set(k streamKey, run string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.m[k] = run
}

func (ts *targetSet) remove(k streamKey) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.m, k)
}

func keyOf(pod string) streamKey {
	return streamKey{namespace: "shop-prod", pod: pod, container: "app", env: "env-1", service: "svc-1", process: "web", release: 3}
}

// testFollower follows targets through a clientset of srv, polling its
// targets often and asking again after short backoffs.
func testFollower(t *testing.T, srv *apiServer, targets *targetSet, set logSettings) (*logFollower, *sentLogs, *Metrics) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(srv.config())
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	sent := &sentLogs{}
	if set.rate == 0 {
		set.rate, set.burst = DefaultLogRate, DefaultLogBurst
	}
	if set.lineBytes == 0 {
		set.lineBytes = DefaultLogLineBytes
	}
	if set.streams == 0 {
		set.streams = DefaultLogStreams
	}
	if set.backoffMin == 0 {
		set.backoffMin, set.backoffMax = 5*time.Millisecond, 40*time.Millisecond
	}
	f := newLogFollower(cs, slog.New(slog.DiscardHandler), m, set, &logSince{}, targets.get, sent.send)
	f.poll, f.batchEvery = 10*time.Millisecond, 5*time.Millisecond
	return f, sent, m
}

// serveLines answers pods/log as an API server does: the lines at or after
// sinceTime (a second's precision), with their timestamps, then the end of
// the stream.
func serveLines(lines map[string][]protocol.LogLine) func(http.ResponseWriter, *http.Request, logRequest) {
	return func(w http.ResponseWriter, r *http.Request, l logRequest) {
		for _, line := range lines[l.pod] {
			if !l.since.IsZero() && line.At.Before(l.since) {
				continue
			}
			fmt.Fprintf(w, "%s %s\n", line.At.UTC().Format(time.RFC3339Nano), line.Text)
		}
	}
}

// linesAt stamps texts one second apart from at.
func linesAt(at time.Time, texts ...string) []protocol.LogLine {
	out := make([]protocol.LogLine, len(texts))
	for i, t := range texts {
		out[i] = protocol.LogLine{At: at.Add(time.Duration(i) * time.Second), Text: t}
	}
	return out
}

func run(t *testing.T, f *logFollower) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// A follower sends each line of a container once, with what it belongs
// to, however often the stream is read again; a stream read again asks for
// the second of the last line sent; a pod that goes away leaves a gap.
func TestLogFollower(t *testing.T) {
	srv := newAPIServer(t)
	at := time.Now().Add(-time.Minute).Truncate(time.Second).Add(300 * time.Millisecond)
	srv.logs = serveLines(map[string][]protocol.LogLine{"api-web-r3-x1": linesAt(at, "listening on :8080", "GET /items 200", "GET /items/7 404")})
	key, silent := keyOf("api-web-r3-x1"), keyOf("api-web-r3-silent") // the second's log is empty
	targets := &targetSet{m: map[streamKey]string{key: "run-1", silent: "run-1"}}
	f, sent, m := testFollower(t, srv, targets, logSettings{})
	run(t, f)

	want := "env-1/svc-1/api-web-r3-x1 r3 app: listening on :8080 GET /items 200 GET /items/7 404"
	tu.Eventually(t, 5*time.Second, "the lines are sent", func() (bool, string) {
		return strings.Join(sent.streams(), " | ") == want, fmt.Sprint(sent.streams())
	})
	// The stream ends each time and is read again: five more reads, each
	// from the second of the last line, send nothing more.
	tu.Eventually(t, 5*time.Second, "five more reads of the log", func() (bool, string) {
		return srv.requestsOf("api-web-r3-x1") >= 6, fmt.Sprint(srv.requests())
	})
	if got := strings.Join(sent.streams(), " | "); got != want {
		t.Errorf("after more reads: %s", got)
	}
	var reqs []logRequest
	for _, r := range srv.requests() {
		if r.pod == key.pod {
			reqs = append(reqs, r)
		}
	}
	if !reqs[0].since.IsZero() || !reqs[len(reqs)-1].since.Equal(at.Add(2*time.Second).Truncate(time.Second)) {
		t.Errorf("the first read asks from %v (want the start), the last from %v (want %v)", reqs[0].since,
			reqs[len(reqs)-1].since, at.Add(2*time.Second).Truncate(time.Second))
	}
	// The pods go away, the silent one first: a marker says the lines of
	// the other may stop short; the silent one, of which nothing was
	// stored, gets none (its marker would have come first).
	tu.Eventually(t, 5*time.Second, "the silent pod was read", func() (bool, string) {
		return srv.requestsOf("api-web-r3-silent") >= 1, fmt.Sprint(srv.requests())
	})
	targets.remove(silent)
	tu.Eventually(t, 5*time.Second, "the silent pod's follower ends", func() (bool, string) {
		n := testutil.ToFloat64(m.logFollowed)
		return n == 1, fmt.Sprintf("%v followed", n)
	})
	targets.remove(key)
	tu.Eventually(t, 5*time.Second, "the pod's going away is said", func() (bool, string) {
		s := sent.streams()
		return len(s) >= 2 && strings.Contains(s[len(s)-1], "gap(the pod went away"), fmt.Sprint(s)
	})
	if s := sent.streams(); len(s) != 2 || !strings.Contains(s[1], "api-web-r3-x1") {
		t.Errorf("after the pods went away: %q", s)
	}
}

// A stream that cannot open is asked for again after a backoff that
// doubles, with jitter, up to its cap; one that delivered lines starts the
// backoff over, and so does the container starting again.
func TestLogFollowerBackoff(t *testing.T) {
	srv := newAPIServer(t) // answers 400: the container's log cannot be read
	key := keyOf("api-web-r3-x1")
	targets := &targetSet{m: map[streamKey]string{key: "run-1"}}
	const minD, maxD = 100 * time.Millisecond, 1600 * time.Millisecond
	f, _, m := testFollower(t, srv, targets, logSettings{backoffMin: minD, backoffMax: maxD})
	var mu sync.Mutex
	var waits []time.Duration
	hold := make(chan time.Time) // never fires: only a kick ends the wait
	f.after = func(d time.Duration) <-chan time.Time {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		if len(waits) >= 10 {
			return hold
		}
		c := make(chan time.Time, 1)
		c <- time.Now() // the wait is over at once: the test reads its length
		return c
	}
	got := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
	run(t, f)
	tu.Eventually(t, 10*time.Second, "ten failed reads", func() (bool, string) {
		return len(got()) >= 10, fmt.Sprint(got())
	})
	for n, d := range got()[:10] {
		s := step(minD, maxD, n)
		if d < s/2 || d > s {
			t.Errorf("wait %d after a failed read = %v, want within [%v, %v] (all: %v)", n, d, s/2, s, got())
		}
	}
	if n := srv.requestsOf("api-web-r3-x1"); n != 10 {
		t.Errorf("%d reads for 10 waits", n)
	}
	if r := testutil.ToFloat64(m.logRetries); r != 9 {
		t.Errorf("retries = %v, want 9", r)
	}
	if e := testutil.ToFloat64(m.logOpens.WithLabelValues("error")); e != 10 {
		t.Errorf("failed opens = %v, want 10", e)
	}

	// The container starts again (a new run): read at once, the backoff
	// over; the log now has a line, and the wait after it is the first
	// step's.
	srv.mu.Lock()
	srv.logs = serveLines(map[string][]protocol.LogLine{"api-web-r3-x1": linesAt(time.Now().Add(-time.Second), "started")})
	srv.mu.Unlock()
	targets.set(key, "run-2")
	tu.Eventually(t, 5*time.Second, "the read after the container started again", func() (bool, string) {
		return len(got()) >= 11, fmt.Sprint(got())
	})
	if d := got()[10]; d < minD/2 || d > minD {
		t.Errorf("the wait after a stream that delivered = %v, want within [%v, %v]", d, minD/2, minD)
	}
}

// A stream that stayed open longer than the longest wait, though it
// delivered nothing (a quiet container a kubelet followed for hours), starts
// the backoff over when it ends.
func TestLogFollowerLongStreamResetsBackoff(t *testing.T) {
	srv := newAPIServer(t)
	const minD, maxD = 10 * time.Millisecond, 40 * time.Millisecond
	srv.logs = func(w http.ResponseWriter, r *http.Request, l logRequest) {
		w.(http.Flusher).Flush()
		select { // open, quiet, for longer than the longest wait
		case <-time.After(3 * maxD):
		case <-r.Context().Done():
		}
	}
	key := keyOf("api-web-r3-quiet")
	targets := &targetSet{m: map[streamKey]string{key: "run-1"}}
	f, _, _ := testFollower(t, srv, targets, logSettings{backoffMin: minD, backoffMax: maxD})
	waits := make(chan time.Duration, 100)
	f.after = func(d time.Duration) <-chan time.Time {
		waits <- d
		c := make(chan time.Time, 1)
		c <- time.Now()
		return c
	}
	run(t, f)
	// Without the reset the waits would grow: 5–10, 10–20, 20–40 ms.
	for i := range 4 {
		if d := <-waits; d > minD {
			t.Errorf("wait %d after a stream open %v = %v, want the first step's (at most %v)", i, 3*maxD, d, minD)
		}
	}
}

// A container waiting to start again (after a crash) is not asked for
// until it runs; one that never started is not followed at all.
func TestLogFollowerWaitsForTheContainer(t *testing.T) {
	srv := newAPIServer(t)
	waiting, running := keyOf("api-web-r3-crash"), keyOf("api-web-r3-up")
	targets := &targetSet{m: map[streamKey]string{waiting: "", running: "run-1"}}
	f, _, _ := testFollower(t, srv, targets, logSettings{})
	run(t, f)
	tu.Eventually(t, 5*time.Second, "three reads of the running container", func() (bool, string) {
		return srv.requestsOf("api-web-r3-up") >= 3, fmt.Sprint(srv.requests())
	})
	if n := srv.requestsOf("api-web-r3-crash"); n != 0 {
		t.Errorf("the waiting container was asked for %d times", n)
	}
	targets.set(waiting, "run-2")
	tu.Eventually(t, 5*time.Second, "the container that runs again is read", func() (bool, string) {
		return srv.requestsOf("api-web-r3-crash") >= 1, fmt.Sprint(srv.requests())
	})
}

// At most LogStreams streams are open at once; the others wait, without a
// request, for one to end.
func TestLogFollowerStreamBound(t *testing.T) {
	srv := newAPIServer(t)
	release := map[string]chan struct{}{}
	for _, p := range []string{"p1", "p2", "p3"} {
		release[p] = make(chan struct{})
	}
	srv.logs = func(w http.ResponseWriter, r *http.Request, l logRequest) {
		fmt.Fprintf(w, "%s hello from %s\n", time.Now().UTC().Format(time.RFC3339Nano), l.pod)
		w.(http.Flusher).Flush()
		select { // the stream stays open, as a followed log does
		case <-release[l.pod]:
		case <-r.Context().Done():
		}
	}
	targets := &targetSet{m: map[streamKey]string{keyOf("p1"): "r", keyOf("p2"): "r", keyOf("p3"): "r"}}
	f, sent, m := testFollower(t, srv, targets, logSettings{streams: 2})
	run(t, f)
	tu.Eventually(t, 5*time.Second, "two streams open, one waiting", func() (bool, string) {
		open, queued := testutil.ToFloat64(m.logOpen), testutil.ToFloat64(m.logQueued)
		return open == 2 && queued == 1 && len(srv.requests()) == 2, fmt.Sprintf("open %v, queued %v, requests %v", open, queued, srv.requests())
	})
	first := srv.requests()[0].pod
	close(release[first])
	tu.Eventually(t, 5*time.Second, "the third container gets the slot", func() (bool, string) {
		s := strings.Join(sent.streams(), " | ")
		return strings.Count(s, "hello from") == 3, s
	})
	if most := srv.mostOpen(); most != 2 {
		t.Errorf("%d streams were open at once, want at most 2", most)
	}
}

// A container this process sent nothing of starts where the control
// plane's stored log of it ends (log-resume.v1), or at the start when it
// holds none; the lines before are not sent again.
func TestLogFollowerResumes(t *testing.T) {
	srv := newAPIServer(t)
	at := time.Now().Add(-time.Minute).Truncate(time.Second).Add(250 * time.Millisecond)
	srv.logs = serveLines(map[string][]protocol.LogLine{
		"stored": linesAt(at, "one", "two", "three"),
		"new":    linesAt(at, "first"),
	})
	stored, fresh := keyOf("stored"), keyOf("new")
	targets := &targetSet{m: map[streamKey]string{stored: "r", fresh: "r"}}
	f, sent, m := testFollower(t, srv, targets, logSettings{})
	var asked []protocol.LogPositions
	var mu sync.Mutex
	f.resume = newLogResume(func(q protocol.LogPositions) error {
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		a := q
		a.Streams = append([]protocol.LogPosition(nil), q.Streams...)
		for i, s := range a.Streams {
			if s.Pod == "stored" {
				last := at.Add(time.Second) // "two" is the last line stored
				a.Streams[i].At = &last
			}
		}
		go f.resume.answer(&a) // as the session's read loop does
		return nil
	})
	f.resume.gather = 20 * time.Millisecond
	run(t, f)
	tu.Eventually(t, 5*time.Second, "the lines after the stored ones", func() (bool, string) {
		s := strings.Join(sent.streams(), " | ")
		return strings.Contains(s, "stored r3 app: three") && strings.Contains(s, "new r3 app: first"), s
	})
	if s := strings.Join(sent.streams(), " | "); strings.Contains(s, "one") || strings.Contains(s, "two") {
		t.Errorf("lines the control plane stored were sent again: %s", s)
	}
	for _, r := range srv.requests() {
		if r.pod == "stored" { // its first read
			if want := at.Add(time.Second).Truncate(time.Second); !r.since.Equal(want) {
				t.Errorf("the stored stream was first read from %v, want %v", r.since, want)
			}
			break
		}
	}
	mu.Lock()
	if len(asked) != 1 || len(asked[0].Streams) != 2 {
		t.Errorf("the two containers starting together were asked about in %d messages: %+v", len(asked), asked)
	}
	mu.Unlock()
	if c, s := testutil.ToFloat64(m.logResumed.WithLabelValues("control-plane")), testutil.ToFloat64(m.logResumed.WithLabelValues("start")); c != 1 || s != 1 {
		t.Errorf("resumed from the control plane %v, from the start %v; want 1 and 1", c, s)
	}
}

// Lines past the rate cap are dropped and the next line sent says how
// many; a line of any length is cut at LogLineBytes.
func TestLogFollowerRateCap(t *testing.T) {
	srv := newAPIServer(t)
	at := time.Now().Add(-time.Minute)
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	srv.logs = serveLines(map[string][]protocol.LogLine{"p": linesAt(at, "1", "2", "3", "4", "5")})
	key := keyOf("p")
	targets := &targetSet{m: map[streamKey]string{key: "r"}}
	f, sent, m := testFollower(t, srv, targets, logSettings{rate: 1, burst: 2, lineBytes: 10, backoffMin: time.Hour, backoffMax: time.Hour})
	f.set.rate = 0 // no refill: two lines, then every line is dropped
	run(t, f)
	tu.Eventually(t, 5*time.Second, "two lines within the cap", func() (bool, string) {
		return strings.Join(sent.streams(), " | ") == "env-1/svc-1/p r3 app: 1 2", fmt.Sprint(sent.streams())
	})
	if d := testutil.ToFloat64(m.logDropped); d != 3 {
		t.Errorf("dropped %v lines, want 3", d)
	}
	// A gap rides on the next line sent.
	item := logItem{key: key, line: protocol.LogLine{At: at, Text: "x"}, gap: "the agent's rate cap (0 lines a second) dropped 3 lines"}
	if m := logsOf([]logItem{item}); len(m) != 1 || m[0].Streams[0].Gap == "" || len(m[0].Streams[0].Lines) != 1 {
		t.Errorf("a gap with a line: %+v", m)
	}
	r := bufio.NewReaderSize(strings.NewReader("2026-01-01T00:00:00Z "+long+"\nshort\nlast"), 16)
	for _, want := range []struct {
		line string
		long bool
	}{{"2026-01-01T00:00:00Z " + long[:19], true}, {"short", false}, {"last", false}} {
		line, cut, err := readLine(r, 40)
		if err != nil || string(line) != want.line || cut != want.long {
			t.Errorf("readLine = %q, %v, %v; want %q, %v", line, cut, err, want.line, want.long)
		}
	}
	if _, _, err := readLine(r, 40); err != io.EOF {
		t.Errorf("after the last line: %v, want EOF", err)
	}
}

// The containers to follow are the started containers of the managed pods
// that run a service of the desired state, with its ids, the release of
// their label and their run.
func TestLogTargets(t *testing.T) {
	st := &desired.State{Namespaces: []desired.Namespace{{Name: "shop-prod", EnvID: "env-1",
		Services: []desired.Service{{Name: "api", ID: "svc-1", Release: 4}}}}}
	started := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	creating := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	crashing := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	pod := func(name, svc, release string, states ...corev1.ContainerState) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop-prod", Labels: map[string]string{
			LabelManagedBy: ManagedBy, LabelService: svc, LabelRelease: release, LabelProcess: "web"}}}
		for i, s := range states {
			cs := corev1.ContainerStatus{Name: []string{"app", "proxy"}[i], State: s, ContainerID: "containerd://" + name}
			if s.Waiting != nil && s.Waiting.Reason == "CrashLoopBackOff" {
				cs.RestartCount = 3
				cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		}
		return p
	}
	deleting := pod("api-web-r4-d", "api", "4", running)
	deleting.DeletionTimestamp = &started
	pods := []*corev1.Pod{pod("api-web-r3-a", "api", "3", running, running), pod("api-web-r4-b", "api", "4", running, creating),
		pod("api-web-r4-c", "api", "4", creating), pod("api-web-r4-e", "api", "4", crashing), deleting,
		pod("other-1", "other", "1", running)}
	got := logTargets(st, func(ns string, sel labels.Selector) []*corev1.Pod {
		if ns != "shop-prod" {
			return nil
		}
		return pods
	})
	k := func(pod, container string, release int) streamKey {
		return streamKey{namespace: "shop-prod", pod: pod, container: container, env: "env-1", service: "svc-1", process: "web", release: release}
	}
	want := map[streamKey]string{
		k("api-web-r3-a", "app", 3):   "containerd://api-web-r3-a/0/2026-12-01T10:00:00Z",
		k("api-web-r3-a", "proxy", 3): "containerd://api-web-r3-a/0/2026-12-01T10:00:00Z",
		k("api-web-r4-b", "app", 4):   "containerd://api-web-r4-b/0/2026-12-01T10:00:00Z",
		k("api-web-r4-e", "app", 4):   "", // crashed: followed, waits until it runs again
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("targets:\n got %v\nwant %v", got, want)
	}
	if logTargets(nil, nil) != nil {
		t.Error("targets without a state are known")
	}
}

// A line the agent has to cut has the desired state's secret values taken
// out first (issue 30, rows 11–14): a secret the cut would split leaves
// nothing of itself; a line the agent does not cut is sent whole, for the
// control plane to redact.
func TestLogFollowerRedactsBeforeCutting(t *testing.T) {
	const secret = "s3cret-Value-XYZ"
	srv := newAPIServer(t)
	at := time.Now().Add(-time.Minute)
	long := strings.Repeat("a", 30) + secret + strings.Repeat("b", 30) // the cut at 40 falls inside the secret
	srv.logs = serveLines(map[string][]protocol.LogLine{"p": linesAt(at, long, "short "+secret)})
	targets := &targetSet{m: map[streamKey]string{keyOf("p"): "r"}}
	f, sent, _ := testFollower(t, srv, targets, logSettings{lineBytes: 40, backoffMin: time.Hour, backoffMax: time.Hour})
	f.redact = func() *strings.Replacer { return strings.NewReplacer(secret, "[redacted]") }
	run(t, f)
	tu.Eventually(t, 5*time.Second, "both lines", func() (bool, string) {
		s := strings.Join(sent.streams(), " | ")
		return strings.Contains(s, "short"), s
	})
	s := strings.Join(sent.streams(), " | ")
	cut, whole, _ := strings.Cut(s, " short ")
	if strings.Contains(cut, "s3cret") || !strings.Contains(cut, strings.Repeat("a", 30)+"[redacted] [line cut at 40 bytes]") {
		t.Errorf("the cut line: %s", cut)
	}
	if whole != secret {
		t.Errorf("a line not cut was changed by the agent: %q", whole)
	}
}
