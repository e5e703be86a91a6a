package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// npmDir returns the directory of an npm package of this one (jsclients,
// jsfrontend) with its modules installed: npm ci, once per directory and
// test binary, when node_modules lacks probe. Without node the test skips,
// unless NEBULA_REQUIRE_NODE=1 (CI), when it fails.
func npmDir(t *testing.T, name, probe string) string {
	t.Helper()
	dir, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("NEBULA_REQUIRE_NODE") == "1" {
			t.Fatal("NEBULA_REQUIRE_NODE=1 but node is not installed")
		}
		t.Skip("node is not installed: the npm client tests need Node 20")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", probe)); err == nil {
		return dir
	}
	v, _ := npmInstalls.LoadOrStore(dir, &npmOnce{})
	in := v.(*npmOnce)
	in.once.Do(func() {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			in.err = string(out)
		}
	})
	if in.err != "" {
		t.Fatalf("npm ci in %s failed:\n%s", dir, in.err)
	}
	return dir
}

// npmInstalls holds an *npmOnce per directory.
var npmInstalls sync.Map

type npmOnce struct {
	once sync.Once
	err  string
}

// runNode runs node with args in dir to its end (or timeout) and returns
// its JSON lines as a finished jsRun (jsclients_test.go); each line goes
// to the test log as well.
func runNode(t *testing.T, dir string, timeout time.Duration, args ...string) *jsRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	r := &jsRun{done: make(chan struct{})}
	close(r.done)
	if err != nil {
		r.err = &jsError{err, stderr.String()}
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		t.Logf("%s: %s", args[0], sc.Bytes())
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			r.lines = append(r.lines, m)
		}
	}
	return r
}

// values returns the value at key of each line that has it.
func (r *jsRun) values(key string) []any {
	var out []any
	for _, l := range r.snapshot() {
		if v, ok := l[key]; ok {
			out = append(out, v)
		}
	}
	return out
}
