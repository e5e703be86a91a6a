// Package resolvers holds the GraphQL resolvers: thin functions that turn
// arguments into domain calls on control.Plane and domain values into API
// types. Rules, authorization and transactions live below, in control; the
// per-request loaders here only batch reads so that a nested query costs a
// fixed number of SQL queries however many items it returns.
package resolvers

import (
	"github.com/nebulactrl/nebula/internal/control"
)

// Resolver is the root resolver.
type Resolver struct {
	Plane *control.Plane
}
