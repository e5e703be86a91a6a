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

	// The agent restarts: it asks the control plane where its log of the
	// container ends and reads from there; nothing is stored twice, and
	// what is printed meanwhile arrives.
	agent.kill()
	write("GET /items 200")
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	f.startAgent(t, "logs-2", "nebula-agent-logs", "--resync", "5s", "--metrics-address", metrics)
	lines(3, "the line printed while the agent was away")
	write("GET /items/7 404")
	got = lines(4, "a line after the restart")
	if n := sum(scrape(t, "http://"+metrics+"/metrics"), "nebula_agent_log_resumed_total", "from", "control-plane"); n < 1 {
		t.Errorf("the restarted agent resumed %v streams from the control plane's position", n)
	}
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
			if e.Type == "WARNING" && e.Reason == "Unhealthy" && e.ObjectName == pod.Name && e.Service.Name == "api" {
				return true
			}
		}
		return false
	})

	// A drift: the Deployment scaled by another field manager is reported
	// (on the cluster, in clusterStatus, audited) before the agent applies
	// it again.
	sub.start("status", `subscription ($c: ID!) { clusterStatus(clusterId: $c) { drift { nodes { kind name fields managers service { name } } } } }`,
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
		for _, c := range data[struct{ Drift struct{ Nodes []drift } }](t, ms, "clusterStatus") {
			for _, x := range c.Drift.Nodes {
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

// An idle agent whose pods' logs cannot be read (the simulated node
// answers 400 for a pod without a log, as a kubelet does for a container
// that has not started) asks for each container's log less and less often:
// after the first failure the waits double from 1 s, so a 30 s window holds
// at most 6 requests per container (the old agent asked every 2 s: 15) and,
// as it keeps trying, at least one in all. The apiserver's count and the
// agent's own agree.
func TestIdleAgentLogRequests(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-idle")
	cs := admin(t)
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	f.startAgent(t, "idle-1", "nebula-agent-idle", "--metrics-address", metrics)
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	f.waitStage(t, f.deploy(t, digest1), "SUCCEEDED", 60*time.Second)
	const containers = 3 // web × 2, worker × 1
	testutil.Eventually(t, 30*time.Second, "the agent follows the three containers and each failed once", func() (bool, string) {
		m := scrape(t, "http://"+metrics+"/metrics")
		followed, failed := sum(m, "nebula_agent_log_containers"), sum(m, "nebula_agent_log_stream_opens_total", "result", "error")
		return followed == containers && failed >= containers, fmt.Sprintf("followed %v, failed opens %v", followed, failed)
	})
	logRequests := func() float64 {
		return sum(apiserverMetrics(t, cs), "apiserver_request_total", "resource", "pods", "subresource", "log")
	}
	agentOpens := func() float64 {
		return sum(scrape(t, "http://"+metrics+"/metrics"), "nebula_agent_log_stream_opens_total")
	}
	api0, agent0, start := logRequests(), agentOpens(), time.Now()
	// The window: 30 s, read every second (the counts only go up).
	var api, opens float64
	testutil.Eventually(t, time.Minute, "a 30 s window", func() (bool, string) {
		api, opens = logRequests()-api0, agentOpens()-agent0
		return time.Since(start) >= 30*time.Second, fmt.Sprintf("%v requests so far", api)
	})
	if api > 6*containers || api < 1 {
		t.Errorf("%v pods/log requests in 30 s for %d containers, want 1 to %d", api, containers, 6*containers)
	}
	if opens != api {
		t.Errorf("the agent counted %v streams asked for, the apiserver %v", opens, api)
	}
	t.Logf("%v pods/log requests in %s for %d containers", api, time.Since(start).Round(time.Second), containers)
}
