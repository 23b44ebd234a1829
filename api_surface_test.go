package tickgroup

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAPINamesNoInternalType: no exported declaration of the package (a function's parameters and results, a
// method of an exported type, an exported type or field, a typed constant or variable) names a type from an
// internal/ package, so that go doc shows only public types.
func TestAPINamesNoInternalType(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]string{} // the file's import name -> path, for internal packages
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			n := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			internal[n] = path
		}
		check := func(what string, n ast.Node) {
			if n == nil {
				return
			}
			ast.Inspect(n, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] != "" {
					t.Errorf("%s: %s names %s.%s (%s)", fset.Position(sel.Pos()), what, x.Name, sel.Sel.Name, internal[x.Name])
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				check("func "+d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								if len(fld.Names) == 0 || fld.Names[0].IsExported() {
									check("type "+s.Name.Name+" field", fld.Type)
								}
							}
							continue
						}
						check("type "+s.Name.Name, s.Type)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								check(n.Name, s.Type)
								for _, v := range s.Values {
									check(n.Name, v)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestAPIKindsAreTyped: no exported struct field that says what kind of thing it is (Op, Status, State, Kind) is a
// plain string: its values are a type's constants, which go doc lists with the type.
func TestAPIKindsAreTyped(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{"Op": true, "Status": true, "State": true, "Kind": true}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			s, ok := n.(*ast.TypeSpec)
			if !ok || !s.Name.IsExported() {
				return true
			}
			st, ok := s.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				id, ok := fld.Type.(*ast.Ident)
				if !ok || id.Name != "string" {
					continue
				}
				for _, n := range fld.Names {
					if kinds[n.Name] {
						t.Errorf("%s: %s.%s is a plain string: give it a type with constants", fset.Position(n.Pos()), s.Name.Name, n.Name)
					}
				}
			}
			return false
		})
	}
}

func exportedRecv(fl *ast.FieldList) bool {
	typ := fl.List[0].Type
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}

// TestOutsideModuleBuilds: a module of its own, outside this one, builds a program with a handler, a ticker, a
// worker and a schedules client from the public API alone (testdata/outside).
func TestOutsideModuleBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "outside", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/outside\n\ngo 1.26.0\n\nrequire github.com/tickgroup/tickgroup v0.0.0\n\nreplace github.com/tickgroup/tickgroup => " + repo + "\n"
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "."}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a module outside: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
