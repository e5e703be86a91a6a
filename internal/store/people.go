package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// Sessions are people's sign-ins from browsers (see model.Session).
var Sessions = &Table[model.SessionID, model.Session]{
	Name: "sessions",
	Columns: []string{"id", "user_id", "tenants", "method", "prefix", "hash", "address", "user_agent", "created_at",
		"last_seen_at", "expires_at", "revoked_at"},
	scan: func(s Scanner) (*model.Session, error) {
		var x model.Session
		var tenants string
		if err := s.Scan(&x.ID, &x.UserID, &tenants, &x.Method, &x.Prefix, &x.Hash, &x.Address, &x.UserAgent, &x.CreatedAt,
			&x.LastSeenAt, &x.ExpiresAt, &x.RevokedAt); err != nil {
			return nil, err
		}
		return &x, decodeJSON(&x.Tenants, tenants)
	},
	values: func(x *model.Session) []any {
		return []any{string(x.ID), string(x.UserID), encodeJSON(x.Tenants), x.Method, x.Prefix, x.Hash, x.Address, x.UserAgent,
			x.CreatedAt, x.LastSeenAt, x.ExpiresAt, x.RevokedAt}
	},
	id: func(x *model.Session) model.SessionID { return x.ID },
}

// Invitations are one-time links to set a passphrase (see model.Invitation).
var Invitations = &Table[model.InvitationID, model.Invitation]{
	Name: "invitations",
	Columns: []string{"id", "tenant_id", "user_id", "email", "hash", "invited_by", "created_at", "expires_at",
		"accepted_at", "revoked_at"},
	scan: func(s Scanner) (*model.Invitation, error) {
		var x model.Invitation
		return &x, s.Scan(&x.ID, &x.TenantID, &x.UserID, &x.Email, &x.Hash, &x.InvitedBy, &x.CreatedAt, &x.ExpiresAt,
			&x.AcceptedAt, &x.RevokedAt)
	},
	values: func(x *model.Invitation) []any {
		return []any{string(x.ID), string(x.TenantID), string(x.UserID), x.Email, x.Hash, string(x.InvitedBy), x.CreatedAt,
			x.ExpiresAt, x.AcceptedAt, x.RevokedAt}
	},
	id: func(x *model.Invitation) model.InvitationID { return x.ID },
}

// SessionByHash reads the session whose secret hashes to hash.
func SessionByHash(ctx context.Context, q Querier, hash []byte) (*model.Session, error) {
	return Sessions.one(ctx, q, "hash = $1", hash)
}

// TouchSession records that a session was used, at most once per
// interval, so that authenticating does not write on every request.
func TouchSession(ctx context.Context, q Querier, id model.SessionID, now time.Time, interval time.Duration) error {
	_, err := q.Exec(ctx, `UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $3`,
		string(id), now, now.Add(-interval))
	return err
}

// UserSessions reads one page of a user's sessions that have neither
// ended nor expired, newest first (ids are time-ordered). With within not
// nil, only the sessions that act in none but those tenants are read (a
// session's tenants are a JSON list): a caller sees the sign-ins of the
// tenants it acts in, not where else the person is signed in.
func UserSessions(ctx context.Context, q Querier, user model.UserID, within []model.TenantID, now time.Time, pg PageArgs) (Page[model.Session], error) {
	where, args := "user_id = $1 AND revoked_at IS NULL AND expires_at > $2", []any{string(user), now}
	if within != nil {
		if len(within) == 0 {
			return Page[model.Session]{}, nil // every session acts in a tenant
		}
		in, more := inList(within, len(args))
		elements := "json_each(sessions.tenants) AS t"
		if q.Dialect().Name == "postgres" {
			elements = "json_array_elements_text(sessions.tenants::json) AS t(value)"
		}
		where += fmt.Sprintf(" AND NOT EXISTS (SELECT 1 FROM %s WHERE t.value NOT IN (%s))", elements, in)
		args = append(args, more...)
	}
	return Sessions.newest(ctx, q, pg, where, args...)
}

// RevokeSession ends one session of a user; it reports whether one ended.
func RevokeSession(ctx context.Context, q Querier, user model.UserID, id model.SessionID, now time.Time) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE sessions SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`,
		string(id), string(user), now)
	if err != nil {
		return false, fmt.Errorf("revoking a session: %w", err)
	}
	return n == 1, nil
}

// RevokeTenantSessions ends a user's sessions that act in a tenant (the
// user left it), and returns how many ended.
func RevokeTenantSessions(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID, now time.Time) (int64, error) {
	live, err := Sessions.all(ctx, q, "user_id = $1 AND revoked_at IS NULL", string(user))
	if err != nil {
		return 0, err
	}
	var ended int64
	for _, s := range live {
		for _, t := range s.Tenants {
			if t == tenant {
				if _, err := q.Exec(ctx, `UPDATE sessions SET revoked_at = $2 WHERE id = $1`, string(s.ID), now); err != nil {
					return ended, fmt.Errorf("revoking a session: %w", err)
				}
				ended++
				break
			}
		}
	}
	return ended, nil
}

// InvitationByHash reads the invitation whose secret hashes to hash.
func InvitationByHash(ctx context.Context, q Querier, hash []byte) (*model.Invitation, error) {
	return Invitations.one(ctx, q, "hash = $1", hash)
}

// TenantInvitations reads one page of a tenant's invitations, newest
// first.
func TenantInvitations(ctx context.Context, q Querier, tenant model.TenantID, pg PageArgs) (Page[model.Invitation], error) {
	return Invitations.newest(ctx, q, pg, "tenant_id = $1", string(tenant))
}

// AcceptInvitation marks an invitation used, once: it reports false when it
// was accepted or revoked already (a second use of the link).
func AcceptInvitation(ctx context.Context, q Querier, id model.InvitationID, now time.Time) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE invitations SET accepted_at = $2 WHERE id = $1 AND accepted_at IS NULL AND revoked_at IS NULL`,
		string(id), now)
	if err != nil {
		return false, fmt.Errorf("accepting an invitation: %w", err)
	}
	return n == 1, nil
}

// RevokeInvitations ends the open invitations of a member of a tenant (a
// new one replaces them, or the member left), and returns how many.
func RevokeInvitations(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID, now time.Time) (int64, error) {
	n, err := q.Exec(ctx, `UPDATE invitations SET revoked_at = $3
		WHERE tenant_id = $1 AND user_id = $2 AND accepted_at IS NULL AND revoked_at IS NULL`, string(tenant), string(user), now)
	if err != nil {
		return 0, fmt.Errorf("revoking invitations: %w", err)
	}
	return n, nil
}

// Passphrase is a user's passphrase hash in one tenant.
type Passphrase struct {
	Tenant model.TenantID
	Hash   string
}

// SetPassphrase stores a user's passphrase hash for a tenant, replacing
// the one before.
func SetPassphrase(ctx context.Context, q Querier, user model.UserID, tenant model.TenantID, hash string, now time.Time) error {
	if _, err := q.Exec(ctx, `INSERT INTO passphrases (user_id, tenant_id, hash, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id, tenant_id) DO UPDATE SET hash = excluded.hash, updated_at = excluded.updated_at`,
		string(user), string(tenant), hash, now); err != nil {
		return fmt.Errorf("setting a passphrase: %w", err)
	}
	return nil
}

// PassphrasesOf reads a user's passphrase hashes, one per tenant the user
// is still a member of.
func PassphrasesOf(ctx context.Context, q Querier, user model.UserID) ([]Passphrase, error) {
	rows, err := q.Query(ctx, `SELECT p.tenant_id, p.hash FROM passphrases p
		JOIN members m ON m.tenant_id = p.tenant_id AND m.user_id = p.user_id
		WHERE p.user_id = $1 ORDER BY p.tenant_id`, string(user))
	if err != nil {
		return nil, fmt.Errorf("reading passphrases: %w", err)
	}
	defer rows.Close()
	var out []Passphrase
	for rows.Next() {
		var p Passphrase
		if err := rows.Scan(&p.Tenant, &p.Hash); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// PassphraseKDF reads how a person's passphrase keys are derived (the
// argon2id parameters and the person's salt): one derivation per sign-in,
// whatever the number of tenants the person has a passphrase in.
// ErrNotFound when the person has none yet.
func PassphraseKDF(ctx context.Context, q Querier, user model.UserID) (string, error) {
	var params string
	if err := scanOne(ctx, q, []any{&params}, `SELECT params FROM passphrase_kdfs WHERE user_id = $1`, string(user)); err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", ErrNotFound
		}
		return "", fmt.Errorf("reading a passphrase derivation: %w", err)
	}
	return params, nil
}

// EnsurePassphraseKDF gives a person params as their derivation unless
// they have one, and returns the one they have.
func EnsurePassphraseKDF(ctx context.Context, q Querier, user model.UserID, params string) (string, error) {
	if _, err := q.Exec(ctx, `INSERT INTO passphrase_kdfs (user_id, params) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING`,
		string(user), params); err != nil {
		return "", fmt.Errorf("recording a passphrase derivation: %w", err)
	}
	return PassphraseKDF(ctx, q, user)
}

// DeletePassphrase forgets a user's passphrase for a tenant (the user left
// it).
func DeletePassphrase(ctx context.Context, q Querier, user model.UserID, tenant model.TenantID) error {
	_, err := q.Exec(ctx, `DELETE FROM passphrases WHERE user_id = $1 AND tenant_id = $2`, string(user), string(tenant))
	return err
}

// SigninLimit is a rate limit of sign-ins: at most Max attempts that
// failed, or are being checked, per Subject ("account:…", "address:…") in
// a window.
type SigninLimit struct {
	Subject string
	Max     int
}

// ReserveSignin counts an attempt against each limit before its
// passphrase is checked, atomically: under a lock per subject (PostgreSQL;
// SQLite's transactions take the write lock as they begin), the attempts
// since the window's start are counted and, when every limit has room, the
// attempt is recorded as a failure for each subject at at. A sign-in that
// succeeds forgets its record (ForgetSigninAttempt). It reports false,
// recording nothing, when a limit is reached. Records older than since go.
func ReserveSignin(ctx context.Context, q Querier, limits []SigninLimit, at, since time.Time) (bool, error) {
	for _, l := range limits {
		if err := LockSubject(ctx, q, l.Subject); err != nil {
			return false, err
		}
		n, err := SigninFailures(ctx, q, l.Subject, since)
		if err != nil {
			return false, err
		}
		if n >= l.Max {
			return false, nil
		}
	}
	for _, l := range limits {
		if _, err := q.Exec(ctx, `INSERT INTO signin_failures (subject, at) VALUES ($1, $2)`, l.Subject, at); err != nil {
			return false, fmt.Errorf("recording a sign-in: %w", err)
		}
	}
	_, err := q.Exec(ctx, `DELETE FROM signin_failures WHERE at < $1`, since)
	return true, err
}

// LockSubject holds a lock on a subject of a limit ("account:…",
// "cli-start:…") until the transaction ends, so that counting its
// attempts and recording one is atomic: on PostgreSQL an advisory lock;
// SQLite's transactions take the write lock as they begin.
func LockSubject(ctx context.Context, q Querier, subject string) error {
	if lock := q.Dialect().SubjectLock; lock != "" {
		if _, err := q.Exec(ctx, lock, subject); err != nil {
			return fmt.Errorf("locking the subject of a limit: %w", err)
		}
	}
	return nil
}

// ForgetSigninAttempt forgets the attempt ReserveSignin recorded for a
// subject at at (it succeeded).
func ForgetSigninAttempt(ctx context.Context, q Querier, subject string, at time.Time) error {
	_, err := q.Exec(ctx, `DELETE FROM signin_failures WHERE subject = $1 AND at = $2`, subject, at)
	return err
}

// SigninFailures counts a subject's failed sign-ins since a time.
func SigninFailures(ctx context.Context, q Querier, subject string, since time.Time) (int, error) {
	return count(ctx, q, `SELECT COUNT(*) FROM signin_failures WHERE subject = $1 AND at >= $2`, subject, since)
}

// ClearSigninFailures forgets a subject's failures (it signed in).
func ClearSigninFailures(ctx context.Context, q Querier, subject string) error {
	_, err := q.Exec(ctx, `DELETE FROM signin_failures WHERE subject = $1`, subject)
	return err
}

// TenantsNamed reads the tenants with a name (names are not unique).
func TenantsNamed(ctx context.Context, q Querier, name string) ([]*model.Tenant, error) {
	return Tenants.all(ctx, q, "name = $1", name)
}
