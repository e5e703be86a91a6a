package store

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// KeyState is where an idempotency key is in its life.
type KeyState string

const (
	// KeyRunning: a request holds the key (Owner, until LeaseUntil) and
	// its mutation has not committed.
	KeyRunning KeyState = "running"
	// KeyCommitted: the mutation committed (the key was marked in its
	// transaction). Its response is being stored while a lease runs;
	// without one, it was lost.
	KeyCommitted KeyState = "committed"
	// KeyDone: the mutation committed and its response is kept.
	KeyDone KeyState = "done"
	// KeyWithheld: the mutation committed and its response was not kept
	// on purpose (it held a one-time secret, or was too large).
	KeyWithheld KeyState = "withheld"
)

// KeyScope names an idempotency key: the key's hash, of one user in the
// tenant their token acts in.
type KeyScope struct {
	Tenant  model.TenantID
	User    model.UserID
	KeyHash []byte
}

// IdempotencyKeyID is the row id of an idempotency key.
type IdempotencyKeyID string

// IdempotencyKey is one key's record: the request it is bound to (a hash)
// and, once committed, what the change was and the response.
type IdempotencyKey struct {
	ID IdempotencyKeyID
	KeyScope
	RequestHash []byte
	// Operation is the mutation field (e.g. "deploy"), for operators.
	Operation  string
	State      KeyState
	Owner      string
	LeaseUntil *time.Time
	// Action, TargetType and TargetID are the committed change's audit
	// action and target.
	Action, TargetType, TargetID string
	ResponseStatus               int
	ResponseType                 string
	ResponseBody                 []byte
	CreatedAt, ExpiresAt         time.Time
}

// IdempotencyKeys is the table of idempotency keys.
var IdempotencyKeys = &Table[IdempotencyKeyID, IdempotencyKey]{
	Name: "idempotency_keys",
	Columns: []string{"id", "tenant_id", "user_id", "key_hash", "request_hash", "operation", "state", "owner", "lease_until",
		"action", "target_type", "target_id", "response_status", "response_type", "response_body", "created_at", "expires_at"},
	scan: func(s Scanner) (*IdempotencyKey, error) {
		var k IdempotencyKey
		return &k, s.Scan(&k.ID, &k.Tenant, &k.User, &k.KeyHash, &k.RequestHash, &k.Operation, &k.State, &k.Owner, &k.LeaseUntil,
			&k.Action, &k.TargetType, &k.TargetID, &k.ResponseStatus, &k.ResponseType, &k.ResponseBody, &k.CreatedAt, &k.ExpiresAt)
	},
	values: func(k *IdempotencyKey) []any {
		return []any{string(k.ID), string(k.Tenant), string(k.User), k.KeyHash, k.RequestHash, k.Operation, string(k.State), k.Owner,
			k.LeaseUntil, k.Action, k.TargetType, k.TargetID, k.ResponseStatus, k.ResponseType, k.ResponseBody, k.CreatedAt, k.ExpiresAt}
	},
	id: func(k *IdempotencyKey) IdempotencyKeyID { return k.ID },
}

const keyWhere = "tenant_id = $1 AND user_id = $2 AND key_hash = $3"

func (s KeyScope) args(more ...any) []any {
	return append([]any{string(s.Tenant), string(s.User), s.KeyHash}, more...)
}

// ClaimKey stores k (state running) unless its scope already has a key
// that has not expired at now; an expired one is deleted first. It
// reports whether k was stored. Two claims of one key at once store one:
// the other waits for it and finds it.
func ClaimKey(ctx context.Context, q Querier, k *IdempotencyKey, now time.Time) (bool, error) {
	if _, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE `+keyWhere+` AND expires_at <= $4`,
		k.KeyScope.args(now)...); err != nil {
		return false, fmt.Errorf("deleting an expired idempotency key: %w", err)
	}
	ph := ""
	for i := range IdempotencyKeys.Columns {
		if i > 0 {
			ph += ", "
		}
		ph += fmt.Sprintf("$%d", i+1)
	}
	n, err := q.Exec(ctx, fmt.Sprintf(`INSERT INTO idempotency_keys (%s) VALUES (%s) ON CONFLICT DO NOTHING`,
		IdempotencyKeys.cols(), ph), IdempotencyKeys.values(k)...)
	if err != nil {
		return false, fmt.Errorf("claiming an idempotency key: %w", err)
	}
	return n == 1, nil
}

// KeyFor reads the key of a scope, locking it (on PostgreSQL) until the
// transaction ends; ErrNotFound when there is none.
func KeyFor(ctx context.Context, q Querier, s KeyScope) (*IdempotencyKey, error) {
	return IdempotencyKeys.one(ctx, q, keyWhere+q.Dialect().ForUpdate, s.args()...)
}

// TakeOverKey hands a running key whose lease ran out from owner to
// newOwner, until leaseUntil. It reports false when the key is no longer
// running under owner.
func TakeOverKey(ctx context.Context, q Querier, s KeyScope, owner, newOwner string, leaseUntil time.Time) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE idempotency_keys SET owner = $5, lease_until = $6
		WHERE `+keyWhere+` AND owner = $4 AND state = 'running'`, s.args(owner, newOwner, leaseUntil)...)
	if err != nil {
		return false, fmt.Errorf("taking over an idempotency key: %w", err)
	}
	return n == 1, nil
}

// CommitKey marks a running key of owner committed, with the change's
// audit action and target. It runs inside the mutation's transaction, so
// that the key is committed exactly when the change is. It reports false
// when owner no longer holds the key running (another request took it
// over): the mutation must then not commit.
func CommitKey(ctx context.Context, q Querier, s KeyScope, owner, action, targetType, targetID string) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE idempotency_keys SET state = 'committed', action = $5, target_type = $6, target_id = $7
		WHERE `+keyWhere+` AND owner = $4 AND state = 'running'`, s.args(owner, action, targetType, targetID)...)
	if err != nil {
		return false, fmt.Errorf("committing an idempotency key: %w", err)
	}
	return n == 1, nil
}

// KeyEnd is how the request holding a key lets go of it.
type KeyEnd struct {
	// State is what a committed key becomes: KeyDone (with the response),
	// KeyWithheld, or KeyCommitted (the response is lost).
	State          KeyState
	ResponseStatus int
	ResponseType   string
	ResponseBody   []byte
}

// FinishKey ends owner's hold on a key. A key still running (its mutation
// did not commit) is deleted, so that a retry runs the mutation; a
// committed one takes end's state and response, and its lease ends. A key
// another request took over is left alone.
func FinishKey(ctx context.Context, q Querier, s KeyScope, owner string, end KeyEnd) error {
	switch end.State {
	case KeyDone, KeyWithheld, KeyCommitted:
	default:
		return fmt.Errorf("finishing an idempotency key: %q is not an end state", end.State)
	}
	if _, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE `+keyWhere+` AND owner = $4 AND state = 'running'`,
		s.args(owner)...); err != nil {
		return fmt.Errorf("releasing an idempotency key: %w", err)
	}
	if end.State != KeyDone {
		end.ResponseStatus, end.ResponseType, end.ResponseBody = 0, "", nil
	}
	if _, err := q.Exec(ctx, `UPDATE idempotency_keys SET state = $5, response_status = $6, response_type = $7,
		response_body = $8, lease_until = NULL WHERE `+keyWhere+` AND owner = $4 AND state = 'committed'`,
		s.args(owner, string(end.State), end.ResponseStatus, end.ResponseType, end.ResponseBody)...); err != nil {
		return fmt.Errorf("storing an idempotency key's outcome: %w", err)
	}
	return nil
}

// DeleteExpiredKeys deletes at most limit keys expired at now, oldest
// expiry first, and returns how many it deleted.
func DeleteExpiredKeys(ctx context.Context, q Querier, now time.Time, limit int) (int, error) {
	n, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE id IN (
		SELECT id FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`, now, limit)
	if err != nil {
		return 0, fmt.Errorf("deleting expired idempotency keys: %w", err)
	}
	return int(n), nil
}

// CountKeys counts the idempotency keys stored, expired or not.
func CountKeys(ctx context.Context, q Querier) (int, error) {
	return IdempotencyKeys.count(ctx, q, "1 = 1")
}
