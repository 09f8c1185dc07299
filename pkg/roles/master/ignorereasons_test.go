package master

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// reasonsInSource collects every reason the machine can give for an
// ignored input, from its sources: the string literals passed to ignore
// (also inside cmp.Or), and those returned by the checks whose result is
// passed on (checkEntries, checkChunk).
func reasonsInSource(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	lit := func(e ast.Expr) {
		if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil && s != "" {
				seen[s] = true
			}
		}
	}
	fs := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fs, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ignore" && len(n.Args) == 1 {
					lit(n.Args[0])
					if or, ok := n.Args[0].(*ast.CallExpr); ok {
						for _, a := range or.Args {
							lit(a)
						}
					}
				}
			case *ast.FuncDecl:
				if n.Name.Name == "checkEntries" || n.Name.Name == "checkChunk" {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							lit(r.Results[0])
						}
						return true
					})
				}
			}
			return true
		})
	}
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestIgnoreReasons: IgnoreReasons, the series mfs_master_ignored_total
// exports from the start, is every reason the sources can give, and no
// other.
func TestIgnoreReasons(t *testing.T) {
	got := reasonsInSource(t)
	if !slices.Equal(got, IgnoreReasons) {
		t.Fatalf("IgnoreReasons differs from the reasons in the sources:\nsources: %q\nlist:    %q", got, IgnoreReasons)
	}
}
