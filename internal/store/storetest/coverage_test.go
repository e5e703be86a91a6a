package storetest

import (
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const storePath = "github.com/nebulactrl/nebula/internal/store"

// notQueries are the exported functions and methods of package store the
// suite does not call, each with the reason. Keep it short: anything that
// reads or writes rows needs a case in Run instead.
var notQueries = map[string]string{
	// The constructor: every driver's tests build the stores the suite gets
	// with it (sqlite_test.go's open, pgtest.Open), and the suite has no
	// driver of its own to wrap.
	"New": "constructor, called by each driver's open function",
}

// TestEveryStoreFunctionHasACase fails when package store exports a
// function or method (of an exported type) that no case of the suite
// calls: a new query must come with its conformance case. Calls are
// resolved with the type checker, so a method counts only when it is the
// store's (rows.Close is not Store.Close, errors.Is is not
// ConflictError.Is).
func TestEveryStoreFunctionHasACase(t *testing.T) {
	declared := exportedStoreFuncs(t, "..")
	if len(declared) < 50 {
		t.Fatalf("found only %d exported functions in package store; is the parser looking at the right directory?", len(declared))
	}
	used := storeFuncsUsed(t, ".")
	var missing []string
	for name, pos := range declared {
		if !used[name] && notQueries[name] == "" {
			missing = append(missing, name+" ("+pos+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("store.%s has no conformance case: call it from a case registered in Run (storetest.go), asserting what it selects or changes", m)
	}
	for name := range notQueries {
		if _, ok := declared[name]; !ok {
			t.Errorf("notQueries names store.%s, which package store does not export: remove it", name)
		}
		if used[name] {
			t.Errorf("notQueries names store.%s, which the suite calls: remove it", name)
		}
	}
}

// exportedStoreFuncs parses the non-test files of package store in dir and
// returns its exported functions and exported methods of exported types,
// as "Func" or "Type.Method", with their positions.
func exportedStoreFuncs(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		if f.Name.Name != "store" {
			t.Fatalf("%s is in package %s, want store", path, f.Name.Name)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil {
				recv := receiverName(fd.Recv.List[0].Type)
				if !token.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			out[name] = fset.Position(fd.Pos()).String()
		}
	}
	return out
}

// receiverName is the type name of a receiver: T, *T, T[K], *T[K, V].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// storeFuncsUsed type-checks the non-test files of the suite in dir and
// returns the functions and methods of package store they refer to, named
// as exportedStoreFuncs names them.
func storeFuncsUsed(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t, dir))}
	if _, err := conf.Check("storetest", fset, files, info); err != nil {
		t.Fatalf("type-checking the suite: %v", err)
	}
	used := map[string]bool{}
	for _, obj := range info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Pkg().Path() != storePath {
			continue
		}
		fn = fn.Origin() // a method of Table[K, T], not of an instance
		name := fn.Name()
		if recv := fn.Signature().Recv(); recv != nil {
			rt := recv.Type()
			if p, ok := rt.(*types.Pointer); ok {
				rt = p.Elem()
			}
			// An interface's method (Rows.Close) is named after its
			// interface, which declares no FuncDecl: it never matches.
			named, ok := rt.(*types.Named)
			if !ok {
				continue
			}
			name = named.Obj().Name() + "." + name
		}
		used[name] = true
	}
	return used
}

// exportData finds the compiled export data of the suite's dependencies
// with the go command, for the type checker's importer.
func exportData(t *testing.T, dir string) func(path string) (io.ReadCloser, error) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	files := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "\t")
		if file != "" {
			files[path] = file
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, os.ErrNotExist
		}
		return os.Open(file)
	}
}

// TestCoverageCheckSeesNewFunctions: the check's parser finds a function,
// a method and a method of a generic type added to package store, and the
// suite does not call them, so the check above would fail on each.
func TestCoverageCheckSeesNewFunctions(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	probe := `package store

func UncalledProbe() {}
func (s *Store) UncalledProbe() {}
func (t *Table[K, T]) UncalledProbe() {}
func (k KeyScope) UncalledProbe() {}
type probe struct{}
func (probe) Exported() {}
`
	if err := os.WriteFile(filepath.Join(dir, "probe.go"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	declared := exportedStoreFuncs(t, dir)
	used := storeFuncsUsed(t, ".")
	for _, name := range []string{"UncalledProbe", "Store.UncalledProbe", "Table.UncalledProbe", "KeyScope.UncalledProbe"} {
		if _, ok := declared[name]; !ok {
			t.Errorf("the parser missed %s", name)
		}
		if used[name] {
			t.Errorf("%s counts as called by the suite", name)
		}
	}
	if _, ok := declared["probe.Exported"]; ok {
		t.Error("an unexported type's method counts as exported")
	}
	// The suite's own calls are found: functions, methods, and methods of
	// generic types through their instances.
	if !used["Store.Close"] || !used["Table.Insert"] || !used["ConflictError.Is"] || !used["LoadTenantRows"] {
		t.Errorf("the suite's calls were not all found: %v", used)
	}
}
