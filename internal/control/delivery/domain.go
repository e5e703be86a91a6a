// Package delivery holds what a tenant delivers and how: projects, their
// environments (placement, protection) and services (images or Git,
// processes, configuration), variables and secrets, releases and
// deployments (deploy, approve, cancel, redeploy, roll back), the desired
// revisions of each cluster, and previews of a change before it is made.
// The deployment state machine the deploys drive is the core's.
package delivery

import (
	"github.com/nebulactrl/nebula/internal/control/core"
)

// Delivery is the domain of delivery, over the core.
type Delivery struct {
	*core.Plane
}

// New is the delivery domain over c; its jobs expire approvals and flag
// stalled rollouts.
func New(c *core.Plane) *Delivery {
	d := &Delivery{Plane: c}
	c.AddJob(core.Job{Name: "expire-approvals", Run: core.Counted(d.expireApprovals),
		Count: func(r *core.JobReport) *int { return &r.Expired }})
	c.AddJob(core.Job{Name: "flag-stalled", Run: core.Counted(d.flagStalled),
		Count: func(r *core.JobReport) *int { return &r.Stalled }})
	return d
}
