package apitest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// The npm reference clients — graphql-ws over graphql-transport-ws and
// graphql-sse — subscribe to a deployment through the real server, from
// jsclients/subscribe.mjs. Without node they skip, unless
// NEBULA_REQUIRE_NODE=1 (CI), when they fail.

// jsClients returns the directory of the clients with their modules
// installed (npm ci when missing; npmdir_test.go).
func jsClients(t *testing.T) string {
	t.Helper()
	return npmDir(t, "jsclients", "graphql-ws")
}

// jsRun is one run of subscribe.mjs; lines are its JSON output so far.
type jsRun struct {
	mu    sync.Mutex
	lines []map[string]any
	done  chan struct{}
	err   error
}

func startJS(t *testing.T, dir string, args ...string) *jsRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "node", append([]string{"subscribe.mjs"}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &jsRun{done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				r.mu.Lock()
				r.lines = append(r.lines, m)
				r.mu.Unlock()
			}
		}
		r.err = cmd.Wait()
		if r.err != nil {
			r.err = &jsError{r.err, stderr.String()}
		}
		close(r.done)
	}()
	return r
}

type jsError struct {
	err    error
	stderr string
}

func (e *jsError) Error() string { return e.err.Error() + ": " + e.stderr }

func (r *jsRun) snapshot() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.lines...)
}

// count counts the lines that have key.
func (r *jsRun) count(key string) int {
	n := 0
	for _, l := range r.snapshot() {
		if _, ok := l[key]; ok {
			n++
		}
	}
	return n
}

// waitFor waits until cond holds, failing at once if the client ends first.
func (r *jsRun) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what, func() (bool, string) {
		select {
		case <-r.done:
			if !cond() {
				t.Fatalf("the client ended before %s: %v; output %v", what, r.err, r.snapshot())
			}
			return true, ""
		default:
			return cond(), fmt.Sprint(r.snapshot())
		}
	})
}

func (r *jsRun) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the client did not end; output %v", r.snapshot())
	}
}

func TestJSClientsResume(t *testing.T) {
	dir := jsClients(t)
	env := NewEnv(t, OpenSQLite(t))
	for _, mode := range []string{"ws", "sse"} {
		t.Run(mode, func(t *testing.T) {
			f := env.NewFixture(t)
			depID := f.deployAsOwner(t, f.EnvironmentID)
			rawDep, _ := gid.Decode[model.DeploymentID](gid.Deployment, depID)
			rawCluster, _ := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
			report := func(stage string) {
				t.Helper()
				if err := env.AgentSide(t, rawCluster).Stage(context.Background(),
					hub.StageOf(&protocol.Stage{Deployment: string(rawDep), Stage: stage, Message: "test: " + stage})); err != nil {
					t.Fatalf("reporting %s: %v", stage, err)
				}
			}
			// Drop the connection after the third event, and keep going
			// meanwhile: the client resumes from its last cursor.
			run := startJS(t, dir, mode, env.Server.URL, f.Owner.Token, depID, "3")
			run.waitFor(t, "QUEUED and DELIVERING arrive", func() bool { return run.count("event") >= 2 })
			report("STARTING")
			run.waitFor(t, "the client drops after 3 events", func() bool { return run.count("dropping") == 1 })
			report("PROBING")
			report("SWITCHING_TRAFFIC")
			// The rest goes to the resumed subscription live.
			run.waitFor(t, "the client resumes with PROBING and SWITCHING_TRAFFIC", func() bool { return run.count("event") >= 5 })
			report("RETIRING")
			report("SUCCEEDED")
			run.wait(t)
			if run.err != nil {
				t.Fatalf("client: %v; output %v", run.err, run.snapshot())
			}
			var stages []string
			var seqs []float64
			for _, l := range run.snapshot() {
				if e, ok := l["event"].(map[string]any); ok {
					stages = append(stages, e["stage"].(string))
					seqs = append(seqs, e["sequence"].(float64))
				}
			}
			want := "QUEUED,DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED"
			if strings.Join(stages, ",") != want {
				t.Errorf("%s client got %v, want %s in order, once each", mode, stages, want)
			}
			for i, s := range seqs {
				if s != float64(i+1) {
					t.Errorf("event %d has sequence %v: a gap or a duplicate", i, s)
				}
			}
			if last := run.snapshot()[len(run.snapshot())-1]; last["end"] != "completed" {
				t.Errorf("the subscription did not complete: %v", last)
			}
		})
	}
}

func TestJSClientsBadToken(t *testing.T) {
	dir := jsClients(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	depID := f.deployAsOwner(t, f.EnvironmentID)
	t.Run("ws", func(t *testing.T) {
		run := startJS(t, dir, "ws-badtoken", env.Server.URL, "nbt_not-a-token", depID)
		run.wait(t)
		lines := run.snapshot()
		if n := run.count("connecting"); n != 1 {
			t.Errorf("the client connected %d times, want once and no retry: %v", n, lines)
		}
		var closed []float64
		for _, l := range lines {
			if c, ok := l["closed"].(float64); ok {
				closed = append(closed, c)
			}
		}
		if len(closed) != 1 || closed[0] != 4403 {
			t.Errorf("close codes %v, want one 4403: %v", closed, lines)
		}
		if last := lines[len(lines)-1]; last["end"] != "gave up" || last["code"] != float64(4403) {
			t.Errorf("the client did not give up on 4403: %v", last)
		}
	})
	t.Run("sse", func(t *testing.T) {
		run := startJS(t, dir, "sse-badtoken", env.Server.URL, "nbt_not-a-token", depID)
		run.wait(t)
		lines := run.snapshot()
		if last := lines[len(lines)-1]; last["end"] != "gave up" || run.count("event") != 0 {
			t.Errorf("the SSE client with a bad token: %v", lines)
		}
	})
}
