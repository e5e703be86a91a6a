// Package devcluster is the simulated cluster of `nebula dev`: client-go's
// fake clientset (an in-memory API server) with one Ready node, and a
// stand-in kubelet that makes Deployments' pods Ready a moment after they
// change — except those whose first container's command ends in
// "--simulate-unready", which never become Ready, the way a failing
// readiness probe keeps them (the same convention as hack/simcluster's
// kwok Stage). The real agent runs against it, so a deployment goes
// through every stage without any Kubernetes.
//
// Builds are simulated too (builds.go): no BuildKit runs, but the Jobs the
// agent creates get a pod that prints a build's output over a few seconds
// and ends with an image digest, so a deploy of a commit goes from
// BUILDING to SUCCEEDED with its log.
package devcluster

import (
	"context"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// UnreadyArg, as the last argument of a process's command, keeps its pods
// from ever becoming Ready.
const UnreadyArg = "--simulate-unready"

// Cluster is the simulated cluster.
type Cluster struct {
	Client kubernetes.Interface
	// StartDelay is how long pods take to become Ready after a change.
	StartDelay time.Duration
	log        *slog.Logger
	seen       map[types.UID]seen
	builds     *builds
}

type seen struct {
	generation int64
	at         time.Time
}

// New makes a cluster with one Ready node named dev-node.
func New(log *slog.Logger) (*Cluster, error) {
	cs := fake.NewClientset()
	if d, ok := cs.Discovery().(*fakediscovery.FakeDiscovery); ok {
		d.FakedServerVersion = &version.Info{GitVersion: "v1.37.2-nebula-dev", Major: "1", Minor: "37"}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dev-node"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	b := &builds{LineEvery: 400 * time.Millisecond, pods: map[string]*buildPod{}}
	return &Cluster{Client: withLogs{Interface: cs, b: b}, StartDelay: 1500 * time.Millisecond, log: log,
		seen: map[types.UID]seen{}, builds: b}, nil
}

// Run plays the kubelet until ctx ends.
func (c *Cluster) Run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.tick(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("simulated kubelet", "error", err)
		}
		if err := c.builds.tick(ctx, c.Client); err != nil && ctx.Err() == nil {
			c.log.Warn("simulated builds", "error", err)
		}
	}
}

func (c *Cluster) tick(ctx context.Context) error {
	l, err := c.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	live := map[types.UID]bool{}
	for i := range l.Items {
		d := &l.Items[i]
		live[d.UID] = true
		s, ok := c.seen[d.UID]
		if !ok || s.generation != d.Generation {
			s = seen{generation: d.Generation, at: now}
			c.seen[d.UID] = s
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		ready := want
		if now.Sub(s.at) < c.StartDelay || unready(d) {
			ready = 0
		}
		st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want,
			ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: want - ready}
		if cur := d.Status; cur.ObservedGeneration == st.ObservedGeneration && cur.Replicas == st.Replicas &&
			cur.UpdatedReplicas == st.UpdatedReplicas && cur.ReadyReplicas == st.ReadyReplicas {
			continue
		}
		d.Status = st
		if _, err := c.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for uid := range c.seen {
		if !live[uid] {
			delete(c.seen, uid)
		}
	}
	return nil
}

func unready(d *appsv1.Deployment) bool {
	cs := d.Spec.Template.Spec.Containers
	if len(cs) == 0 || len(cs[0].Command) == 0 {
		return false
	}
	return cs[0].Command[len(cs[0].Command)-1] == UnreadyArg
}
