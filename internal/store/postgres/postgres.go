// Package postgres is the production store driver: PostgreSQL through a
// pgx/v5 connection pool. It translates PostgreSQL errors into the store's
// errors and never lets a raw driver error describe itself to a client.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"reflect"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nebulactrl/nebula/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

var dialect = store.Dialect{
	Name:      "postgres",
	ForUpdate: " FOR UPDATE",
	KeyShare:  " FOR KEY SHARE",
	// Any constant works; it only has to be the same on every replica.
	MigrationLock: "SELECT pg_advisory_xact_lock(7201103)",
	// The class (7201104) keeps these apart from other advisory locks.
	SubjectLock: "SELECT pg_advisory_xact_lock(7201104, hashtext($1))",
}

// Options tune the pool; zero values keep pgx's defaults.
type Options struct {
	// Tracer observes every query (tests count them with it).
	Tracer pgx.QueryTracer
	// MaxConns caps the pool.
	MaxConns int32
}

// DefaultMaxConns is the pool's size unless the URL sets pool_max_conns.
// pgx's own default, max(4, cores), is too few for a server: a request
// holds its connection while it works in Go between statements, and under
// load the others queue for one (docs/benchmarks.md, the load run).
const DefaultMaxConns = 16

// DB is a pool of PostgreSQL connections.
type DB struct {
	pool *pgxpool.Pool
}

// Open connects to url (a postgres:// URL or key=value DSN).
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error can echo the URL, password included: keep it out.
		return nil, errors.New("parsing the PostgreSQL URL: invalid NEBULA_DATABASE_URL")
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		m := c.TypeMap()
		m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryNamedString}, m.TryWrapScanPlanFuncs...)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening PostgreSQL pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, translate(err))
	}
	return &DB{pool: pool}, nil
}

// Pool exposes the pool, for the benchmark baseline that reads the same rows.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

func (db *DB) Dialect() store.Dialect { return dialect }
func (db *DB) Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}
func (db *DB) Ping(ctx context.Context) error { return translate(db.pool.Ping(ctx)) }
func (db *DB) Close()                         { db.pool.Close() }

func (db *DB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return execOn(ctx, db.pool, sql, args)
}

func (db *DB) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	return queryOn(ctx, db.pool, sql, args)
}

func (db *DB) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, translate(err)
	}
	return &txn{tx: tx}, nil
}

// BeginRead starts a read-only REPEATABLE READ transaction: all its
// statements read one snapshot.
func (db *DB) BeginRead(ctx context.Context) (store.Tx, error) {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, translate(err)
	}
	return &txn{tx: tx}, nil
}

type txn struct{ tx pgx.Tx }

func (t *txn) Dialect() store.Dialect { return dialect }
func (t *txn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return execOn(ctx, t.tx, sql, args)
}
func (t *txn) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	return queryOn(ctx, t.tx, sql, args)
}
func (t *txn) Commit(ctx context.Context) error   { return translate(t.tx.Commit(ctx)) }
func (t *txn) Rollback(ctx context.Context) error { return translate(t.tx.Rollback(ctx)) }

type conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func execOn(ctx context.Context, c conn, sql string, args []any) (int64, error) {
	tag, err := c.Exec(ctx, sql, args...)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}

func queryOn(ctx context.Context, c conn, sql string, args []any) (store.Rows, error) {
	r, err := c.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	return &rows{Rows: r}, nil
}

type rows struct {
	pgx.Rows
	dest []any // what Scan hands pgx, kept from row to row
}

func (r *rows) Err() error { return translate(r.Rows.Err()) }

// Scan reads the row's text columns that go into strings (ids, names,
// stages: most of a row) into one string allocated for the row, each
// destination a slice of it, and lets pgx scan the rest. pgx allocates a
// string per column; the row's strings live and die together anyway.
// A NULL, a column of another type and a destination of another type are
// left to pgx, with its errors.
func (r *rows) Scan(dest ...any) error {
	raw := r.RawValues()
	fields := r.FieldDescriptions()
	if len(dest) != len(raw) || len(raw) > 64 {
		return r.Rows.Scan(dest...)
	}
	var mine uint64
	total, n := 0, 0
	for i, d := range dest {
		if raw[i] != nil && isText(fields[i].DataTypeOID) && stringTarget(d) {
			mine |= 1 << i
			total += len(raw[i])
			n++
		}
	}
	if n < 2 {
		return r.Rows.Scan(dest...)
	}
	var b strings.Builder
	b.Grow(total)
	for i := range raw {
		if mine&(1<<i) != 0 {
			b.Write(raw[i])
		}
	}
	row := b.String()
	r.dest = append(r.dest[:0], dest...)
	at := 0
	for i := range raw {
		if mine&(1<<i) != 0 {
			*asString(dest[i]) = row[at : at+len(raw[i])]
			at += len(raw[i])
			r.dest[i] = nil // pgx skips it
		}
	}
	return r.Rows.Scan(r.dest...)
}

// isText tells the types whose wire bytes are the string itself, in the
// text and the binary format alike: text and varchar.
func isText(oid uint32) bool { return oid == pgtype.TextOID || oid == pgtype.VarcharOID }

// stringTarget tells a *string or a pointer to a named string type.
func stringTarget(d any) bool {
	if _, ok := d.(*string); ok {
		return true
	}
	t := reflect.TypeOf(d)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String
}

// translate maps PostgreSQL's constraint errors to the store's, and the
// errors of a server that cannot be reached to store.ErrUnavailable.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w", &store.ConflictError{Constraint: pgErr.ConstraintName})
		case "23503": // foreign_key_violation
			return fmt.Errorf("%w", &store.ConflictError{Constraint: pgErr.ConstraintName, Reference: true})
		}
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// unavailable tells whether err says the server is down, restarting or
// unreachable, rather than that the statement was wrong.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection_exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, cannot connect now
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	// A closed connection taken from the pool reports itself this way.
	return strings.Contains(err.Error(), "conn closed")
}

// tryNamedString lets pgx scan text into the model's named string types
// (ids, stages, kinds) as into a string. Its own fallback converts the
// destination through reflection on every row (an allocation per column
// per row); this one only looks through the pointer.
func tryNamedString(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	t := reflect.TypeOf(target)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.String || t.Elem() == reflect.TypeFor[string]() {
		return nil, nil, false
	}
	return &namedStringPlan{}, asString(target), true
}

type namedStringPlan struct{ next pgtype.ScanPlan }

func (p *namedStringPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *namedStringPlan) Scan(src []byte, dst any) error { return p.next.Scan(src, asString(dst)) }

// asString is a pointer to a named string type as a *string (the same
// memory: the types differ only in name).
func asString(p any) *string { return (*string)(reflect.ValueOf(p).UnsafePointer()) }
