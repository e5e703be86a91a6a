package install

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

var testSettings = Settings{
	Server:     "https://nebula.example.com:8443",
	Repository: "ghcr.io/nebulactrl/nebula",
	Version:    "1.4.2",
}

const testClusterName = "prod-eu"

func render(t *testing.T) Bundle {
	t.Helper()
	b, err := Render(testSettings, testClusterName)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b
}

// decode splits the manifests into documents and decodes each one.
func decode(t *testing.T, manifests string) []runtime.Object {
	t.Helper()
	dec := scheme.Codecs.UniversalDeserializer()
	var out []runtime.Object
	for i, doc := range strings.Split(manifests, "\n---\n") {
		obj, gvk, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("document %d does not decode: %v\n%s", i, err, doc)
		}
		if gvk.Kind == "" || gvk.Version == "" {
			t.Fatalf("document %d has no kind/version: %v", i, gvk)
		}
		out = append(out, obj)
	}
	return out
}

// objects returns the decoded objects, checked to be exactly, in order, a
// Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding, Role,
// RoleBinding, the build Namespace, its Role and RoleBinding, and the
// Deployment (the build ones are buildObjects').
func objects(t *testing.T, manifests string) (*corev1.Namespace, *corev1.ServiceAccount, *rbacv1.ClusterRole,
	*rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding, *appsv1.Deployment) {
	t.Helper()
	objs := decode(t, manifests)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, fmt.Sprintf("%T", o))
	}
	want := []string{"*v1.Namespace", "*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding",
		"*v1.Role", "*v1.RoleBinding", "*v1.Namespace", "*v1.Role", "*v1.RoleBinding", "*v1.Deployment"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("documents decode to %v, want %v", kinds, want)
	}
	ns, ok1 := objs[0].(*corev1.Namespace)
	sa, ok2 := objs[1].(*corev1.ServiceAccount)
	cr, ok3 := objs[2].(*rbacv1.ClusterRole)
	crb, ok4 := objs[3].(*rbacv1.ClusterRoleBinding)
	r, ok5 := objs[4].(*rbacv1.Role)
	rb, ok6 := objs[5].(*rbacv1.RoleBinding)
	d, ok7 := objs[9].(*appsv1.Deployment)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		t.Fatalf("documents decode to the wrong API groups: %v", kinds)
	}
	return ns, sa, cr, crb, r, rb, d
}

func hasRule(rules []rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) {
			continue
		}
		ok := true
		for _, v := range verbs {
			ok = ok && slices.Contains(r.Verbs, v)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestRenderManifests(t *testing.T) {
	b := render(t)
	ns, sa, cr, crb, role, rb, d := objects(t, b.Manifests)

	if ns.Name != "nebula-system" {
		t.Errorf("Namespace = %q, want nebula-system", ns.Name)
	}
	if sa.Name != "nebula-agent" || sa.Namespace != "nebula-system" {
		t.Errorf("ServiceAccount = %s/%s", sa.Namespace, sa.Name)
	}
	wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nebula-agent", Namespace: "nebula-system"}}

	// Cluster-wide: what the agent applies, prunes and reads.
	if cr.Name != "nebula-agent" {
		t.Errorf("ClusterRole = %q", cr.Name)
	}
	for _, c := range []struct {
		group, resource string
		verbs           []string
	}{
		{"", "namespaces", []string{"get", "patch"}},
		{"", "secrets", []string{"list", "patch", "delete"}},
		{"", "services", []string{"list", "patch", "delete"}},
		{"apps", "deployments", []string{"list", "patch", "delete"}},
		{"networking.k8s.io", "ingresses", []string{"list", "patch", "delete"}},
		{"", "nodes", []string{"list"}},
		{"", "events", []string{"list"}},
	} {
		if !hasRule(cr.Rules, c.group, c.resource, c.verbs...) {
			t.Errorf("ClusterRole does not grant %v on %q %s: %+v", c.verbs, c.group, c.resource, cr.Rules)
		}
	}
	if hasRule(cr.Rules, "coordination.k8s.io", "leases") || hasRule(cr.Rules, "", "configmaps") {
		t.Errorf("ClusterRole grants leases or configmaps cluster-wide: %+v", cr.Rules)
	}
	if crb.Name != "nebula-agent" || crb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nebula-agent"}) {
		t.Errorf("ClusterRoleBinding %q roleRef %+v", crb.Name, crb.RoleRef)
	}
	if !reflect.DeepEqual(crb.Subjects, wantSubject) {
		t.Errorf("ClusterRoleBinding subjects = %+v, want %+v", crb.Subjects, wantSubject)
	}

	// In its own namespace: the Lease and the state ConfigMap.
	if role.Name != "nebula-agent" || role.Namespace != "nebula-system" {
		t.Errorf("Role = %s/%s", role.Namespace, role.Name)
	}
	if !hasRule(role.Rules, "coordination.k8s.io", "leases", "get", "create", "update") {
		t.Errorf("Role does not grant get/create/update on leases: %+v", role.Rules)
	}
	if !hasRule(role.Rules, "", "configmaps", "get", "create", "patch") {
		t.Errorf("Role does not grant get/create/patch on configmaps: %+v", role.Rules)
	}
	if rb.Name != "nebula-agent" || rb.Namespace != "nebula-system" ||
		rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "nebula-agent"}) {
		t.Errorf("RoleBinding %s/%s roleRef %+v", rb.Namespace, rb.Name, rb.RoleRef)
	}
	if !reflect.DeepEqual(rb.Subjects, wantSubject) {
		t.Errorf("RoleBinding subjects = %+v, want %+v", rb.Subjects, wantSubject)
	}

	// The Deployment.
	image := "ghcr.io/nebulactrl/nebula:1.4.2"
	if d.Name != "nebula-agent" || d.Namespace != "nebula-system" {
		t.Errorf("Deployment = %s/%s", d.Namespace, d.Name)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		t.Fatalf("selector = %+v", d.Spec.Selector)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod template label %s = %q, the selector needs %q", k, d.Spec.Template.Labels[k], v)
		}
	}
	if d.Labels["app.kubernetes.io/version"] != "1.4.2" || d.Spec.Template.Labels["app.kubernetes.io/version"] != "1.4.2" {
		t.Errorf("version labels: %v / %v", d.Labels, d.Spec.Template.Labels)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "nebula-agent" {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != image || b.Image != image {
		t.Errorf("image = %q (bundle %q), want %q", c.Image, b.Image, image)
	}
	if b.Version != "1.4.2" {
		t.Errorf("bundle version = %q", b.Version)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for k, v := range map[string]string{
		"NEBULA_AGENT_SERVER":     "https://nebula.example.com:8443",
		"NEBULA_AGENT_TOKEN_FILE": "/var/run/secrets/nebula/token",
		"NEBULA_AGENT_NAMESPACE":  "nebula-system",
		"NEBULA_AGENT_IMAGE":      image,
	} {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("env %s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	podName := false
	for _, e := range c.Env {
		if e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			podName = true
		}
	}
	if !podName {
		t.Errorf("POD_NAME does not come from metadata.name: %+v", c.Env)
	}

	// The token comes from the Secret nebula-agent-token, mounted read-only
	// where NEBULA_AGENT_TOKEN_FILE points.
	var tokenVolume string
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "nebula-agent-token" {
			tokenVolume = v.Name
		}
	}
	if tokenVolume == "" {
		t.Fatalf("no volume of the Secret nebula-agent-token: %+v", pod.Volumes)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == tokenVolume && m.MountPath == TokenDir && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the token volume %q is not mounted read-only at %s: %+v", tokenVolume, TokenDir, c.VolumeMounts)
	}
	if !strings.HasPrefix(env["NEBULA_AGENT_TOKEN_FILE"], TokenDir+"/") {
		t.Errorf("the token file %q is outside the mount %s", env["NEBULA_AGENT_TOKEN_FILE"], TokenDir)
	}
}

func TestRenderCommand(t *testing.T) {
	b := render(t)
	for _, want := range []string{
		"kubectl apply -f nebula-agent-prod-eu.yaml",
		"kubectl -n nebula-system create secret generic nebula-agent-token",
		`--from-literal=token="$NEBULA_CONNECT_TOKEN"`,
		"$NEBULA_CONNECT_TOKEN",
		"nebula-agent-prod-eu.yaml",
	} {
		if !strings.Contains(b.Command, want) {
			t.Errorf("command %q does not contain %q", b.Command, want)
		}
	}
	// Apply first: the Secret goes into the namespace the manifests create.
	if i, j := strings.Index(b.Command, "kubectl apply"), strings.Index(b.Command, "create secret"); i < 0 || j < i {
		t.Errorf("command %q does not apply the manifests before creating the Secret", b.Command)
	}
	if !strings.Contains(b.Manifests, testClusterName) {
		t.Errorf("the manifests do not name the cluster %q", testClusterName)
	}
}

func TestRenderHasNoToken(t *testing.T) {
	for _, s := range []Settings{testSettings, {Server: "http://localhost:8080", Repository: "nebula", Version: "dev"}} {
		b, err := Render(s, testClusterName)
		if err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{"manifests": b.Manifests, "command": b.Command} {
			if strings.Contains(text, "nbc_") {
				t.Errorf("the %s contain a connect token prefix nbc_:\n%s", name, text)
			}
		}
		// The only secret thing is a reference; no Secret object with data.
		for _, o := range decode(t, b.Manifests) {
			if _, ok := o.(*corev1.Secret); ok {
				t.Errorf("the manifests contain a Secret")
			}
		}
	}
}

func TestRenderIncompleteSettings(t *testing.T) {
	for _, s := range []Settings{
		{},
		{Repository: "r", Version: "1"},
		{Server: "https://x", Version: "1"},
		{Server: "https://x", Repository: "r"},
	} {
		b, err := Render(s, testClusterName)
		if err == nil {
			t.Errorf("Render(%+v) gave no error", s)
		}
		if b != (Bundle{}) {
			t.Errorf("Render(%+v) gave a bundle with its error: %+v", s, b)
		}
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	a, b := render(t), render(t)
	if a != b {
		t.Errorf("two renders differ")
	}
	other, err := Render(Settings{Server: "https://other.example.com", Repository: "example.com/agent", Version: "2.0.0"}, "dev")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, _, _, d := objects(t, other.Manifests)
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "example.com/agent:2.0.0" {
		t.Errorf("image = %q", c.Image)
	}
	for _, e := range c.Env {
		if e.Name == "NEBULA_AGENT_SERVER" && e.Value != "https://other.example.com" {
			t.Errorf("server = %q", e.Value)
		}
	}
	if !strings.Contains(other.Command, "nebula-agent-dev.yaml") {
		t.Errorf("command = %q", other.Command)
	}
}

// buildObjects returns the build namespace, its Role and RoleBinding.
func buildObjects(t *testing.T, manifests string) (*corev1.Namespace, *rbacv1.Role, *rbacv1.RoleBinding) {
	t.Helper()
	objects(t, manifests) // checks the kinds
	objs := decode(t, manifests)
	return objs[6].(*corev1.Namespace), objs[7].(*rbacv1.Role), objs[8].(*rbacv1.RoleBinding)
}

// Builds run in their own namespace, with exactly what running them takes
// granted there, and nothing about Jobs cluster-wide.
func TestRenderBuildNamespace(t *testing.T) {
	b := render(t)
	_, _, cr, _, _, _, _ := objects(t, b.Manifests)
	ns, role, rb := buildObjects(t, b.Manifests)
	if ns.Name != "nebula-build" || role.Namespace != "nebula-build" || rb.Namespace != "nebula-build" {
		t.Errorf("build namespace %q, role in %q, binding in %q", ns.Name, role.Namespace, rb.Namespace)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
	}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("build Role rules = %+v, want %+v", role.Rules, want)
	}
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}) ||
		!reflect.DeepEqual(rb.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nebula-agent", Namespace: "nebula-system"}}) {
		t.Errorf("build RoleBinding %+v %+v", rb.RoleRef, rb.Subjects)
	}
	// Jobs only in the build namespace. Pod logs are read cluster-wide
	// (get only): the agent follows the pods of every namespace it
	// manages (logs.v1), as it reads their pods and Secrets.
	if hasRule(cr.Rules, "batch", "jobs") {
		t.Errorf("the ClusterRole grants jobs cluster-wide: %+v", cr.Rules)
	}
	if !hasRule(cr.Rules, "", "pods/log") {
		t.Errorf("the ClusterRole does not let the agent read the logs of the pods it manages: %+v", cr.Rules)
	}
}

// Pinned by digest, with a CA bundle: the image is repository:version@digest,
// the bundle is a ConfigMap mounted where NEBULA_AGENT_CA_FILE says, and
// the PEM comes through the YAML byte for byte.
func TestRenderPinnedWithCABundle(t *testing.T) {
	const pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\nabc/def+==\n-----END CERTIFICATE-----\n"
	s := testSettings
	s.Digest = "sha256:" + strings.Repeat("ab", 32)
	s.CABundle = pem
	b, err := Render(s, testClusterName)
	if err != nil {
		t.Fatal(err)
	}
	want := "ghcr.io/nebulactrl/nebula:1.4.2@" + s.Digest
	if b.Image != want {
		t.Errorf("image %q, want %q", b.Image, want)
	}
	var dep *appsv1.Deployment
	var ca *corev1.ConfigMap
	for _, o := range decode(t, b.Manifests) {
		switch v := o.(type) {
		case *appsv1.Deployment:
			dep = v
		case *corev1.ConfigMap:
			ca = v
		}
	}
	if ca == nil || ca.Name != CAConfigMap || strings.TrimSpace(ca.Data[CAKey]) != strings.TrimSpace(pem) {
		t.Fatalf("the CA ConfigMap: %+v", ca)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != want {
		t.Errorf("the container's image %q", c.Image)
	}
	var caFile string
	for _, e := range c.Env {
		if e.Name == "NEBULA_AGENT_CA_FILE" {
			caFile = e.Value
		}
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.Name == "ca" && m.MountPath+"/"+CAKey == caFile
	}
	if caFile != CADir+"/"+CAKey || !mounted {
		t.Errorf("NEBULA_AGENT_CA_FILE=%q, mounts %+v", caFile, c.VolumeMounts)
	}
	// Without one, none of it.
	plain := render(t)
	if strings.Contains(plain.Manifests, CAConfigMap) || strings.Contains(plain.Manifests, "NEBULA_AGENT_CA_FILE") {
		t.Error("a bundle without a CA mentions one")
	}
}

// The control plane's manifests: two replicas of `nebula serve` pinned to
// the image, probes on /readyz and /healthz, the database URL and master
// key from the Secret, non-root with a read-only root, and no secret in
// the text.
func TestRenderControlPlane(t *testing.T) {
	image := "ghcr.io/nebulactrl/nebula:1.4.2@sha256:" + strings.Repeat("cd", 32)
	text, err := RenderControlPlane(ControlPlane{Image: image, Version: "1.4.2", PublicURL: "https://nebula.acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	kinds := map[string]bool{}
	for _, o := range decode(t, text) {
		kinds[reflect.TypeOf(o).Elem().Name()] = true
		if d, ok := o.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "Deployment", "Service", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("no %s in %v", k, kinds)
		}
	}
	if *dep.Spec.Replicas != 2 || dep.Namespace != ControlPlaneNamespace {
		t.Errorf("replicas %d in %s", *dep.Spec.Replicas, dep.Namespace)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != image || !slices.Equal(c.Args, []string{"serve"}) || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("the container: %+v", c)
	}
	secrets := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if e.ValueFrom.SecretKeyRef.Name != ControlPlaneSecret {
				t.Errorf("%s from Secret %s", e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
			secrets[e.Name] = e.ValueFrom.SecretKeyRef.Key
		}
		if e.Name == "NEBULA_PUBLIC_URL" && e.Value != "https://nebula.acme.test" {
			t.Errorf("NEBULA_PUBLIC_URL=%q", e.Value)
		}
	}
	if secrets["NEBULA_MASTER_KEY"] != "master-key" || secrets["NEBULA_DATABASE_URL"] != "database-url" {
		t.Errorf("the settings from the Secret: %v", secrets)
	}
	sc := dep.Spec.Template.Spec.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the control plane does not run as non-root with a read-only root")
	}
	if _, err := RenderControlPlane(ControlPlane{Version: "1"}); err == nil {
		t.Error("manifests without an image")
	}
}
