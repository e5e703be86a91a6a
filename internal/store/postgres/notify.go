package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nebulactrl/nebula/internal/store"
)

// Notify sends payload on a notification channel from inside q's
// transaction: listeners receive it when the transaction commits, and
// never if it rolls back (pg_notify). Outside a transaction it is sent at
// once.
func Notify(ctx context.Context, q store.Querier, channel, payload string) error {
	if _, err := q.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("notifying: %w", err)
	}
	return nil
}

// ListenOnce opens a dedicated connection to url, LISTENs on channel,
// calls listening, then hands each payload received to deliver, until the
// connection fails or ctx ends (its error is returned). The URL is read as
// the pool reads it: its pool_* settings are the pool's, not PostgreSQL's.
func ListenOnce(ctx context.Context, url, channel string, listening func(), deliver func(payload string)) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error can echo the URL, password included: keep it out.
		return errors.New("parsing the PostgreSQL URL: invalid NEBULA_DATABASE_URL")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		deliver(n.Payload)
	}
}
