package core

import (
	"context"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A ChangeKey is the idempotency key a change commits with (package
// idempotency: a request claims it before its mutation runs). The change's
// own transaction marks it committed (Plane.change calls recordKey), so
// whether the key is committed is exactly whether the change is.
type ChangeKey interface {
	// Commit marks the key committed in q, with the change's audit
	// action and target; an error aborts the change.
	Commit(ctx context.Context, q store.Querier, action, targetType, target string) error
}

type changeKeyKey struct{}

// WithChangeKey runs the mutation of ctx under k.
func WithChangeKey(ctx context.Context, k ChangeKey) context.Context {
	return context.WithValue(ctx, changeKeyKey{}, k)
}

// recordKey marks the request's key committed inside the transaction of
// its change (Plane.change). Without a key in ctx it does nothing.
func (p *Plane) recordKey(ctx context.Context, q store.Querier, ev *model.AuditEvent) error {
	k, _ := ctx.Value(changeKeyKey{}).(ChangeKey)
	if k == nil {
		return nil
	}
	target := ""
	if ev.TargetID != nil {
		target = *ev.TargetID
	}
	return k.Commit(ctx, q, ev.Action, ev.TargetType, target)
}
