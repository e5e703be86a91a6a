package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// TestChangeSetRollsOutAndBack (issue 32), on the simulated cluster with
// the real agent: api runs release 2 with FEATURE_FLAG=old (in its own
// release's Secret, which its pod spec names); its
// environment is made protected; a change set — FEATURE_FLAG=new and a web
// process whose pods never become ready — is submitted by the admin,
// refused to the admin's own approval and approved from another process by
// another tenant admin (`nebula changeset approve`), applied, and rolls out
// as release 3 in one revision. Its readiness probes fail, so the whole
// release is rolled back: release 2 runs again, FEATURE_FLAG=old for its
// pods (release 3's value never reached them: each release reads its own
// Secret), release 3's Deployments and Secret gone, traffic on release 2.
func TestChangeSetRollsOutAndBack(t *testing.T) {
	needCluster(t)
	cp := startControlPlane(t)
	f := setup(t, cp, "sim-cs")
	cs := admin(t)
	ctx := context.Background()
	f.startAgent(t, "cs-1", "nebula-agent-cs")
	f.waitStatus(t, "CONNECTED", 30*time.Second)
	// flagOf is FEATURE_FLAG as a Deployment's pods read it: from the
	// Secret of its own release, which its pod spec names.
	flagOf := func(dep *appsv1.Deployment) string {
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, from := range c.EnvFrom {
				if from.SecretRef == nil {
					continue
				}
				sec, err := cs.CoreV1().Secrets(dep.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
				if err == nil {
					return string(sec.Data["FEATURE_FLAG"])
				}
			}
		}
		return ""
	}
	// newest is the newest deployment of api: its id and release number.
	newest := func() (string, int64) {
		t.Helper()
		n := dig(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Environment { deployments(first: 1) { nodes { id release { number } } } } } }`,
			map[string]any{"id": f.env}), "node", "deployments", "nodes").([]any)[0]
		return str(n, "id"), num(n, "release", "number")
	}

	f.waitStage(t, f.deploy(t, digest1), "SUCCEEDED", 30*time.Second)
	cp.gql(t, `mutation($p: ID!, $s: ID!) { setVariable(input: {projectId: $p, serviceId: $s, name: "FEATURE_FLAG", value: "old"}) { variable { id } userErrors { message } } }`,
		map[string]any{"p": f.project, "s": f.service})
	second, n := newest()
	if n != 2 {
		t.Fatalf("the variable's deployment is of release %d, want 2", n)
	}
	f.waitStage(t, second, "SUCCEEDED", 30*time.Second)
	if flag := flagOf(getDeployment(t, cs, f.namespace, "api-web-r2")); flag != "old" {
		t.Fatalf("release 2's pod spec has FEATURE_FLAG=%q, want old", flag)
	}
	cp.gql(t, `mutation($e: ID!) { updateEnvironment(input: {environmentId: $e, protected: true}) { environment { id } userErrors { message } } }`,
		map[string]any{"e": f.env})

	// The reviewer: another tenant admin, an integration with its own token.
	user := str(cp.gql(t, `mutation($t: ID!) { addMember(input: {tenantId: $t, email: "reviewer@example.com", name: "Reviewer", role: ADMIN, kind: INTEGRATION}) {
		member { user { id } } userErrors { message } } }`, map[string]any{"t": f.tenant}), "addMember", "member", "user", "id")
	reviewer := str(cp.gql(t, `mutation($t: ID!, $u: ID!) { createApiToken(input: {name: "reviewer", tenantId: $t, userId: $u}) { secret userErrors { message } } }`,
		map[string]any{"t": f.tenant, "u": user}), "createApiToken", "secret")

	set := str(cp.gql(t, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "flag on, new web"}) { changeSet { id } userErrors { message } } }`,
		map[string]any{"p": f.project}), "openChangeSet", "changeSet", "id")
	cp.gql(t, `mutation($p: ID!, $s: ID!, $c: ID) { setVariable(input: {projectId: $p, serviceId: $s, name: "FEATURE_FLAG", value: "new", changeSetId: $c}) { changeSet { id } userErrors { message } } }`,
		map[string]any{"p": f.project, "s": f.service, "c": set})
	cp.gql(t, `mutation($s: ID!, $c: ID) { updateService(input: {serviceId: $s, changeSetId: $c, processes: [
		{name: "web", command: ["./api", "serve", "--simulate-unready"], replicas: 2, port: 8080, readinessProbe: {path: "/healthz", port: 8080}},
		{name: "worker", command: ["./api", "work"], replicas: 1}]}) { changeSet { id } userErrors { message } } }`,
		map[string]any{"s": f.service, "c": set})
	cp.gql(t, `mutation($c: ID!) { submitChangeSet(input: {changeSetId: $c}) { changeSet { state } userErrors { message } } }`, map[string]any{"c": set})
	before := f.waitApplied(t)

	// The author may not approve their own set; the reviewer does, from
	// another process.
	self := runCLI(t, []string{"NEBULA_URL=" + cp.url, "NEBULA_TOKEN=" + cp.token}, "", "changeset", "approve", set)
	if code := self.wait(t, 30*time.Second); code == 0 || !strings.Contains(self.errs(), "another project manager") {
		t.Fatalf("the author's approval: exit %d, %s", code, self.errs())
	}
	ok := runCLI(t, []string{"NEBULA_URL=" + cp.url, "NEBULA_TOKEN=" + reviewer}, "", "changeset", "approve", set, "--comment", "ship it")
	if code := ok.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("nebula changeset approve: exit %d\n%s\n%s", code, ok.out(), ok.errs())
	}
	if strings.Contains(ok.out()+ok.errs(), reviewer) {
		t.Error("the CLI printed the reviewer's token")
	}
	if rev := num(f.clusterState(t), "desiredRevision"); rev != before {
		t.Fatalf("approving moved the revision %d → %d before the set was applied", before, rev)
	}
	applied := cp.gql(t, `mutation($c: ID!) { applyChangeSet(input: {changeSetId: $c}) { changeSet { state deployments { id release { number } } } userErrors { message } } }`,
		map[string]any{"c": set})
	deps, _ := dig(applied, "applyChangeSet", "changeSet", "deployments").([]any)
	if len(deps) != 1 || num(deps[0], "release", "number") != 3 || num(f.clusterState(t), "desiredRevision") != before+1 {
		t.Fatalf("applying: %v, revision %d → %d; want one deployment of release 3 in one revision", applied, before,
			num(f.clusterState(t), "desiredRevision"))
	}

	// Release 3 starts, never becomes ready, and is rolled back whole.
	third := str(deps[0], "id")
	if stages := f.waitStage(t, third, "ROLLED_BACK", 40*time.Second); strings.Join(stages, ",") != "QUEUED,DELIVERING,STARTING,PROBING,ROLLED_BACK" {
		t.Errorf("release 3's stages %v", stages)
	}
	testutil.Eventually(t, 30*time.Second, "release 3 removed, release 2 ready with FEATURE_FLAG=old", func() (bool, string) {
		_, err3 := cs.AppsV1().Deployments(f.namespace).Get(ctx, "api-web-r3", metav1.GetOptions{})
		if _, errs := cs.CoreV1().Secrets(f.namespace).Get(ctx, "api-env-r3", metav1.GetOptions{}); !apierrors.IsNotFound(errs) {
			return false, fmt.Sprintf("release 3's Secret: %v", errs)
		}
		r2, err2 := cs.AppsV1().Deployments(f.namespace).Get(ctx, "api-web-r2", metav1.GetOptions{})
		if err2 != nil {
			return false, err2.Error()
		}
		return apierrors.IsNotFound(err3) && r2.Status.ReadyReplicas == 2 && flagOf(r2) == "old",
			fmt.Sprintf("r3: %v; r2 ready %d, FEATURE_FLAG %q", err3, r2.Status.ReadyReplicas, flagOf(r2))
	})
	svc, err := cs.CoreV1().Services(f.namespace).Get(ctx, "api-web", metav1.GetOptions{})
	if err != nil || svc.Spec.Selector["nebula.dev/release"] != "2" {
		t.Errorf("after the rollback Service api-web: %v, selects release %v; want release 2", err, svc.Spec.Selector)
	}
}
