package cli

import (
	"bytes"
	"context"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commandPaths lists every command of the tree below root, as the words
// that name it ("admin bootstrap").
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		path := append(append([]string{}, prefix...), sub.Name())
		out = append(out, path)
		out = append(out, commandPaths(sub, path)...)
	}
	return out
}

// Every command's --help (and -h, and `nebula help CMD`) prints its help
// on stdout, succeeds and does nothing else: no store, no .env, no data
// directory, no token printed, no database touched even when one is
// configured.
func TestEveryHelpTouchesNothing(t *testing.T) {
	isolate(t)
	// A configured database that does not exist: a command that ran
	// would fail to reach it.
	t.Setenv("NEBULA_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	// The client's credentials file would be made in the working
	// directory too.
	t.Setenv("NEBULA_CONFIG", "credentials/config.json")
	paths := commandPaths(newRoot(&bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}), nil)
	names := map[string]bool{}
	for _, p := range paths {
		names[strings.Join(p, " ")] = true
	}
	for _, want := range []string{"serve", "dev", "migrate", "admin", "admin bootstrap", "admin gen-master-key", "admin reseal", "agent", "version",
		"login", "logout", "context list", "context use", "status", "deploy", "approve", "reject", "cancel", "redeploy", "rollback",
		"logs", "audit", "completion bash"} {
		if !names[want] {
			t.Errorf("no command %q in the tree %v", want, names)
		}
	}
	for _, p := range append(paths, nil) {
		for _, form := range [][]string{append(append([]string{}, p...), "--help"), append(append([]string{}, p...), "-h"), append([]string{"help"}, p...)} {
			name := strings.Join(form, " ")
			var out, errb bytes.Buffer
			if err := Run(context.Background(), form, &out, &errb); err != nil {
				t.Errorf("nebula %s: %v", name, err)
				continue
			}
			if !strings.Contains(out.String(), "Usage:") {
				t.Errorf("nebula %s printed no usage on stdout:\n%s", name, out.String())
			}
			if strings.Contains(out.String(), "nbt_") || errb.Len() > 0 {
				t.Errorf("nebula %s printed more than its help: stdout %q, stderr %q", name, out.String(), errb.String())
			}
			left, err := os.ReadDir(".")
			if err != nil {
				t.Fatal(err)
			}
			if len(left) > 0 {
				t.Fatalf("nebula %s left %v in the working directory", name, left)
			}
		}
	}
}

// The agent's flags are unchanged by the move to cobra: the install
// manifests and the tests pass them as before; a mistyped one is an
// error before anything runs.
func TestAgentFlags(t *testing.T) {
	isolate(t)
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"agent", "--help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"--server", "--token-file", "--kubeconfig", "--namespace", "--lease", "--identity", "--image",
		"--lease-duration", "--renew-deadline", "--retry-period", "--resync", "--rollout-timeout", "--backoff-max",
		"--kube-qps", "--kube-burst", "--kube-read-qps", "--kube-read-burst", "--kube-logs-qps", "--kube-logs-burst", "--log-streams", "--log-backoff-max", "--metrics-address",
		"--concurrency", "--log-level"} {
		if !strings.Contains(out.String(), f+" ") {
			t.Errorf("nebula agent --help lacks %s", f)
		}
	}
	err := Run(context.Background(), []string{"agent", "--sever", "http://x"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --sever") {
		t.Errorf("a mistyped agent flag: %v, want unknown flag", err)
	}
	// Flags are validated before the agent starts: no server, no start.
	err = Run(context.Background(), []string{"agent", "--token-file", "/nonexistent"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Error("the agent started without a server")
	}
}

// Without a command, or with one that does not exist, nebula says so and
// fails.
func TestNoOrUnknownCommand(t *testing.T) {
	isolate(t)
	var out, errb bytes.Buffer
	if err := Run(context.Background(), nil, &out, &errb); err == nil || !strings.Contains(errb.String(), "Usage:") {
		t.Errorf("no command: error %v, stderr %q; want an error and the usage", err, errb.String())
	}
	if err := Run(context.Background(), []string{"serv"}, &out, &errb); err == nil || !strings.Contains(err.Error(), `unknown command "serv"`) {
		t.Errorf("an unknown command: %v", err)
	}
	out.Reset()
	if err := Run(context.Background(), []string{"version"}, &out, &errb); err != nil || strings.TrimSpace(out.String()) != Version {
		t.Errorf("version: %q, %v", out.String(), err)
	}
}

// The agent's soft memory limit is 90% of its container's, unless
// GOMEMLIMIT says otherwise; without a limit it sets none.
func TestAgentMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("NEBULA_AGENT_MEMORY_LIMIT", "268435456") // a limit of 256 MiB
	if got := memoryLimit(); got != 241591905 || debug.SetMemoryLimit(-1) != got {
		t.Errorf("limit %d (runtime %d), want 90%% of 256 MiB", got, debug.SetMemoryLimit(-1))
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := memoryLimit(); got != 0 {
		t.Errorf("with GOMEMLIMIT set the agent set %d", got)
	}
	os.Unsetenv("GOMEMLIMIT")
	for _, v := range []string{"", "lots", "-5"} {
		t.Setenv("NEBULA_AGENT_MEMORY_LIMIT", v)
		if got := memoryLimit(); got != 0 {
			t.Errorf("NEBULA_AGENT_MEMORY_LIMIT=%q set %d", v, got)
		}
	}
}
