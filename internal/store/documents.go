package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PersistedQuery is the document persisted under hash, and when it was
// last used (to the hour: see TouchPersistedQuery); ErrNotFound when there
// is none.
func PersistedQuery(ctx context.Context, q Querier, hash string) (string, time.Time, error) {
	rows, err := q.Query(ctx, `SELECT document, used_at FROM persisted_queries WHERE hash = $1`, hash)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading a persisted query: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return "", time.Time{}, errors.Join(ErrNotFound, rows.Err())
	}
	var doc string
	var used time.Time
	if err := rows.Scan(&doc, &used); err != nil {
		return "", time.Time{}, fmt.Errorf("scanning a persisted query: %w", err)
	}
	return doc, used, rows.Err()
}

// PersistQuery keeps a document under its hash (a hash kept already keeps
// its document) and then deletes the least recently used beyond max.
func PersistQuery(ctx context.Context, q Querier, hash, doc string, now time.Time, max int) error {
	n, err := q.Exec(ctx, `INSERT INTO persisted_queries (hash, document, created_at, used_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT (hash) DO NOTHING`, hash, doc, now)
	if err != nil {
		return fmt.Errorf("persisting a query: %w", err)
	}
	if n == 0 {
		return nil
	}
	// LIMIT with OFFSET in both dialects (SQLite takes no OFFSET alone).
	if _, err := q.Exec(ctx, `DELETE FROM persisted_queries WHERE hash IN (
		SELECT hash FROM persisted_queries ORDER BY used_at DESC, hash LIMIT 1000000000 OFFSET $1)`, max); err != nil {
		return fmt.Errorf("evicting persisted queries: %w", err)
	}
	return nil
}

// TouchPersistedQuery records that a persisted query was used at now.
func TouchPersistedQuery(ctx context.Context, q Querier, hash string, now time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE persisted_queries SET used_at = $2 WHERE hash = $1`, hash, now); err != nil {
		return fmt.Errorf("recording a persisted query's use: %w", err)
	}
	return nil
}

// CountPersistedQueries counts the persisted queries kept.
func CountPersistedQueries(ctx context.Context, q Querier) (int, error) {
	rows, err := q.Query(ctx, `SELECT count(*) FROM persisted_queries`)
	if err != nil {
		return 0, fmt.Errorf("counting persisted queries: %w", err)
	}
	defer rows.Close()
	n := 0
	if rows.Next() {
		err = rows.Scan(&n)
	}
	return n, errors.Join(err, rows.Err())
}
