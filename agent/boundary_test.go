package agent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The agent runs in customers' clusters: it must never link the control
// plane's store, API or authorization code.
func TestAgentImportBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/nebulactrl/nebula/agent").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/nebulactrl/nebula/internal/store",
		"github.com/nebulactrl/nebula/resolvers",
		"github.com/nebulactrl/nebula/authz",
		"github.com/nebulactrl/nebula/internal/control",
		"github.com/nebulactrl/nebula/graph",
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("agent imports %s", d)
			}
		}
	}
}
