package apitest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	dir, chromium := browserTests(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("test", script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "CHROMIUM="+chromium)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	t.Logf("%s: %s", script, out)
}

// GraphiQL loads and runs a query and a subscription with every request
// beyond the control plane refused (web/test/graphiql.mjs): its assets
// are embedded, nothing comes from a CDN.
func TestGraphiQLOffline(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	runBrowser(t, "graphiql.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_TOKEN="+f.Owner.Token,
		"NEBULA_CLUSTER_ID="+f.ClusterID, "NEBULA_CLUSTER_NAME=prod-eu")
}
