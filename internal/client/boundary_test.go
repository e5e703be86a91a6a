package client_test

import (
	"testing"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// The CLI's client talks to a control plane over its public API only: it
// must never link the store, the domain services, the server or the
// resolvers, so that nothing it does can bypass what the API checks.
func TestClientImportBoundary(t *testing.T) {
	testutil.ImportsNone(t, "github.com/nebulactrl/nebula/internal/client",
		"github.com/nebulactrl/nebula/internal/store",
		"github.com/nebulactrl/nebula/internal/control",
		"github.com/nebulactrl/nebula/internal/server",
		"github.com/nebulactrl/nebula/resolvers",
		"github.com/nebulactrl/nebula/authz",
		"github.com/nebulactrl/nebula/graph")
}
