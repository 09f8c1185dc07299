package settings

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mfs-election/mfs-election/internal/cfgfile"
)

var spec = Spec{Daemon: "mfstest", Keys: []Key{
	{Name: "DATA_PATH", Kind: String, Default: "/var/lib/mfs", Usage: "Where the daemon keeps its data."},
	{Name: "WORKERS", Kind: Int, Default: "4", Min: "1", Max: "64", Usage: "How many worker goroutines serve requests; four keeps a small machine responsive while leaving cores for the rest of the system."},
	{Name: "SYNC", Kind: Bool, Default: "1", Usage: "Whether to fsync."},
	{Name: "TIMEOUT", Kind: Duration, Default: "5", Min: "100ms", Usage: "How long to wait for a peer."},
	{Name: "RATIO", Kind: Float, Default: "0.5", Min: "0", Max: "1", Usage: "Share of space to use."},
}}

func writeCfg(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mfstest.cfg")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run resolves spec inside a real cli.App run with the given arguments.
func run(t *testing.T, args ...string) (Values, error) {
	t.Helper()
	var v Values
	var rerr error
	app := &cli.App{
		Name:  "mfstest",
		Flags: append(spec.Flags(), &cli.StringFlag{Name: "c"}),
		Action: func(c *cli.Context) error {
			v, rerr = spec.Resolve(c.String("c"), c.IsSet("c"), c)
			return nil
		},
	}
	if err := app.Run(append([]string{"mfstest"}, args...)); err != nil {
		t.Fatal(err)
	}
	return v, rerr
}

func TestPrecedence(t *testing.T) {
	p := writeCfg(t, "# comment\nWORKERS = 8\nDATA_PATH = /from/file\n")
	v, err := run(t, "-c", p, "--data-path", "/from/flag")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, got, want, src string) {
		if got != want || v.Source(name) != src {
			t.Errorf("%s = %q from %q, want %q from %q", name, got, v.Source(name), want, src)
		}
	}
	check("DATA_PATH", v.String("DATA_PATH"), "/from/flag", "flag --data-path")
	check("WORKERS", strconv.Itoa(v.Int("WORKERS")), "8", p+":2")
	check("TIMEOUT", v.Duration("TIMEOUT").String(), "5s", "default")
	if !v.Bool("SYNC") || v.Float("RATIO") != 0.5 {
		t.Errorf("defaults: SYNC=%v RATIO=%v", v.Bool("SYNC"), v.Float("RATIO"))
	}
	// A missing default file is fine; a missing explicit one is not.
	if _, err := spec.Resolve(p+".absent", false, nil); err != nil {
		t.Errorf("missing optional file: %v", err)
	}
	if _, err := run(t, "-c", p+".absent"); err == nil {
		t.Error("missing -c file accepted")
	}
}

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		key, raw string
		want     any // nil = rejected
	}{
		{"DATA_PATH", " x y ", "x y"},
		{"WORKERS", "64", 64}, {"WORKERS", "0", nil}, {"WORKERS", "65", nil}, {"WORKERS", "4x", nil},
		{"SYNC", "yes", true}, {"SYNC", "FALSE", false}, {"SYNC", "0", false}, {"SYNC", "2", nil},
		{"TIMEOUT", "800ms", 800 * time.Millisecond}, {"TIMEOUT", "30", 30 * time.Second},
		{"TIMEOUT", "1.5", 1500 * time.Millisecond}, {"TIMEOUT", "0.05", nil}, {"TIMEOUT", "5 s", nil},
		{"RATIO", "1", 1.0}, {"RATIO", "1.01", nil}, {"RATIO", "NaN", nil}, {"RATIO", "-0.1", nil},
	} {
		var k Key
		for _, k = range spec.Keys {
			if k.Name == tc.key {
				break
			}
		}
		got, ok := k.check(tc.raw)
		if ok != (tc.want != nil) || ok && got != tc.want {
			t.Errorf("%s = %q: got %v, %v; want %v", tc.key, tc.raw, got, ok, tc.want)
		}
	}
}

func TestAllErrorsAtOnce(t *testing.T) {
	p := writeCfg(t, "WORKERS = 0\nSYNC = maybe\n\nWORKERS_MAX = 3\nTIMEOUT = soon\n")
	_, err := run(t, "-c", p, "--ratio", "2")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"5 configuration problem(s)",
		`WORKERS = "0" (` + p + `:1): want an integer from 1 to 64`,
		`SYNC = "maybe" (` + p + `:2): want 0/1, yes/no or true/false`,
		`TIMEOUT = "soon" (` + p + `:5): want a duration`,
		`RATIO = "2" (flag --ratio): want a number from 0 to 1`,
		"unknown key WORKERS_MAX at " + p + ":4",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestExample(t *testing.T) {
	ex := spec.Example()
	f, err := cfgfile.Parse("example", strings.NewReader(ex))
	if err != nil || len(f.Settings) != 0 {
		t.Fatalf("example has active keys %v or error %v:\n%s", f.Keys(), err, ex)
	}
	if !strings.HasPrefix(ex, "# mfstest.cfg") {
		t.Errorf("header does not name the daemon:\n%s", ex)
	}
	// Uncommenting every key line must give a valid file equal to the defaults.
	var lines []string
	for _, l := range strings.Split(ex, "\n") {
		if len(l) > 78 {
			t.Errorf("line longer than 78 columns: %q", l)
		}
		if strings.Contains(l, " = ") {
			l = strings.TrimPrefix(l, "# ")
		}
		lines = append(lines, l)
	}
	v, err := spec.Resolve(writeCfg(t, strings.Join(lines, "\n")), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range spec.Keys {
		if !strings.Contains(ex, "\n# "+k.Name+" = "+k.Default+"\n\n") || v.Source(k.Name) == "default" {
			t.Errorf("key %s missing from example or not read back (source %s)", k.Name, v.Source(k.Name))
		}
	}
}

func TestFlagsAndPanics(t *testing.T) {
	fl := spec.Flags()
	if len(fl) != len(spec.Keys) || fl[0].Names()[0] != "data-path" {
		t.Fatalf("flags: %v", fl)
	}
	v, err := spec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("wrong-kind access did not panic")
		}
	}()
	v.Int("DATA_PATH")
}
