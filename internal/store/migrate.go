package store

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one embedded, versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations lists the driver's migrations in version order. Files are named
// NNNN_description.sql.
func Migrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || path.Ext(name) != ".sql" {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must start with a positive version and '_'", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("reading migration %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations have version %d", out[i].Version)
		}
	}
	return out, nil
}

// Migrate applies every migration not yet applied, in one transaction, and
// returns the names of those it applied.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	migs, err := Migrations(s.drv.Migrations())
	if err != nil {
		return nil, err
	}
	var applied []string
	err = s.Tx(ctx, func(q Querier) error {
		if l := q.Dialect().MigrationLock; l != "" {
			if _, err := q.Exec(ctx, l); err != nil {
				return fmt.Errorf("taking the migration lock: %w", err)
			}
		}
		if _, err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMP NOT NULL)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		done := map[int]bool{}
		rows, err := q.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("reading schema_migrations: %w", err)
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			done[v] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, m := range migs {
			if done[m.Version] {
				continue
			}
			if _, err := q.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("applying migration %s: %w", m.Name, err)
			}
			if _, err := q.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, time.Now().UTC()); err != nil {
				return fmt.Errorf("recording migration %s: %w", m.Name, err)
			}
			applied = append(applied, m.Name)
		}
		return nil
	})
	return applied, err
}
