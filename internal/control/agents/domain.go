// Package agents holds what a cluster's agent does through the control
// plane (AgentSide: authenticated by its connect token, it reports
// heartbeats, stages, inventory and applied revisions, takes its desired
// state and its builds, acknowledges commands, and streams logs, events
// and drift), and what is read back of those reports: container logs,
// Kubernetes events and drift, with their retention.
package agents

import (
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"
)

// Agents is the domain of the agents' side, over the core.
type Agents struct {
	*core.Plane
	// beats writes agents' reports in rounds (heartbeats.go).
	beats *heartbeats
	// logDays are the days whose log partitions this process made sure of.
	logDaysMu sync.Mutex
	logDays   map[time.Time]bool
}

// New is the agents' domain over c; its job keeps the log partitions and
// their retention.
func New(c *core.Plane) *Agents {
	a := &Agents{Plane: c, beats: &heartbeats{}}
	c.AddJob(core.Job{Name: "log-retention", Run: a.logRetentionJob,
		Count: func(r *core.JobReport) *int { return &r.LogsExpired }})
	return a
}
