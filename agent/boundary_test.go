package agent_test

import (
	"testing"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// The agent runs in customers' clusters: it must never link the control
// plane's store, API or authorization code.
func TestAgentImportBoundary(t *testing.T) {
	testutil.ImportsNone(t, "github.com/nebulactrl/nebula/agent",
		"github.com/nebulactrl/nebula/internal/store",
		"github.com/nebulactrl/nebula/resolvers",
		"github.com/nebulactrl/nebula/authz",
		"github.com/nebulactrl/nebula/internal/control",
		"github.com/nebulactrl/nebula/graph")
}
