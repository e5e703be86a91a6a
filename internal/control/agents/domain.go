// Package agents holds what a cluster's agent does through the control
// plane (AgentSide: authenticated by its connect token, it reports
// heartbeats, stages, inventory and applied revisions, takes its desired
// state and its builds, acknowledges commands, and streams logs, events
// and drift), and what is read back of those reports: container logs,
// Kubernetes events and drift, with their retention.
package agents

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
)

// Agents is the domain of the agents' side, over the core.
type Agents struct {
	*core.Plane
	// beats writes agents' reports in rounds (heartbeats.go).
	beats *heartbeats
	// logDays are the days whose log partitions this process made sure of.
	logDaysMu sync.Mutex
	logDays   map[time.Time]bool
	// secrets counts, per tenant, the changes to its secrets this replica
	// heard of (bus.Secrets): a session redacting the tenant's logs
	// rebuilds its list when the count moved.
	secretsMu sync.Mutex
	secrets   map[model.TenantID]uint64
	// resyncs counts the deliveries that may have lost notes (nil topics):
	// every tenant's count moved.
	resyncs uint64
}

// New is the agents' domain over c; its job keeps the log partitions and
// their retention.
func New(c *core.Plane) *Agents {
	a := &Agents{Plane: c, beats: &heartbeats{}, secrets: map[model.TenantID]uint64{}}
	c.ObserveNotes(a.secretsNoted)
	c.AddJob(core.Job{Name: "log-retention", Run: a.logRetentionJob,
		Count: func(r *core.JobReport) *int { return &r.LogsExpired }})
	return a
}

// secretsNoted counts the changes of tenants' secrets among topics.
func (a *Agents) secretsNoted(topics []string) {
	a.secretsMu.Lock()
	defer a.secretsMu.Unlock()
	if topics == nil {
		a.resyncs++
		return
	}
	for _, t := range topics {
		if id, ok := strings.CutPrefix(t, bus.Secrets("")); ok {
			a.secrets[model.TenantID(id)]++
		}
	}
}

// secretsSeen is the count of tenant's secrets changes heard of so far.
func (a *Agents) secretsSeen(tenant model.TenantID) [2]uint64 {
	a.secretsMu.Lock()
	defer a.secretsMu.Unlock()
	return [2]uint64{a.secrets[tenant], a.resyncs}
}

// cutLine cuts a storable line (after its redaction) at the longest a
// line is kept, saying so.
func (p *Agents) cutLine(s string) string {
	if int64(len(s)) > p.Settings.Builds.MaxLineBytes {
		n := int(p.Settings.Builds.MaxLineBytes)
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + " [line cut at " + fmt.Sprint(p.Settings.Builds.MaxLineBytes) + " bytes]"
	}
	return s
}
