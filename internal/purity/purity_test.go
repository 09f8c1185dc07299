package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/mfs-election/mfs-election/"

// allowed imports: nothing here can reach a clock reading, a socket, a file,
// a goroutine or a shared random source. "time" is allowed for
// time.Duration only; the selectors below that read or wait on the clock
// are refused one by one.
var allowed = map[string]bool{
	"errors": true, "fmt": true, "sort": true, "slices": true, "strings": true,
	"strconv": true, "net/netip": true, "math/bits": true, "cmp": true, "maps": true,
	"time":         true,
	"unicode/utf8": true,
	// The election history keeps its records as JSON in the namespace:
	// a struct of plain fields encodes the same bytes on every master.
	"encoding/json":     true,
	module + "pkg/wire": true, module + "pkg/locations": true, module + "pkg/quorum": true,
	module + "pkg/registry": true, module + "pkg/changelog": true, module + "pkg/namespace": true,
	// The witness's lease record is JSON read with a bytes.Reader.
	"bytes": true, module + "pkg/witness": true,
	// The contract the two machines share (and nothing of either machine:
	// TestMachinesApart).
	module + "pkg/roles": true,
}

var forbiddenTime = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

func TestPureCore(t *testing.T) {
	for _, dir := range Pure {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, p := range problems(t, dir, path) {
				t.Error(p)
			}
		}
	}
}

// problems lists what makes one file impure.
func problems(t *testing.T, dir, path string) []string {
	t.Helper()
	var out []string
	report := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, filepath.Base(path))
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !allowed[p] {
			report("%s imports %q: the pure core may not", name, p)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report("%s starts a goroutine", name)
		case *ast.ChanType:
			report("%s uses a channel type", name)
		case *ast.SelectStmt:
			report("%s uses select", name)
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && forbiddenTime[n.Sel.Name] {
				report("%s calls time.%s: time must arrive as an input", name, n.Sel.Name)
			}
		}
		return true
	})
	return out
}

// TestCheckerCatches: the checks above find what they look for (a purity
// test that could never fail would prove nothing).
func TestCheckerCatches(t *testing.T) {
	dir := t.TempDir()
	bad := `package x
import ("os"; "time")
func f() { go func() {}(); var c chan int; _ = c; _ = time.Now(); _ = os.Args; select {} }
`
	path := filepath.Join(dir, "bad.go")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems(t, "x", path), "\n")
	for _, want := range []string{`imports "os"`, "goroutine", "channel", "select", "time.Now"} {
		if !strings.Contains(got, want) {
			t.Errorf("the purity check missed %q in:\n%s", want, got)
		}
	}
}

// TestMachinesApart: the master's and the voter's machines meet only
// through the messages of the contract package below them. Neither
// imports the other, and the contract imports neither, so a chunkserver
// links no master code through the core and a witness machine can join
// as a third package beside them.
func TestMachinesApart(t *testing.T) {
	machines := []string{"pkg/roles/master", "pkg/roles/voter"}
	for _, dir := range append([]string{"pkg/roles"}, machines...) {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue // a machine's tests may drive the other machine
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, m := range machines {
					if p == module+m && m != dir {
						t.Errorf("%s imports %s: the machines meet only through pkg/roles", filepath.Join(dir, filepath.Base(path)), m)
					}
				}
			}
		}
	}
}
