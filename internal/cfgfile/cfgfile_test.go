package cfgfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `# mfsmaster.cfg
# DATA_PATH = /var/lib/mfs
MATOCS_LISTEN_PORT = 9420
MASTER_HOST=mfsmaster   # the DNS name of every master
  AUTH_CODE =  s3cr3t = with equals
KEEP_LEADERSHIP = 0

EMPTY =
`
	f, err := Parse("mfsmaster.cfg", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, want string }{
		{"MATOCS_LISTEN_PORT", "9420"},
		{"MASTER_HOST", "mfsmaster"},
		{"AUTH_CODE", "s3cr3t = with equals"},
		{"KEEP_LEADERSHIP", "0"},
		{"EMPTY", ""},
	} {
		if got, ok := f.Get(c.key); !ok || got != c.want {
			t.Errorf("%s = %q (set %v), want %q", c.key, got, ok, c.want)
		}
	}
	if _, ok := f.Get("DATA_PATH"); ok {
		t.Error("a commented-out default was read as set")
	}
	if f.Settings["KEEP_LEADERSHIP"].Line != 6 {
		t.Errorf("line of KEEP_LEADERSHIP = %d, want 6", f.Settings["KEEP_LEADERSHIP"].Line)
	}
	if u := f.Unknown([]string{"MATOCS_LISTEN_PORT", "MASTER_HOST", "AUTH_CODE", "KEEP_LEADERSHIP"}); len(u) != 1 || u[0] != "EMPTY (line 8)" {
		t.Errorf("unknown keys %v, want [EMPTY (line 8)]", u)
	}
}

func TestParseErrorsNameEveryBadLine(t *testing.T) {
	_, err := Parse("x.cfg", strings.NewReader("GOOD = 1\njust words\nBAD-KEY = 2\n= 3\n"))
	if err == nil {
		t.Fatal("bad lines accepted")
	}
	for _, want := range []string{"3 bad line(s)", "x.cfg:2", `"just words"`, "x.cfg:3", `"BAD-KEY"`, "x.cfg:4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mfschunkserver.cfg")
	if err := os.WriteFile(p, []byte("MASTER_PORT = 9420\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil || f.Path != p {
		t.Fatalf("%v %v", f, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.cfg")); err == nil || !strings.Contains(err.Error(), "missing.cfg") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestSecretWithHash (review L3): '#' in a secret's line is refused with an
// error naming the line and the key, never the value; elsewhere it still
// starts a comment, and a commented-out secret is a comment.
func TestSecretWithHash(t *testing.T) {
	src := "AUTH_CODE = ab#cd\nADMIN_PASSWORD = xy # the password\n# AUTH_CODE = old#one\nMASTER_HOST = m # name\n"
	_, err := Parse("m.cfg", strings.NewReader(src))
	if err == nil {
		t.Fatal("a secret with '#' was cut silently")
	}
	for _, want := range []string{"2 bad line(s)", "m.cfg:1: AUTH_CODE", "m.cfg:2: ADMIN_PASSWORD", "'#'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ab") || strings.Contains(err.Error(), "xy") {
		t.Errorf("the error shows the secret: %v", err)
	}
	f, err := Parse("m.cfg", strings.NewReader("# AUTH_CODE = old#one\nMASTER_HOST = m # name\nAUTH_CODE = abcd\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Get("AUTH_CODE"); v != "abcd" {
		t.Errorf("AUTH_CODE = %q", v)
	}
}

// TestDuplicateKey (issue 37): a key set twice is refused with both
// lines, not silently taken from the later one.
func TestDuplicateKey(t *testing.T) {
	_, err := Parse("mfsmaster.cfg", strings.NewReader("DATA_PATH = /a\nMATOCS_LISTEN_PORT = 9420\n\nDATA_PATH = /b\n"))
	want := "mfsmaster.cfg:4: DATA_PATH is set again (first at line 1): keep one of the two lines"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %q", err, want)
	}
}
