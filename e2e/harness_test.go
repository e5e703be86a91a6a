// Package e2e runs the control plane and the agent as real processes
// against a real, simulated Kubernetes cluster (hack/simcluster): etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok, all on
// loopback. TestMain builds nebula, starts one cluster for the package and
// stops it after. The CLI's tests run it against `nebula dev` processes
// and need no cluster.
//
// Without the simulated cluster's binaries (bash hack/simcluster/build.sh)
// the tests that need it skip, unless NEBULA_REQUIRE_SIMCLUSTER=1 (CI),
// when they fail.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/nebulactrl/nebula/internal/testutil"
)

var (
	skipReason string
	repoRoot   string
	nebulaBin  string
	sim        simEnv
)

// simEnv is what simcluster.sh start exports; dir is its state directory
// (pids, logs).
type simEnv struct {
	kubeconfig, apiserver, ca, node, dir string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, _ := os.Getwd()
	repoRoot = filepath.Dir(wd)
	tmp, err := os.MkdirTemp("", "nebula-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// The binary serves the tests that need no cluster too (the CLI
	// against nebula dev).
	nebulaBin = filepath.Join(tmp, "nebula")
	build := exec.Command("go", "build", "-o", nebulaBin, "./cmd/nebula")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building nebula: %v\n%s", err, out)
		return 1
	}

	cache := os.Getenv("NEBULA_SIMCLUSTER_CACHE")
	if cache == "" {
		cache = "/root/.cache/nebula-simcluster"
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(cache, "bin", b)); err != nil {
			skipReason = fmt.Sprintf("the simulated cluster is not built (%s missing); run: bash hack/simcluster/build.sh", b)
		}
	}
	if skipReason != "" {
		if os.Getenv("NEBULA_REQUIRE_SIMCLUSTER") == "1" {
			fmt.Fprintln(os.Stderr, "e2e: NEBULA_REQUIRE_SIMCLUSTER=1 but", skipReason)
			return 1
		}
		return m.Run()
	}

	simDir := filepath.Join(tmp, "sim")
	script := filepath.Join(repoRoot, "hack", "simcluster", "simcluster.sh")
	start := exec.Command("bash", script, "start")
	start.Env = append(os.Environ(), "NEBULA_SIMCLUSTER_DIR="+simDir)
	start.Stderr = os.Stderr
	out, err := start.Output()
	stop := func() {
		s := exec.Command("bash", script, "stop")
		s.Env = start.Env
		s.Stderr = os.Stderr
		_ = s.Run()
	}
	if err != nil {
		stop()
		fmt.Fprintf(os.Stderr, "e2e: starting the simulated cluster: %v\n", err)
		return 1
	}
	defer stop()
	exports := map[string]string{}
	for _, m := range regexp.MustCompile(`export (\w+)=(\S+)`).FindAllStringSubmatch(string(out), -1) {
		exports[m[1]] = m[2]
	}
	sim = simEnv{kubeconfig: exports["KUBECONFIG"], apiserver: exports["NEBULA_SIMCLUSTER_APISERVER"],
		ca: exports["NEBULA_SIMCLUSTER_CA"], node: exports["NEBULA_SIMCLUSTER_NODE"], dir: exports["NEBULA_SIMCLUSTER_DIR"]}
	if sim.kubeconfig == "" || sim.apiserver == "" {
		fmt.Fprintf(os.Stderr, "e2e: simcluster.sh start printed no exports:\n%s", out)
		return 1
	}
	return m.Run()
}

func needCluster(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// adminConfig is the simulated cluster's admin client configuration.
func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", sim.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// admin is a cluster-admin client of the simulated cluster.
func admin(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// proc is a child process whose output goes to a log file; the log is
// printed when the test fails.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer // stdout, for the control plane's first-start message
}

func (p *proc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// kill ends the process at once (SIGKILL): nothing is released, as when a
// node dies.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func start(t *testing.T, name, dir string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(nebulaBin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = logf
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(os.Interrupt)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				p.kill()
			}
		}
		if t.Failed() {
			t.Logf("--- log of %s ---\n%s", name, tail(p.logText(), 60))
		}
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// controlPlane is a `nebula serve` process on the embedded store, with a
// 1 s heartbeat and DISCONNECTED after 3 s of silence.
type controlPlane struct {
	*proc
	url, token string
	// client reaches it (nil: http.DefaultClient); one trusting its CA
	// when it serves TLS.
	client *http.Client
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	return startControlPlaneEnv(t)
}

// startControlPlaneEnv is startControlPlane with more settings; a variable
// given here wins over the default above (the last of a name counts).
func startControlPlaneEnv(t *testing.T, env ...string) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	p := start(t, "control-plane", dir, append([]string{
		"NEBULA_ADDR=" + strings.TrimPrefix(url, "http://"),
		"NEBULA_DATA_DIR=" + filepath.Join(dir, "data"),
		"NEBULA_AGENT_HEARTBEAT=1s",
		"NEBULA_AGENT_DISCONNECTED_AFTER=3s",
		"NEBULA_PUBLIC_URL=" + url,
		"NEBULA_LOG_LEVEL=debug",
	}, env...), "serve")
	tokenLine := regexp.MustCompile(`(?m)^\s+(nbt_\S+)\s*$`)
	var token string
	testutil.Eventually(t, 30*time.Second, "the control plane prints its admin token", func() (bool, string) {
		m := tokenLine.FindStringSubmatch(p.stdout())
		if m == nil {
			return false, p.stdout()
		}
		token = m[1]
		return true, ""
	})
	cp := &controlPlane{proc: p, url: url, token: token}
	testutil.Eventually(t, 10*time.Second, "the control plane is ready", func() (bool, string) {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return cp
}

// gql runs a GraphQL operation and fails the test on errors or
// userErrors. It returns data.
func (cp *controlPlane) gql(t *testing.T, query string, vars map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", cp.url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+cp.token)
	req.Header.Set("Content-Type", "application/json")
	client := cp.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("graphql: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Data   map[string]any `json:"data"`
		Errors []any          `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) > 0 {
		t.Fatalf("graphql %s: %s", firstLine(query), raw)
	}
	for _, v := range out.Data {
		if m, ok := v.(map[string]any); ok {
			if ue, ok := m["userErrors"].([]any); ok && len(ue) > 0 {
				t.Fatalf("graphql %s: user errors %v", firstLine(query), ue)
			}
		}
	}
	return out.Data
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i > 0 {
		return s[:i]
	}
	return s
}

// dig walks a decoded JSON value by keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any, keys ...string) string {
	s, _ := dig(v, keys...).(string)
	return s
}

func num(v any, keys ...string) int64 {
	f, _ := dig(v, keys...).(float64)
	return int64(f)
}

// dynamicClient is a dynamic client of the simulated cluster, as its admin.
func dynamicClient(t *testing.T) *dynamic.DynamicClient {
	t.Helper()
	dc, err := dynamic.NewForConfig(adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// applyManifests applies a multi-document YAML the way `kubectl apply
// --server-side` would, through discovery and the dynamic client.
func applyManifests(t *testing.T, manifests string) {
	t.Helper()
	dc := dynamicClient(t)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(admin(t).Discovery()))
	ctx := context.Background()
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("manifest does not parse: %v\n%s", err, doc)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("mapping %s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dc.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: "e2e", Force: true}); err != nil {
			t.Fatalf("applying %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// agent's service account, so that the agent runs with exactly the RBAC of
// its install manifests.
func serviceAccountKubeconfig(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	return serviceAccountKubeconfigFor(t, cs, time.Hour)
}

// serviceAccountKubeconfigFor is serviceAccountKubeconfig with a token
// valid for ttl, for runs longer than an hour.
func serviceAccountKubeconfigFor(t *testing.T, cs *kubernetes.Clientset, ttl time.Duration) string {
	t.Helper()
	exp := int64(ttl / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts("nebula-system").CreateToken(context.Background(), "nebula-agent",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the agent's service account: %v", err)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: %q, certificate-authority: %q}
users:
- name: nebula-agent
  user: {token: %q}
contexts:
- name: sim
  context: {cluster: sim, user: nebula-agent}
current-context: sim
`, sim.apiserver, sim.ca, tr.Status.Token)
	path := filepath.Join(t.TempDir(), "agent.kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
