package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The CLI's client talks to a control plane over its public API only: it
// must never link the store, the domain services, the server or the
// resolvers, so that nothing it does can bypass what the API checks.
func TestClientImportBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/nebulactrl/nebula/internal/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/nebulactrl/nebula/internal/store",
		"github.com/nebulactrl/nebula/internal/control",
		"github.com/nebulactrl/nebula/internal/server",
		"github.com/nebulactrl/nebula/resolvers",
		"github.com/nebulactrl/nebula/authz",
		"github.com/nebulactrl/nebula/graph",
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("the client imports %s", d)
			}
		}
	}
}
