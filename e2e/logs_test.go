package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nebulactrl/nebula/internal/testutil"
)

type shownLine struct {
	Number int    `json:"number"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
	Pod    string `json:"pod"`
}

// Lines a managed container prints reach a subscriber of the service's
// logs through the real agent (pods/log through the API server, under the
// install manifests' RBAC); the service's secret value is redacted; a
// restarted agent reads the logs again and the control plane stores
// nothing twice; a Warning event of a managed pod reaches the events
// subscription; a pod that goes away leaves a marker.
func TestContainerLogsOnCluster(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-l")
	cs := admin(t)
	ctx := context.Background()
	agent := f.startAgent(t, "logs-1", "nebula-agent-logs")
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	dep := f.deploy(t, digest1)
	f.waitStage(t, dep, "SUCCEEDED", 60*time.Second)

	pods, err := cs.CoreV1().Pods(f.namespace).List(ctx, metav1.ListOptions{LabelSelector: "nebula.dev/process=web"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("the web pods: %v %d", err, len(pods.Items))
	}
	pod := &pods.Items[0]
	container := pod.Spec.Containers[0].Name
	write := podLog(t, pod, container)

	sub := cp.subscriber(t)
	sub.start("logs", `subscription ($s: ID!, $e: ID!) { serviceLogs(serviceId: $s, environmentId: $e, after: 0) { number stream text pod } }`,
		map[string]any{"s": f.service, "e": f.env})
	lines := func(n int, what string) []shownLine {
		t.Helper()
		var got []shownLine
		sub.until("logs", what, 60*time.Second, func(ms []wsMessage) bool {
			got = data[shownLine](t, ms, "serviceLogs")
			return len(got) >= n
		})
		return got
	}
	write("listening on :8080", "using API key k-123")
	got := lines(2, "the first lines")
	if got[0].Text != "listening on :8080" || got[1].Text != "using API key [redacted]" || got[0].Pod != pod.Name || got[0].Stream != "STDOUT" {
		t.Errorf("the first lines: %+v", got)
	}

	// The agent restarts: it reads the log from its start again; nothing is
	// stored twice, and what is printed meanwhile arrives.
	agent.kill()
	write("GET /items 200")
	f.startAgent(t, "logs-2", "nebula-agent-logs", "--resync", "5s")
	lines(3, "the line printed while the agent was away")
	write("GET /items/7 404")
	lines(4, "a line after the restart")
	time.Sleep(3 * time.Second) // a few more reads of the log
	got = lines(4, "the lines after more reads")
	var texts []string
	for i, l := range got {
		texts = append(texts, l.Text)
		if l.Number != i+1 {
			t.Errorf("line %d has number %d", i, l.Number)
		}
	}
	if strings.Join(texts, "|") != "listening on :8080|using API key [redacted]|GET /items 200|GET /items/7 404" {
		t.Errorf("after the restart the service's log is %q", texts)
	}

	// A Warning event of the pod reaches a subscriber of the service's
	// events, through the agent's watch.
	sub.start("events", `subscription ($e: ID!, $s: ID) { kubeEvents(environmentId: $e, serviceId: $s) { type reason objectName service { name } } }`,
		map[string]any{"e": f.env, "s": f.service})
	now := metav1.Now()
	if _, err := cs.CoreV1().Events(f.namespace).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".e2e", Namespace: f.namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: f.namespace, Name: pod.Name, UID: pod.UID},
		Type:           "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: HTTP probe failed with statuscode: 503",
		Count: 1, FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "kubelet"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sub.until("events", "the pod's Warning event", 60*time.Second, func(ms []wsMessage) bool {
		for _, e := range data[struct {
			Type, Reason, ObjectName string
			Service                  struct{ Name string }
		}](t, ms, "kubeEvents") {
			if e.Type == "Warning" && e.Reason == "Unhealthy" && e.ObjectName == pod.Name && e.Service.Name == "api" {
				return true
			}
		}
		return false
	})

	// A drift: the Deployment scaled by another field manager is reported
	// (on the cluster, in clusterStatus, audited) before the agent applies
	// it again.
	sub.start("status", `subscription ($c: ID!) { clusterStatus(clusterId: $c) { drift { kind name fields managers service { name } } } }`,
		map[string]any{"c": f.cluster})
	d := getDeployment(t, cs, f.namespace, "api-web-r1")
	three := int32(3)
	d.Spec.Replicas = &three
	if _, err := cs.AppsV1().Deployments(f.namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	type drift struct {
		Kind, Name       string
		Fields, Managers []string
		Service          struct{ Name string }
	}
	sub.until("status", "the drift in clusterStatus", 60*time.Second, func(ms []wsMessage) bool {
		for _, c := range data[struct{ Drift []drift }](t, ms, "clusterStatus") {
			for _, x := range c.Drift {
				if x.Kind == "Deployment" && x.Name == "api-web-r1" && strings.Join(x.Fields, ",") == "spec.replicas" &&
					strings.Join(x.Managers, ",") == "kubectl-edit" && x.Service.Name == "api" {
					return true
				}
			}
		}
		return false
	})
	testutil.Eventually(t, 30*time.Second, "the agent applies the Deployment again", func() (bool, string) {
		d := getDeployment(t, cs, f.namespace, "api-web-r1")
		return *d.Spec.Replicas == 2, fmt.Sprint(*d.Spec.Replicas)
	})
	audit := cp.gql(t, `query ($t: ID!) { node(id: $t) { ... on Tenant { auditEvents(first: 5, filter: {action: "cluster.drift_detected"}) { nodes { targetId details } } } } }`,
		map[string]any{"t": f.tenant})
	if n := dig(audit, "node", "auditEvents", "nodes").([]any); len(n) != 1 || str(n[0], "targetId") != f.cluster {
		t.Errorf("the drift's audit events: %v", n)
	}

	// The pod goes away: a marker says its lines may stop short.
	if err := cs.CoreV1().Pods(f.namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got = lines(5, "the marker of the deleted pod")
	if m := got[4]; m.Stream != "MARKER" || !strings.Contains(m.Text, "went away") || !strings.Contains(m.Text, pod.Name) {
		t.Errorf("after the pod went away: %+v", m)
	}
}
