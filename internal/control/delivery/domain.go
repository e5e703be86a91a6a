// Package delivery holds what a tenant delivers and how: projects, their
// environments (placement, protection) and services (images or Git,
// processes, configuration), variables and secrets, releases and
// deployments (deploy, approve, cancel, redeploy, roll back), the desired
// revisions of each cluster, and previews of a change before it is made.
// The deployment state machine the deploys drive is the core's.
package delivery

import "github.com/nebulactrl/nebula/internal/control/core"

// Delivery is the domain of delivery, over the core.
type Delivery struct {
	*core.Plane
}

// New is the delivery domain over c.
func New(c *core.Plane) *Delivery { return &Delivery{Plane: c} }
