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

// apart lists, for a package, the packages of the module it must never
// reach through the imports of its non-test files (its tests may). The
// daemons' drivers are two packages over a shared base, as their
// machines are two packages over a contract: a chunkserver links nothing
// of the master (its machine, its driver, the witness's object store),
// a master nothing of the voter, and the base neither machine.
var apart = []struct {
	from  string
	never []string
}{
	{"cmd/mfschunkserver", []string{"pkg/roles/master", "internal/witness/s3store", "internal/node/masternode"}},
	{"internal/node/csnode", []string{"pkg/roles/master", "internal/witness/s3store", "internal/node/masternode"}},
	{"cmd/mfsmaster", []string{"pkg/roles/voter", "internal/node/csnode"}},
	{"internal/node/masternode", []string{"pkg/roles/voter", "internal/node/csnode"}},
	{"internal/node", []string{"pkg/roles/master", "pkg/roles/voter", "internal/node/masternode", "internal/node/csnode"}},
}

// reach is every package of the module from reaches, each with the path
// of imports that reaches it first.
func reach(imports map[string][]string, from string) map[string]string {
	via := map[string]string{from: from}
	queue := []string{from}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		for _, imp := range imports[dir] {
			if sub, ok := strings.CutPrefix(imp, module); ok {
				if _, seen := via[sub]; !seen {
					via[sub] = via[dir] + " -> " + sub
					queue = append(queue, sub)
				}
			}
		}
	}
	return via
}

// apartProblems lists every path from a package of apart to one it must
// never reach, and every package of apart that is missing (a check of
// nothing would pass).
func apartProblems(imports map[string][]string) []string {
	var out []string
	for _, a := range apart {
		if len(imports[a.from]) == 0 {
			out = append(out, a.from+" not found: the walk or the list is broken")
			continue
		}
		via := reach(imports, a.from)
		for _, n := range a.never {
			if path, ok := via[n]; ok {
				out = append(out, path+": "+a.from+" may not depend on "+n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestDriversApart: the import graph says that mfschunkserver holds no
// master code and mfsmaster no voter code. The chunkserver's driver
// (internal/node/csnode) reaches neither the master's machine, nor its
// driver (internal/node/masternode), nor the witness's object store; the
// master's reaches neither the voter nor the chunkserver's driver; and the
// base both drivers share (internal/node) reaches neither machine.
func TestDriversApart(t *testing.T) {
	for _, p := range apartProblems(moduleImports(t)) {
		t.Error(p)
	}
}

// TestApartCheckCatches: the check above finds a forbidden package two
// hops away, and a package of its list that is not there.
func TestApartCheckCatches(t *testing.T) {
	imports := map[string][]string{}
	for _, a := range apart {
		imports[a.from] = []string{"fmt"}
	}
	imports["internal/node/csnode"] = []string{module + "internal/node"}
	imports["internal/node"] = []string{module + "pkg/roles/master"}
	delete(imports, "cmd/mfsmaster")
	got := strings.Join(apartProblems(imports), "\n")
	for _, want := range []string{
		"internal/node/csnode -> internal/node -> pkg/roles/master: internal/node/csnode may not",
		"internal/node -> pkg/roles/master: internal/node may not",
		"cmd/mfsmaster not found",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the drivers' check missed %q in:\n%s", want, got)
		}
	}
}
