package apitest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The browser tests drive headless Chromium (Debian's chromium package)
// with playwright-core from web/test. Without node or chromium they skip,
// unless NEBULA_REQUIRE_BROWSER=1 (CI), when they fail.

// browserTests returns web/ with its modules installed (npm ci when
// missing), and the browser's path.
func browserTests(t *testing.T) (dir, chromium string) {
	t.Helper()
	dir, err := filepath.Abs("../../web")
	if err != nil {
		t.Fatal(err)
	}
	skip := func(why string) {
		if os.Getenv("NEBULA_REQUIRE_BROWSER") == "1" {
			t.Fatalf("NEBULA_REQUIRE_BROWSER=1 but %s", why)
		}
		t.Skip(why + ": the browser tests need Node 20 and Debian's chromium")
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip("node is not installed")
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		if chromium, err = exec.LookPath("chromium"); err != nil {
			skip("chromium is not installed")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		webInstall.Do(func() {
			cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				webErr = string(out)
			}
		})
		if webErr != "" {
			t.Fatalf("npm ci in %s failed:\n%s", dir, webErr)
		}
	}
	return dir, chromium
}

var (
	webInstall sync.Once
	webErr     string
)

// runBrowser runs one of web/test's scripts against the fixture's control
// plane and fails the test with its output when it fails.
func runBrowser(t *testing.T, script string, env ...string) {
	t.Helper()
	said := driveBrowser(t, script, env, nil)
	t.Logf("%s: %s", script, strings.Join(said, "\n"))
}

// driveBrowser runs one of web/test's scripts that speaks a line
// protocol: onLine (if any) gets each line the script prints, with its
// stdin to answer on, while it runs. It returns the lines printed, and
// fails the test with them and the script's stderr when the script fails.
func driveBrowser(t *testing.T, script string, env []string, onLine func(line string, reply io.Writer)) []string {
	t.Helper()
	dir, chromium := browserTests(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("test", script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "CHROMIUM="+chromium)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var said []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		said = append(said, lines.Text())
		if onLine != nil {
			onLine(lines.Text(), in)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstdout: %v\nstderr: %s", script, err, said, stderr.String())
	}
	return said
}

// GraphiQL loads and runs a query and a subscription with every request
// beyond the control plane refused (web/test/graphiql.mjs): its assets
// are embedded, nothing comes from a CDN.
func TestGraphiQLOffline(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	runBrowser(t, "graphiql.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_TOKEN="+f.Owner.Token,
		"NEBULA_CLUSTER_ID="+f.ClusterID, "NEBULA_CLUSTER_NAME=prod-eu", screenshotsEnv(t))
}

// forgedPage is another site's page that makes a signed-in browser post a
// mutation to the control plane: a text/plain form whose body reads as
// JSON, then a "simple" fetch.
const forgedPage = `<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="POST" action="%[1]s/graphql" enctype="text/plain" target="sink">
<input type="hidden" name='{"query": "mutation { createApiToken(input: {name: \"forged-form\"}) { secret } }", "x": "' value='"}'>
</form>
<script>
window.forgedDone = false;
window.forgedStatus = [];
document.getElementById('sink').addEventListener('load', async () => {
  window.forgedStatus.push('form sent');
  try {
    await fetch('%[1]s/graphql', {method: 'POST', mode: 'no-cors', credentials: 'include',
      headers: {'Content-Type': 'text/plain'},
      body: JSON.stringify({query: 'mutation { createApiToken(input: {name: "forged-fetch"}) { secret } }'})});
    window.forgedStatus.push('fetch sent');
  } catch (e) { window.forgedStatus.push('fetch failed: ' + e); }
  window.forgedDone = true;
}, {once: true});
document.getElementById('f').submit();
</script></body></html>`

// A person signs in with the browser (web/test/signin.mjs): by invitation,
// then at /signin, each time landing in GraphiQL signed in; a page of
// another origin then forges mutations with their cookie, and nothing is
// made.
func TestSignInInBrowser(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	email := f.Unique("grace") + "@people.example"
	r := f.MustDo(t, `mutation($t: ID!, $e: String!) { inviteMember(input: {tenantId: $t, email: $e, name: "Grace"}) {
		member { id user { id } } link `+ue+` } }`, map[string]any{"t": f.TenantID, "e": email})
	link, memberID, userID := r.Str("inviteMember.link"), r.Str("inviteMember.member.id"), r.Str("inviteMember.member.user.id")
	// The link names the public URL; the test server listens elsewhere.
	link = env.Server.URL + link[strings.Index(link, "/invitation#"):]
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, forgedPage, env.Server.URL)
	}))
	defer evil.Close()
	runBrowser(t, "signin.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_INVITATION="+link, "NEBULA_EMAIL="+email,
		"NEBULA_EVIL_URL="+evil.URL, screenshotsEnv(t))
	tokens := f.MustDo(t, `query($m: ID!) { node(id: $m) { ... on Member { apiTokens { nodes { name } } } } }`,
		map[string]any{"m": memberID}).List("node.apiTokens.nodes")
	if len(tokens) != 0 {
		t.Errorf("the forged requests made API tokens: %v", tokens)
	}
	audit := f.MustDo(t, `query($t: ID!, $u: ID!) { node(id: $t) { ... on Tenant {
		auditEvents(first: 10, filter: {actorId: $u}) { nodes { action } } } } }`, map[string]any{"t": f.TenantID, "u": userID})
	var actions []string
	for _, n := range audit.List("node.auditEvents.nodes") {
		actions = append(actions, dig(n, "action").(string))
	}
	// Newest first: the sign-in, the failed one, the sign-out, the
	// invitation accepted with its session; nothing forged.
	if strings.Join(actions, ",") != "session.create,session.signin_failed,session.revoke,session.create,invitation.accept" {
		t.Errorf("the person's audit history: %v", actions)
	}
}

// screenshotsEnv passes NEBULA_SCREENSHOTS on to the browser scripts: set,
// they save the pages they visit there (docs/screenshots).
func screenshotsEnv(t *testing.T) string {
	return "NEBULA_SCREENSHOTS=" + os.Getenv("NEBULA_SCREENSHOTS")
}
