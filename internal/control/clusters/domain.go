// Package clusters holds the clusters of a tenant and what is kept of
// them: registering and labelling a cluster, its namespace targets, its
// connect tokens (made, replaced with a grace period, revoked), and the
// commands queued for its agent.
package clusters

import "github.com/nebulactrl/nebula/internal/control/core"

// Clusters is the domain of clusters, over the core.
type Clusters struct {
	*core.Plane
}

// New is the clusters' domain over c.
func New(c *core.Plane) *Clusters { return &Clusters{Plane: c} }
