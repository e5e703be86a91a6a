package e2e

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// makeImage runs `make image` into out and returns the digest it wrote.
func makeImage(t *testing.T, out string) string {
	t.Helper()
	cmd := exec.Command("make", "image", "IMAGE_OUT="+out, "VERSION=dev")
	cmd.Dir = repoRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, b)
	}
	d, err := os.ReadFile(filepath.Join(out, "digest"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(d))
}

// `make image` twice gives the same digest; the image's config runs the
// nebula inside it (which runs); the tarball holds the same config; the
// control plane's manifests pinned to it and an agent bundle pinned by
// digest, with a CA bundle, apply to the simulated cluster, whose
// controllers and kwok make their Deployments ready.
func TestImageAndManifests(t *testing.T) {
	needCluster(t)
	out := t.TempDir()
	digest := makeImage(t, out)
	if again := makeImage(t, t.TempDir()); again != digest {
		t.Fatalf("make image twice: %s, then %s", digest, again)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
		t.Fatalf("digest %q", digest)
	}

	// The OCI layout's image: its digest, its config, the binary.
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != digest {
		t.Fatalf("the layout's index: %+v, %v", im, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/nebula"}) || !slices.Equal(cfg.Config.Cmd, []string{"serve"}) ||
		cfg.Config.User != "65532:65532" || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("the image's config: %+v", cfg.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v, %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "nebula")
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "nebula" {
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	rc.Close()
	for _, want := range []string{"nebula", "etc/passwd", "var/lib/nebula/", "tmp/"} {
		if !slices.Contains(names, want) {
			t.Errorf("the layer has no %s: %v", want, names)
		}
	}
	if v, err := exec.Command(bin, "version").Output(); err != nil || strings.TrimSpace(string(v)) != "dev" {
		t.Errorf("the image's nebula version: %q, %v", v, err)
	}
	tb, err := tarball.ImageFromPath(filepath.Join(out, "nebula.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// docker load's format has its own manifest: the same config and
	// layer, under another manifest digest.
	want, _ := img.ConfigName()
	if c, err := tb.ConfigName(); err != nil || c != want {
		t.Errorf("the tarball's image config %s, want %s (%v)", c, want, err)
	}

	// The control plane's manifests, pinned by the same digest.
	cs := admin(t)
	ctx := context.Background()
	manifests, err := os.ReadFile(filepath.Join(out, "control-plane.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := "ghcr.io/nebulactrl/nebula:dev@" + digest
	if !strings.Contains(string(manifests), "image: "+pinned) {
		t.Fatalf("control-plane.yaml is not pinned to %s", pinned)
	}
	applyManifests(t, strings.SplitN(string(manifests), "\n---\n", 2)[0]) // the namespace first
	_, err = cs.CoreV1().Secrets("nebula").Apply(ctx, corev1ac.Secret("nebula-control-plane", "nebula").WithStringData(map[string]string{
		"database-url": "postgres://nebula@db.nebula.svc:5432/nebula", "master-key": "a key the operator made"}),
		metav1.ApplyOptions{FieldManager: "e2e", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	applyManifests(t, string(manifests))
	waitReady(t, "nebula", "nebula-control-plane", 2, func(d *appsv1.Deployment) string {
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != pinned || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			return fmt.Sprintf("the control plane's container: %+v", c)
		}
		return ""
	})

	// An agent bundle pinned by digest, with a CA bundle.
	ca := testutil.NewCA(t, "nebula e2e CA")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	cp := startControlPlaneEnv(t, "NEBULA_AGENT_IMAGE_DIGEST="+digest, "NEBULA_AGENT_CA_BUNDLE_FILE="+caFile)
	f := setup(t, cp, "pinned")
	inst := cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster { install { image manifests } } } }`, map[string]any{"id": f.cluster})
	if img := str(inst, "node", "install", "image"); img != pinned {
		t.Errorf("the install bundle's image %q, want %q", img, pinned)
	}
	waitReady(t, "nebula-system", "nebula-agent", 2, func(d *appsv1.Deployment) string {
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != pinned {
			return "the agent's image: " + c.Image
		}
		return ""
	})
	cm, err := cs.CoreV1().ConfigMaps("nebula-system").Get(ctx, "nebula-agent-ca", metav1.GetOptions{})
	if err != nil || strings.TrimSpace(cm.Data["ca.crt"]) != strings.TrimSpace(string(ca.PEM)) {
		t.Errorf("the agents' CA bundle in the cluster: %v", err)
	}
}

// waitReady waits until a Deployment of the simulated cluster has ready
// replicas and check (of its spec) says nothing is wrong.
func waitReady(t *testing.T, ns, name string, replicas int32, check func(*appsv1.Deployment) string) {
	t.Helper()
	cs := admin(t)
	testutil.Eventually(t, 90*time.Second, ns+"/"+name+" ready", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if why := check(d); why != "" {
			t.Fatal(why)
		}
		return d.Status.ReadyReplicas == replicas, fmt.Sprintf("%+v", d.Status)
	})
}

// The control plane serves TLS (NEBULA_TLS_CERT_FILE/KEY_FILE, a private
// CA): an agent given the CA bundle (--ca-file) connects; one without it
// refuses the certificate and never connects; the CLI the same with
// NEBULA_CA_FILE.
func TestAgentOverTLS(t *testing.T) {
	needCluster(t)
	dir := t.TempDir()
	ca := testutil.NewCA(t, "nebula e2e TLS CA")
	cert, key := ca.Issue(t, 7)
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.pem")
	for f, b := range map[string][]byte{certFile: cert, keyFile: key, caFile: ca.PEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	p := start(t, "control-plane-tls", dir, []string{"NEBULA_ADDR=" + strings.TrimPrefix(url, "https://"),
		"NEBULA_DATA_DIR=" + filepath.Join(dir, "data"), "NEBULA_AGENT_HEARTBEAT=1s", "NEBULA_AGENT_DISCONNECTED_AFTER=3s",
		"NEBULA_TLS_CERT_FILE=" + certFile, "NEBULA_TLS_KEY_FILE=" + keyFile, "NEBULA_LOG_LEVEL=debug"}, "serve")
	var token string
	testutil.Eventually(t, 30*time.Second, "the control plane prints its admin token", func() (bool, string) {
		m := regexp.MustCompile(`(?m)^\s+(nbt_\S+)\s*$`).FindStringSubmatch(p.stdout())
		if m != nil {
			token = m[1]
		}
		return m != nil, p.stdout()
	})
	if !strings.Contains(p.stdout(), "serving GraphQL at "+url) {
		t.Errorf("the control plane does not say it serves %s:\n%s", url, p.stdout())
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	cp := &controlPlane{proc: p, url: url, token: token, client: trusting}
	f := setup(t, cp, "tls")

	untrusting := f.startAgent(t, "no-ca", "nebula-agent-no-ca")
	testutil.Eventually(t, 30*time.Second, "the agent without the CA refuses the certificate", func() (bool, string) {
		return strings.Contains(untrusting.logText(), "certificate signed by unknown authority"), tail(untrusting.logText(), 10)
	})
	if st := str(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster { status } } }`, map[string]any{"id": f.cluster}), "node", "status"); st != "PENDING" {
		t.Errorf("with an untrusting agent the cluster is %s, want PENDING", st)
	}
	untrusting.kill()
	f.startAgent(t, "with-ca", "nebula-agent-tls", "--ca-file", caFile)
	testutil.Eventually(t, 30*time.Second, "the agent with the CA connects", func() (bool, string) {
		st := str(cp.gql(t, `query ($id: ID!) { node(id: $id) { ... on Cluster { status } } }`, map[string]any{"id": f.cluster}), "node", "status")
		return st == "CONNECTED", st
	})

	// The CLI: trusting with NEBULA_CA_FILE, refusing without.
	env := []string{"NEBULA_URL=" + url, "NEBULA_TOKEN=" + token}
	ok := runCLI(t, append(env, "NEBULA_CA_FILE="+caFile), "", "status")
	if code := ok.wait(t, 30*time.Second); code != 0 || !strings.Contains(ok.out(), "tls") {
		t.Errorf("status over TLS with the CA: exit %d\n%s%s", code, ok.out(), ok.errs())
	}
	refused := runCLI(t, env, "", "status")
	if code := refused.wait(t, 60*time.Second); code == 0 || !strings.Contains(refused.errs(), "certificate") {
		t.Errorf("status over TLS without the CA: exit %d\n%s", code, refused.errs())
	}
}
