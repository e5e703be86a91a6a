package agent

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// servedState is an applier over a fake cluster that already holds the
// 3,010 objects of a state of 10 namespaces × 60 services, each object at a
// resource version as an API server gives them, and that state.
func servedState(b *testing.B) (*Applier, desired.State) {
	st := desired.State{Cluster: model.ClusterID(testCluster)}
	for n := range 10 {
		ns := desired.Namespace{Name: fmt.Sprintf("shop-env%d", n), Project: "shop", Environment: fmt.Sprintf("env%d", n)}
		for s := range 60 {
			svc := testService(1)
			svc.Name, svc.ID = fmt.Sprintf("svc%d", s), model.ServiceID(fmt.Sprintf("svc-%d-%d", n, s))
			svc.Domains[0].Host = fmt.Sprintf("svc%d.env%d.example.com", s, n)
			ns.Services = append(ns.Services, svc)
		}
		st.Namespaces = append(st.Namespaces, ns)
	}
	// Write the state once, then serve its objects, each at a resource
	// version as an API server would, from a fresh fake.
	first, cs := newApplier(b)
	if res := first.Apply(context.Background(), st); len(res.Errors) > 0 {
		b.Fatalf("first apply: %+v", res.Errors[0])
	}
	var objs []runtime.Object
	for _, gvr := range []string{"namespaces", "secrets", "deployments", "services", "ingresses"} {
		list, err := listAll(cs, gvr)
		if err != nil {
			b.Fatal(err)
		}
		for i, o := range list {
			o.(metav1.Object).SetResourceVersion(fmt.Sprint(i + 1))
			objs = append(objs, o)
		}
	}
	served := fake.NewClientset(objs...)
	a := &Applier{Client: served, Cache: NewCache(served, nil), Cluster: testCluster}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); a.Cache.Shutdown() })
	if err := a.Cache.Start(ctx); err != nil {
		b.Fatal(err)
	}
	settle(b, a, served)
	served.ClearActions()
	return a, st
}

// BenchmarkUnchangedPass is one pass over a state the cluster already
// holds: 10 namespaces × 60 services × 5 objects (a Secret, two
// Deployments, a Service, an Ingress) = 3,010 objects with the
// namespaces. Every object is checked against the informer cache and none
// is written; this is what a resync, and every service's reconcile after a
// new state, costs the agent's CPU.
func BenchmarkUnchangedPass(b *testing.B) {
	a, st := servedState(b)
	served := a.Client.(*fake.Clientset)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := a.Apply(context.Background(), st)
		if res.Written != 0 || len(res.Errors) > 0 {
			b.Fatalf("an unchanged pass wrote %d objects (errors %v)", res.Written, res.Errors)
		}
	}
	b.StopTimer()
	for _, act := range served.Actions() {
		if v := act.GetVerb(); v != "list" && v != "watch" {
			b.Fatalf("an unchanged pass sent %s %s", v, act.GetResource().Resource)
		}
	}
}

func listAll(cs *fake.Clientset, resource string) ([]runtime.Object, error) {
	ctx := context.Background()
	var out []runtime.Object
	switch resource {
	case "namespaces":
		l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case "secrets":
		l, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case "deployments":
		l, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case "services":
		l, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case "ingresses":
		l, err := cs.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// BenchmarkPassOverhead is what a pass costs beside checking objects: the
// namespaces, the objects each service makes (to prune what the state no
// longer has), and pruning, over the 3,010-object state of
// BenchmarkUnchangedPass with every service left to the cache, as a new
// state that changed none of them is applied.
func BenchmarkPassOverhead(b *testing.B) {
	a, st := servedState(b)
	skip := func(context.Context, desired.Namespace, desired.Service) Result { return Result{} }
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := a.ApplyWith(context.Background(), st, skip); len(res.Errors) > 0 || res.Pruned != 0 {
			b.Fatalf("pass: pruned %d, errors %v", res.Pruned, res.Errors)
		}
	}
}

// BenchmarkDecodeDesired is the other half of what every new state costs
// the agent: decoding the desired-state frame of BenchmarkUnchangedPass's
// 600 services (about 330 KB) as the session reads it.
func BenchmarkDecodeDesired(b *testing.B) {
	_, st := servedState(b)
	frame, err := protocol.Encode(protocol.TypeDesired, protocol.Desired{Revision: 7, State: st})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := protocol.DecodeServer(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSettledState is a new state that changed none of the 600
// services the agent last reconciled: each is found settled to the same
// desired form and left to the cache, so the pass costs its overhead
// (BenchmarkPassOverhead) and the comparisons.
func BenchmarkSettledState(b *testing.B) {
	ap, st := servedState(b)
	a := New(Config{}, Same(ap.Client), slog.New(slog.DiscardHandler))
	a.cache = ap.Cache // as a session sets it up
	ctx := context.Background()
	if res := a.applyState(ctx, ap, st, true); len(res.Errors) > 0 {
		b.Fatalf("settling: %+v", res.Errors[0])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := a.applyState(ctx, ap, st, false); len(res.Errors) > 0 || res.Written > 0 {
			b.Fatalf("a state that changed nothing wrote %d objects (errors %v)", res.Written, res.Errors)
		}
	}
}
