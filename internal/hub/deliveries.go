package hub

import (
	"context"
	"sync"

	"github.com/nebulactrl/nebula/internal/control/agents"

	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
)

// maxSnapshots bounds the tenants whose snapshot is kept.
const maxSnapshots = 16

// deliveries keeps, per tenant, the snapshot last read to deliver a state,
// so that a fleet that connects at once reads its tenant about once, not
// once per agent. A snapshot serves a cluster as long as the cluster's
// revision has not moved since it was read: every change that alters a
// cluster's state bumps its revision.
type deliveries struct {
	mu      sync.Mutex
	snaps   map[model.TenantID]*core.Snapshot
	loading map[model.TenantID]*sync.Mutex
}

// Desired returns the desired revision of a's cluster and, when it is newer
// than after, its state for delivery (secrets opened): what a session of
// that cluster is sent.
func (h *Hub) Desired(ctx context.Context, a *agents.AgentSide, after int64) (int64, *desired.State, error) {
	return h.deliveries.desired(ctx, a, after)
}

func (d *deliveries) desired(ctx context.Context, a *agents.AgentSide, after int64) (int64, *desired.State, error) {
	rev, err := a.DesiredRevision(ctx)
	if err != nil || rev <= after {
		return rev, nil, err
	}
	fromSnapshot := func() (int64, *desired.State, bool) {
		snap := d.snapshot(a.Tenant())
		if snap == nil {
			return 0, nil, false
		}
		if r, ok := snap.Revision(a.Cluster()); !ok || r != rev {
			return 0, nil, false
		}
		return snap.State(a.Cluster())
	}
	if rev, st, ok := fromSnapshot(); ok {
		return rev, st, nil
	}
	// One session of the tenant reads it at a time; the others then find
	// its snapshot (after a fan-out, a thousand sessions miss at once).
	unlock := d.lockLoad(a.Tenant())
	defer unlock()
	if rev, st, ok := fromSnapshot(); ok {
		return rev, st, nil
	}
	snap, err := a.Snapshot(ctx)
	if err != nil {
		return 0, nil, err
	}
	d.keep(a.Tenant(), snap)
	rev, st, _ := snap.State(a.Cluster()) // Snapshot made sure it holds the cluster
	return rev, st, nil
}

func (d *deliveries) snapshot(t model.TenantID) *core.Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snaps[t]
}

// lockLoad serializes the reads of one tenant's rows for delivery.
func (d *deliveries) lockLoad(t model.TenantID) func() {
	d.mu.Lock()
	if d.loading == nil {
		d.loading = map[model.TenantID]*sync.Mutex{}
	}
	m := d.loading[t]
	if m == nil {
		m = &sync.Mutex{}
		d.loading[t] = m
	}
	d.mu.Unlock()
	m.Lock()
	return m.Unlock
}

func (d *deliveries) keep(t model.TenantID, s *core.Snapshot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.snaps == nil {
		d.snaps = map[model.TenantID]*core.Snapshot{}
	}
	if _, ok := d.snaps[t]; !ok && len(d.snaps) >= maxSnapshots {
		for k := range d.snaps { // any one: the next delivery reads afresh
			delete(d.snaps, k)
			break
		}
	}
	d.snaps[t] = s
}
