package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// managedObjects counts what the agent made that a label selector picks in
// a namespace ("" for all), pods of its Deployments included, and names
// the first few.
func managedObjects(t *testing.T, cs *kubernetes.Clientset, ns, selector string) (int, string) {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=nebulactrl"}
	if selector != "" {
		opts.LabelSelector += "," + selector
	}
	var names []string
	add := func(kind string, n int, err error, name func(i int) string) {
		t.Helper()
		if err != nil {
			t.Fatalf("listing %ss: %v", kind, err)
		}
		for i := range n {
			names = append(names, kind+" "+name(i))
		}
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, opts)
	add("Deployment", len(deps.Items), err, func(i int) string { return deps.Items[i].Name })
	svcs, err := cs.CoreV1().Services(ns).List(ctx, opts)
	add("Service", len(svcs.Items), err, func(i int) string { return svcs.Items[i].Name })
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, opts)
	add("Secret", len(secrets.Items), err, func(i int) string { return secrets.Items[i].Name })
	ings, err := cs.NetworkingV1().Ingresses(ns).List(ctx, opts)
	add("Ingress", len(ings.Items), err, func(i int) string { return ings.Items[i].Name })
	pods, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	add("Pod", len(pods.Items), err, func(i int) string { return pods.Items[i].Name })
	return len(names), fmt.Sprint(names[:min(len(names), 8)])
}

// addService creates a one-process service in the fixture's project and
// returns its id.
func (f *fixture) addService(t *testing.T, name string) string {
	t.Helper()
	svc := f.cp.gql(t, `mutation ($input: CreateServiceInput!) { createService(input: $input) { service { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"projectId": f.project, "name": name, "image": "registry.example.com/shop/" + name,
			"processes": []any{map[string]any{"name": "web", "command": []any{"./serve"}, "replicas": 1, "port": 8080}},
			"variables": []any{map[string]any{"name": "MODE", "value": "on"}}}})
	return str(svc, "createService", "service", "id")
}

func (f *fixture) deployTo(t *testing.T, service, env, digest string) string {
	t.Helper()
	res := f.cp.gql(t, `mutation ($input: DeployInput!) { deploy(input: $input) { deployment { id } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"serviceId": service, "environmentId": env, "imageDigest": digest}})
	return str(res, "deploy", "deployment", "id")
}

// A deleted service leaves nothing on the cluster: its Deployments (the
// one its traffic was on, after two rollouts, included), Services, Secret,
// Ingress and pods go once the agent acknowledges the state without it;
// the service beside it keeps everything.
func TestDeletedServiceLeavesNothing(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-del")
	cs := admin(t)
	cart := f.addService(t, "cart")
	f.startAgent(t, "del-1", "nebula-agent-del")
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	f.waitStage(t, f.deploy(t, digest1), "SUCCEEDED", 60*time.Second)
	f.waitStage(t, f.deploy(t, digest2), "SUCCEEDED", 60*time.Second)
	f.waitStage(t, f.deployTo(t, cart, f.env, digest1), "SUCCEEDED", 60*time.Second)
	if n, what := managedObjects(t, cs, f.namespace, "nebula.dev/service=api"); n < 7 {
		t.Fatalf("before the delete the service has %d objects: %s", n, what)
	}
	before, what := managedObjects(t, cs, f.namespace, "nebula.dev/service=cart")

	cp.gql(t, `mutation ($input: DeleteServiceInput!) { deleteService(input: $input) { deletedServiceId userErrors { message } } }`,
		map[string]any{"input": map[string]any{"serviceId": f.service}})
	f.waitApplied(t)
	testutil.Eventually(t, 60*time.Second, "nothing of the deleted service is left", func() (bool, string) {
		n, what := managedObjects(t, cs, f.namespace, "nebula.dev/service=api")
		return n == 0, fmt.Sprintf("%d left: %s", n, what)
	})
	if after, now := managedObjects(t, cs, f.namespace, "nebula.dev/service=cart"); after != before {
		t.Errorf("the other service had %d objects (%s), now %d (%s)", before, what, after, now)
	}
}

// A deleted environment leaves nothing of its services on the cluster;
// the project's other environment keeps everything. (Its Namespace stays:
// one may hold more than the agent put there.)
func TestDeletedEnvironmentLeavesNothing(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-delenv")
	cs := admin(t)
	env := cp.gql(t, `mutation ($input: CreateEnvironmentInput!) { createEnvironment(input: $input) {
  environment { id placement { namespace } } userErrors { message } } }`,
		map[string]any{"input": map[string]any{"projectId": f.project, "name": "staging",
			"clusterSelector": []any{map[string]any{"key": "site", "value": "sim-delenv"}}}})
	staging := str(env, "createEnvironment", "environment", "id")
	stagingNS := str(env, "createEnvironment", "environment", "placement", "namespace")
	f.startAgent(t, "delenv-1", "nebula-agent-delenv")
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	f.waitStage(t, f.deploy(t, digest1), "SUCCEEDED", 60*time.Second)
	f.waitStage(t, f.deployTo(t, f.service, staging, digest1), "SUCCEEDED", 60*time.Second)
	f.waitStage(t, f.deployTo(t, f.service, staging, digest2), "SUCCEEDED", 60*time.Second)
	if n, what := managedObjects(t, cs, stagingNS, ""); n < 7 {
		t.Fatalf("before the delete staging has %d objects: %s", n, what)
	}
	before, what := managedObjects(t, cs, f.namespace, "")

	cp.gql(t, `mutation ($input: DeleteEnvironmentInput!) { deleteEnvironment(input: $input) { deletedEnvironmentId userErrors { message } } }`,
		map[string]any{"input": map[string]any{"environmentId": staging}})
	f.waitApplied(t)
	testutil.Eventually(t, 60*time.Second, "nothing of the deleted environment is left", func() (bool, string) {
		n, what := managedObjects(t, cs, stagingNS, "")
		return n == 0, fmt.Sprintf("%d left: %s", n, what)
	})
	if after, now := managedObjects(t, cs, f.namespace, ""); after != before {
		t.Errorf("the other environment had %d objects (%s), now %d (%s)", before, what, after, now)
	}
}
