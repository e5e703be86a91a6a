// Package sqlite is the embedded store driver: one SQLite file in a data
// directory, through the pure-Go modernc.org/sqlite. It is the zero-config
// default for a single control plane process; several replicas need
// PostgreSQL.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/nebulactrl/nebula/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

var dialect = store.Dialect{Name: "sqlite"}

// DB is an open SQLite file.
type DB struct {
	db *sql.DB
	// writer is held by the one write in progress. SQLite has one writer
	// at a time anyway; taking turns here, in order, replaces many
	// connections polling the file lock under busy_timeout, which under
	// load (hundreds of agents heartbeating) starves some past the
	// timeout with SQLITE_BUSY.
	writer chan struct{}
}

// lockWrite waits for the writer's turn, or for ctx to end.
func (d *DB) lockWrite(ctx context.Context) error {
	select {
	case d.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *DB) unlockWrite() { <-d.writer }

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string) (*DB, error) {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// Writers take the lock when they begin, so two writers never deadlock
	// upgrading read locks; times are stored as sortable Unix microseconds.
	q.Set("_txlock", "immediate")
	q.Set("_time_integer_format", "unix_micro")
	q.Set("_inttotime", "1")
	// The path is a URI path here: characters that would start a query or
	// fragment, or an escape, must be escaped.
	name := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+name+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening SQLite %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("opening SQLite %s: %w", path, err)
	}
	return &DB{db: db, writer: make(chan struct{}, 1)}, nil
}

func (d *DB) Dialect() store.Dialect { return dialect }
func (d *DB) Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}
func (d *DB) Ping(ctx context.Context) error { return d.db.PingContext(ctx) }
func (d *DB) Close()                         { _ = d.db.Close() }

func (d *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := d.lockWrite(ctx); err != nil {
		return 0, err
	}
	defer d.unlockWrite()
	return execOn(ctx, d.db, query, args)
}

func (d *DB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	return queryOn(ctx, d.db, query, args)
}

func (d *DB) Begin(ctx context.Context) (store.Tx, error) {
	if err := d.lockWrite(ctx); err != nil {
		return nil, err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		d.unlockWrite()
		return nil, translate(err)
	}
	return &txn{tx: tx, release: d.unlockWrite}, nil
}

// BeginRead starts a deferred transaction: in WAL mode it reads one
// snapshot, taken at its first read, and never blocks writers.
func (d *DB) BeginRead(ctx context.Context) (store.Tx, error) {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, translate(err)
	}
	return &txn{tx: tx}, nil
}

type txn struct {
	tx      *sql.Tx
	release func() // ends a write transaction's turn; nil for reads
	once    sync.Once
}

func (t *txn) end() {
	if t.release != nil {
		t.once.Do(t.release)
	}
}

func (t *txn) Dialect() store.Dialect { return dialect }
func (t *txn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return execOn(ctx, t.tx, query, args)
}
func (t *txn) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	return queryOn(ctx, t.tx, query, args)
}
func (t *txn) Commit(context.Context) error {
	defer t.end()
	return translate(t.tx.Commit())
}

func (t *txn) Rollback(context.Context) error {
	defer t.end()
	return translate(t.tx.Rollback())
}

type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func execOn(ctx context.Context, c conn, query string, args []any) (int64, error) {
	res, err := c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, translate(err)
	}
	return res.RowsAffected()
}

func queryOn(ctx context.Context, c conn, query string, args []any) (store.Rows, error) {
	r, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	return rows{r}, nil
}

type rows struct{ *sql.Rows }

func (r rows) Close()     { _ = r.Rows.Close() }
func (r rows) Err() error { return translate(r.Rows.Err()) }

func translate(err error) error {
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w", &store.ConflictError{Constraint: e.Error()})
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w", &store.ConflictError{Constraint: e.Error(), Reference: true})
		}
		switch e.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			// Locked past the busy timeout, or the disk failed: the
			// statement was fine and may succeed later.
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
	}
	return err
}
