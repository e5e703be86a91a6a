// Package idempotency holds the idempotency keys of mutations: a request
// with an Idempotency-Key claims it (ClaimKey), runs its mutation under the
// claim (WithKey: the change records the key in its own transaction),
// and lets it go with its response (FinishKey); a retry of the same key is
// answered from what became of the first. Its job deletes the keys whose
// window closed.
package idempotency

import (
	"github.com/nebulactrl/nebula/internal/control/core"
)

// Idempotency is the domain of idempotency keys, over the core.
type Idempotency struct {
	*core.Plane
}

// New is the idempotency keys' domain over c.
func New(c *core.Plane) *Idempotency {
	k := &Idempotency{Plane: c}
	c.AddJob(core.Job{Name: "expire-idempotency-keys", Run: core.Counted(k.expireKeys),
		Count: func(r *core.JobReport) *int { return &r.Keys }})
	return k
}
