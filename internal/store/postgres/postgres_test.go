package postgres_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
	"github.com/nebulactrl/nebula/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store { return pgtest.Open(t) })
}

func TestUpgrades(t *testing.T) {
	storetest.RunUpgrades(t, func(t *testing.T, version int) (old, current *store.Store) {
		url := pgtest.URL(t)
		var dbs [2]*postgres.DB
		for i := range dbs {
			db, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Fatalf("opening: %v", err)
			}
			t.Cleanup(db.Close)
			dbs[i] = db
		}
		return store.New(storetest.UpTo(t, dbs[0], version)), store.New(dbs[1])
	})
}

// Replicas starting together on a fresh database both succeed: the advisory
// lock makes one wait for the other, which then finds nothing to apply.
func TestConcurrentMigrate(t *testing.T) {
	url := pgtest.URL(t)
	const replicas = 2
	var dbs []*postgres.DB
	for range replicas {
		db, err := postgres.Open(t.Context(), url, postgres.Options{})
		if err != nil {
			t.Fatalf("opening: %v", err)
		}
		t.Cleanup(db.Close)
		dbs = append(dbs, db)
	}
	all, err := store.Migrations(dbs[0].Migrations())
	if err != nil {
		t.Fatalf("listing migrations: %v", err)
	}

	applied := make([][]string, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Go(func() {
			<-start
			applied[i], errs[i] = store.New(db).Migrate(t.Context())
		})
	}
	close(start)
	wg.Wait()

	total := 0
	for i := range replicas {
		if errs[i] != nil {
			t.Errorf("Migrate on replica %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	if total != len(all) {
		t.Errorf("got %d migrations applied in total (%q), want each of the %d once", total, applied, len(all))
	}
	var n int
	rows, err := dbs[0].Query(t.Context(), `SELECT COUNT(*) FROM schema_migrations`)
	if err != nil {
		t.Fatalf("counting schema_migrations: %v", err)
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			t.Fatalf("scanning: %v", err)
		}
	}
	if n != len(all) {
		t.Errorf("schema_migrations: got %d rows, want %d", n, len(all))
	}
}

// A server that cannot be reached is reported as store.ErrUnavailable, so
// that the API answers "try again" rather than "internal error", and the
// URL's password never appears in the error.
func TestUnreachableIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = postgres.Open(t.Context(), "postgres://nebula:hunter2@"+addr+"/nebula?connect_timeout=2", postgres.Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("opening an unreachable server: got %v, want store.ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// The pool is 16 connections unless the URL says otherwise, and a URL with
// pool settings works for the notification listener too: they are the
// pool's, and PostgreSQL would refuse them as its own.
func TestPoolSettingsInTheURL(t *testing.T) {
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, tc := range []struct {
		url  string
		want int32
	}{{url, postgres.DefaultMaxConns}, {url + sep + "pool_max_conns=3", 3}} {
		db, err := postgres.Open(t.Context(), tc.url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Pool().Config().MaxConns; got != tc.want {
			t.Errorf("pool of %d connections, want %d", got, tc.want)
		}
		db.Close()

		ctx, cancel := context.WithCancel(t.Context())
		err = postgres.ListenOnce(ctx, tc.url, "nebula_pool_test", cancel, func(string) {})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("listening with %d connections in the URL: %v, want it listening until cancelled", tc.want, err)
		}
	}
}

// A row's text columns are read into one string and handed out in slices
// of it (rows.Scan): each destination must get its own column's value,
// after the next row too; NULLs, other types and other destinations go
// through pgx, with its errors.
func TestScanTextColumns(t *testing.T) {
	db, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	rows, err := db.Query(t.Context(), `SELECT v.n, 'id-' || v.n::text, 'bé "' || v.n::text || '"'::varchar, NULL::text,
		'{"k": 1}'::jsonb, 'tail'::text FROM (VALUES (1), (2)) AS v(n) ORDER BY v.n`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		n    int
		id   model.ProjectID
		name string
		none *string
		doc  string
		tail string
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.n, &r.id, &r.name, &r.none, &r.doc, &r.tail); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []row{{1, "id-1", `bé "1"`, nil, `{"k": 1}`, "tail"}, {2, "id-2", `bé "2"`, nil, `{"k": 1}`, "tail"}}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	rows, err = db.Query(t.Context(), `SELECT 'a'::text, NULL::text, 'c'::text`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var a, b, c string
	if !rows.Next() {
		t.Fatal("no row")
	}
	if err := rows.Scan(&a, &b, &c); err == nil {
		t.Error("a NULL scanned into a string gave no error")
	}
}
