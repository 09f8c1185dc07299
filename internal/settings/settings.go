package settings

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mfs-election/mfs-election/internal/cfgfile"
)

// Kind is the type of a key's value.
type Kind uint8

const (
	String Kind = iota
	Int
	Bool
	Duration
	Float
)

// Key describes one configuration key.
type Key struct {
	Name     string // "DATA_PATH"
	Kind     Kind
	Default  string // as written in the file
	Min, Max string // optional bounds for Int, Duration and Float, as written; "" = none
	Usage    string // what it does and why the default, for the example file and --help
}

// Spec is the configuration table of one daemon.
type Spec struct {
	Daemon string // "mfsmaster"
	Keys   []Key
}

// FlagName is the long flag for a key: "DATA_PATH" -> "data-path".
func FlagName(key string) string {
	return strings.ReplaceAll(strings.ToLower(key), "_", "-")
}

// Flags returns one string flag per key; Resolve parses their values.
func (s Spec) Flags() []cli.Flag {
	out := make([]cli.Flag, 0, len(s.Keys))
	for _, k := range s.Keys {
		out = append(out, &cli.StringFlag{Name: FlagName(k.Name), Usage: k.Usage, DefaultText: k.Default})
	}
	return out
}

// Values are the resolved settings of a Spec.
type Values struct {
	keys map[string]Key
	vals map[string]any
	srcs map[string]string
}

// Resolve reads cfgPath ("" = no file; a missing file is an error only when
// mustExist) and takes each key from the flag if c set it, else from the
// file, else from the default. c may be nil (no flags). Every problem is
// reported in the one returned error.
func (s Spec) Resolve(cfgPath string, mustExist bool, c *cli.Context) (Values, error) {
	v := Values{keys: map[string]Key{}, vals: map[string]any{}, srcs: map[string]string{}}
	file := &cfgfile.File{Settings: map[string]cfgfile.Setting{}}
	if cfgPath != "" {
		f, err := cfgfile.Load(cfgPath)
		if err == nil {
			file = f
		} else if mustExist || !errors.Is(err, fs.ErrNotExist) {
			return v, fmt.Errorf("%s: %w", s.Daemon, err)
		}
	}
	var bad []string
	for _, k := range s.Keys {
		if _, dup := v.keys[k.Name]; dup {
			panic("settings: duplicate key " + k.Name)
		}
		v.keys[k.Name] = k
		raw, src := k.Default, "default"
		if fl := FlagName(k.Name); c != nil && c.IsSet(fl) {
			raw, src = c.String(fl), "flag --"+fl
		} else if st, ok := file.Settings[k.Name]; ok {
			raw, src = st.Value, fmt.Sprintf("%s:%d", file.Path, st.Line)
		}
		val, ok := k.check(raw)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s = %q (%s): want %s", k.Name, raw, src, k.accepted()))
			continue
		}
		v.vals[k.Name], v.srcs[k.Name] = val, src
	}
	var unknown []cfgfile.Setting
	for name, st := range file.Settings {
		if _, ok := v.keys[name]; !ok {
			unknown = append(unknown, st)
		}
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].Line < unknown[j].Line })
	for _, st := range unknown {
		bad = append(bad, fmt.Sprintf("unknown key %s at %s:%d", st.Key, file.Path, st.Line))
	}
	if len(bad) > 0 {
		return v, fmt.Errorf("%s: %d configuration problem(s):\n  %s", s.Daemon, len(bad), strings.Join(bad, "\n  "))
	}
	return v, nil
}

// parse converts raw to the key's Kind without range checks.
func (k Key) parse(raw string) (any, bool) {
	raw = strings.TrimSpace(raw)
	switch k.Kind {
	case String:
		return raw, true
	case Int:
		n, err := strconv.Atoi(raw)
		return n, err == nil
	case Bool:
		switch strings.ToLower(raw) {
		case "1", "yes", "true":
			return true, true
		case "0", "no", "false":
			return false, true
		}
		return false, false
	case Duration:
		if d, err := time.ParseDuration(raw); err == nil {
			return d, true
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(f) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
			return time.Duration(0), false
		}
		return time.Duration(f * float64(time.Second)), true
	case Float:
		f, err := strconv.ParseFloat(raw, 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	panic(fmt.Sprintf("settings: key %s has unknown kind %d", k.Name, k.Kind))
}

// check parses raw and applies Min and Max.
func (k Key) check(raw string) (any, bool) {
	v, ok := k.parse(raw)
	if !ok {
		return nil, false
	}
	for i, b := range []string{k.Min, k.Max} {
		if b == "" || k.Kind == String || k.Kind == Bool {
			continue
		}
		lim, ok := k.parse(b)
		if !ok {
			panic(fmt.Sprintf("settings: key %s has bad bound %q", k.Name, b))
		}
		if c := compare(v, lim); i == 0 && c < 0 || i == 1 && c > 0 {
			return nil, false
		}
	}
	return v, true
}

func compare(a, b any) int {
	switch a := a.(type) {
	case int:
		return cmp.Compare(a, b.(int))
	case time.Duration:
		return cmp.Compare(a, b.(time.Duration))
	case float64:
		return cmp.Compare(a, b.(float64))
	}
	return 0
}

// accepted describes the values a key takes, for error messages.
func (k Key) accepted() string {
	what := [...]string{
		String:   "a string",
		Int:      "an integer",
		Bool:     "0/1, yes/no or true/false",
		Duration: `a duration such as "800ms" or "5s", or a bare number of seconds`,
		Float:    "a number",
	}[k.Kind]
	switch {
	case k.Min != "" && k.Max != "":
		what += fmt.Sprintf(" from %s to %s", k.Min, k.Max)
	case k.Min != "":
		what += " >= " + k.Min
	case k.Max != "":
		what += " <= " + k.Max
	}
	return what
}

func (v Values) get(name string, kind Kind) any {
	k, ok := v.keys[name]
	if !ok || k.Kind != kind {
		panic(fmt.Sprintf("settings: no key %s of kind %d", name, kind))
	}
	return v.vals[name]
}

func (v Values) String(name string) string          { return v.get(name, String).(string) }
func (v Values) Int(name string) int                { return v.get(name, Int).(int) }
func (v Values) Bool(name string) bool              { return v.get(name, Bool).(bool) }
func (v Values) Duration(name string) time.Duration { return v.get(name, Duration).(time.Duration) }
func (v Values) Float(name string) float64          { return v.get(name, Float).(float64) }

// Source says where a key's value came from: "mfsmaster.cfg:12",
// "flag --data-path" or "default".
func (v Values) Source(name string) string {
	if _, ok := v.keys[name]; !ok {
		panic("settings: no key " + name)
	}
	return v.srcs[name]
}

// Example renders the shipped example cfg file: every key documented and
// commented out at its default.
func (s Spec) Example() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s.cfg - configuration of %s.\n", s.Daemon, s.Daemon)
	b.WriteString(wrap("Every key is shown commented out at its default; uncomment a line to change it. " +
		"Every key is also a command-line flag (DATA_PATH is --data-path); " +
		"a flag wins over this file, and this file wins over the default."))
	b.WriteString("\n")
	for _, k := range s.Keys {
		b.WriteString(wrap(k.Usage))
		fmt.Fprintf(&b, "%s\n\n", strings.TrimRight("# "+k.Name+" = "+k.Default, " "))
	}
	return b.String()
}

// wrap renders text as "# " comment lines of at most 78 columns (a longer
// word gets its own line).
func wrap(text string) string {
	var b strings.Builder
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line) > 1 && len(line)+1+len(w) > 78 {
			b.WriteString(line + "\n")
			line = "#"
		}
		line += " " + w
	}
	if len(line) > 1 {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Changed lists the keys (other than LOG_LEVEL) whose values differ
// between two resolutions of one spec: what a reload cannot apply live.
func Changed(s Spec, a, b Values) []string {
	var out []string
	for _, k := range s.Keys {
		if k.Name != "LOG_LEVEL" && fmt.Sprint(a.vals[k.Name]) != fmt.Sprint(b.vals[k.Name]) {
			out = append(out, k.Name)
		}
	}
	return out
}

// Table is the keys as a Markdown table (docs/operations.md).
func (s Spec) Table() string {
	var b strings.Builder
	b.WriteString("| key | default | range | what |\n|---|---|---|---|\n")
	for _, k := range s.Keys {
		def := k.Default
		if def == "" {
			def = "(empty)"
		}
		rng := ""
		switch {
		case k.Min != "" && k.Max != "":
			rng = k.Min + " .. " + k.Max
		case k.Min != "":
			rng = ">= " + k.Min
		case k.Max != "":
			rng = "<= " + k.Max
		case k.Kind == Bool:
			rng = "0 or 1"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", k.Name, def, rng, strings.ReplaceAll(k.Usage, "|", "\\|"))
	}
	return b.String()
}

// Reload resolves the spec again (SIGHUP) and applies the one key a daemon
// can change live, LOG_LEVEL, through setLevel. It returns the new values
// and the keys that changed otherwise (they take effect at the next start);
// on an error the old values stand.
func (s Spec) Reload(cfgPath string, mustExist bool, c *cli.Context, old Values, setLevel func(string) error) (Values, []string, error) {
	v, err := s.Resolve(cfgPath, mustExist, c)
	if err != nil {
		return old, nil, err
	}
	if err := setLevel(v.String("LOG_LEVEL")); err != nil {
		return old, nil, err
	}
	return v, Changed(s, old, v), nil
}
