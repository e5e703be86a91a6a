// Package outbound holds outbound webhooks: the endpoints a tenant or
// project sends its events to, their secrets, the messages written in the
// same transaction as the change they tell of (the core's emit), and the
// sender that delivers them, signed, retried with backoff, and disabled
// when an endpoint keeps failing.
package outbound

import (
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control/core"
)

// Outbound is the domain of outbound webhooks, over the core.
type Outbound struct {
	*core.Plane
}

// New is the outbound webhooks' domain over c; its job deletes messages
// past their retention.
func New(c *core.Plane) *Outbound {
	o := &Outbound{Plane: c}
	c.AddJob(core.Job{Name: "expire-webhook-messages", Run: core.Counted(o.expireMessages),
		Count: func(r *core.JobReport) *int { return &r.Messages }})
	return o
}

// SettingsFrom are the settings of the configuration (NEBULA_WEBHOOK_*),
// requests saying they come from NebulaCtrl of version.
func SettingsFrom(w config.Webhooks, version string) core.OutboundSettings {
	return core.OutboundSettings{Timeout: w.Timeout, RetryWindow: w.RetryWindow, BackoffMin: w.BackoffMin, BackoffMax: w.BackoffMax,
		SecretOverlap: w.SecretOverlap, AllowPrivate: w.AllowPrivate, Retention: w.Retention, Poll: w.Poll,
		Concurrency: core.DefaultOutboundSettings.Concurrency, UserAgent: "NebulaCtrl-Webhooks/" + version}
}
