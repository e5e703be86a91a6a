package store

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// CLILogins are the CLI's sign-ins through the browser.
var CLILogins = &Table[model.CLILoginID, model.CLILogin]{
	Name: "cli_logins",
	Columns: []string{"id", "code", "secret_hash", "client_address", "user_agent", "created_at", "expires_at", "tenant_id",
		"user_id", "token_id", "sealed_token", "approved_at", "address_key"},
	scan: func(s Scanner) (*model.CLILogin, error) {
		var l model.CLILogin
		return &l, s.Scan(&l.ID, &l.Code, &l.SecretHash, &l.ClientAddress, &l.UserAgent, &l.CreatedAt, &l.ExpiresAt,
			&l.TenantID, &l.UserID, &l.TokenID, &l.SealedToken, &l.ApprovedAt, &l.AddressKey)
	},
	values: func(l *model.CLILogin) []any {
		return []any{string(l.ID), l.Code, l.SecretHash, l.ClientAddress, l.UserAgent, l.CreatedAt, l.ExpiresAt,
			nullable(l.TenantID), nullable(l.UserID), nullable(l.TokenID), l.SealedToken, l.ApprovedAt, l.AddressKey}
	},
	id: func(l *model.CLILogin) model.CLILoginID { return l.ID },
}

// CLILoginByCode reads the login showing code, locked on PostgreSQL.
func CLILoginByCode(ctx context.Context, q Querier, code string) (*model.CLILogin, error) {
	return CLILogins.one(ctx, q, "code = $1"+q.Dialect().ForUpdate, code)
}

// CLILoginBySecret reads the login a secret's hash polls, locked on
// PostgreSQL.
func CLILoginBySecret(ctx context.Context, q Querier, hash []byte) (*model.CLILogin, error) {
	return CLILogins.one(ctx, q, "secret_hash = $1"+q.Dialect().ForUpdate, hash)
}

// ApproveCLILogin records that a person confirmed a login, with the token
// made for them; it tells whether the login was still waiting.
func ApproveCLILogin(ctx context.Context, q Querier, l *model.CLILogin) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE cli_logins SET tenant_id = $2, user_id = $3, token_id = $4, sealed_token = $5, approved_at = $6
		WHERE id = $1 AND approved_at IS NULL`, string(l.ID), nullable(l.TenantID), nullable(l.UserID), nullable(l.TokenID),
		l.SealedToken, l.ApprovedAt)
	if err != nil {
		return false, fmt.Errorf("approving a CLI login: %w", err)
	}
	return n == 1, nil
}

// CountCLILoginsFrom counts the logins started from an address that have
// not expired at now.
func CountCLILoginsFrom(ctx context.Context, q Querier, addressKey string, now time.Time) (int, error) {
	return CLILogins.count(ctx, q, "address_key = $1 AND expires_at > $2", addressKey, now)
}

// DeleteExpiredCLILogins deletes the logins expired before now; it
// returns how many.
func DeleteExpiredCLILogins(ctx context.Context, q Querier, now time.Time) (int, error) {
	n, err := q.Exec(ctx, `DELETE FROM cli_logins WHERE expires_at < $1`, now)
	if err != nil {
		return 0, fmt.Errorf("deleting expired CLI logins: %w", err)
	}
	return int(n), nil
}
