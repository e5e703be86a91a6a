package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// devPlane is `nebula dev` as a process: the control plane on its own
// store, with a simulated cluster and its agent inside. It can be killed
// and started again on the same directory and address.
type devPlane struct {
	*controlPlane
	dir, addr string
	env       []string
	web, dev  string // the demo's image service and its environment
}

func startDev(t *testing.T, env ...string) *devPlane {
	t.Helper()
	d := &devPlane{dir: t.TempDir(), addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), env: env}
	d.start(t)
	m := regexp.MustCompile(`serviceId: "([^"]+)", environmentId: "([^"]+)",\n\s+imageDigest`).FindStringSubmatch(d.stdout())
	if m == nil {
		t.Fatalf("nebula dev printed no deploy of its image service:\n%s", d.stdout())
	}
	d.web, d.dev = m[1], m[2]
	return d
}

// start runs nebula dev (again) and waits until it is set up.
func (d *devPlane) start(t *testing.T) {
	t.Helper()
	p := start(t, "nebula-dev", d.dir, append([]string{"NEBULA_ADDR=" + d.addr, "NEBULA_DATA_DIR=" + filepath.Join(d.dir, "data"),
		"NEBULA_LOG_LEVEL=info"}, d.env...), "dev")
	testutil.Eventually(t, 60*time.Second, "nebula dev sets up", func() (bool, string) {
		return strings.Contains(p.stdout(), "subscription { buildLog"), p.stdout() + tail(p.logText(), 20)
	})
	token := regexp.MustCompile(`Bearer (nbt_[A-Za-z0-9]+)`).FindStringSubmatch(p.stdout())
	if token == nil {
		t.Fatalf("nebula dev printed no token:\n%s", p.stdout())
	}
	d.controlPlane = &controlPlane{proc: p, url: "http://" + d.addr, token: token[1]}
}

// cli is one run of a nebula client command.
type cli struct {
	cmd            *exec.Cmd
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	lines          chan string // stdout's lines as they come
	done           chan struct{}
	err            error
}

// runCLI starts `nebula args…` with env (NEBULA_URL, NEBULA_TOKEN,
// NEBULA_CONFIG…) and stdin.
func runCLI(t *testing.T, env []string, stdin string, args ...string) *cli {
	t.Helper()
	c := &cli{lines: make(chan string, 1000), done: make(chan struct{})}
	c.cmd = exec.Command(nebulaBin, args...)
	c.cmd.Dir = t.TempDir()
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdin = strings.NewReader(stdin)
	c.cmd.Stderr = &lockedWriter{mu: &c.mu, b: &c.stderr}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.mu.Lock()
			c.stdout.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			c.lines <- sc.Text()
		}
		c.err = c.cmd.Wait()
		close(c.lines)
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the command to end and returns its exit code.
func (c *cli) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(within):
		t.Fatalf("nebula %v did not end within %s:\nstdout:\n%s\nstderr:\n%s", c.cmd.Args[1:], within, c.out(), c.errs())
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

func (c *cli) out() string  { c.mu.Lock(); defer c.mu.Unlock(); return c.stdout.String() }
func (c *cli) errs() string { c.mu.Lock(); defer c.mu.Unlock(); return c.stderr.String() }

// waitLine waits for a line of stdout matching re.
func (c *cli) waitLine(t *testing.T, re string, within time.Duration) string {
	t.Helper()
	pat := regexp.MustCompile(re)
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("nebula %v ended without a line matching %q:\n%s\nstderr:\n%s", c.cmd.Args[1:], re, c.out(), c.errs())
			}
			if pat.MatchString(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line matching %q within %s:\n%s", re, within, c.out())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// waited is what `deploy --wait -o json` prints.
type waited struct {
	Deployment struct {
		ID    string `json:"id"`
		Stage string `json:"stage"`
	} `json:"deployment"`
	Wait struct {
		Stage   string `json:"stage"`
		Message string `json:"message"`
		Events  []struct {
			Sequence int    `json:"sequence"`
			Stage    string `json:"stage"`
		} `json:"events"`
	} `json:"wait"`
}

func (w waited) stages() string {
	var s []string
	for i, e := range w.Wait.Events {
		if e.Sequence != i+1 {
			s = append(s, fmt.Sprintf("#%d?", e.Sequence))
		}
		s = append(s, e.Stage)
	}
	return strings.Join(s, ",")
}

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// The CLI against nebula dev, as processes: login keeps the token in a
// 0600 file and never prints it; status and deploy --wait -o json are
// parsed; a deploy waits at SUCCEEDED with exit 0; one to a protected
// environment shows its wait for approval and goes on once approved from
// another nebula process; an unready release ends ROLLED_BACK with exit 4
// and the reason.
func TestCLIDeployWaitOnDev(t *testing.T) {
	t.Parallel()
	d := startDev(t, "NEBULA_ALLOW_SELF_APPROVAL=true")
	cfg := filepath.Join(t.TempDir(), "nebula", "config.json")
	env := []string{"NEBULA_CONFIG=" + cfg}

	login := runCLI(t, env, d.token+"\n", "login", d.url, "--name", "dev")
	if code := login.wait(t, 30*time.Second); code != 0 || !strings.Contains(login.out(), "as admin@localhost.localdomain") {
		t.Fatalf("login: exit %d\n%s%s", code, login.out(), login.errs())
	}
	if strings.Contains(login.out()+login.errs(), d.token) {
		t.Error("login printed the token")
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the credentials file: %v, %v", fi, err)
	}

	st := runCLI(t, env, "", "status", "-o", "json")
	if code := st.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("status: exit %d: %s", code, st.errs())
	}
	var status struct {
		Tenants []struct {
			Clusters struct {
				Nodes []struct{ Name, Status string }
			}
		}
	}
	if err := json.Unmarshal([]byte(st.out()), &status); err != nil || len(status.Tenants) != 1 ||
		len(status.Tenants[0].Clusters.Nodes) != 1 || status.Tenants[0].Clusters.Nodes[0].Status != "CONNECTED" {
		t.Errorf("status -o json: %v\n%s", err, st.out())
	}

	// A deploy, followed to SUCCEEDED.
	dep := runCLI(t, env, "", "deploy", "web", "--env", "dev", "--image", digest(1), "--wait", "-o", "json")
	if code := dep.wait(t, time.Minute); code != 0 {
		t.Fatalf("deploy --wait: exit %d\n%s\n%s", code, dep.out(), dep.errs())
	}
	var w waited
	if err := json.Unmarshal([]byte(dep.out()), &w); err != nil {
		t.Fatalf("deploy -o json: %v\n%s", err, dep.out())
	}
	if w.Wait.Stage != "SUCCEEDED" || w.stages() != "QUEUED,DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED" {
		t.Errorf("the wait: %s, stages %s", w.Wait.Stage, w.stages())
	}

	// Bad input changes nothing and says why.
	bad := runCLI(t, env, "", "deploy", "web", "--env", "dev", "--image", "latest")
	if code := bad.wait(t, 30*time.Second); code != 1 || !strings.Contains(bad.errs(), "BAD_USER_INPUT") {
		t.Errorf("a deploy of a tag: exit %d, %s", code, bad.errs())
	}

	// A protected environment: the wait for approval is shown; another
	// nebula approves it; the first goes on to SUCCEEDED.
	proj := dig(d.gql(t, `query($e: ID!) { node(id: $e) { ... on Environment { project { id } } } }`, map[string]any{"e": d.dev}),
		"node", "project", "id").(string)
	d.gql(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "prod", protected: true, clusterSelector: [{key: "env", value: "dev"}]}) {
		environment { id } userErrors { message } } }`, map[string]any{"p": proj})
	gated := runCLI(t, env, "", "deploy", "web", "--env", "prod", "--image", digest(2), "--wait")
	id := regexp.MustCompile(`^Deployment (\S+):`).FindStringSubmatch(gated.waitLine(t, `^Deployment \S+:`, 30*time.Second))[1]
	gated.waitLine(t, `waiting for approval`, 30*time.Second)
	ok := runCLI(t, env, "", "approve", id, "--comment", "looks right")
	if code := ok.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, ok.errs())
	}
	if code := gated.wait(t, time.Minute); code != 0 || !strings.Contains(gated.out(), "SUCCEEDED in") {
		t.Errorf("the gated deploy's wait: exit %d\n%s\n%s", code, gated.out(), gated.errs())
	}

	// A release whose pods never become ready is rolled back: exit 4, the
	// reason said.
	// web runs in the protected prod too: the change is a change set of
	// one, approved here (this control plane allows self-approval).
	set := dig(d.gql(t, `mutation($s: ID!) { updateService(input: {serviceId: $s, processes: [{name: "web", command: ["./web", "--simulate-unready"],
		replicas: 2, port: 8080, readinessProbe: {path: "/healthz", port: 8080}}]}) { changeSet { id state } userErrors { message } } }`, map[string]any{"s": d.web}),
		"updateService", "changeSet")
	if str(set, "state") != "SUBMITTED" {
		t.Fatalf("a process change reaching a protected environment: %v, want a change set awaiting approval", set)
	}
	d.gql(t, `mutation($c: ID!) { approveChangeSet(input: {changeSetId: $c}) { changeSet { state } userErrors { message } } }`,
		map[string]any{"c": str(set, "id")})
	unready := runCLI(t, env, "", "deploy", "web", "--env", "dev", "--image", digest(3), "--wait", "-o", "json")
	code := unready.wait(t, 2*time.Minute)
	w = waited{}
	if err := json.Unmarshal([]byte(unready.out()), &w); err != nil {
		t.Fatalf("deploy -o json: %v\n%s", err, unready.out())
	}
	if code != 4 || w.Wait.Stage != "ROLLED_BACK" || w.Wait.Message == "" || !strings.Contains(unready.errs(), "ROLLED_BACK") {
		t.Errorf("an unready release: exit %d, %s %q\nstderr: %s", code, w.Wait.Stage, w.Wait.Message, unready.errs())
	}
}

// deploy --wait follows a rollout through a control plane killed and
// started again mid-rollout: it reconnects, resumes after the last stage
// it saw, and exits 0 at SUCCEEDED with every stage once.
func TestCLIWaitThroughRestart(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	env := []string{"NEBULA_URL=" + d.url, "NEBULA_TOKEN=" + d.token}
	dep := runCLI(t, env, "", "deploy", "web", "--env", "dev", "--image", digest(7), "--wait")
	dep.waitLine(t, `\bDELIVERING\b`, 30*time.Second)
	d.kill()
	d.start(t)
	if code := dep.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("deploy --wait through a restart: exit %d\n%s\n%s", code, dep.out(), dep.errs())
	}
	if !strings.Contains(dep.errs(), "lost the connection") {
		t.Errorf("the wait did not say it lost the connection: %s", dep.errs())
	}
	var stages []string
	for _, l := range strings.Split(dep.out(), "\n") {
		if m := regexp.MustCompile(`^\d\d:\d\d:\d\d  ([A-Z_]+)\s`).FindStringSubmatch(l); m != nil {
			stages = append(stages, m[1])
		}
	}
	if got := strings.Join(stages, ","); got != "QUEUED,DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED" {
		t.Errorf("stages shown %s\n%s", got, dep.out())
	}
}

// nebula login --web: the CLI shows a code and a link; a person signed in
// to the console confirms it (here the dev admin, through the console
// link nebula dev printed, then the GraphQL mutation the console page
// sends); the CLI gets their token, keeps it, and works with it.
func TestCLILoginWeb(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	login := runCLI(t, []string{"NEBULA_CONFIG=" + cfg}, "", "login", d.url, "--web", "--name", "dev")
	var code string
	testutil.Eventually(t, 30*time.Second, "the CLI shows a code", func() (bool, string) {
		m := regexp.MustCompile(`\n\s+([B-Z]{4}-[B-Z]{4})\n\n\s+(http\S+/#/cli/[A-Z-]+)`).FindStringSubmatch(login.errs())
		if m != nil {
			code = m[1]
		}
		return m != nil, login.errs()
	})
	// The dev admin signs in to the console through the link dev printed.
	link := regexp.MustCompile(`http://\S+/invitation#(nbi_\S+)`).FindStringSubmatch(d.stdout())
	if link == nil {
		t.Fatalf("nebula dev printed no console link:\n%s", d.stdout())
	}
	body, _ := json.Marshal(map[string]string{"invitation": link[1], "passphrase": "a passphrase for the e2e"})
	req, _ := http.NewRequest("POST", d.url+"/auth/invitation", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("signing in through the console link: %v %v", resp, err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "nebula_session" {
			cookie = c
		}
	}
	tenant := dig(d.gql(t, `{ viewer { tenants { nodes { id } } } }`, nil), "viewer", "tenants", "nodes").([]any)[0].(map[string]any)["id"]
	q, _ := json.Marshal(map[string]any{"query": `mutation($c: String!, $t: ID!) { approveCliLogin(input: {code: $c, tenantId: $t}) { apiToken { name } userErrors { message } } }`,
		"variables": map[string]any{"c": code, "t": tenant}})
	req, _ = http.NewRequest("POST", d.url+"/graphql", bytes.NewReader(q))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", d.url)
	req.AddCookie(cookie)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(answer), `"name":"nebula CLI from`) {
		t.Fatalf("confirming the code: %s", answer)
	}
	if code := login.wait(t, 30*time.Second); code != 0 || !strings.Contains(login.out(), "Logged in to "+d.url+" as admin@localhost.localdomain") {
		t.Fatalf("login --web: exit %d\n%s\n%s", code, login.out(), login.errs())
	}
	st := runCLI(t, []string{"NEBULA_CONFIG=" + cfg}, "", "status")
	if code := st.wait(t, 30*time.Second); code != 0 || !strings.Contains(st.out(), "CONNECTED") {
		t.Errorf("status with the token login --web got: exit %d\n%s%s", code, st.out(), st.errs())
	}
}
