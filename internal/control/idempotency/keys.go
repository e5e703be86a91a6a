package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/store"
)

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

// ErrKeyForTokens: an idempotency key came with no API token (a signed-in
// browser's cookie): keys belong to token holders.
var ErrKeyForTokens = errors.New("an Idempotency-Key is for requests with an API token; a signed-in browser's requests are not keyed")

// ClaimKey claims the caller's key for a mutation, or says what became of
// the request that used it before. A key belongs to the caller's user in
// the tenant their token acts in: the same key of another user, or of the
// same user in another tenant, is another key.
func (p *Idempotency) ClaimKey(ctx context.Context, req KeyRequest) (KeyAnswer, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return KeyAnswer{}, err
	}
	if a.User == nil || a.Token == nil {
		return KeyAnswer{}, ErrKeyForTokens
	}
	sum := sha256.Sum256([]byte(req.Key))
	scope := store.KeyScope{Tenant: a.Home(), User: a.User.ID, KeyHash: sum[:]}
	owner := core.NewID[string]()
	var ans KeyAnswer
	err = p.InTx(ctx, func(q *core.Txn) error {
		now := p.Now()
		lease := now.Add(KeyLease)
		// A key released between our insert and our read is claimed on
		// the next round; a third round would need a key released twice
		// within one transaction of ours.
		for range 3 {
			ok, err := store.ClaimKey(ctx, q, &store.IdempotencyKey{
				ID: core.NewID[store.IdempotencyKeyID](), KeyScope: scope, RequestHash: req.RequestHash, Operation: req.Operation,
				State: store.KeyRunning, Owner: owner, LeaseUntil: &lease, CreatedAt: now, ExpiresAt: now.Add(req.TTL),
			}, now)
			if err != nil {
				return err
			}
			if ok {
				ans = KeyAnswer{Verdict: KeyRun, Claim: NewKeyClaim(scope, owner)}
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
func (p *Idempotency) judgeKey(ctx context.Context, q store.Querier, rec *store.IdempotencyKey, req KeyRequest, owner string, now time.Time) (KeyAnswer, error) {
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
		return KeyAnswer{Verdict: KeyRun, Claim: NewKeyClaim(rec.KeyScope, owner)}, nil
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

// FinishKey lets go of a claim once the mutation answered. A key whose
// mutation did not commit is released, so that a retry runs it; a
// committed one keeps end (the response, or why there is none). It runs
// even when the client has gone: the outcome is for its retry.
func (p *Idempotency) FinishKey(ctx context.Context, c *KeyClaim, end store.KeyEnd) error {
	ctx = context.WithoutCancel(ctx)
	return p.InTx(ctx, func(q *core.Txn) error {
		return store.FinishKey(ctx, q, c.Scope(), c.Owner(), end)
	})
}

// expireKeys deletes keys whose window closed (the background job).
func (p *Idempotency) expireKeys(ctx context.Context, q *core.Txn) (int, error) {
	return store.DeleteExpiredKeys(ctx, q, p.Now(), expiredKeysPerRun)
}
