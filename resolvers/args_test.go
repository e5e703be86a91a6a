package resolvers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Resolvers never change their arguments: the executor coerces a field's
// arguments once per operation and hands the same values to the field of
// every element of a list (gqlgen patch 7, third_party/gqlgen/NEBULA.md),
// so a resolver that wrote into one would change them for the elements
// after it. No function of this package writes through a parameter (a
// field, an element, what a pointer points to) or sorts, clears or copies
// into one; ctx and obj (the parent object) are not arguments.
func TestResolversLeaveTheirArgumentsAlone(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
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
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			funcs++
			// A parameter passed by reference (a pointer, slice or map)
			// shares what it refers to with the caller; a struct passed by
			// value shares only what its fields point to.
			params := map[string]bool{}
			for _, field := range fn.Type.Params.List {
				var byRef bool
				switch field.Type.(type) {
				case *ast.StarExpr, *ast.ArrayType, *ast.MapType:
					byRef = true
				}
				for _, n := range field.Names {
					if n.Name != "ctx" && n.Name != "obj" && n.Name != "_" {
						params[n.Name] = byRef
					}
				}
			}
			writesThrough := func(e ast.Expr) (string, bool) {
				if _, plain := e.(*ast.Ident); plain {
					return "", false // the parameter variable itself: the caller's value is untouched
				}
				depth := 0
				for {
					switch x := e.(type) {
					case *ast.Ident:
						byRef, isParam := params[x.Name]
						// One field of a struct passed by value is the
						// callee's own copy; deeper may be through a pointer.
						return x.Name, isParam && (byRef || depth > 1)
					case *ast.SelectorExpr:
						e, depth = x.X, depth+1
					case *ast.IndexExpr:
						e, depth = x.X, depth+1
					case *ast.StarExpr:
						e, depth = x.X, depth+2
					case *ast.ParenExpr:
						e = x.X
					default:
						return "", false
					}
				}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if p, ok := writesThrough(l); ok {
							t.Errorf("%s: %s writes into its argument %s", fset.Position(n.Pos()), fn.Name.Name, p)
						}
					}
				case *ast.IncDecStmt:
					if p, ok := writesThrough(n.X); ok {
						t.Errorf("%s: %s writes into its argument %s", fset.Position(n.Pos()), fn.Name.Name, p)
					}
				case *ast.CallExpr:
					name := ""
					switch f := n.Fun.(type) {
					case *ast.Ident:
						name = f.Name
					case *ast.SelectorExpr:
						if pkg, ok := f.X.(*ast.Ident); ok {
							name = pkg.Name + "." + f.Sel.Name
						}
					}
					mutates := name == "clear" || name == "copy" || strings.HasPrefix(name, "sort.") ||
						name == "slices.Sort" || name == "slices.SortFunc" || name == "slices.SortStableFunc" ||
						name == "slices.Reverse" || name == "slices.Delete" || name == "slices.DeleteFunc" || name == "slices.Compact"
					if mutates && len(n.Args) > 0 {
						root := n.Args[0]
						for {
							if s, ok := root.(*ast.SelectorExpr); ok {
								root = s.X
								continue
							}
							break
						}
						if id, ok := root.(*ast.Ident); ok && isParam(params, id.Name) {
							t.Errorf("%s: %s changes its argument %s with %s", fset.Position(n.Pos()), fn.Name.Name, id.Name, name)
						}
					}
				}
				return true
			})
		}
	}
	if funcs < 100 {
		t.Fatalf("checked %d functions: the package's files were not found", funcs)
	}
}

func isParam(params map[string]bool, name string) bool {
	_, ok := params[name]
	return ok
}
