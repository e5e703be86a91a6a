package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlShapes are what SQL looks like in a string: a statement's skeleton,
// a predicate, a lock clause. Uppercase only, as the store writes SQL, so
// that "select a cluster" or an HTTP DELETE is not taken for it.
var sqlShapes = regexp.MustCompile(`\bSELECT\b[\s\S]*\bFROM\b|\bINSERT INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE FROM\b|` +
	`\bWHERE\s+\w+\s*(=|<|>|<>|!=|\bIN\b|\bIS\b|\bLIKE\b)|\bFOR (UPDATE|KEY SHARE|SHARE)\b|\bLISTEN\b\s+\w|pg_notify|` +
	`\b(AND|OR)\s+\w+\s*(=|<|>)\s*\$\d|=\s*\$\d+\b`)

// rawSQLAllowed are the files outside the store that hold SQL on purpose,
// each a test that must look behind the store's methods.
var rawSQLAllowed = map[string]string{
	"internal/apitest/canary_test.go":                "scans every column of every table for a secret value: it must see raw rows, in both dialects",
	"internal/apitest/replicas_test.go":              "terminates PostgreSQL backends to inject a fault",
	"internal/apitest/previewload_test.go":           "holds a row lock from a second connection and sets lock_timeout, to inject contention",
	"internal/apitest/releasemigration_test.go":      "turns a database back into what the previous version left (no secret_versions table, releases without variables), to test the upgrade",
	"internal/apitest/revisions_test.go":             "reads every revision row of a cluster in one query, to check no revision is skipped or repeated",
	"internal/control/builds/builds_test.go":         "dumps every row of every table to look for a webhook secret in any encoding: it must see raw rows",
	"internal/control/changesets/changesets_test.go": "reads a change set's raw lists to look for a secret value in any encoding",
	"internal/bench/baseline_test.go":                "hand-written queries, the baseline the store's reads are benchmarked against",
	"internal/bench/logstore_test.go":                "measures the log partitions' size on disk (pg_total_relation_size), which no API exposes",
	"internal/bench/logquery_test.go":                "fills a 10-million-line log table with generate_series (the ingest path would take an hour) and measures its size on disk",
}

// TestClosedStore fails when SQL, a where string or a dialect check
// appears outside internal/store: callers use the store's named methods,
// and the dialects' differences stay in its drivers.
func TestClosedStore(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "internal/store", strings.HasPrefix(d.Name(), "."), d.Name() == "node_modules", d.Name() == "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		if _, ok := rawSQLAllowed[rel]; ok {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					s = n.Value
				}
				if m := sqlShapes.FindString(s); m != "" {
					t.Errorf("%s: SQL outside internal/store (%q): add a named store method", fset.Position(n.Pos()), m)
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "Dialect" {
					t.Errorf("%s: a dialect check outside internal/store: the drivers hold the differences", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files outside internal/store, want the whole module (is the root %s right?)", checked, root)
	}
	for rel := range rawSQLAllowed {
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			t.Errorf("an allowed file is gone; drop it from rawSQLAllowed: %v", err)
		}
	}
}

// TestSQLShapes keeps the detector honest: SQL is found, look-alikes are
// not.
func TestSQLShapes(t *testing.T) {
	for _, s := range []string{
		"SELECT id FROM projects",
		"tenant_id = $1",
		"INSERT INTO tenants (id) VALUES ($1)",
		"UPDATE clusters SET labels = $1",
		"DELETE FROM variables",
		"WHERE stage IN ('DELIVERING')",
		" FOR KEY SHARE",
		"LISTEN nebula",
		"SELECT pg_notify($1, $2)",
		"status = $2 AND kind <> $3",
	} {
		if !sqlShapes.MatchString(s) {
			t.Errorf("%q: not taken for SQL", s)
		}
	}
	for _, s := range []string{
		"select a cluster from the list",
		"DELETE",
		"LIST",
		"deleting from %s: %w",
		"the update failed where it should not",
		"$1",
		"apply_errors",
	} {
		if sqlShapes.MatchString(s) {
			t.Errorf("%q: taken for SQL", s)
		}
	}
}
