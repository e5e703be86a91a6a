package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// expireApprovals cancels deployments whose approval window closed, each
// audited as the control plane's own change.
func (p *Delivery) expireApprovals(ctx context.Context, q *core.Txn) (int, error) {
	ds, err := store.ExpiredApprovals(ctx, q, p.Now())
	if err != nil {
		return 0, err
	}
	for _, d := range ds {
		if _, err := store.LockTenant(ctx, q, d.TenantID); err != nil {
			return 0, err
		}
		exp := d.ApprovalExpiresAt
		if err := p.Advance(ctx, q, d, model.StageCancelled, "",
			fmt.Sprintf("the approval window closed at %s without a decision", exp.Format(time.RFC3339))); err != nil {
			return 0, err
		}
		ev := &core.Audit{AuditEvent: &model.AuditEvent{TenantID: d.TenantID, ClientAddress: "control-plane", CreatedAt: p.Now(),
			Details: map[string]any{"approvalExpiredAt": exp.Format(time.RFC3339)}}}
		core.Target(ev, ActApprovalExpired, "Deployment", string(d.ID))
		if err := store.InsertAudit(ctx, q, ev.AuditEvent); err != nil {
			return 0, err
		}
	}
	return len(ds), nil
}

// flagStalled marks rollouts that made no progress for stallAfter with the
// blocker "stalled"; the next stage the agent reports clears it.
func (p *Delivery) flagStalled(ctx context.Context, q *core.Txn) (int, error) {
	ds, err := store.StalledDeployments(ctx, q, p.Now().Add(-p.Settings.StallAfter))
	if err != nil {
		return 0, err
	}
	for _, d := range ds {
		if err := p.Advance(ctx, q, d, d.Stage, model.BlockerStalled,
			fmt.Sprintf("no progress in %s for %s", d.Stage, p.Settings.StallAfter)); err != nil {
			return 0, err
		}
	}
	return len(ds), nil
}
