// Package cfgfile reads MooseFS-style configuration files (mfsmaster.cfg,
// mfschunkserver.cfg): one "KEY = VALUE" per line, "#" starts a comment,
// blank lines are ignored. A secret's line (AUTH_CODE, *PASSWORD) with a
// "#" after its "=" is refused rather than cut. urfave/cli's altsrc cannot read this format, so
// the daemons read it here and feed the values to flags the command line
// did not set (flags win over the file).
package cfgfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Setting is one KEY = VALUE line.
type Setting struct {
	Key   string
	Value string
	Line  int
}

// File is a parsed configuration file.
type File struct {
	Path     string
	Settings map[string]Setting // by key; a key set twice is a bad line
}

// Get returns a key's value.
func (f *File) Get(key string) (string, bool) {
	s, ok := f.Settings[key]
	return s.Value, ok
}

// Keys returns the keys that are set, sorted.
func (f *File) Keys() []string {
	keys := make([]string, 0, len(f.Settings))
	for k := range f.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Load reads and parses the file at path.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer fh.Close()
	return Parse(path, fh)
}

// Parse reads a configuration from r; path names it in errors. Every bad
// line is reported at once, each with its number; with that error it
// still returns the good lines.
func Parse(path string, r io.Reader) (*File, error) {
	f := &File{Path: path, Settings: map[string]Setting{}}
	var bad []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		cut := false
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line, cut = line[:i], true
		}
		line = strings.TrimSpace(line)
		if k, _, ok := strings.Cut(line, "="); ok && cut && Secret(strings.TrimSpace(k)) {
			// The value is not echoed: it is a secret, or part of one.
			bad = append(bad, fmt.Sprintf("%s:%d: %s: '#' starts a comment, so this secret would be cut short there; "+
				"a secret may not contain '#', and its line may not carry a comment", path, n, strings.TrimSpace(k)))
			continue
		}
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s:%d: %q is not KEY = VALUE", path, n, line))
		case !validKey(key):
			bad = append(bad, fmt.Sprintf("%s:%d: %q is not a valid key (letters, digits and _ only)", path, n, key))
		case f.Settings[key].Line != 0:
			// Last-wins would make the earlier line a silent lie; which
			// one was meant is the operator's call.
			bad = append(bad, fmt.Sprintf("%s:%d: %s is set again (first at line %d): keep one of the two lines", path, n, key, f.Settings[key].Line))
		default:
			f.Settings[key] = Setting{Key: key, Value: value, Line: n}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(bad) > 0 {
		// f holds the good lines, for a caller that needs only some keys
		// (settings.Spec.Lenient).
		return f, fmt.Errorf("config file %s has %d bad line(s):\n  %s", path, len(bad), strings.Join(bad, "\n  "))
	}
	return f, nil
}

// Unknown returns the keys set in the file that are not among known, with
// their line numbers, sorted: a misspelt key should be an error, not a
// silent default.
func (f *File) Unknown(known []string) []string {
	k := map[string]bool{}
	for _, s := range known {
		k[s] = true
	}
	var out []string
	for _, key := range f.Keys() {
		if !k[key] {
			out = append(out, fmt.Sprintf("%s (line %d)", key, f.Settings[key].Line))
		}
	}
	return out
}

// Secret reports whether key holds a secret (AUTH_CODE, *PASSWORD): such a
// line may carry no '#', which would silently cut the secret short.
func Secret(key string) bool {
	return key == "AUTH_CODE" || strings.HasSuffix(key, "PASSWORD")
}

func validKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
