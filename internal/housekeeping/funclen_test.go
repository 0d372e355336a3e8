package housekeeping

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of the module's non-test code, counted
// from its func keyword to its closing brace (its doc comment not
// included). A longer function does several things in a row; its
// sections then want names of their own (issue 27, item 5). Tests are not
// held to it: a table of cases reads best in one piece.
const maxFuncLines = 150

// longFunc is a function over the bound.
type longFunc struct {
	pos   string // path relative to the module root, and line
	name  string
	lines int
}

// TestNoLongFunctions fails on every function (declared, or a literal)
// over maxFuncLines lines in the module's non-test, non-generated Go
// files.
func TestNoLongFunctions(t *testing.T) {
	root := moduleRoot(t)
	long, err := longFuncs(root, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Errorf("%s: %s is %d lines, over %d: split it by section into functions named for what each does", f.pos, f.name, f.lines, maxFuncLines)
	}
}

// The count is the one the message gives: from the func keyword's line to
// the closing brace's, both included, the doc comment left out; a literal
// counts on its own and inside its enclosing function.
func TestFuncLinesCounting(t *testing.T) {
	src := `package p

// f has a doc comment that does not count.
func f() {
	g := func() {
		_ = 1
	}
	g()
}

func (r *T) m() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, fn := range funcsOf(fset, f, "p.go") {
		got[fn.name] = fn.lines
	}
	want := map[string]int{"f": 6, "func literal in f": 3, "(*T).m": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counted %v, want %v", got, want)
	}
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// longFuncs lists the functions over max lines in the Go files under root
// that belong to its module, longest first. It leaves out tests, generated
// files, testdata, hidden directories and nested modules.
func longFuncs(root string, max int) ([]longFunc, error) {
	var long []longFunc
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, fn := range funcsOf(fset, f, filepath.ToSlash(rel)) {
			if fn.lines > max {
				long = append(long, fn)
			}
		}
		return nil
	})
	sort.SliceStable(long, func(i, j int) bool { return long[i].lines > long[j].lines })
	return long, err
}

// funcsOf lists every function of f, declared or literal, with its length
// in lines. A literal is named after the declared function it is in.
func funcsOf(fset *token.FileSet, f *ast.File, rel string) []longFunc {
	var out []longFunc
	lines := func(n ast.Node) int {
		return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
	}
	for _, decl := range f.Decls {
		outer := "package scope"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			outer = funcName(fd)
			out = append(out, longFunc{fmt.Sprintf("%s:%d", rel, fset.Position(fd.Pos()).Line), outer, lines(fd)})
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			if fl, ok := n.(*ast.FuncLit); ok {
				out = append(out, longFunc{fmt.Sprintf("%s:%d", rel, fset.Position(fl.Pos()).Line), "func literal in " + outer, lines(fl)})
			}
			return true
		})
	}
	return out
}

// funcName names a declared function as a reader looks for it: f, or
// (*T).m for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return "(" + recvType(fd.Recv.List[0].Type) + ")." + fd.Name.Name
}

func recvType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr: // T[P]
		return recvType(x.X)
	case *ast.IndexListExpr: // T[P, Q]
		return recvType(x.X)
	case *ast.ParenExpr:
		return recvType(x.X)
	}
	return "?"
}
