package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cfg resolves an mfsmaster.cfg of the given text.
func cfg(t *testing.T, text string) config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mfsmaster.cfg")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := spec.Resolve(p, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const loopback = "MASTER_HOST = 127.0.0.1\nMATOML_LISTEN_HOST = 127.0.0.1\nMATOCS_LISTEN_HOST = 127.0.0.1\nMATOCL_LISTEN_HOST = 127.0.0.1\n"

// TestStartRules (issue 10, H3, L3): a master reachable from other hosts
// refuses to start without AUTH_CODE, naming the fix, unless INSECURE = 1,
// which is warned about at every start; on loopback nothing changes. A
// secret shorter than 16 characters is refused everywhere. An empty
// ADMIN_PASSWORD is warned about at every start.
func TestStartRules(t *testing.T) {
	const code = "AUTH_CODE = 0123456789abcdef0123\n"
	const admin = "ADMIN_PASSWORD = admin-password-0123\n"
	for _, c := range []struct {
		name, cfg string
		err       []string // all in the error; nil: starts
		warn      []string // all in the warnings
		quiet     bool     // no warning at all
	}{
		{name: "loopback, nothing set: starts", cfg: loopback, warn: []string{"ADMIN_PASSWORD", "9421"}},
		{name: "loopback, everything set: quiet", cfg: loopback + code + admin, quiet: true},
		{name: "listens on every address, no AUTH_CODE", cfg: "MASTER_HOST = 127.0.0.1\nMATOML_LISTEN_HOST = 127.0.0.1\n",
			err: []string{"AUTH_CODE", "INSECURE = 1", "MATOCS_LISTEN_HOST", "every master and chunkserver"}},
		{name: "another master not on loopback", cfg: "MASTER_HOST = 127.0.0.1,10.9.9.9\nMATOML_LISTEN_HOST = 127.0.0.1\nMATOCS_LISTEN_HOST = 127.0.0.1\nMATOCL_LISTEN_HOST = 127.0.0.1\n",
			err: []string{"AUTH_CODE", "10.9.9.9"}},
		{name: "exposed with AUTH_CODE: starts", cfg: "MASTER_HOST = 127.0.0.1,10.9.9.9\n" + code + admin, quiet: true},
		{name: "exposed, INSECURE: starts, warned", cfg: "MASTER_HOST = 127.0.0.1,10.9.9.9\nINSECURE = 1\n" + admin, warn: []string{"INSECURE", "AUTH_CODE"}},
		{name: "loopback, INSECURE without AUTH_CODE: warned", cfg: loopback + "INSECURE = 1\n" + admin, warn: []string{"INSECURE"}},
		{name: "short AUTH_CODE", cfg: loopback + "AUTH_CODE = s3cret\n", err: []string{"AUTH_CODE", "at least 16"}},
		{name: "short ADMIN_PASSWORD", cfg: loopback + code + "ADMIN_PASSWORD = pw\n", err: []string{"ADMIN_PASSWORD", "at least 16"}},
	} {
		v := cfg(t, c.cfg)
		list, _, err := masters(v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		warns, err := startChecks(v, list)
		switch {
		case c.err != nil && err == nil:
			t.Errorf("%s: started (warnings %q)", c.name, warns)
		case c.err == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case err != nil:
			for _, s := range c.err {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: %q not in the error: %v", c.name, s, err)
				}
			}
		}
		all := strings.Join(warns, "\n")
		for _, s := range c.warn {
			if !strings.Contains(all, s) {
				t.Errorf("%s: %q not warned about: %q", c.name, s, warns)
			}
		}
		if c.quiet && len(warns) > 0 {
			t.Errorf("%s: warnings %q", c.name, warns)
		}
	}
}

// TestInitPrintsNewAuthCode (issue 10, H3): init with no AUTH_CODE prints
// a new random one (128 bits, hex) and where to put it, and stores it
// nowhere; with AUTH_CODE set it prints none.
func TestInitPrintsNewAuthCode(t *testing.T) {
	dir := t.TempDir()
	v := cfg(t, loopback+"DATA_PATH = "+dir+"\n")
	var out bytes.Buffer
	if err := initMetadata(&out, v, filepath.Join(dir, ".mfsmaster.lock"), nil, ""); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^AUTH_CODE = ([0-9a-f]{32})$`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "mfsmaster.cfg of every master") || !strings.Contains(out.String(), "mfschunkserver.cfg of every chunkserver") {
		t.Fatalf("no new AUTH_CODE printed with its instructions:\n%s", out.String())
	}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(m[1])) {
				t.Errorf("the new AUTH_CODE is stored in %s", p)
			}
		}
		return nil
	})

	dir2 := t.TempDir()
	v = cfg(t, loopback+"DATA_PATH = "+dir2+"\nAUTH_CODE = 0123456789abcdef0123\n")
	out.Reset()
	if err := initMetadata(&out, v, filepath.Join(dir2, ".mfsmaster.lock"), nil, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "AUTH_CODE =") {
		t.Fatalf("a new AUTH_CODE printed while one is set:\n%s", out.String())
	}
}
