package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Idempotency keys make a mutation safe to retry: the request claims its
// key before the mutation runs (ClaimKey), the mutation's own transaction
// marks the key committed (Plane.change calls recordKey), and the response
// is stored afterwards (FinishKey). Whether the key is committed is
// therefore exactly whether the change is, whatever happens between the
// commit and storing the response; a retry is answered from the key and
// never runs a committed mutation again.
//
// The key's lease only decides how long a request that stopped answering
// keeps others waiting: a request that outlives it loses its key to a
// retry and cannot commit (CommitKey is conditional on its owner), so
// timing never lets a mutation run twice.

// KeyLease is how long a request holds its key before a retry may take
// it over (if its mutation has not committed) or report its response lost
// (if it has).
const KeyLease = time.Minute

// expiredKeysPerRun bounds the work of one run of the expiry job.
const expiredKeysPerRun = 5000

// KeyRequest is a mutation about to run under an idempotency key.
type KeyRequest struct {
	// Key is the key as the client sent it; only its hash is stored.
	Key string
	// RequestHash identifies the request: a retry must send the same.
	RequestHash []byte
	// Operation names the mutation field, for operators.
	Operation string
	// TTL is how long the key and its outcome are kept.
	TTL time.Duration
}

// KeyVerdict is what ClaimKey found for a key.
type KeyVerdict int

const (
	// KeyRun: the key is claimed; run the mutation with WithKey.
	KeyRun KeyVerdict = iota
	// KeyInProgress: another request holds the key; retry later.
	KeyInProgress
	// KeyMismatch: the key was used for a different request.
	KeyMismatch
	// KeyReplay: the mutation committed; Record holds its response.
	KeyReplay
	// KeyResponseLost: the mutation committed; its response was lost.
	KeyResponseLost
	// KeyResponseNotKept: the mutation committed; its response was not
	// kept on purpose (it held a one-time secret, or was too large).
	KeyResponseNotKept
)

// KeyAnswer is ClaimKey's answer.
type KeyAnswer struct {
	Verdict KeyVerdict
	// Claim is set for KeyRun.
	Claim *KeyClaim
	// Record is the key found, for the verdicts on a committed mutation.
	Record *store.IdempotencyKey
}

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

type keyClaimKey struct{}

// WithKey runs the mutation of ctx under the claim: the change it commits
// marks the key committed in the same transaction.
func WithKey(ctx context.Context, c *KeyClaim) context.Context {
	return context.WithValue(ctx, keyClaimKey{}, c)
}

var (
	// ErrKeyForTokens: an idempotency key came with no API token (a
	// signed-in browser's cookie): keys belong to token holders.
	ErrKeyForTokens = errors.New("an Idempotency-Key is for requests with an API token; a signed-in browser's requests are not keyed")
	errKeyTakenOver = errors.New("the idempotency key was taken over by a retry after its lease ran out")
	errKeyUsed      = errors.New("one idempotency key covers one change, and this request made a second")
)

// ClaimKey claims the caller's key for a mutation, or says what became of
// the request that used it before. A key belongs to the caller's user in
// the tenant their token acts in: the same key of another user, or of the
// same user in another tenant, is another key.
func (p *Plane) ClaimKey(ctx context.Context, req KeyRequest) (KeyAnswer, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return KeyAnswer{}, err
	}
	if a.User == nil || a.Token == nil {
		return KeyAnswer{}, ErrKeyForTokens
	}
	sum := sha256.Sum256([]byte(req.Key))
	scope := store.KeyScope{Tenant: a.Home(), User: a.User.ID, KeyHash: sum[:]}
	owner := NewID[string]()
	var ans KeyAnswer
	err = p.InTx(ctx, func(q *Txn) error {
		now := p.now()
		lease := now.Add(KeyLease)
		// A key released between our insert and our read is claimed on
		// the next round; a third round would need a key released twice
		// within one transaction of ours.
		for range 3 {
			ok, err := store.ClaimKey(ctx, q, &store.IdempotencyKey{
				ID: NewID[store.IdempotencyKeyID](), KeyScope: scope, RequestHash: req.RequestHash, Operation: req.Operation,
				State: store.KeyRunning, Owner: owner, LeaseUntil: &lease, CreatedAt: now, ExpiresAt: now.Add(req.TTL),
			}, now)
			if err != nil {
				return err
			}
			if ok {
				ans = KeyAnswer{Verdict: KeyRun, Claim: &KeyClaim{scope: scope, owner: owner}}
				return nil
			}
			rec, err := store.KeyFor(ctx, q, scope)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			ans, err = p.judgeKey(ctx, q, rec, req, owner, now)
			return err
		}
		ans = KeyAnswer{Verdict: KeyInProgress}
		return nil
	})
	if err != nil {
		return KeyAnswer{}, err
	}
	return ans, nil
}

// judgeKey answers a claim that found rec, taking rec over when its
// holder's lease ran out before its mutation committed.
func (p *Plane) judgeKey(ctx context.Context, q store.Querier, rec *store.IdempotencyKey, req KeyRequest, owner string, now time.Time) (KeyAnswer, error) {
	if !bytes.Equal(rec.RequestHash, req.RequestHash) {
		return KeyAnswer{Verdict: KeyMismatch}, nil
	}
	leased := rec.LeaseUntil != nil && now.Before(*rec.LeaseUntil)
	switch rec.State {
	case store.KeyRunning:
		if leased {
			return KeyAnswer{Verdict: KeyInProgress}, nil
		}
		ok, err := store.TakeOverKey(ctx, q, rec.KeyScope, rec.Owner, owner, now.Add(KeyLease))
		if err != nil || !ok {
			return KeyAnswer{Verdict: KeyInProgress}, err
		}
		return KeyAnswer{Verdict: KeyRun, Claim: &KeyClaim{scope: rec.KeyScope, owner: owner}}, nil
	case store.KeyCommitted:
		if leased {
			// Committed a moment ago: its request is storing the response.
			return KeyAnswer{Verdict: KeyInProgress}, nil
		}
		return KeyAnswer{Verdict: KeyResponseLost, Record: rec}, nil
	case store.KeyDone:
		return KeyAnswer{Verdict: KeyReplay, Record: rec}, nil
	case store.KeyWithheld:
		return KeyAnswer{Verdict: KeyResponseNotKept, Record: rec}, nil
	}
	return KeyAnswer{}, fmt.Errorf("idempotency key in unknown state %q", rec.State)
}

// recordKey marks the request's key committed inside the transaction of
// its change (Plane.change), with the change's audit action and target.
// Without a key in ctx it does nothing.
func (p *Plane) recordKey(ctx context.Context, q store.Querier, ev *model.AuditEvent) error {
	c, _ := ctx.Value(keyClaimKey{}).(*KeyClaim)
	if c == nil {
		return nil
	}
	if c.recorded.Load() {
		return errKeyUsed
	}
	target := ""
	if ev.TargetID != nil {
		target = *ev.TargetID
	}
	ok, err := store.CommitKey(ctx, q, c.scope, c.owner, ev.Action, ev.TargetType, target)
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

// FinishKey lets go of a claim once the mutation answered. A key whose
// mutation did not commit is released, so that a retry runs it; a
// committed one keeps end (the response, or why there is none). It runs
// even when the client has gone: the outcome is for its retry.
func (p *Plane) FinishKey(ctx context.Context, c *KeyClaim, end store.KeyEnd) error {
	ctx = context.WithoutCancel(ctx)
	return p.InTx(ctx, func(q *Txn) error {
		return store.FinishKey(ctx, q, c.scope, c.owner, end)
	})
}

// expireKeys deletes keys whose window closed (the background job).
func (p *Plane) expireKeys(ctx context.Context, q *Txn) (int, error) {
	return store.DeleteExpiredKeys(ctx, q, p.now(), expiredKeysPerRun)
}
