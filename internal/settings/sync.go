package settings

import (
	"fmt"
	"os"
	"strings"
)

// SyncFile checks that the file at path holds want (the shipped example
// config); with update it writes want there first.
func SyncFile(path, want string, update bool) error {
	if update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			return err
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("%s differs from the key table; rerun the test with -update", path)
	}
	return nil
}

// SyncSection checks that the part of the file at path between the lines
// "<!-- keys:NAME -->" and "<!-- /keys:NAME -->" is want (a key table in
// docs/operations.md); with update it rewrites that part.
func SyncSection(path, name, want string, update bool) error {
	begin, end := "<!-- keys:"+name+" -->\n", "<!-- /keys:"+name+" -->"
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s lacks the markers %q ... %q", path, begin, end)
	}
	next := doc[:i+len(begin)] + want + doc[j:]
	if update {
		return os.WriteFile(path, []byte(next), 0o644)
	}
	if doc != next {
		return fmt.Errorf("the %s key table in %s differs from the spec; rerun the test with -update", name, path)
	}
	return nil
}
