package purity

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The daemons' libraries: a program that links the client must not get
// them (the store, metrics and logs are the daemons' business).
var daemonOnly = []string{"go.etcd.io/bbolt", "github.com/prometheus/", "github.com/rs/zerolog"}

// moduleImports maps each package directory of the module (relative to
// its root, slash-separated) to the imports of its non-test files.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// leafProblems lists the import arrows that break the layering: a package
// under pkg/ importing an internal one, and a daemon-only library reached
// from pkg/client (with the path that reaches it).
func leafProblems(imports map[string][]string) []string {
	var out []string
	for dir, imps := range imports {
		if !strings.HasPrefix(dir, "pkg/") {
			continue
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, module+"internal/") {
				out = append(out, dir+" imports "+imp+": a public package may not")
			}
		}
	}
	// Everything of the module pkg/client reaches, and how.
	via := map[string]string{"pkg/client": "pkg/client"}
	queue := []string{"pkg/client"}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		for _, imp := range imports[dir] {
			for _, lib := range daemonOnly {
				if strings.HasPrefix(imp, lib) {
					out = append(out, via[dir]+" -> "+imp+": the client links a daemon-only library")
				}
			}
			if sub, ok := strings.CutPrefix(imp, module); ok {
				if _, seen := via[sub]; !seen {
					via[sub] = via[dir] + " -> " + sub
					queue = append(queue, sub)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out) // one line per arrow, not per file
}

// TestPublicLeaf: no public package imports an internal one, and
// pkg/client, whatever it imports from the module, links no store,
// metrics or logging library: a program that uses the client gets the
// protocol, not the daemons.
func TestPublicLeaf(t *testing.T) {
	imports := moduleImports(t)
	if len(imports["pkg/client"]) == 0 {
		t.Fatal("pkg/client not found: the walk is broken")
	}
	for _, p := range leafProblems(imports) {
		t.Error(p)
	}
}

// TestLeafCheckCatches: the check above finds an upward arrow and a
// daemon library two hops away.
func TestLeafCheckCatches(t *testing.T) {
	got := strings.Join(leafProblems(map[string][]string{
		"pkg/client":    {"fmt", module + "pkg/wire"},
		"pkg/wire":      {module + "internal/node"},
		"internal/node": {"go.etcd.io/bbolt"},
	}), "\n")
	for _, want := range []string{
		"pkg/wire imports " + module + "internal/node",
		"pkg/client -> pkg/wire -> internal/node -> go.etcd.io/bbolt",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the layering check missed %q in:\n%s", want, got)
		}
	}
}
