package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
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

// servedLog makes the fake API server answer pods/log with lines stamped
// one second apart from at (the fake cannot tell which pod is asked for).
func servedLog(cs *fake.Clientset, at time.Time, texts ...string) {
	var b strings.Builder
	for i, t := range texts {
		fmt.Fprintf(&b, "%s %s\n", at.Add(time.Duration(i)*time.Second).UTC().Format(time.RFC3339Nano), t)
	}
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		return true, &runtime.Unknown{Raw: []byte(b.String())}, nil
	})
}

// A follower sends each line of a container once, with what it belongs
// to; a pod that goes away leaves a gap; lines past the rate cap are
// dropped and the next line sent says how many.
func TestLogFollower(t *testing.T) {
	cs := fake.NewClientset()
	at := time.Now().Add(-time.Minute)
	servedLog(cs, at, "listening on :8080", "GET /items 200", "GET /items/7 404")
	key := streamKey{namespace: "shop-prod", pod: "api-web-r3-x1", container: "app", env: "env-1", service: "svc-1", process: "web", release: 3}
	var mu sync.Mutex
	targets := map[streamKey]*corev1.Pod{key: {}}
	sent := &sentLogs{}
	f := newLogFollower(cs, slog.New(slog.NewTextHandler(io.Discard, nil)), &logSince{},
		func() map[streamKey]*corev1.Pod { mu.Lock(); defer mu.Unlock(); return targets }, sent.send)
	f.poll, f.batchEvery = 20*time.Millisecond, 10*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.run(ctx)

	want := "env-1/svc-1/api-web-r3-x1 r3 app: listening on :8080 GET /items 200 GET /items/7 404"
	testutil.Eventually(t, 5*time.Second, "the lines are sent", func() (bool, string) {
		return strings.Join(sent.streams(), " | ") == want, fmt.Sprint(sent.streams())
	})
	// The stream is read again every poll: nothing is sent twice.
	time.Sleep(10 * f.poll)
	if got := strings.Join(sent.streams(), " | "); got != want {
		t.Errorf("after more reads: %s", got)
	}
	mu.Lock()
	targets = map[streamKey]*corev1.Pod{}
	mu.Unlock()
	testutil.Eventually(t, 5*time.Second, "the pod's going away is said", func() (bool, string) {
		s := sent.streams()
		return len(s) == 2 && strings.Contains(s[1], "gap(the pod went away"), fmt.Sprint(s)
	})
}

func TestLogFollowerRateCap(t *testing.T) {
	cs := fake.NewClientset()
	at := time.Now().Add(-time.Minute)
	servedLog(cs, at, "1", "2", "3", "4", "5")
	key := streamKey{namespace: "ns", pod: "p", container: "c", env: "e", service: "s", process: "web", release: 1}
	sent := &sentLogs{}
	f := newLogFollower(cs, slog.New(slog.NewTextHandler(io.Discard, nil)), &logSince{},
		func() map[streamKey]*corev1.Pod { return map[streamKey]*corev1.Pod{key: {}} }, sent.send)
	f.poll, f.batchEvery, f.rate, f.burst = time.Hour, 10*time.Millisecond, 0, 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.run(ctx)
	testutil.Eventually(t, 5*time.Second, "two lines within the cap", func() (bool, string) {
		return strings.Join(sent.streams(), " | ") == "e/s/p r1 c: 1 2", fmt.Sprint(sent.streams())
	})
	// A long line is cut, and the gap rides on the next line sent.
	item := logItem{key: key, line: protocol.LogLine{At: at, Text: "x"}, gap: "the agent's rate cap (0 lines a second) dropped 3 lines"}
	if m := logsOf([]logItem{item}); len(m) != 1 || m[0].Streams[0].Gap == "" {
		t.Errorf("a gap with a line: %+v", m)
	}
}

// The containers to follow are the managed pods' that run a service of
// the desired state, with its ids and the release of their label.
func TestLogTargets(t *testing.T) {
	st := &desired.State{Namespaces: []desired.Namespace{{Name: "shop-prod", EnvID: "env-1",
		Services: []desired.Service{{Name: "api", ID: "svc-1", Release: 4}}}}}
	pod := func(name, svc, release string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop-prod", Labels: map[string]string{
			LabelManagedBy: ManagedBy, LabelService: svc, LabelRelease: release, LabelProcess: "web"}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "proxy"}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []*corev1.Pod{pod("api-web-r3-a", "api", "3", corev1.PodRunning), pod("api-web-r4-b", "api", "4", corev1.PodRunning),
		pod("api-web-r4-c", "api", "4", corev1.PodPending), pod("other-1", "other", "1", corev1.PodRunning)}
	got := logTargets(st, func(ns string, sel labels.Selector) []*corev1.Pod {
		if ns != "shop-prod" {
			return nil
		}
		return pods
	})
	if len(got) != 4 {
		t.Fatalf("%d containers, want app and proxy of the two running pods of api: %v", len(got), got)
	}
	k := streamKey{namespace: "shop-prod", pod: "api-web-r3-a", container: "proxy", env: "env-1", service: "svc-1", process: "web", release: 3}
	if got[k] == nil {
		t.Errorf("the older release's pod is missing: %v", got)
	}
	if logTargets(nil, nil) != nil {
		t.Error("targets without a state are known")
	}
}
