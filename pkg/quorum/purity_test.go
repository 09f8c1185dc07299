package quorum

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPurity holds the line of doc.go: the package imports nothing that
// could reach a clock, the network, the disk, goroutine machinery or
// randomness.
func TestPurity(t *testing.T) {
	allowed := map[string]bool{
		"errors": true, "fmt": true, "sort": true, "slices": true, "strings": true,
		"strconv": true, "net/netip": true, "math/bits": true, "cmp": true, "maps": true,
		"github.com/mfs-election/mfs-election/pkg/wire":      true,
		"github.com/mfs-election/mfs-election/pkg/locations": true,
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[path] {
				t.Errorf("%s imports %q, which a pure package may not", name, path)
			}
		}
	}
}
