// Package resolvers holds the GraphQL resolvers: thin functions that turn
// arguments into domain calls on control.Plane and domain values into API
// types. Rules, authorization and transactions live below, in control; the
// per-request loaders here only batch reads so that a nested query costs a
// fixed number of SQL queries however many items it returns.
package resolvers

import (
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/install"
)

// Resolver is the root resolver.
type Resolver struct {
	Plane *control.Plane
	// Install is where agents connect and which image they run, for the
	// install bundles.
	InstallSettings install.Settings
}
