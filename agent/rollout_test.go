package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// Rollouts at a small size, on the fake clientset: stages reported once
// each, moved on by changes in the cluster (no resync), never started again
// by a resync, a restarted agent or the other replica, traffic kept on the
// old release until the new one is Ready, rolled back on timeout; and only
// what changed is written.

// recorder is a session that keeps the stages sent on it.
type recorder struct {
	mu     sync.Mutex
	stages []protocol.Stage
	wake   chan struct{}
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{}, 1)} }

func (r *recorder) send(typ string, body any) error {
	if typ != protocol.TypeStage {
		return nil
	}
	r.mu.Lock()
	r.stages = append(r.stages, body.(protocol.Stage))
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// of lists the stages reported for a deployment, in order.
func (r *recorder) of(dep string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.stages {
		if s.Deployment == dep {
			out = append(out, s.Stage)
		}
	}
	return out
}

// waitFor waits until a deployment's stages reach stage.
func (r *recorder) waitFor(t *testing.T, dep, stage string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !slices.Contains(r.of(dep), stage) {
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("%s never reported %s; reported %v", dep, stage, r.of(dep))
		}
	}
}

// testAgent is an agent leading over the fake cluster, with a recorder as
// its session: what a replica of the agent is between welcome and close.
func testAgent(t *testing.T, cs *fake.Clientset, timeout time.Duration) (*Agent, *recorder) {
	t.Helper()
	a, rec, stop := startTestAgent(t, cs, timeout)
	t.Cleanup(stop)
	return a, rec
}

// startTestAgent is testAgent that the test stops: a replica that lost
// its Lease.
func startTestAgent(t *testing.T, cs *fake.Clientset, timeout time.Duration) (*Agent, *recorder, func()) {
	t.Helper()
	a := New(Config{Server: "http://control-plane.test", TokenFile: "/dev/null", Identity: "test", RolloutTimeout: timeout},
		Same(cs), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	a.loadState(ctx)
	stop, err := a.watch(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rec := newRecorder()
	a.mu.Lock()
	a.cluster = testCluster
	a.applier = &Applier{Client: cs, Cache: a.cache, Cluster: testCluster, Concurrency: 4}
	a.conn = rec
	a.mu.Unlock()
	return a, rec, func() { cancel(); stop() }
}

// pass applies a state as a resync (or a new session) does: every
// service is checked.
func (a *Agent) pass(t *testing.T, st desired.State) Result {
	t.Helper()
	return a.applyAs(t, st, true)
}

// newState applies a state as a new state received does: the services
// it changed.
func (a *Agent) newState(t *testing.T, st desired.State) Result {
	t.Helper()
	return a.applyAs(t, st, false)
}

func (a *Agent) applyAs(t *testing.T, st desired.State, full bool) Result {
	t.Helper()
	a.mu.Lock()
	ap := a.applier
	a.mu.Unlock()
	settle(t, ap, ap.Client.(*fake.Clientset))
	res := a.applyState(context.Background(), ap, st, full)
	if len(res.Errors) > 0 {
		t.Fatalf("applying: %+v", res.Errors)
	}
	return res
}

// quiet waits until no reconcile can write what the cache has not yet
// caught up with: the cache holds what the fake holds, and every
// reconcile that might have read it before then is done. (A reconcile
// taken from the queue afterwards reads the settled cache. The fake keeps
// no resource versions, so without this a reconcile started by the
// agent's own earlier writes may write an object again later.)
func (a *Agent) quiet(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	ap := a.applier
	a.mu.Unlock()
	cs := ap.Client.(*fake.Clientset)
	testutil.Eventually(t, 10*time.Second, "the agent is quiet", func() (bool, string) {
		if d := unsettled(t, ap, cs); d != "" {
			return false, d
		}
		if n := a.reconciling.Load(); n > 0 {
			return false, fmt.Sprintf("%d reconciles under way", n)
		}
		// What those reconciles wrote is in the cache too.
		d := unsettled(t, ap, cs)
		return d == "", d
	})
}

// markReady plays the Deployment controller and kubelet: every pod of the
// Deployment is up to date and Ready.
func markReady(t *testing.T, cs *fake.Clientset, ns, name string) {
	t.Helper()
	ctx := context.Background()
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := ptrOr(d.Spec.Replicas, 1)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deployed(release int, dep string) desired.Service {
	s := testService(release)
	s.Deployment = model.DeploymentID(dep)
	return s
}

// writes counts the writes the fake received since its actions were
// cleared, and the lists.
func writes(cs *fake.Clientset) (writes, lists int) {
	for _, act := range cs.Actions() {
		switch act.GetVerb() {
		case "create", "update", "patch", "delete":
			writes++
		case "list":
			lists++
		}
	}
	return
}

var allStages = []string{stageStarting, stageProbing, stageSwitching, stageRetiring, stageSucceeded}

func TestRolloutFollowsTheClusterAndNeverStartsAgain(t *testing.T) {
	cs := fake.NewClientset()
	a, rec := testAgent(t, cs, time.Hour)
	st := testState(deployed(1, "d1"))
	a.pass(t, st)
	if got := rec.of("d1"); !slices.Equal(got, []string{stageStarting, stageProbing}) {
		t.Fatalf("after the apply: %v, want STARTING, PROBING", got)
	}
	// The pods get Ready: the watch moves the rollout on, no resync.
	markReady(t, cs, testNS, "api-web-r1")
	markReady(t, cs, testNS, "api-worker-r1")
	rec.waitFor(t, "d1", stageSucceeded)
	if got := rec.of("d1"); !slices.Equal(got, allStages) {
		t.Errorf("stages %v, want each once: %v", got, allStages)
	}

	// Three resyncs: nothing written, nothing listed, nothing reported.
	settle(t, a.applier, cs)
	cs.ClearActions()
	for range 3 {
		if res := a.pass(t, st); res.Written != 0 {
			t.Errorf("a resync wrote %d objects", res.Written)
		}
	}
	if w, l := writes(cs); w != 0 || l != 0 {
		t.Errorf("three resyncs made %d writes and %d lists, want none", w, l)
	}
	if got := rec.of("d1"); len(got) != len(allStages) {
		t.Errorf("after the resyncs: %v", got)
	}

	// A restarted agent, or the other replica after a leader change, finds
	// the rollout finished: it says so once, and starts nothing.
	b, rec2 := testAgent(t, cs, time.Hour)
	if res := b.pass(t, st); res.Written != 0 {
		t.Errorf("the new leader wrote %d objects", res.Written)
	}
	if got := rec2.of("d1"); !slices.Equal(got, []string{stageSucceeded}) {
		t.Errorf("the new leader reported %v, want SUCCEEDED only", got)
	}
}

func TestRolloutKeepsTrafficUntilReady(t *testing.T) {
	cs := fake.NewClientset()
	a, rec := testAgent(t, cs, time.Hour)
	a.pass(t, testState(deployed(1, "d1")))
	markReady(t, cs, testNS, "api-web-r1")
	markReady(t, cs, testNS, "api-worker-r1")
	rec.waitFor(t, "d1", stageSucceeded)

	a.pass(t, testState(deployed(2, "d2")))
	svc := func() string {
		s, err := cs.CoreV1().Services(testNS).Get(context.Background(), "api-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Spec.Selector[LabelRelease]
	}
	if got := svc(); got != "1" {
		t.Errorf("while release 2 starts, the Service routes to %s, want 1", got)
	}
	getDeployment(t, cs, testNS, "api-web-r1") // kept while traffic is on it
	// Each release reads its own variables: release 1's Secret stays while
	// its pods serve.
	for _, name := range []string{"api-env-r1", "api-env-r2"} {
		if _, err := cs.CoreV1().Secrets(testNS).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("while release 2 starts, Secret %s: %v", name, err)
		}
	}
	if got := rec.of("d2"); !slices.Equal(got, []string{stageStarting, stageProbing}) {
		t.Fatalf("d2: %v", got)
	}

	// The agent restarts mid-rollout: the new one does not start it again.
	b, rec2 := testAgent(t, cs, time.Hour)
	b.pass(t, testState(deployed(2, "d2")))
	if got := rec2.of("d2"); slices.Contains(got, stageStarting) {
		t.Errorf("the restarted agent started the rollout again: %v", got)
	}
	markReady(t, cs, testNS, "api-web-r2")
	markReady(t, cs, testNS, "api-worker-r2")
	rec2.waitFor(t, "d2", stageSucceeded)
	if got := svc(); got != "2" {
		t.Errorf("after release 2 got Ready, the Service routes to %s, want 2", got)
	}
	for _, name := range []string{"api-web-r1", "api-worker-r1"} {
		if _, err := cs.AppsV1().Deployments(testNS).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			t.Errorf("%s was not retired", name)
		}
	}
	// Its variables are retired with it, at once (not at the next pass).
	if _, err := cs.CoreV1().Secrets(testNS).Get(context.Background(), "api-env-r1", metav1.GetOptions{}); err == nil {
		t.Error("release 1's Secret api-env-r1 was not retired with it")
	}
	if _, err := cs.CoreV1().Secrets(testNS).Get(context.Background(), "api-env-r2", metav1.GetOptions{}); err != nil {
		t.Errorf("release 2's Secret: %v", err)
	}
}

func TestRolloutRolledBackStaysPinnedAcrossRestarts(t *testing.T) {
	cs := fake.NewClientset()
	a, rec := testAgent(t, cs, time.Hour)
	a.pass(t, testState(deployed(1, "d1")))
	markReady(t, cs, testNS, "api-web-r1")
	markReady(t, cs, testNS, "api-worker-r1")
	rec.waitFor(t, "d1", stageSucceeded)

	b, rec2 := testAgent(t, cs, 50*time.Millisecond)
	b.pass(t, testState(deployed(2, "d2")))
	rec2.waitFor(t, "d2", stageRolled) // the timeout rechecks it: no resync
	for _, name := range []string{"api-web-r2", "api-worker-r2"} {
		if _, err := cs.AppsV1().Deployments(testNS).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			t.Errorf("the failed release's %s was not removed", name)
		}
	}
	getDeployment(t, cs, testNS, "api-web-r1")

	// A restarted agent still holds the pin while the control plane has
	// not answered: it does not start release 2 again.
	c, rec3 := testAgent(t, cs, time.Hour)
	c.pass(t, testState(deployed(2, "d2")))
	if got := rec3.of("d2"); slices.Contains(got, stageStarting) {
		t.Errorf("after a restart the rolled back rollout started again: %v", got)
	}
	if _, err := cs.AppsV1().Deployments(testNS).Get(context.Background(), "api-web-r2", metav1.GetOptions{}); err == nil {
		t.Error("after a restart the failed release was applied again")
	}
}

// A service that leaves the state leaves nothing behind: the Deployment
// its traffic was on (a finished rollout sets the route) and the release
// pinned after a rollback go with its other objects; the service beside it
// keeps everything, its traffic Deployment included.
func TestDeletedServiceIsPrunedWhole(t *testing.T) {
	cs := fake.NewClientset()
	first, rec, stopFirst := startTestAgent(t, cs, time.Hour)
	other := deployed(1, "o1")
	other.Name, other.ID = "shop", "svc-shop"
	first.pass(t, testState(deployed(1, "d1"), other))
	for _, name := range []string{"api-web-r1", "api-worker-r1", "shop-web-r1", "shop-worker-r1"} {
		markReady(t, cs, testNS, name)
	}
	rec.waitFor(t, "d1", stageSucceeded)
	rec.waitFor(t, "o1", stageSucceeded)
	// api's release 2 fails (the next leader waits 50 ms for its pods):
	// release 1 is pinned in its place.
	first.quiet(t)
	stopFirst()
	a, rec := testAgent(t, cs, 50*time.Millisecond)
	a.pass(t, testState(deployed(2, "d2"), other))
	rec.waitFor(t, "d2", stageRolled)
	a.ro.mu.Lock()
	_, pinned := a.ro.pins[ServiceKey(testNS, "api")]
	a.ro.mu.Unlock()
	if !pinned {
		t.Fatal("the rolled back release is not pinned")
	}

	// api is deleted: the state holds shop alone.
	a.quiet(t)
	res := a.newState(t, testState(other))
	if res.Pruned != 5 {
		t.Errorf("pruned %d objects, want api's 5 (two Deployments, the Service, the Secret, the Ingress)", res.Pruned)
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: LabelService + "=api"}
	deps, _ := cs.AppsV1().Deployments(testNS).List(ctx, sel)
	svcs, _ := cs.CoreV1().Services(testNS).List(ctx, sel)
	secrets, _ := cs.CoreV1().Secrets(testNS).List(ctx, sel)
	if n := len(deps.Items) + len(svcs.Items) + len(secrets.Items); n != 0 {
		t.Errorf("%d objects of the deleted service are left: %d Deployments, %d Services, %d Secrets", n,
			len(deps.Items), len(svcs.Items), len(secrets.Items))
	}
	for _, name := range []string{"shop-web-r1", "shop-worker-r1"} {
		getDeployment(t, cs, testNS, name)
	}
	a.ro.mu.Lock()
	_, pinned = a.ro.pins[ServiceKey(testNS, "api")]
	a.ro.mu.Unlock()
	if pinned {
		t.Error("the deleted service's pin is kept")
	}
	if cm, err := cs.CoreV1().ConfigMaps(a.cfg.Namespace).Get(ctx, a.stateConfigMap(), metav1.GetOptions{}); err != nil ||
		cm.Data["pins"] != "{}" {
		t.Errorf("the state ConfigMap's pins: %v %v", cm.Data["pins"], err)
	}
}

func TestOnlyChangesAreWritten(t *testing.T) {
	cs := fake.NewClientset()
	a, rec := testAgent(t, cs, time.Hour)
	other := deployed(1, "d-other")
	other.Name, other.ID = "web", "svc-web"
	other.Domains = nil
	all := a.pass(t, testState(deployed(1, "d1"), other))
	for _, n := range []string{"api-web-r1", "api-worker-r1", "web-web-r1", "web-worker-r1"} {
		markReady(t, cs, testNS, n)
	}
	rec.waitFor(t, "d1", stageSucceeded)
	rec.waitFor(t, "d-other", stageSucceeded)

	// One variable of one service: its Secret and its two Deployments
	// (their pods roll), nothing of the other service.
	changed := deployed(1, "d1")
	changed.Env[0].Value = "debug"
	settle(t, a.applier, cs)
	cs.ClearActions()
	st := testState(changed, other)
	res := a.newState(t, st)
	if res.Written != 3 {
		t.Errorf("one variable changed: the pass wrote %d objects, want 3 (Secret and two Deployments)", res.Written)
	}
	// The new state costs the changed service's objects (and the
	// namespace) only: the other service is left to the cache.
	if want := 1 + len(a.applier.objects(st.Namespaces[0], changed)); res.Checked != want || res.Applied != all.Applied {
		t.Errorf("one variable changed: checked %d objects (%d hold the state), want %d (%d)", res.Checked, res.Applied, want, all.Applied)
	}
	// (A reconcile after the pass may write one of them again before the
	// fake's watch shows the first write: the fake keeps no resource
	// versions. What matters is which objects are written.)
	written := map[string]bool{}
	for _, act := range cs.Actions() {
		switch act.GetVerb() {
		case "create", "update", "patch", "delete":
			written[act.GetResource().Resource+"/"+act.(interface{ GetName() string }).GetName()] = true
		}
	}
	want := map[string]bool{"secrets/api-env-r1": true, "deployments/api-web-r1": true, "deployments/api-worker-r1": true}
	if !reflect.DeepEqual(written, want) {
		t.Errorf("one variable changed: wrote %v, want %v", written, want)
	}
	if got := rec.of("d1"); slices.Contains(got[len(allStages):], stageStarting) {
		t.Errorf("a variable change restarted the rollout: %v", got)
	}

	// Someone edits the Service behind the agent's back: the watch sees
	// it and the agent puts it back, writing that object only.
	a.quiet(t)
	cs.ClearActions()
	s, err := cs.CoreV1().Services(testNS).Get(context.Background(), "api-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Selector[LabelRelease] = "7"
	if _, err := cs.CoreV1().Services(testNS).Update(context.Background(), s, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	// The watch moves on its own goroutine.
	testutil.Eventually(t, 10*time.Second, "the edited Service is put back", func() (bool, string) {
		s, err := cs.CoreV1().Services(testNS).Get(context.Background(), "api-web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Spec.Selector[LabelRelease] == "1", fmt.Sprint(s.Spec.Selector)
	})
	// Only that object is written. (The fake keeps no resource versions,
	// so a second reconcile before its watch catches up may write it again;
	// against an API server the agent's own write is taken in at once.)
	patched := map[string]int{}
	for _, act := range cs.Actions() {
		if act.GetVerb() == "patch" {
			patched[act.GetResource().Resource+"/"+act.(interface{ GetName() string }).GetName()]++
		}
	}
	if len(patched) != 1 || patched["services/api-web"] == 0 {
		t.Errorf("putting back one edited Service wrote %v, want that Service only", patched)
	}

	// The service the new state left to the cache is put back too.
	d, err := cs.AppsV1().Deployments(testNS).Get(context.Background(), "web-worker-r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "evil/miner:latest"
	if _, err := cs.AppsV1().Deployments(testNS).Update(context.Background(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the edited Deployment of the service the new state did not change is put back", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(testNS).Get(context.Background(), "web-worker-r1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		return img == testImage, img
	})

	// A resync checks every object again, and writes none.
	a.quiet(t)
	if res := a.pass(t, st); res.Checked != all.Checked || res.Written != 0 {
		t.Errorf("a resync checked %d objects and wrote %d, want %d and 0", res.Checked, res.Written, all.Checked)
	}
}

// A first pass writes every new service's Secret, Services and Ingress
// before any Deployment, though its own writes wake the watch for the
// services it has yet to step; a service already in the cluster keeps
// its own order (Secret, Deployments, Services).
func TestNewServicesWorkloadsLast(t *testing.T) {
	cs := fake.NewClientset()
	// Writes take a moment, as an API server's do: time for the watch to
	// bring the first ones back while the pass goes on.
	cs.PrependReactor("patch", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(2 * time.Millisecond)
		return false, nil, nil
	})
	a, _ := testAgent(t, cs, time.Hour)
	var svcs []desired.Service
	for i := range 30 {
		s := deployed(1, fmt.Sprintf("d%02d", i))
		s.Name, s.ID = fmt.Sprintf("s%02d", i), model.ServiceID(fmt.Sprintf("svc-%02d", i))
		s.Domains = []desired.Domain{{Host: s.Name + ".example.com", Process: "web", Port: 8080}}
		svcs = append(svcs, s)
	}
	a.pass(t, testState(svcs...))
	kinds := func() (order []string) {
		for _, act := range cs.Actions() {
			if act.GetVerb() == "patch" {
				order = append(order, act.GetResource().Resource)
			}
		}
		return order
	}
	order := kinds()
	firstDeployment := slices.Index(order, "deployments")
	lastOther := -1
	for i, r := range order {
		if r == "secrets" || r == "services" || r == "ingresses" {
			lastOther = i
		}
	}
	if n := len(order); n != 1+30*5 {
		t.Fatalf("the first pass wrote %d objects, want %d: %v", n, 1+30*5, order)
	}
	if firstDeployment < lastOther {
		t.Errorf("a Deployment was written (at %d) before the last Secret, Service or Ingress (at %d): %v", firstDeployment, lastOther, order)
	}

	// A new release of a service already there: its Secret first, then
	// its Deployments, not held back behind anything.
	a.quiet(t)
	cs.ClearActions()
	next := slices.Clone(svcs)
	next[0] = deployed(2, "d00-2")
	next[0].Name, next[0].ID, next[0].Domains = svcs[0].Name, svcs[0].ID, svcs[0].Domains
	next[0].Env[0].Value = "debug"
	a.newState(t, testState(next...))
	if got := kinds(); !slices.Equal(got[:3], []string{"secrets", "deployments", "deployments"}) {
		t.Errorf("a new release wrote %v, want its Secret, then its two Deployments", got)
	}
}

// runPods plays the ReplicaSet controller and the kubelet for a
// Deployment's current template: n pods of it, Ready or not. The
// Deployment's status is left alone, as when the controllers lag.
func runPods(t *testing.T, cs *fake.Clientset, ns, name string, n int, ready bool) []string {
	t.Helper()
	ctx := context.Background()
	d := getDeployment(t, cs, ns, name)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	running, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, len(running.Items)+i),
				Namespace: ns, Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
			Spec: d.Spec.Template.Spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, Reason: "ContainersNotReady"}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	return names
}

// A rollout is SUCCEEDED as soon as its pods are Ready, though the
// Deployment's status has not caught up; a pod of an earlier template
// still running holds it back.
func TestRolloutFollowsPods(t *testing.T) {
	cs := fake.NewClientset()
	a, rec := testAgent(t, cs, time.Hour)
	svc := testService(1)
	svc.Processes = svc.Processes[:1] // web, 2 replicas
	svc.Deployment = "d1"
	a.pass(t, testState(svc))
	// A pod of the template before a variable changed, not yet gone
	// (made first: one Ready pod of two wanted finishes nothing).
	stale := runPods(t, cs, testNS, "api-web-r1", 1, true)[0]
	pod, err := cs.CoreV1().Pods(testNS).Get(context.Background(), stale, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{AnnotationEnv: "0123456789abcdef"}
	if _, err := cs.CoreV1().Pods(testNS).Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPods(t, cs, testNS, "api-web-r1", 1, true)
	unready := runPods(t, cs, testNS, "api-web-r1", 1, false)[0]
	a.quiet(t)
	if got := rec.of("d1"); slices.Contains(got, stageSucceeded) {
		t.Fatalf("SUCCEEDED with one of two pods Ready: %v", got)
	}

	pod, err = cs.CoreV1().Pods(testNS).Get(context.Background(), unready, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := cs.CoreV1().Pods(testNS).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.quiet(t)
	if got := rec.of("d1"); slices.Contains(got, stageSucceeded) {
		t.Fatalf("SUCCEEDED while a pod of an earlier template runs: %v", got)
	}

	if err := cs.CoreV1().Pods(testNS).Delete(context.Background(), stale, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "d1", stageSucceeded)
	if d := getDeployment(t, cs, testNS, "api-web-r1"); d.Status.ReadyReplicas != 0 {
		t.Fatalf("the test meant the Deployment's status to lag; it says %d ready", d.Status.ReadyReplicas)
	}
}

// A change in the cluster that comes while a pass has yet to step its
// service is not lost when the new state left that service as it was:
// the pass reconciles it.
func TestChangeDuringPassNotLost(t *testing.T) {
	cs := fake.NewClientset()
	a, rec := testAgent(t, cs, time.Hour)
	a.mu.Lock()
	a.applier.Concurrency = 1 // the services are stepped in the state's order
	a.mu.Unlock()
	other := deployed(1, "d-other")
	other.Name, other.ID, other.Domains = "web", "svc-web", nil
	api := deployed(1, "d-api")
	a.pass(t, testState(other, api))
	markReady(t, cs, testNS, "web-web-r1")
	markReady(t, cs, testNS, "web-worker-r1")
	rec.waitFor(t, "d-other", stageSucceeded)
	a.quiet(t)

	// A new state changes "web" only. Its pass waits for web (whose lock
	// the test holds: a reconcile of web under way), and meanwhile api's
	// pods get Ready.
	unlock := a.lock(ServiceKey(testNS, "web"))
	changed := other
	changed.Env = testEnv()
	changed.Env[0].Value = "debug"
	done := make(chan Result)
	go func() { done <- a.applyState(context.Background(), a.applier, testState(changed, api), false) }()
	testutil.Eventually(t, 10*time.Second, "the pass has api to step", func() (bool, string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.pending[ServiceKey(testNS, "api")]
		return ok, fmt.Sprint(a.pending)
	})
	markReady(t, cs, testNS, "api-web-r1")
	markReady(t, cs, testNS, "api-worker-r1")
	testutil.Eventually(t, 10*time.Second, "the watch leaves api to the pass", func() (bool, string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.pending[ServiceKey(testNS, "api")], fmt.Sprint(a.pending)
	})
	unlock()
	if res := <-done; len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	rec.waitFor(t, "d-api", stageSucceeded)
}
