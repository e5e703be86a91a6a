// Package store keeps NebulaCtrl's rows. One SQL implementation runs on two
// drivers: PostgreSQL through pgx (package postgres) for production and
// several replicas, and an embedded SQLite file (package sqlite) as the
// zero-config default. Both pass the same conformance suite (storetest).
//
// The store knows nothing of actors or permissions: callers authorize before
// they read or write. Driver errors never leave this package tree untranslated:
// each driver turns them into ErrNotFound, ErrUnavailable or a *ConflictError.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnavailable matches errors of a database that cannot be reached or
// is not accepting work (down, restarting, out of connections, locked for
// too long). The operation may be retried; when it struck at commit, the
// change may or may not have been made.
var ErrUnavailable = errors.New("database unavailable")

// ErrConflict matches every *ConflictError.
var ErrConflict = errors.New("conflict")

// ConflictError is a violated uniqueness or reference constraint.
type ConflictError struct {
	// Constraint is the constraint's name where the driver reports it.
	Constraint string
	// Reference is true for a foreign key violation (a row still in use, or
	// a missing parent), false for a duplicate.
	Reference bool
}

func (e *ConflictError) Error() string {
	if e.Reference {
		return fmt.Sprintf("conflict: reference %s", e.Constraint)
	}
	return fmt.Sprintf("conflict: duplicate %s", e.Constraint)
}

func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Dialect holds the few places where the SQL of the two drivers differs.
type Dialect struct {
	// Name is "postgres" or "sqlite".
	Name string
	// ForUpdate is appended to a SELECT that locks its rows.
	ForUpdate string
	// KeyShare is appended to a SELECT that holds a shared lock on its
	// rows: others may write rows that reference them, not the rows.
	KeyShare string
	// MigrationLock is run first inside the migration transaction, so that
	// replicas starting together migrate one at a time.
	MigrationLock string
	// SubjectLock, given a subject ($1), holds a lock on it until the
	// transaction ends; empty where transactions are serialized anyway
	// (SQLite's take the write lock as they begin).
	SubjectLock string
}

// Querier runs SQL with $1-style placeholders.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	Dialect() Dialect
}

// Rows is a result set; Close is idempotent.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Tx is a transaction.
type Tx interface {
	Querier
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Driver is what a database package provides.
type Driver interface {
	Querier
	Begin(ctx context.Context) (Tx, error)
	// BeginRead starts a read-only transaction that sees one snapshot of
	// the data throughout, and takes no write lock.
	BeginRead(ctx context.Context) (Tx, error)
	Ping(ctx context.Context) error
	Migrations() fs.FS
	Close()
}

// Store is the handle the rest of the control plane uses.
type Store struct {
	drv Driver
}

// New wraps a driver.
func New(drv Driver) *Store { return &Store{drv: drv} }

// Q returns a querier for reads outside a transaction.
func (s *Store) Q() Querier { return s.drv }

// Refusing is a querier that runs nothing: every statement fails with err.
// The control plane hands it to a call that has no subject to act for.
func Refusing(err error) Querier { return refusing{err} }

type refusing struct{ err error }

func (r refusing) Exec(context.Context, string, ...any) (int64, error) { return 0, r.err }
func (r refusing) Query(context.Context, string, ...any) (Rows, error) { return nil, r.err }
func (r refusing) Dialect() Dialect                                    { return Dialect{} }

// Dialect holds the SQL quirks of the driver in use: for the store's own
// queries and its drivers.
func (s *Store) Dialect() Dialect { return s.drv.Dialect() }

// Kind names the database in use ("postgres" or "sqlite"), for logs and
// messages: callers never choose SQL by it.
func (s *Store) Kind() string { return s.drv.Dialect().Name }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.drv.Ping(ctx) }

// Close releases the connections.
func (s *Store) Close() { s.drv.Close() }

// Tx runs fn in a transaction, committing if it returns nil and rolling
// back otherwise.
func (s *Store) Tx(ctx context.Context, fn func(q Querier) error) (err error) {
	return s.run(ctx, s.drv.Begin, fn)
}

// ReadTx runs fn in a read-only transaction over one snapshot: every read
// in fn sees the same committed state, and no writer waits for it.
func (s *Store) ReadTx(ctx context.Context, fn func(q Querier) error) (err error) {
	return s.run(ctx, s.drv.BeginRead, fn)
}

func (s *Store) run(ctx context.Context, begin func(context.Context) (Tx, error), fn func(q Querier) error) (err error) {
	tx, err := begin(ctx)
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	defer func() {
		// A panic in fn must not leave the transaction (and its locks) open
		// behind a recovering HTTP server.
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing transaction: %w", err)
	}
	return nil
}
