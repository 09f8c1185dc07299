package settings

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Bindings says which field of T each key sets: for every key, the path
// of the one field (e.g. "Core.VoteLease") that changes when the key is set
// to a value other than its default. It is for tests that hold a key table
// to its config type (every field that should have a key has one); the
// error names each key that sets no field or several, and each field that
// two keys set.
func (s Spec[T]) Bindings() (map[string]string, error) {
	_, keys := s.keys()
	out := map[string]string{}
	byField := map[string]string{}
	var bad []string
	for i, k := range keys {
		alt, err := k.other()
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		c := s.Defaults()
		s.Keys(&c)[i].set(alt)
		changed := diff(reflect.ValueOf(s.Defaults()), reflect.ValueOf(c), "")
		if len(changed) != 1 {
			bad = append(bad, fmt.Sprintf("key %s set to %v changes %d fields %v, want 1", k.Name, alt, len(changed), changed))
			continue
		}
		if other, dup := byField[changed[0]]; dup {
			bad = append(bad, fmt.Sprintf("keys %s and %s both set %s", other, k.Name, changed[0]))
		}
		byField[changed[0]], out[k.Name] = k.Name, changed[0]
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%s key table: %s", s.Daemon, strings.Join(bad, "; "))
	}
	return out, nil
}

// other is a value of k's kind, within its bounds, that is not its default.
func (k Key) other() (any, error) {
	def, ok := k.check(k.Default)
	if !ok {
		return nil, fmt.Errorf("key %s: default %q is not %s", k.Name, k.Default, k.accepted())
	}
	var tries []string
	switch k.Kind {
	case String:
		return def.(string) + "x", nil
	case Bool:
		return !def.(bool), nil
	case Int:
		tries = []string{strconv.Itoa(def.(int) + 1), strconv.Itoa(def.(int) - 1)}
	case Duration:
		tries = []string{(def.(time.Duration) + time.Millisecond).String(), (def.(time.Duration) - time.Millisecond).String()}
	case Float:
		tries = []string{strconv.FormatFloat(def.(float64)/2, 'g', -1, 64), strconv.FormatFloat(def.(float64)+1, 'g', -1, 64)}
	}
	for _, raw := range append([]string{k.Max, k.Min}, tries...) {
		if v, ok := k.check(raw); raw != "" && ok && v != def {
			return v, nil
		}
	}
	return nil, fmt.Errorf("key %s: no value other than its default %q", k.Name, k.Default)
}

// diff lists the paths of the exported fields (at any depth) in which a
// and b, two values of one type, differ.
func diff(a, b reflect.Value, path string) []string {
	if a.Kind() != reflect.Struct {
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return []string{path}
		}
		return nil
	}
	var out []string
	for i := 0; i < a.NumField(); i++ {
		f := a.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		p := f.Name
		if path != "" {
			p = path + "." + f.Name
		}
		out = append(out, diff(a.Field(i), b.Field(i), p)...)
	}
	return out
}

// CheckRanges holds a key table to a config's own ranges: ranges is a
// struct whose fields, one per tunable field of the config, each hold Min
// and Max (as roles.ConfigRanges does). For each such field F, the key
// bound to prefix+F must exist, take Min and Max, and refuse the nearest
// values outside them. It is for tests; the error names every key that
// does not.
func (s Spec[T]) CheckRanges(prefix string, ranges any) error {
	bind, err := s.Bindings()
	if err != nil {
		return err
	}
	keyOf := map[string]string{}
	for k, f := range bind {
		keyOf[f] = k
	}
	_, keys := s.keys()
	byName := map[string]Key{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	var bad []string
	rv := reflect.ValueOf(ranges)
	for i := 0; i < rv.NumField(); i++ {
		field := prefix + rv.Type().Field(i).Name
		name, ok := keyOf[field]
		if !ok {
			bad = append(bad, "no key sets "+field)
			continue
		}
		k := byName[name]
		lo, hi := rv.Field(i).FieldByName("Min"), rv.Field(i).FieldByName("Max")
		for _, c := range []struct {
			v    reflect.Value
			step int
		}{{lo, 0}, {hi, 0}, {lo, -1}, {hi, +1}} {
			raw := nudge(c.v, c.step)
			if _, took := k.check(raw); took != (c.step == 0) {
				bad = append(bad, fmt.Sprintf("key %s takes %s: %v, but %s's range is [%v, %v]", name, raw, took, field, lo, hi))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s key table: %s", s.Daemon, strings.Join(bad, "; "))
	}
	return nil
}

// nudge writes v moved by step (-1, 0 or +1) of the smallest amount its
// type has, as a cfg file value ("-1" below a uint64 0, for the parser to
// refuse).
func nudge(v reflect.Value, step int) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return (x + time.Duration(step)).String()
	case int:
		return strconv.Itoa(x + step)
	case uint64:
		if step < 0 && x == 0 {
			return "-1"
		}
		return strconv.FormatUint(uint64(int64(x)+int64(step)), 10)
	case float64:
		if step != 0 {
			x = math.Nextafter(x, float64(step)*math.Inf(1))
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	panic(fmt.Sprintf("settings: a range of %s", v.Type()))
}
