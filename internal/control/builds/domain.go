// Package builds holds builds from Git: the hooks a Git host pushes to and
// their deliveries, the builds a push or a deploy of a commit starts, their
// scheduling onto the tenant's clusters (with a bound on builds at once),
// timeouts and retries, and their logs.
package builds

import (
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gitremote"
)

// Builds is the domain of builds, over the core.
type Builds struct {
	*core.Plane
	// heads reads branch heads for a deploy of one.
	heads *gitremote.Resolver
}

// New is the builds' domain over c: it is c's Builder, and its jobs
// schedule builds and expire their logs.
func New(c *core.Plane) *Builds {
	b := &Builds{Plane: c, heads: gitremote.New(c.Settings.Builds.GitTimeout, c.Settings.Builds.GitPrivate)}
	c.SetBuilder(b)
	c.AddJob(core.Job{Name: "schedule-builds",
		Run:   core.Counted(b.scheduleBuilds),
		Count: func(r *core.JobReport) *int { return &r.Builds }})
	c.AddJob(core.Job{Name: "expire-build-logs",
		Run:   core.Counted(b.expireBuildLogs),
		Count: func(r *core.JobReport) *int { return &r.BuildLogLines }})
	return b
}
