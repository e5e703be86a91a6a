package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

const (
	testCluster = "c-1"
	testNS      = "shop-prod"
	testImage   = "registry.example.com/shop/api@sha256:0123abcd"
	secretValue = "s3cret-Value-XYZ"
)

func intp(i int) *int       { return &i }
func strp(s string) *string { return &s }
func int32p(i int32) *int32 { return &i }

// newApplier is an Applier over a fake clientset, with its cache watching
// the fake until the test ends.
func newApplier(t testing.TB) (*Applier, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	c := NewCache(cs, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); c.Shutdown() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &Applier{Client: cs, Cache: c, Cluster: testCluster}, cs
}

// settle waits until the cache shows every managed object the fake holds,
// at its current version (and nothing more): the agent's informers do
// this before it serves. It reads the fake's tracker, so that it records
// no action of its own.
func settle(t testing.TB, a *Applier, cs *fake.Clientset) {
	t.Helper()
	// The fake's watch delivers on its own goroutine.
	testutil.Eventually(t, 10*time.Second, "the cache catches up with the cluster", func() (bool, string) {
		d := unsettled(t, a, cs)
		return d == "", d
	})
}

// unsettled tells how the cache differs from the fake's objects ("" when
// it does not).
func unsettled(t testing.TB, a *Applier, cs *fake.Clientset) string {
	t.Helper()
	kinds := []struct {
		gvr schema.GroupVersionResource
		gvk schema.GroupVersionKind
		inf cache.SharedIndexInformer
	}{
		{appsv1.SchemeGroupVersion.WithResource("deployments"), appsv1.SchemeGroupVersion.WithKind("Deployment"), a.Cache.deps},
		{corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), a.Cache.svcs},
		{corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret"), a.Cache.secrets},
		{networkingv1.SchemeGroupVersion.WithResource("ingresses"), networkingv1.SchemeGroupVersion.WithKind("Ingress"), a.Cache.ings},
	}
	versions := func(objs []runtime.Object) map[string]string {
		m := map[string]string{}
		for _, o := range objs {
			mo := o.(metav1.Object)
			if mo.GetLabels()[LabelManagedBy] == ManagedBy {
				// The fake keeps no resource versions: the content is
				// what tells whether the watch has delivered a write.
				c := o.DeepCopyObject()
				c.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				b, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				m[mo.GetNamespace()+"/"+mo.GetName()] = mo.GetResourceVersion() + " " + string(b)
			}
		}
		return m
	}
	for _, k := range kinds {
		l, err := cs.Tracker().List(k.gvr, k.gvk, "")
		if err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(l)
		var cached []runtime.Object
		for _, o := range k.inf.GetStore().List() {
			cached = append(cached, o.(runtime.Object))
		}
		if want, got := versions(items), versions(cached); !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("\nwant %v\ngot  %v", want, got)
		}
	}
	return ""
}

func testEnv() []desired.EnvVar {
	return []desired.EnvVar{
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "TOKEN", Value: secretValue, Secret: true, Version: "v1"},
	}
}

// testService is service "api" of the given release: a web process with a
// port, an HTTP readiness probe and a command, a worker without a port, two
// variables and one domain.
func testService(release int) desired.Service {
	return desired.Service{
		Name:    "api",
		ID:      model.ServiceID("svc-api"),
		Release: release,
		Image:   testImage,
		Processes: []desired.Process{
			{Name: "web", Command: []string{"./server", "--port", "8080"}, Replicas: 2, Port: intp(8080),
				Probe: &model.Probe{Path: strp("/healthz"), Port: 8080, InitialDelaySeconds: 5, PeriodSeconds: 10}},
			{Name: "worker", Command: []string{"./worker"}, Replicas: 1},
		},
		Env:     testEnv(),
		Domains: []desired.Domain{{Host: "api.example.com", Process: "web", Port: 8080}},
	}
}

func testState(svcs ...desired.Service) desired.State {
	return desired.State{
		Cluster: model.ClusterID(testCluster),
		Namespaces: []desired.Namespace{{
			Name: testNS, Project: "shop", Environment: "prod", Services: svcs,
		}},
	}
}

func mustApply(t *testing.T, a *Applier, st desired.State) Result {
	t.Helper()
	settle(t, a, a.Client.(*fake.Clientset))
	res := a.Apply(context.Background(), st)
	if len(res.Errors) > 0 {
		t.Fatalf("Apply: unexpected errors: %+v", res.Errors)
	}
	return res
}

func getDeployment(t *testing.T, cs *fake.Clientset, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Deployment %s/%s: %v", ns, name, err)
	}
	return d
}

func assertGone(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s: want NotFound, got %v", what, err)
	}
}

func managedLabels(service string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelCluster: testCluster, LabelProject: "shop", LabelEnv: "prod"}
	if service != "" {
		l[LabelService] = service
	}
	return l
}

// TestFakeSupportsApply makes sure the fake clientset really does
// server-side apply (with field management) and label-selected lists, which
// the other tests rely on.
func TestFakeSupportsApply(t *testing.T) {
	a, cs := newApplier(t)
	mustApply(t, a, testState(testService(1)))
	d := getDeployment(t, cs, testNS, "api-web-r1")
	found := false
	for _, mf := range d.ManagedFields {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			found = true
		}
	}
	if !found {
		t.Errorf("Deployment has no Apply managed fields for %s: %+v", FieldManager, d.ManagedFields)
	}
	l, err := cs.AppsV1().Deployments("").List(context.Background(), metav1.ListOptions{LabelSelector: LabelProcess + "=worker"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "api-worker-r1" {
		t.Errorf("label-selected list: got %d items %v", len(l.Items), l.Items)
	}
}

func TestApplyCreatesObjects(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	res := mustApply(t, a, testState(testService(3)))
	// Namespace, Secret, two Deployments, one Service, one Ingress.
	if res.Applied != 6 || res.Pruned != 0 {
		t.Errorf("Result: Applied %d Pruned %d, want 6 and 0", res.Applied, res.Pruned)
	}

	ns, err := cs.CoreV1().Namespaces().Get(ctx, testNS, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Namespace: %v", err)
	}
	if !reflect.DeepEqual(ns.Labels, managedLabels("")) {
		t.Errorf("Namespace labels = %v, want %v", ns.Labels, managedLabels(""))
	}

	// Deployment of web.
	d := getDeployment(t, cs, testNS, "api-web-r3")
	wantLabels := managedLabels("api")
	wantLabels[LabelProcess] = "web"
	wantLabels[LabelRelease] = "3"
	if !reflect.DeepEqual(d.Labels, wantLabels) {
		t.Errorf("Deployment labels = %v, want %v", d.Labels, wantLabels)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	wantSel := map[string]string{LabelManagedBy: ManagedBy, LabelService: "api", LabelProcess: "web", LabelRelease: "3"}
	if d.Spec.Selector == nil || !reflect.DeepEqual(d.Spec.Selector.MatchLabels, wantSel) {
		t.Errorf("selector = %v, want %v", d.Spec.Selector, wantSel)
	}
	if !reflect.DeepEqual(d.Spec.Template.Labels, wantLabels) {
		t.Errorf("pod template labels = %v, want %v", d.Spec.Template.Labels, wantLabels)
	}
	for k, v := range wantSel {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod template label %s = %q, the selector needs %q", k, d.Spec.Template.Labels[k], v)
		}
	}
	if got, want := d.Spec.Template.Annotations[AnnotationEnv], envFingerprint(testEnv()); got != want || len(got) != 16 {
		t.Errorf("env-version annotation = %q, want %q (16 hex digits)", got, want)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != "web" || c.Image != testImage {
		t.Errorf("container %q image %q, want web and %q", c.Name, c.Image, testImage)
	}
	if want := []string{"./server", "--port", "8080"}; !slices.Equal(c.Command, want) {
		t.Errorf("command = %q, want %q", c.Command, want)
	}
	if want := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}; !reflect.DeepEqual(c.Ports, want) {
		t.Errorf("ports = %+v, want %+v", c.Ports, want)
	}
	rp := c.ReadinessProbe
	if rp == nil || rp.HTTPGet == nil {
		t.Fatalf("readiness probe = %+v, want an httpGet", rp)
	}
	if rp.HTTPGet.Path != "/healthz" || rp.HTTPGet.Port.IntValue() != 8080 || rp.TCPSocket != nil ||
		rp.InitialDelaySeconds != 5 || rp.PeriodSeconds != 10 {
		t.Errorf("readiness probe = %+v / httpGet %+v", rp, rp.HTTPGet)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "api-env-r3" {
		t.Errorf("envFrom = %+v, want release 3's secret api-env-r3", c.EnvFrom)
	}
	if len(c.Env) != 0 {
		t.Errorf("env = %+v, want none (values come from the Secret)", c.Env)
	}

	// Deployment of worker: no port, no probe, same env.
	w := getDeployment(t, cs, testNS, "api-worker-r3")
	if w.Spec.Replicas == nil || *w.Spec.Replicas != 1 {
		t.Errorf("worker replicas = %v, want 1", w.Spec.Replicas)
	}
	wc := w.Spec.Template.Spec.Containers[0]
	if wc.Name != "worker" || len(wc.Ports) != 0 || wc.ReadinessProbe != nil || !slices.Equal(wc.Command, []string{"./worker"}) {
		t.Errorf("worker container = %+v", wc)
	}
	if w.Spec.Selector.MatchLabels[LabelProcess] != "worker" || w.Spec.Selector.MatchLabels[LabelRelease] != "3" {
		t.Errorf("worker selector = %v", w.Spec.Selector.MatchLabels)
	}
	if w.Spec.Template.Annotations[AnnotationEnv] != d.Spec.Template.Annotations[AnnotationEnv] {
		t.Errorf("processes of one service have different env versions: %q and %q",
			w.Spec.Template.Annotations[AnnotationEnv], d.Spec.Template.Annotations[AnnotationEnv])
	}

	// Services: one for web, none for worker.
	svc, err := cs.CoreV1().Services(testNS).Get(ctx, "api-web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Service api-web: %v", err)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, wantSel) {
		t.Errorf("Service selector = %v, want %v", svc.Spec.Selector, wantSel)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 ||
		svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("Service ports = %+v", svc.Spec.Ports)
	}
	if svc.Labels[LabelProcess] != "web" || svc.Labels[LabelCluster] != testCluster || svc.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("Service labels = %v", svc.Labels)
	}
	_, err = cs.CoreV1().Services(testNS).Get(ctx, "api-worker", metav1.GetOptions{})
	assertGone(t, "Service api-worker", err)
	if l, _ := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{}); len(l.Items) != 1 {
		t.Errorf("%d Services, want 1", len(l.Items))
	}

	// Ingress.
	ing, err := cs.NetworkingV1().Ingresses(testNS).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Ingress api: %v", err)
	}
	if !reflect.DeepEqual(ing.Labels, managedLabels("api")) {
		t.Errorf("Ingress labels = %v", ing.Labels)
	}
	if len(ing.Spec.Rules) != 1 {
		t.Fatalf("Ingress rules = %+v", ing.Spec.Rules)
	}
	r := ing.Spec.Rules[0]
	if r.Host != "api.example.com" || r.HTTP == nil || len(r.HTTP.Paths) != 1 {
		t.Fatalf("Ingress rule = %+v", r)
	}
	p := r.HTTP.Paths[0]
	if p.Path != "/" || p.PathType == nil || *p.PathType != networkingv1.PathTypePrefix ||
		p.Backend.Service == nil || p.Backend.Service.Name != "api-web" || p.Backend.Service.Port.Number != 8080 {
		t.Errorf("Ingress path = %+v backend %+v", p, p.Backend.Service)
	}

	// Secret.
	sec, err := cs.CoreV1().Secrets(testNS).Get(ctx, "api-env-r3", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Secret api-env-r3: %v", err)
	}
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret type = %q", sec.Type)
	}
	wantData := map[string][]byte{"LOG_LEVEL": []byte("info"), "TOKEN": []byte(secretValue)}
	if !reflect.DeepEqual(sec.Data, wantData) {
		t.Errorf("Secret data = %q, want %q", sec.Data, wantData)
	}
	if !reflect.DeepEqual(sec.Labels, with(managedLabels("api"), LabelRelease, "3")) {
		t.Errorf("Secret labels = %v", sec.Labels)
	}
}

func TestApplyTCPProbeAndNoEnv(t *testing.T) {
	a, cs := newApplier(t)
	svc := testService(1)
	svc.Env = nil
	svc.Processes[0].Probe = &model.Probe{Port: 9000, PeriodSeconds: 3}
	res := mustApply(t, a, testState(svc))
	if res.Applied != 5 { // no Secret
		t.Errorf("Applied = %d, want 5", res.Applied)
	}
	_, err := cs.CoreV1().Secrets(testNS).Get(context.Background(), "api-env-r1", metav1.GetOptions{})
	assertGone(t, "Secret without variables", err)
	c := getDeployment(t, cs, testNS, "api-web-r1").Spec.Template.Spec.Containers[0]
	if len(c.EnvFrom) != 0 {
		t.Errorf("envFrom = %+v, want none without variables", c.EnvFrom)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil || c.ReadinessProbe.HTTPGet != nil ||
		c.ReadinessProbe.TCPSocket.Port.IntValue() != 9000 || c.ReadinessProbe.PeriodSeconds != 3 {
		t.Errorf("readiness probe = %+v, want tcpSocket 9000", c.ReadinessProbe)
	}
}

func TestEnvVersionAnnotation(t *testing.T) {
	a, cs := newApplier(t)
	version := func(env []desired.EnvVar) string {
		t.Helper()
		svc := testService(3)
		svc.Env = env
		mustApply(t, a, testState(svc))
		d := getDeployment(t, cs, testNS, "api-web-r3")
		v := d.Spec.Template.Annotations[AnnotationEnv]
		if v == "" {
			t.Fatalf("no %s annotation", AnnotationEnv)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secretValue) || strings.Contains(string(b), "s3cret") {
			t.Errorf("the Deployment contains the secret value: %s", b)
		}
		return v
	}

	base := version(testEnv())
	if again := version(testEnv()); again != base {
		t.Errorf("unchanged variables: version %q then %q", base, again)
	}

	plain := testEnv()
	plain[0].Value = "debug"
	vPlain := version(plain)
	if vPlain == base {
		t.Errorf("changing a plain value kept the version %q", base)
	}

	secretVer := testEnv()
	secretVer[1].Version = "v2"
	secretVer[1].Value = "another-s3cret"
	vSecret := version(secretVer)
	if vSecret == base || vSecret == vPlain {
		t.Errorf("changing a secret's version: version %q (base %q, plain change %q)", vSecret, base, vPlain)
	}

	// The secret's value counts only through its version.
	sameVer := testEnv()
	sameVer[1].Value = "rotated-s3cret"
	if v := version(sameVer); v != base {
		t.Errorf("a secret value with the same version changed the version: %q, want %q", v, base)
	}

	added := append(testEnv(), desired.EnvVar{Name: "NEW", Value: "x"})
	if v := version(added); v == base {
		t.Errorf("adding a variable kept the version %q", base)
	}

	// Back to the start: the same version as first.
	if v := version(testEnv()); v != base {
		t.Errorf("original variables again: version %q, want %q", v, base)
	}

	if got := envFingerprint(testEnv()); strings.Contains(got, secretValue) {
		t.Errorf("fingerprint %q contains the secret", got)
	}
}

func TestApplyNewReleasePrunesOld(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	mustApply(t, a, testState(testService(3)))
	res := mustApply(t, a, testState(testService(4)))
	if res.Pruned != 3 {
		t.Errorf("Pruned = %d, want 3 (api-web-r3, api-worker-r3 and release 3's Secret api-env-r3)", res.Pruned)
	}
	if res.Applied != 6 {
		t.Errorf("Applied = %d, want 6", res.Applied)
	}
	getDeployment(t, cs, testNS, "api-web-r4")
	getDeployment(t, cs, testNS, "api-worker-r4")
	_, err := cs.AppsV1().Deployments(testNS).Get(ctx, "api-web-r3", metav1.GetOptions{})
	assertGone(t, "Deployment api-web-r3", err)
	_, err = cs.AppsV1().Deployments(testNS).Get(ctx, "api-worker-r3", metav1.GetOptions{})
	assertGone(t, "Deployment api-worker-r3", err)

	svc, err := cs.CoreV1().Services(testNS).Get(ctx, "api-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector[LabelRelease] != "4" {
		t.Errorf("Service selector release = %q, want 4", svc.Spec.Selector[LabelRelease])
	}
	if _, err := cs.CoreV1().Secrets(testNS).Get(ctx, "api-env-r4", metav1.GetOptions{}); err != nil {
		t.Errorf("Secret api-env-r4: %v", err)
	}
	_, err = cs.CoreV1().Secrets(testNS).Get(ctx, "api-env-r3", metav1.GetOptions{})
	assertGone(t, "release 3's Secret api-env-r3", err)
	if _, err := cs.NetworkingV1().Ingresses(testNS).Get(ctx, "api", metav1.GetOptions{}); err != nil {
		t.Errorf("Ingress api: %v", err)
	}
	l, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range l.Items {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	if want := []string{"api-web-r4", "api-worker-r4"}; !slices.Equal(names, want) {
		t.Errorf("Deployments = %v, want %v", names, want)
	}
}

func TestApplyPrunesRemovedParts(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	mustApply(t, a, testState(testService(3)))

	// No worker, no domain, no variables: its Deployment, the Ingress and
	// the Secret go.
	svc := testService(3)
	svc.Processes = svc.Processes[:1]
	svc.Domains = nil
	svc.Env = nil
	res := mustApply(t, a, testState(svc))
	if res.Pruned != 3 {
		t.Errorf("Pruned = %d, want 3", res.Pruned)
	}
	_, err := cs.AppsV1().Deployments(testNS).Get(ctx, "api-worker-r3", metav1.GetOptions{})
	assertGone(t, "Deployment api-worker-r3", err)
	_, err = cs.NetworkingV1().Ingresses(testNS).Get(ctx, "api", metav1.GetOptions{})
	assertGone(t, "Ingress api", err)
	_, err = cs.CoreV1().Secrets(testNS).Get(ctx, "api-env-r3", metav1.GetOptions{})
	assertGone(t, "Secret api-env-r3", err)
	getDeployment(t, cs, testNS, "api-web-r3")

	// The namespace leaves the state: everything in it goes, except the
	// namespace itself.
	res = mustApply(t, a, desired.State{Cluster: testCluster})
	if res.Pruned != 2 || res.Applied != 0 {
		t.Errorf("empty state: Applied %d Pruned %d, want 0 and 2", res.Applied, res.Pruned)
	}
	_, err = cs.AppsV1().Deployments(testNS).Get(ctx, "api-web-r3", metav1.GetOptions{})
	assertGone(t, "Deployment api-web-r3", err)
	_, err = cs.CoreV1().Services(testNS).Get(ctx, "api-web", metav1.GetOptions{})
	assertGone(t, "Service api-web", err)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, testNS, metav1.GetOptions{}); err != nil {
		t.Errorf("the Namespace was deleted: %v", err)
	}
}

func objMeta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

func TestPruneLeavesOthersAlone(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	mine := func(service string) map[string]string {
		return map[string]string{LabelManagedBy: ManagedBy, LabelCluster: testCluster, LabelService: service}
	}
	create := func(obj runtime.Object) {
		t.Helper()
		var err error
		switch o := obj.(type) {
		case *appsv1.Deployment:
			_, err = cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = cs.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *networkingv1.Ingress:
			_, err = cs.NetworkingV1().Ingresses(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
	// Not managed by the agent at all.
	create(&appsv1.Deployment{ObjectMeta: objMeta(testNS, "hand-made", map[string]string{LabelCluster: testCluster, LabelService: "api"})})
	create(&corev1.Secret{ObjectMeta: objMeta(testNS, "hand-made", nil)})
	// Managed, but for another cluster.
	other := map[string]string{LabelManagedBy: ManagedBy, LabelCluster: "c-2", LabelService: "api"}
	create(&appsv1.Deployment{ObjectMeta: objMeta(testNS, "api-web-r1", other)})
	create(&corev1.Service{ObjectMeta: objMeta(testNS, "api-old", other)})
	// Managed by this cluster's agent for a held service.
	create(&appsv1.Deployment{ObjectMeta: objMeta(testNS, "held-web-r7", mine("held"))})
	create(&corev1.Service{ObjectMeta: objMeta(testNS, "held-web", mine("held"))})
	create(&corev1.Secret{ObjectMeta: objMeta(testNS, "held-env", mine("held"))})
	create(&networkingv1.Ingress{ObjectMeta: objMeta(testNS, "held", mine("held"))})
	// Prunable: a service gone from the state, and a service of the held
	// name in a namespace where it is not held.
	create(&appsv1.Deployment{ObjectMeta: objMeta(testNS, "gone-web-r2", mine("gone"))})
	create(&corev1.Service{ObjectMeta: objMeta("elsewhere", "held-web", mine("held"))})

	st := testState(testService(3))
	st.Namespaces[0].Held = []desired.Held{{Name: "held", Reason: "secret TOKEN cannot be opened"}}
	res := mustApply(t, a, st)
	if res.Pruned != 2 {
		t.Errorf("Pruned = %d, want 2", res.Pruned)
	}

	_, err := cs.AppsV1().Deployments(testNS).Get(ctx, "gone-web-r2", metav1.GetOptions{})
	assertGone(t, "Deployment of a service gone", err)
	_, err = cs.CoreV1().Services("elsewhere").Get(ctx, "held-web", metav1.GetOptions{})
	assertGone(t, "Service of a service held only in another namespace", err)

	for _, name := range []string{"hand-made", "api-web-r1", "held-web-r7", "api-web-r3", "api-worker-r3"} {
		if _, err := cs.AppsV1().Deployments(testNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Deployment %s: %v", name, err)
		}
	}
	for _, name := range []string{"api-old", "held-web", "api-web"} {
		if _, err := cs.CoreV1().Services(testNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}
	for _, name := range []string{"hand-made", "held-env", "api-env-r3"} {
		if _, err := cs.CoreV1().Secrets(testNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Secret %s: %v", name, err)
		}
	}
	for _, name := range []string{"held", "api"} {
		if _, err := cs.NetworkingV1().Ingresses(testNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Ingress %s: %v", name, err)
		}
	}
	// The other cluster's Deployment was not taken over either.
	if d := getDeployment(t, cs, testNS, "api-web-r1"); d.Labels[LabelCluster] != "c-2" {
		t.Errorf("the other cluster's Deployment was changed: %v", d.Labels)
	}
}

var errInjected = errors.New("injected apply failure")

// failApply makes server-side applies of the named object of resource
// fail; it counts the failures.
func failApply(cs *fake.Clientset, resource, name string, count *int) {
	cs.PrependReactor("patch", resource, func(action k8stesting.Action) (bool, runtime.Object, error) {
		pa, ok := action.(k8stesting.PatchAction)
		if !ok || pa.GetPatchType() != types.ApplyPatchType || pa.GetName() != name {
			return false, nil, nil
		}
		*count++
		return true, nil, errInjected
	})
}

func TestApplyFailurePrunesNothing(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	mustApply(t, a, testState(testService(3)))

	failures := 0
	failApply(cs, "deployments", "api-web-r4", &failures)
	cs.ClearActions()
	settle(t, a, cs)
	res := a.Apply(ctx, testState(testService(4)))
	if failures != 1 {
		t.Errorf("the reactor failed %d applies, want 1", failures)
	}
	want := []protocol.ObjectError{{Object: "Deployment " + testNS + "/api-web-r4", Message: errInjected.Error()}}
	if !reflect.DeepEqual(res.Errors, want) {
		t.Errorf("Errors = %+v, want %+v", res.Errors, want)
	}
	if res.Pruned != 0 {
		t.Errorf("Pruned = %d, want 0", res.Pruned)
	}
	// The others still went ahead: Namespace, Secret, worker, Service, Ingress.
	if res.Applied != 5 {
		t.Errorf("Applied = %d, want 5", res.Applied)
	}
	getDeployment(t, cs, testNS, "api-worker-r4")
	getDeployment(t, cs, testNS, "api-web-r3")
	getDeployment(t, cs, testNS, "api-worker-r3")
	_, err := cs.AppsV1().Deployments(testNS).Get(ctx, "api-web-r4", metav1.GetOptions{})
	assertGone(t, "Deployment api-web-r4", err)
	for _, act := range cs.Actions() {
		if act.GetVerb() == "delete" {
			t.Errorf("an apply failed, yet %s %s was deleted", act.GetResource().Resource, act.(k8stesting.DeleteAction).GetName())
		}
	}
}

func TestApplyNamespaceFailureSkipsItsObjects(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	failures := 0
	failApply(cs, "namespaces", testNS, &failures)
	settle(t, a, cs)
	cs.ClearActions()
	res := a.Apply(ctx, testState(testService(4)))
	want := []protocol.ObjectError{{Object: "Namespace " + testNS, Message: errInjected.Error()}}
	if !reflect.DeepEqual(res.Errors, want) {
		t.Errorf("Errors = %+v, want %+v", res.Errors, want)
	}
	if res.Applied != 0 || res.Pruned != 0 {
		t.Errorf("Applied %d Pruned %d, want 0 and 0", res.Applied, res.Pruned)
	}
	for _, act := range cs.Actions() {
		if act.GetVerb() != "list" && act.GetVerb() != "watch" && act.GetResource().Resource != "namespaces" {
			t.Errorf("after the Namespace failed, %s %s was sent", act.GetVerb(), act.GetResource().Resource)
		}
	}
}

func TestApplyRefusesOtherCluster(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()
	mustApply(t, a, testState(testService(3)))
	settle(t, a, cs)
	cs.ClearActions()

	st := testState(testService(4))
	st.Cluster = "c-2"
	res := a.Apply(ctx, st)
	if len(res.Errors) != 1 {
		t.Fatalf("Errors = %+v, want one", res.Errors)
	}
	e := res.Errors[0]
	if e.Object != "state" || !strings.Contains(e.Message, "c-2") || !strings.Contains(e.Message, testCluster) {
		t.Errorf("error = %+v", e)
	}
	if res.Applied != 0 || res.Pruned != 0 {
		t.Errorf("Applied %d Pruned %d, want 0 and 0", res.Applied, res.Pruned)
	}
	if acts := cs.Actions(); len(acts) != 0 {
		t.Errorf("a refused state made %d calls: %v", len(acts), acts)
	}
	getDeployment(t, cs, testNS, "api-web-r3")
	_, err := cs.AppsV1().Deployments(testNS).Get(ctx, "api-web-r4", metav1.GetOptions{})
	assertGone(t, "Deployment api-web-r4", err)

	// An empty cluster id is refused too.
	if res := (&Applier{Client: cs, Cluster: testCluster}).Apply(ctx, desired.State{}); len(res.Errors) != 1 {
		t.Errorf("a state without a cluster: Errors = %+v, want one", res.Errors)
	}
}

// snapshot is what the agent manages, without server-set metadata.
type snapshot struct {
	Deployments map[string]appsv1.DeploymentSpec
	Services    map[string]corev1.ServiceSpec
	Ingresses   map[string]networkingv1.IngressSpec
	Secrets     map[string]map[string][]byte
	Labels      map[string]map[string]string
}

func takeSnapshot(t *testing.T, cs *fake.Clientset) snapshot {
	t.Helper()
	ctx := context.Background()
	s := snapshot{map[string]appsv1.DeploymentSpec{}, map[string]corev1.ServiceSpec{}, map[string]networkingv1.IngressSpec{},
		map[string]map[string][]byte{}, map[string]map[string]string{}}
	ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ds.Items {
		s.Deployments[o.Namespace+"/"+o.Name] = o.Spec
		s.Labels["Deployment "+o.Namespace+"/"+o.Name] = o.Labels
	}
	ss, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ss.Items {
		s.Services[o.Namespace+"/"+o.Name] = o.Spec
		s.Labels["Service "+o.Namespace+"/"+o.Name] = o.Labels
	}
	is, err := cs.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range is.Items {
		s.Ingresses[o.Namespace+"/"+o.Name] = o.Spec
		s.Labels["Ingress "+o.Namespace+"/"+o.Name] = o.Labels
	}
	secs, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range secs.Items {
		s.Secrets[o.Namespace+"/"+o.Name] = o.Data
		s.Labels["Secret "+o.Namespace+"/"+o.Name] = o.Labels
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range nss.Items {
		s.Labels["Namespace "+o.Name] = o.Labels
	}
	return s
}

func TestApplyIdempotent(t *testing.T) {
	a, cs := newApplier(t)
	st := testState(testService(3))
	first := mustApply(t, a, st)
	before := takeSnapshot(t, cs)
	second := mustApply(t, a, st)
	after := takeSnapshot(t, cs)
	if first.Applied != 6 || first.Written != 6 || first.Pruned != 0 {
		t.Errorf("first Result = %+v", first)
	}
	if second.Applied != 6 || second.Written != 0 || second.Pruned != 0 {
		t.Errorf("second Result = %+v, want 6 applied and none written", second)
	}
	if len(before.Deployments) != 2 || len(before.Services) != 1 || len(before.Ingresses) != 1 || len(before.Secrets) != 1 {
		t.Errorf("unexpected objects: %+v", before)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("applying the same state again changed the objects:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestWorkloads(t *testing.T) {
	a, cs := newApplier(t)
	ctx := context.Background()

	// Two namespaces, given in reverse order.
	st := desired.State{Cluster: testCluster, Namespaces: []desired.Namespace{
		{Name: "zeta", Project: "z", Environment: "prod", Services: []desired.Service{{
			Name: "b", Release: 1, Image: "img", Processes: []desired.Process{{Name: "web", Replicas: 3}}}}},
		{Name: "alpha", Project: "a", Environment: "prod", Services: []desired.Service{{
			Name: "svc", Release: 2, Image: "img",
			Processes: []desired.Process{{Name: "worker", Replicas: 1}, {Name: "api", Replicas: 2}}}}},
	}}
	mustApply(t, a, st)

	// Not listed: unmanaged, another cluster's; listed: a managed one
	// without replicas set (Kubernetes' default 1) and with ready pods.
	for _, d := range []*appsv1.Deployment{
		{ObjectMeta: objMeta("alpha", "aaa-unmanaged", map[string]string{LabelCluster: testCluster})},
		{ObjectMeta: objMeta("alpha", "aaa-other", map[string]string{LabelManagedBy: ManagedBy, LabelCluster: "c-2"}), Spec: appsv1.DeploymentSpec{Replicas: int32p(4)}},
		{ObjectMeta: objMeta("middle", "held-web-r9", map[string]string{LabelManagedBy: ManagedBy, LabelCluster: testCluster}),
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1}},
	} {
		if _, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	settle(t, a, cs)
	got := a.Workloads()
	want := []protocol.Workload{
		{Namespace: "alpha", Name: "svc-api-r2", Replicas: 2},
		{Namespace: "alpha", Name: "svc-worker-r2", Replicas: 1},
		{Namespace: "middle", Name: "held-web-r9", Replicas: 1, ReadyReplicas: 1},
		{Namespace: "zeta", Name: "b-web-r1", Replicas: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Workloads = %+v\nwant        %+v", got, want)
	}

	// Nothing managed: an empty list, not nil.
	empty, _ := newApplier(t)
	if w := empty.Workloads(); w == nil || len(w) != 0 {
		t.Errorf("Workloads of an empty cluster = %#v", w)
	}
}

// Two services whose names run together ("api" + "web-x", "api-web" + "x")
// would make the same Service; neither gets it, and the failure names both.
func TestApplyNameClash(t *testing.T) {
	a, cs := newApplier(t)
	one := testService(1)
	one.Processes = []desired.Process{{Name: "web-x", Replicas: 1, Port: intp(80)}}
	one.Domains, one.Env = nil, nil
	two := testService(1)
	two.Name, two.ID = "api-web", model.ServiceID("svc-api-web")
	two.Processes = []desired.Process{{Name: "x", Replicas: 1, Port: intp(81)}}
	two.Domains, two.Env = nil, nil
	res := a.Apply(context.Background(), testState(one, two))
	want := map[string]bool{"Deployment " + testNS + "/api-web-x-r1": true, "Service " + testNS + "/api-web-x": true}
	if len(res.Errors) != len(want) {
		t.Fatalf("errors %+v, want one per clashing object", res.Errors)
	}
	for _, e := range res.Errors {
		if !want[e.Object] || !strings.Contains(e.Message, "services api and api-web") {
			t.Errorf("error %+v", e)
		}
	}
	if _, err := cs.CoreV1().Services(testNS).Get(context.Background(), "api-web-x", metav1.GetOptions{}); err == nil {
		t.Error("the clashing Service was applied")
	}
	if _, err := cs.AppsV1().Deployments(testNS).Get(context.Background(), "api-web-x-r1", metav1.GetOptions{}); err == nil {
		t.Error("the clashing Deployment was applied")
	}
}

// A plain value that reads like a secret's version does not fingerprint
// like that secret.
func TestEnvFingerprintKinds(t *testing.T) {
	plain := envFingerprint([]desired.EnvVar{{Name: "X", Value: "v1"}})
	secret := envFingerprint([]desired.EnvVar{{Name: "X", Value: "other", Secret: true, Version: "v1"}})
	if plain == secret {
		t.Error("a plain value and a secret version share a fingerprint")
	}
}

func TestSubset(t *testing.T) {
	obj := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		want, have string
		holds      bool
	}{
		{`{"a":1}`, `{"a":1,"b":2}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":1}`, `{}`, false},
		// Zero values the API server leaves out.
		{`{"delay":0,"name":"","on":false,"m":{},"l":[]}`, `{}`, true},
		{`{"delay":0}`, `{"delay":5}`, false},
		{`{"name":""}`, `{"name":"x"}`, false},
		{`{"on":false}`, `{"on":true}`, false},
		{`{"m":{}}`, `{"m":{"k":"v"}}`, true},
		{`{"l":[]}`, `{"l":[1]}`, false},
		{`{"a":null}`, `{}`, true},
		{`{"a":null}`, `{"a":0}`, false},
		// Named lists by name, others in order.
		{`{"c":[{"name":"a","x":1},{"name":"b","x":2}]}`, `{"c":[{"name":"b","x":2,"y":3},{"name":"a","x":1}]}`, true},
		{`{"c":[{"name":"a","x":1}]}`, `{"c":[{"name":"a","x":2}]}`, false},
		{`{"c":[1,2]}`, `{"c":[2,1]}`, false},
		{`{"c":[{"name":"a"}]}`, `{"c":[{"name":"a"},{"name":"b"}]}`, false},
	} {
		if got := subset(obj(c.want), obj(c.have)); got != c.holds {
			t.Errorf("subset(%s, %s) = %v, want %v", c.want, c.have, got, c.holds)
		}
	}
	// Live objects carry integers, the desired form float64.
	if !subset(obj(`{"r":2}`), map[string]any{"r": int64(2)}) || subset(obj(`{"r":2}`), map[string]any{"r": int32(3)}) {
		t.Error("numbers are compared by value whatever their Go type")
	}
}

// names must list exactly what objects builds, pinned or not: a pass keeps
// (and does not prune) what names lists.
func TestNamesAreTheObjects(t *testing.T) {
	a, _ := newApplier(t)
	ns := testState().Namespaces[0]
	bare := testService(3)
	bare.Env, bare.Domains = nil, nil
	bare.Processes[0].Port = nil
	for _, svc := range []desired.Service{testService(1), bare} {
		for _, pinned := range []int{0, 2} {
			a.setRoute(ServiceKey(ns.Name, svc.Name), 0, pinned)
			var built []object
			for _, ac := range a.objects(ns, svc) {
				built = append(built, ac.obj)
			}
			if got := a.names(ns, svc); !slices.Equal(got, built) || pinned == 0 && len(got) == 0 {
				t.Errorf("release %d, pinned %d: names %v, objects %v", svc.Release, pinned, got, built)
			}
		}
	}
}
