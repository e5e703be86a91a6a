package clusters

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// markDisconnected finds clusters silent for longer than disconnectedAfter,
// tells their followers, and blocks their rollouts on delivery.
func (p *Clusters) markDisconnected(ctx context.Context, q *core.Txn) (int, error) {
	now := p.Now()
	cs, err := store.SilentClusters(ctx, q, now.Add(-p.Settings.DisconnectedAfter))
	if err != nil {
		return 0, err
	}
	for _, c := range cs {
		// The tenant first, as every change of the tenant locks it before
		// its rows: holding the cluster and its deployments and then
		// waiting for a change that holds the tenant and bumps the
		// cluster would be a deadlock (the load run met it).
		if _, err := store.LockTenant(ctx, q, c.TenantID); err != nil {
			return 0, err
		}
		if err := store.MarkDisconnected(ctx, q, c.ID, now); err != nil {
			return 0, err
		}
		if err := p.EmitClusterStatus(ctx, q, c, false); err != nil {
			return 0, err
		}
		if err := p.Note(ctx, q, bus.Cluster(string(c.ID))); err != nil {
			return 0, err
		}
		ds, err := store.RolloutsOn(ctx, q, c.ID)
		if err != nil {
			return 0, err
		}
		for _, d := range ds {
			if d.Blocker != nil && *d.Blocker == model.BlockerDelivery {
				continue
			}
			if err := p.Advance(ctx, q, d, d.Stage, model.BlockerDelivery,
				fmt.Sprintf("cluster %s's agent went silent at %s", c.Name, c.LastHeartbeatAt.Format(time.RFC3339))); err != nil {
				return 0, err
			}
		}
	}
	return len(cs), nil
}
