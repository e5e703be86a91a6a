package idempotency

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/store"
)

// Idempotency keys make a mutation safe to retry: the request claims its
// key before the mutation runs (ClaimKey), the mutation's own transaction
// marks the key committed (core.ChangeKey), and the response
// is stored afterwards (FinishKey). Whether the key is committed is
// therefore exactly whether the change is, whatever happens between the
// commit and storing the response; a retry is answered from the key and
// never runs a committed mutation again.
//
// The key's lease only decides how long a request that stopped answering
// keeps others waiting: a request that outlives it loses its key to a
// retry and cannot commit (CommitKey is conditional on its owner), so
// timing never lets a mutation run twice.

// KeyClaim is one request's hold on its key.
type KeyClaim struct {
	scope store.KeyScope
	owner string
	// recorded is set once a transaction of the mutation marked the key
	// committed (it committed if the mutation then succeeded); takenOver
	// when the key had passed to a retry by then.
	recorded, takenOver atomic.Bool
}

// Recorded reports whether the mutation marked the key committed in its
// transaction: if the mutation succeeded, its change and the key
// committed together.
func (c *KeyClaim) Recorded() bool { return c.recorded.Load() }

// TakenOver reports whether the mutation found its key taken over by a
// retry (after its lease ran out) and so did not commit.
func (c *KeyClaim) TakenOver() bool { return c.takenOver.Load() }

// NewKeyClaim is a request's hold on the key of scope, as owner.
func NewKeyClaim(scope store.KeyScope, owner string) *KeyClaim {
	return &KeyClaim{scope: scope, owner: owner}
}

// Scope is the key the claim holds; Owner whom it holds it for.
func (c *KeyClaim) Scope() store.KeyScope { return c.scope }

// Owner is the claim's holder (a random id of the request).
func (c *KeyClaim) Owner() string { return c.owner }

// WithKey runs the mutation of ctx under the claim: the change it commits
// marks the key committed in the same transaction.
func WithKey(ctx context.Context, c *KeyClaim) context.Context { return core.WithChangeKey(ctx, c) }

var (
	errKeyTakenOver = errors.New("the idempotency key was taken over by a retry after its lease ran out")
	errKeyUsed      = errors.New("one idempotency key covers one change, and this request made a second")
)

// Commit marks the key committed inside the transaction of its change,
// with the change's audit action and target (core.ChangeKey).
func (c *KeyClaim) Commit(ctx context.Context, q store.Querier, action, targetType, target string) error {
	if c.recorded.Load() {
		return errKeyUsed
	}
	ok, err := store.CommitKey(ctx, q, c.scope, c.owner, action, targetType, target)
	if err != nil {
		return err
	}
	if !ok {
		c.takenOver.Store(true)
		return errKeyTakenOver
	}
	c.recorded.Store(true)
	return nil
}
