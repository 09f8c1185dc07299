package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mfs-election/mfs-election/internal/cfgfile"
)

// testConfig is what the test table fills.
type testConfig struct {
	DataPath string
	Workers  int
	Sync     bool
	Timeout  time.Duration
	Ratio    float64
	Entries  uint64
	Level    string
}

var spec = Spec[testConfig]{
	Daemon: "mfstest",
	Defaults: func() testConfig {
		return testConfig{DataPath: "/var/lib/mfs", Workers: 4, Sync: true, Timeout: 5 * time.Second, Ratio: 0.5, Entries: 1000, Level: "info"}
	},
	Keys: func(c *testConfig) []Key {
		return []Key{
			Field("DATA_PATH", &c.DataPath, "Where the daemon keeps its data."),
			Ranged("WORKERS", &c.Workers, 1, 64, "How many worker goroutines serve requests; four keeps a small machine responsive while leaving cores for the rest of the system."),
			Field("SYNC", &c.Sync, "Whether to fsync."),
			Ranged("TIMEOUT", &c.Timeout, 100*time.Millisecond, time.Hour, "How long to wait for a peer."),
			Ranged("RATIO", &c.Ratio, 0, 1, "Share of space to use."),
			Field("ENTRIES", &c.Entries, "How many entries to keep."),
			Field("LEVEL", &c.Level, "How much to log.").Live(),
		}
	},
}

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
			_, v, rerr = spec.Resolve(c.String("c"), c.IsSet("c"), c)
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
	if _, _, err := spec.Resolve(p+".absent", false, nil); err != nil {
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
		{"SYNC", "1", true}, {"SYNC", "0", false}, {"SYNC", "2", nil},
		// Words are refused: MooseFS reads "yes" as 0 (issue 37).
		{"SYNC", "yes", nil}, {"SYNC", "FALSE", nil},
		{"TIMEOUT", "800ms", 800 * time.Millisecond}, {"TIMEOUT", "30", 30 * time.Second},
		{"TIMEOUT", "1.5", 1500 * time.Millisecond}, {"TIMEOUT", "0.05", nil}, {"TIMEOUT", "5 s", nil}, {"TIMEOUT", "61m", nil},
		{"ENTRIES", "0", 0}, {"ENTRIES", "-1", nil},
		{"RATIO", "1", 1.0}, {"RATIO", "1.01", nil}, {"RATIO", "NaN", nil}, {"RATIO", "-0.1", nil},
	} {
		var k Key
		_, keys := spec.keys()
		for _, k = range keys {
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
		`SYNC = "maybe" (` + p + `:2): want 0 or 1`,
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
	_, v, err := spec.Resolve(writeCfg(t, strings.Join(lines, "\n")), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, keys := spec.keys()
	for _, k := range keys {
		if !strings.Contains(ex, "\n# "+k.Name+" = "+k.Default+"\n\n") || v.Source(k.Name) == "default" {
			t.Errorf("key %s missing from example or not read back (source %s)", k.Name, v.Source(k.Name))
		}
	}
}

func TestFlagsAndPanics(t *testing.T) {
	fl := spec.Flags()
	if _, keys := spec.keys(); len(fl) != len(keys) || fl[0].Names()[0] != "data-path" {
		t.Fatalf("flags: %v", fl)
	}
	_, v, err := spec.Resolve("", false, nil)
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

// TestBinding: a key's default is its field's value in Defaults, written as
// a cfg file would; Resolve stores each value in the field the key is
// bound to, and the defaults land there unchanged.
func TestBinding(t *testing.T) {
	_, keys := spec.keys()
	defaults := map[string]string{}
	for _, k := range keys {
		defaults[k.Name] = k.Default
	}
	want := map[string]string{"DATA_PATH": "/var/lib/mfs", "WORKERS": "4", "SYNC": "1", "TIMEOUT": "5s", "RATIO": "0.5", "ENTRIES": "1000", "LEVEL": "info"}
	if !reflect.DeepEqual(defaults, want) {
		t.Errorf("defaults %v, want %v", defaults, want)
	}
	cfg, _, err := spec.Resolve("", false, nil)
	if err != nil || cfg != spec.Defaults() {
		t.Fatalf("resolved defaults %+v (%v), want %+v", cfg, err, spec.Defaults())
	}
	cfg, _, err = spec.Resolve(writeCfg(t, "WORKERS = 8\nTIMEOUT = 1.5\nRATIO = 0.25\nENTRIES = 7\nSYNC = 0\nLEVEL = debug\n"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 8 || cfg.Timeout != 1500*time.Millisecond || cfg.Ratio != 0.25 || cfg.Entries != 7 || cfg.Sync || cfg.Level != "debug" || cfg.DataPath != "/var/lib/mfs" {
		t.Errorf("resolved %+v", cfg)
	}
	for d, s := range map[time.Duration]string{0: "0", time.Minute: "1m", 10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m",
		10 * time.Second: "10s", 1500 * time.Millisecond: "1.5s", 20 * time.Millisecond: "20ms", 61 * time.Second: "1m1s"} {
		if got := format(d); got != s {
			t.Errorf("format(%v) = %q, want %q", d, got, s)
		}
	}
}

// TestBindings: Bindings names the field each key sets, and a table with a
// key bound to a field another key sets too is reported.
func TestBindings(t *testing.T) {
	got, err := spec.Bindings()
	want := map[string]string{"DATA_PATH": "DataPath", "WORKERS": "Workers", "SYNC": "Sync", "TIMEOUT": "Timeout", "RATIO": "Ratio", "ENTRIES": "Entries", "LEVEL": "Level"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("bindings %v (%v), want %v", got, err, want)
	}
	twice := spec
	twice.Keys = func(c *testConfig) []Key {
		return append(spec.Keys(c), Ranged("THREADS", &c.Workers, 1, 64, "The same field again."))
	}
	if _, err := twice.Bindings(); err == nil || !strings.Contains(err.Error(), "keys WORKERS and THREADS both set Workers") {
		t.Errorf("a field set by two keys: %v", err)
	}
}

// TestReload: a reload sorts the changed keys into those marked Live, taken
// into the values in force, and the rest, which keep their running values
// and are named again at every reload until a restart. A bad file changes
// nothing.
func TestReload(t *testing.T) {
	p := writeCfg(t, "WORKERS = 8\n")
	_, old, err := spec.Resolve(p, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("WORKERS = 9\nLEVEL = debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := spec.Reload(p, true, nil, old)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Live, []string{"LEVEL"}) || !reflect.DeepEqual(r.Restart, []string{"WORKERS"}) {
		t.Errorf("live %v, restart %v", r.Live, r.Restart)
	}
	if r.Config.Level != "debug" || r.Config.Workers != 9 {
		t.Errorf("reloaded config %+v", r.Config)
	}
	if r.Next.String("LEVEL") != "debug" || r.Next.Source("LEVEL") != p+":2" || r.Next.Int("WORKERS") != 8 || r.Next.Source("WORKERS") != p+":1" {
		t.Errorf("in force after the reload: LEVEL %q from %s, WORKERS %d from %s", r.Next.String("LEVEL"), r.Next.Source("LEVEL"), r.Next.Int("WORKERS"), r.Next.Source("WORKERS"))
	}
	if old.String("LEVEL") != "info" {
		t.Error("Reload changed the old values")
	}
	again, err := spec.Reload(p, true, nil, r.Next)
	if err != nil || len(again.Live) != 0 || !reflect.DeepEqual(again.Restart, []string{"WORKERS"}) {
		t.Errorf("second reload: live %v, restart %v, %v", again.Live, again.Restart, err)
	}
	if err := os.WriteFile(p, []byte("WORKERS = 0\nLEVEL = warn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Reload(p, true, nil, r.Next); err == nil || !strings.Contains(err.Error(), "WORKERS") {
		t.Errorf("a bad file: %v", err)
	}
	if got := spec.Live(); !reflect.DeepEqual(got, []string{"LEVEL"}) {
		t.Errorf("Live() = %v", got)
	}
}

// TestTable: the docs table shows each key's default, range and whether a
// reload applies it.
func TestTable(t *testing.T) {
	tab := spec.Table()
	for _, want := range []string{
		"| key | default | range | reload | what |\n",
		"| `TIMEOUT` | `5s` | 100ms .. 1h | restart | How long to wait for a peer. |\n",
		"| `SYNC` | `1` | 0 or 1 | restart |",
		"| `ENTRIES` | `1000` | >= 0 | restart |",
		"| `LEVEL` | `info` |  | at once | How much to log. |\n",
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if ex := spec.Example(); !strings.Contains(ex, "# How much to log. A reload (mfstest reload, SIGHUP) applies it at once.\n# LEVEL = info\n") ||
		strings.Contains(ex, "peer. A reload") {
		t.Errorf("the example does not mark the live key alone:\n%s", ex)
	}
}

// bounds is a Min and Max pair, as roles.Range holds them.
type bounds[T Number] struct{ Min, Max T }

// TestCheckRanges: CheckRanges passes a table whose keys take exactly the
// config's ranges, and names a key whose bounds differ and a ranged field
// that no key sets.
func TestCheckRanges(t *testing.T) {
	type ranges struct {
		Workers bounds[int]
		Timeout bounds[time.Duration]
		Ratio   bounds[float64]
	}
	if err := spec.CheckRanges("", ranges{bounds[int]{1, 64}, bounds[time.Duration]{100 * time.Millisecond, time.Hour}, bounds[float64]{0, 1}}); err != nil {
		t.Errorf("matching ranges: %v", err)
	}
	err := spec.CheckRanges("", ranges{bounds[int]{1, 65}, bounds[time.Duration]{100 * time.Millisecond, time.Hour}, bounds[float64]{0, 0.9}})
	if err == nil || !strings.Contains(err.Error(), "key WORKERS takes 65: false") || !strings.Contains(err.Error(), "key RATIO takes 0.9000000000000001: true") {
		t.Errorf("differing ranges: %v", err)
	}
	type more struct{ Entries, Spare bounds[uint64] }
	err = spec.CheckRanges("", more{bounds[uint64]{0, 1 << 40}, bounds[uint64]{0, 1}})
	if err == nil || !strings.Contains(err.Error(), "no key sets Spare") || !strings.Contains(err.Error(), "key ENTRIES takes 1099511627777: true") {
		t.Errorf("unbounded key, unset field: %v", err)
	}
}

// TestLenient: past a bad value, an unknown key and a bad line, Lenient
// still takes every good key from the file, leaves the bad ones at their
// defaults, and reports every problem.
func TestLenient(t *testing.T) {
	p := writeCfg(t, "DATA_PATH = /srv/mfs\nWORKERS = 999\nNO_SUCH = 1\nthis is not a setting\n")
	cfg, v, err := spec.Lenient(p, true, nil)
	if cfg.DataPath != "/srv/mfs" || v.Source("DATA_PATH") != p+":1" {
		t.Errorf("DATA_PATH = %q from %s, want /srv/mfs from %s:1", cfg.DataPath, v.Source("DATA_PATH"), p)
	}
	if cfg.Workers != 4 || v.Source("WORKERS") != "default" {
		t.Errorf("WORKERS = %d from %s, want the default 4", cfg.Workers, v.Source("WORKERS"))
	}
	for _, want := range []string{"WORKERS = \"999\"", "unknown key NO_SUCH", "is not KEY = VALUE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %q", err, want)
		}
	}
	if _, _, err := spec.Resolve(p, true, nil); err == nil {
		t.Error("Resolve took the same file")
	}
	// A file named on the command line that is not there is no file to
	// be lenient about: its DATA_PATH is unknown.
	if _, _, err := spec.Lenient(p+".missing", true, nil); err == nil {
		t.Error("Lenient took a missing file that must exist")
	}
}
