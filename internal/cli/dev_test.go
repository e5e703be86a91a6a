package cli

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// lockedBuffer collects what the command prints while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `nebula dev` serves a demo project on a simulated cluster: a deployment
// made as its output says goes through every stage to SUCCEEDED.
func TestDevDeploysToTheSimulatedCluster(t *testing.T) {
	t.Chdir(t.TempDir())
	ids := regexp.MustCompile(`serviceId: "([^"]+)", environmentId: "([^"]+)"`)
	stdout, stderr, _ := start(t, ids, "dev")
	addr := os.Getenv("NEBULA_ADDR")
	ctx := t.Context()
	out := stdout.String()
	m := ids.FindStringSubmatch(out)
	token := regexp.MustCompile(`nbt_[A-Za-z0-9]+`).FindString(out)
	c := &devClient{base: "http://" + addr, token: token}
	dep, err := c.str(ctx, fmt.Sprintf(`mutation { deploy(input: {serviceId: %q, environmentId: %q, imageDigest: "sha256:%s"}) {
		deployment { id } userErrors { message } } }`, m[1], m[2], strings.Repeat("cd", 32)), nil, "deploy.deployment.id")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	testutil.Eventually(t, 30*time.Second, "the deployment succeeds", func() (bool, string) {
		res, err := c.do(ctx, `query($d: ID!) { node(id: $d) { ... on Deployment { stage events { nodes { stage } } } } }`, map[string]any{"d": dep})
		if err != nil {
			t.Fatal(err)
		}
		stages = nil
		evs, _ := dig(res, "node.events.nodes").([]any)
		for _, e := range evs {
			stages = append(stages, dig(e, "stage").(string))
		}
		return dig(res, "node.stage") == "SUCCEEDED", fmt.Sprintf("%v\nstderr:\n%s", stages, stderr.String())
	})
	want := "QUEUED,DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED"
	if strings.Join(stages, ",") != want {
		t.Errorf("stages %v, want %s", stages, want)
	}

	// The Git service: the commit its output names is built (simulated),
	// with a log, and rolls out.
	commit := regexp.MustCompile(`serviceId: "([^"]+)", environmentId: "([^"]+)",\s+commit: "([0-9a-f]{40})"`).FindStringSubmatch(out)
	if commit == nil {
		t.Fatalf("nebula dev shows no deploy of a commit:\n%s", out)
	}
	res, err := c.do(ctx, fmt.Sprintf(`mutation { deploy(input: {serviceId: %q, environmentId: %q, commit: %q}) {
		deployment { id } build { id } userErrors { message } } }`, commit[1], commit[2], commit[3]), nil)
	if err != nil {
		t.Fatal(err)
	}
	dep, build := dig(res, "deploy.deployment.id").(string), dig(res, "deploy.build.id").(string)
	testutil.Eventually(t, 60*time.Second, "the built deployment succeeds", func() (bool, string) {
		res, err := c.do(ctx, `query($d: ID!) { node(id: $d) { ... on Deployment { stage message } } }`, map[string]any{"d": dep})
		if err != nil {
			t.Fatal(err)
		}
		return dig(res, "node.stage") == "SUCCEEDED", fmt.Sprintf("%v\nstderr:\n%s", res, stderr.String())
	})
	res, err = c.do(ctx, `query($b: ID!) { node(id: $b) { ... on Build { status imageDigest log(first: 100) { nodes { number text } } } } }`,
		map[string]any{"b": build})
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := dig(res, "node.log.nodes").([]any)
	if dig(res, "node.status") != "SUCCEEDED" || !strings.HasPrefix(fmt.Sprint(dig(res, "node.imageDigest")), "sha256:") || len(lines) != 11 ||
		!strings.Contains(fmt.Sprint(dig(lines[0], "text")), "a simulated build of") {
		t.Errorf("the simulated build: %v", res)
	}
}
