// Package clusters holds the clusters of a tenant and what is kept of
// them: registering and labelling a cluster, its namespace targets, its
// connect tokens (made, replaced with a grace period, revoked), and the
// commands queued for its agent.
package clusters

import (
	"github.com/nebulactrl/nebula/internal/control/core"
)

// Clusters is the domain of clusters, over the core.
type Clusters struct {
	*core.Plane
}

// New is the clusters' domain over c; its job marks silent clusters
// disconnected.
func New(c *core.Plane) *Clusters {
	cl := &Clusters{Plane: c}
	c.AddJob(core.Job{Name: "mark-disconnected", Run: core.Counted(cl.markDisconnected),
		Count: func(r *core.JobReport) *int { return &r.Disconnected }})
	return cl
}
