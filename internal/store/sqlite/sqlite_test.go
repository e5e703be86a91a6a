package sqlite_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
	"github.com/nebulactrl/nebula/internal/store/storetest"
)

// open returns a store on a new database file at path, not yet migrated.
func open(t *testing.T, path string) *store.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	s := store.New(db)
	t.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s := open(t, filepath.Join(t.TempDir(), "nebula.db"))
		if _, err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("migrating: %v", err)
		}
		return s
	})
}

// Two processes starting on the same file migrate once between them.
func TestConcurrentMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nebula.db")
	stores := []*store.Store{open(t, path), open(t, path)}
	applied := make([][]string, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { applied[i], errs[i] = s.Migrate(t.Context()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate %d: %v", i, err)
		}
	}
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer db.Close()
	all, err := store.Migrations(db.Migrations())
	if err != nil {
		t.Fatalf("listing migrations: %v", err)
	}
	if got := len(applied[0]) + len(applied[1]); got != len(all) {
		t.Errorf("got %d migrations applied in total (%q, %q), want each of the %d once", got, applied[0], applied[1], len(all))
	}
}

// The data directory is the operator's to name: characters that mean
// something in a file: URI must still name that file.
func TestOpenPathWithURICharacters(t *testing.T) {
	// One parent directory, named plainly, so that a path cut short still
	// lands inside it and is cleaned up.
	base := t.TempDir()
	for _, dir := range []string{"a#b", "a?b", "c%41d", "with space"} {
		t.Run(dir, func(t *testing.T) {
			path := filepath.Join(base, dir, "nebula.db")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			s := open(t, path)
			if _, err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("migrating: %v", err)
			}
			s.Close()
			if _, err := os.Stat(path); err != nil {
				t.Errorf("got no file at %s: %v", path, err)
			}
		})
	}
}

func TestUpgrades(t *testing.T) {
	storetest.RunUpgrades(t, func(t *testing.T, version int) (old, current *store.Store) {
		path := filepath.Join(t.TempDir(), "nebula.db")
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatalf("opening %s: %v", path, err)
		}
		t.Cleanup(db.Close)
		return store.New(storetest.UpTo(t, db, version)), open(t, path)
	})
}
