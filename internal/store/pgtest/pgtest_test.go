package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Each test gets its own empty database, gone after the test.
func TestURLFreshDatabase(t *testing.T) {
	ctx := context.Background()
	var names [2]string
	for i := range names {
		t.Run("db", func(t *testing.T) {
			conn, err := pgx.Connect(ctx, pgtest.URL(t))
			if err != nil {
				t.Fatalf("connecting: %v", err)
			}
			defer conn.Close(ctx)
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&names[i]); err != nil {
				t.Fatalf("reading the database name: %v", err)
			}
			var tables int
			if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
				t.Fatalf("counting tables: %v", err)
			}
			if tables != 0 {
				t.Errorf("got %d tables in a fresh database, want 0", tables)
			}
			// Left open on purpose: the cleanup must drop it anyway.
			if _, err := conn.Exec(ctx, "CREATE TABLE leftover (id int)"); err != nil {
				t.Fatalf("creating a table: %v", err)
			}
		})
	}
	if names[0] == names[1] {
		t.Fatalf("got database %q twice, want a fresh one per test", names[0])
	}

	// Both are gone, though each test left a connection open.
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM pg_database WHERE datname = ANY($1)", names[:]).Scan(&left); err != nil {
		t.Fatalf("looking for the dropped databases: %v", err)
	}
	if left != 0 {
		t.Errorf("got %d of the databases %v after their tests ended, want 0", left, names)
	}
}
