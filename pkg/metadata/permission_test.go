package metadata

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

// TestPermissionIsNotDamage (issue 37): a metadata file the process may
// not open for writing is reported as a permission problem, with the
// remedy for that (fix owner or mode, do not move it aside), never as
// damage, whose remedy (move it aside, start with -e) throws good
// metadata away. The file is left byte for byte. As root, where modes do
// not bind, the file is made immutable (chattr +i) instead.
func TestPermissionIsNotDamage(t *testing.T) {
	dir := t.TempDir()
	s := openMaster(t, dir)
	must(t, s.Init("c1", changelog.Genesis(1)))
	path := s.Path()
	must(t, s.Close())
	before, err := os.ReadFile(path)
	must(t, err)
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			t.Skipf("root, and chattr +i is not available here (%v: %s): no way to deny access", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
	} else {
		must(t, os.Chmod(path, 0o400))
	}
	_, err = OpenMaster(dir)
	if err == nil {
		t.Fatal("a file that may not be written was opened")
	}
	msg := err.Error()
	for _, want := range []string{path, "not damaged", "chown/chmod", "do not move it aside", "mfsmaster"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	for _, wrong := range []string{"not a readable bbolt file", "is damaged", "-e"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the error says %q, as for damage: %s", wrong, msg)
		}
	}
	after, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Equal(before, after) {
		t.Error("the file was changed")
	}
}
