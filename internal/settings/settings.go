package settings

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
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

// The kinds of value a key takes.
const (
	String Kind = iota
	Int
	Bool
	Duration
	Float
)

// Key describes one configuration key, bound to the field it sets. Make one
// with Field or Ranged: they take the key's default from the field and its
// kind from the field's type.
type Key struct {
	Name     string // "DATA_PATH"
	Kind     Kind
	Default  string // the bound field's value in the Spec's Defaults, as written in a file
	Min, Max string // bounds for Int, Duration and Float, as written; "" = none
	// Usage is what the key does and why its default is what it is, stated
	// once: the example file, --help and the docs table are made from it.
	Usage string
	// Reload: a reload (SIGHUP) puts a new value in force at once. Any
	// other key keeps its running value until the next start.
	Reload bool

	set func(any) // stores a checked value in the bound field
}

// Value is a type a key can be bound to. A uint64 field is an Int key that
// is never below 0.
type Value interface {
	string | bool | int | uint64 | float64 | time.Duration
}

// Number is a Value with an order: a key bound to one may have bounds.
type Number interface {
	int | uint64 | float64 | time.Duration
}

// Field binds the key name to the field at p. Its default is the value *p
// holds when the key is made (the Spec's Defaults); Resolve stores the
// key's value there.
func Field[T Value](name string, p *T, usage string) Key {
	k := Key{Name: name, Usage: usage}
	switch q := any(p).(type) {
	case *string:
		k.Kind, k.set = String, func(v any) { *q = v.(string) }
	case *bool:
		k.Kind, k.set = Bool, func(v any) { *q = v.(bool) }
	case *int:
		k.Kind, k.set = Int, func(v any) { *q = v.(int) }
	case *uint64:
		// Int values are parsed as int: the floor keeps them in uint64.
		k.Kind, k.Min, k.set = Int, "0", func(v any) { *q = uint64(v.(int)) }
	case *float64:
		k.Kind, k.set = Float, func(v any) { *q = v.(float64) }
	case *time.Duration:
		k.Kind, k.set = Duration, func(v any) { *q = v.(time.Duration) }
	}
	k.Default = format(*p)
	return k
}

// Ranged is Field with bounds: the key takes the values from min to max,
// both included.
func Ranged[T Number](name string, p *T, min, max T, usage string) Key {
	if min > max {
		panic(fmt.Sprintf("settings: key %s has min %v above max %v", name, min, max))
	}
	k := Field(name, p, usage)
	k.Min, k.Max = format(min), format(max)
	return k
}

// Live marks k as put in force by a reload (Key.Reload).
func (k Key) Live() Key {
	k.Reload = true
	return k
}

// format writes a value as a cfg file would: durations in Go's syntax
// without empty trailing units ("1m", not "1m0s"), 0 as "0", booleans as
// 0 or 1, floats in their shortest exact form.
func format(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		if v {
			return "1"
		}
		return "0"
	case int:
		return strconv.Itoa(v)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Duration:
		if v == 0 {
			return "0"
		}
		s := v.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	}
	panic(fmt.Sprintf("settings: no format for %T", v))
}

// Spec is the configuration table of one daemon, bound to the config type
// T that it fills.
type Spec[T any] struct {
	Daemon string // "mfsmaster"
	// Defaults is the config before any file or flag is read.
	Defaults func() T
	// Keys lists every key, each bound to its field of c.
	Keys func(c *T) []Key
	// Rules (may be nil) lists the rules between keys that c breaks, once
	// every key took a good value: Resolve reports each with the keys'
	// values and where each came from.
	Rules func(c *T) []Rule
}

// Rule is one broken rule between keys: the keys it involves, and what
// is wrong.
type Rule struct {
	Keys []string
	Text string
}

// keys binds the table to a fresh copy of the defaults.
func (s Spec[T]) keys() (*T, []Key) {
	c := s.Defaults()
	return &c, s.Keys(&c)
}

// FlagName is the long flag for a key: "DATA_PATH" -> "data-path".
func FlagName(key string) string {
	return strings.ReplaceAll(strings.ToLower(key), "_", "-")
}

// Flags returns one string flag per key; Resolve parses their values.
func (s Spec[T]) Flags() []cli.Flag {
	_, keys := s.keys()
	out := make([]cli.Flag, 0, len(keys))
	for _, k := range keys {
		out = append(out, &cli.StringFlag{Name: FlagName(k.Name), Usage: k.Usage, DefaultText: k.Default})
	}
	return out
}

// Values are the resolved settings of a Spec by key name: where each came
// from, and what a reload compares.
type Values struct {
	keys map[string]Key
	vals map[string]any
	srcs map[string]string
}

// Resolve reads cfgPath ("" = no file; a missing file is an error only when
// mustExist) and takes each key from the flag if c set it, else from the
// file, else from the default, into a new config from Defaults. c may be
// nil (no flags). Every problem is reported in the one returned error.
func (s Spec[T]) Resolve(cfgPath string, mustExist bool, c *cli.Context) (T, Values, error) {
	return s.resolve(cfgPath, mustExist, c, false)
}

// Lenient is Resolve that goes on past problems: a bad line or value
// leaves its key at the default, and the error still lists every problem.
// It is for what needs one or two keys of a config that may be broken:
// `stop` and `test` need only DATA_PATH, to find the lock, and must not be
// held up by a mistake in an unrelated key.
func (s Spec[T]) Lenient(cfgPath string, mustExist bool, c *cli.Context) (T, Values, error) {
	return s.resolve(cfgPath, mustExist, c, true)
}

func (s Spec[T]) resolve(cfgPath string, mustExist bool, c *cli.Context, lenient bool) (T, Values, error) {
	cfg, keys := s.keys()
	v := Values{keys: map[string]Key{}, vals: map[string]any{}, srcs: map[string]string{}}
	file := &cfgfile.File{Settings: map[string]cfgfile.Setting{}}
	var bad []string
	if cfgPath != "" {
		f, err := cfgfile.Load(cfgPath)
		switch {
		case err == nil:
			file = f
		case lenient && f != nil:
			file, bad = f, append(bad, err.Error()) // the good lines are kept
		case mustExist || !errors.Is(err, fs.ErrNotExist):
			return *cfg, v, err // the daemon's name is put before it where it is printed
		}
	}
	for _, k := range keys {
		if _, dup := v.keys[k.Name]; dup {
			panic("settings: duplicate key " + k.Name)
		}
		if k.set == nil {
			panic("settings: key " + k.Name + " is bound to no field (make it with Field or Ranged)")
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
			if !lenient {
				continue
			}
			val, _ = k.check(k.Default)
			src = "default"
		}
		v.vals[k.Name], v.srcs[k.Name] = val, src
		k.set(val)
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
	if len(bad) == 0 && s.Rules != nil {
		for _, r := range s.Rules(cfg) {
			bad = append(bad, v.explain(r))
		}
	}
	if len(bad) > 0 {
		return *cfg, v, fmt.Errorf("%d configuration problem(s):\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return *cfg, v, nil
}

// explain names a broken rule's keys with their values and sources.
func (v Values) explain(r Rule) string {
	var ks []string
	for _, k := range r.Keys {
		if _, ok := v.keys[k]; ok {
			ks = append(ks, fmt.Sprintf("%s = %v (%s)", k, v.vals[k], v.srcs[k]))
		}
	}
	return strings.Join(ks, ", ") + ": " + r.Text
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
		// 0 or 1 only, as MooseFS reads a switch: its parser takes "yes"
		// as 0, so a word here would mean the opposite of what it says.
		switch raw {
		case "1":
			return true, true
		case "0":
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
		Bool:     "0 or 1",
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

// String, Int, Bool, Duration and Float return a key's value; they panic
// on a name the Spec lacks or a key of another Kind (a programming error).
func (v Values) String(name string) string          { return v.get(name, String).(string) }
func (v Values) Int(name string) int                { return v.get(name, Int).(int) }
func (v Values) Bool(name string) bool              { return v.get(name, Bool).(bool) }
func (v Values) Duration(name string) time.Duration { return v.get(name, Duration).(time.Duration) }
func (v Values) Float(name string) float64          { return v.get(name, Float).(float64) }

// Resolved reports that name took a value (false after a Resolve or
// Lenient that could not read the file at all).
func (v Values) Resolved(name string) bool {
	_, ok := v.srcs[name]
	return ok
}

// Source says where a key's value came from: "mfsmaster.cfg:12",
// "flag --data-path" or "default".
func (v Values) Source(name string) string {
	if _, ok := v.keys[name]; !ok {
		panic("settings: no key " + name)
	}
	return v.srcs[name]
}

// Example renders the shipped example cfg file: every key documented and
// commented out at its default, the keys a reload applies marked so.
func (s Spec[T]) Example() string {
	_, keys := s.keys()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s.cfg - configuration of %s.\n", s.Daemon, s.Daemon)
	b.WriteString(wrap("Every key is shown commented out at its default; uncomment a line to change it. " +
		"Every key is also a command-line flag (DATA_PATH is --data-path); " +
		"a flag wins over this file, and this file wins over the default. " +
		"A change takes effect at the next start, except where a key says a reload applies it."))
	b.WriteString("\n")
	for _, k := range keys {
		usage := k.Usage
		if k.Reload {
			usage += " A reload (" + s.Daemon + " reload, SIGHUP) applies it at once."
		}
		b.WriteString(wrap(usage))
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

// Table is the keys as a Markdown table (docs/operations.md); its reload
// column says which keys a reload applies at once.
// KeyDoc is what a key's documentation says: the markdown table, the
// example cfg file and the man page are all made from it.
type KeyDoc struct {
	Name, Default, Range, Usage string
	Live                        bool // a reload applies it at once (else: at the next restart)
}

// Docs describes every key, in the table's order.
func (s Spec[T]) Docs() []KeyDoc {
	_, keys := s.keys()
	var out []KeyDoc
	for _, k := range keys {
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
		out = append(out, KeyDoc{Name: k.Name, Default: k.Default, Range: rng, Usage: k.Usage, Live: k.Reload})
	}
	return out
}

func (s Spec[T]) Table() string {
	var b strings.Builder
	b.WriteString("| key | default | range | reload | what |\n|---|---|---|---|---|\n")
	for _, k := range s.Docs() {
		def := k.Default
		if def == "" {
			def = "(empty)"
		}
		reload := "restart"
		if k.Live {
			reload = "at once"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", k.Name, def, k.Range, reload, strings.ReplaceAll(k.Usage, "|", "\\|"))
	}
	return b.String()
}

// Live lists the keys a reload applies at once (Key.Reload), in table order.
func (s Spec[T]) Live() []string {
	_, keys := s.keys()
	var out []string
	for _, k := range keys {
		if k.Reload {
			out = append(out, k.Name)
		}
	}
	return out
}

// Reloaded is a daemon's config read again (SIGHUP), compared with the
// values in force.
type Reloaded[T any] struct {
	// Config is what the file and the flags say now.
	Config T
	// Live: the keys marked Reload whose values changed. The caller puts
	// them in force (from Config) before Next is true.
	Live []string
	// Restart: every other key whose value differs from the running one;
	// each keeps its running value until the next start.
	Restart []string
	// Next is what is in force once Live is applied: the old values with
	// the Live keys' new ones. A key in Restart keeps its running value
	// here, so every later reload names it again until the restart.
	Next Values
}

// Reload resolves the spec again, as Resolve does, and compares the result
// with the values in force (old). On an error nothing changes: old stands.
func (s Spec[T]) Reload(cfgPath string, mustExist bool, c *cli.Context, old Values) (Reloaded[T], error) {
	cfg, v, err := s.Resolve(cfgPath, mustExist, c)
	if err != nil {
		return Reloaded[T]{}, err
	}
	r := Reloaded[T]{Config: cfg, Next: Values{keys: old.keys, vals: maps.Clone(old.vals), srcs: maps.Clone(old.srcs)}}
	_, keys := s.keys()
	for _, k := range keys {
		if old.vals[k.Name] == v.vals[k.Name] {
			continue
		}
		if !k.Reload {
			r.Restart = append(r.Restart, k.Name)
			continue
		}
		r.Live = append(r.Live, k.Name)
		r.Next.vals[k.Name], r.Next.srcs[k.Name] = v.vals[k.Name], v.srcs[k.Name]
	}
	return r, nil
}
