package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOneDoor fails when code of this package, the façade or a domain reaches the store other than
// through the door (door.go): p.store, or a store handle's Q, Tx, ReadTx
// or Ping, anywhere else. The grant cache (grants.go) is the authorizer's
// own loader: it reads the grants every check needs, for the subject
// being checked.
func TestOneDoor(t *testing.T) {
	allowed := map[string]string{
		"door.go":   "the door",
		"grants.go": "the authorizer's loader of a subject's grants",
	}
	// This package's files, the façade's and every domain's.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	domains, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(more, domains...) {
		if filepath.Dir(f) != "../core" {
			files = append(files, f)
		}
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || allowed[name] != "" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); n.Sel.Name == "store" && !(ok && id.Name == "store") {
					t.Errorf("%s: the store is reached outside the door (door.go): use p.Querier(ctx), p.InTx or p.InReadTx", fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Q", "Tx", "ReadTx", "Ping"}, sel.Sel.Name) {
					t.Errorf("%s: %s on a store handle outside the door (door.go)", fset.Position(n.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files: is the test running in the package's directory?", checked)
	}
}
