package outbound

import (
	"context"

	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/store"
)

// expireMessages deletes the webhook messages delivered or failed before
// the retention, a batch a run.
func (p *Outbound) expireMessages(ctx context.Context, q *core.Txn) (int, error) {
	return store.DeleteMessagesBefore(ctx, q, p.Now().Add(-p.Settings.Outbound.Retention), 5000)
}
