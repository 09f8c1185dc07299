// Package exports reads mfsexports.cfg, the masters' access list for
// clients on port 9421 (MooseFS's file of the same name), and judges a
// client request against it.
//
// One rule a line: ADDRESS PATH [OPTIONS], '#' comments (a line that
// starts with one, or a field after the options that does).
//
//   - ADDRESS: '*' (every address), an address, ADDRESS/BITS,
//     ADDRESS/NETMASK (IPv4) or FROM-TO (inclusive).
//   - PATH: MooseFS exports directories; the namespace here is keys. A key
//     is a path without its leading slash (dir/a), and a directory covers
//     every key under it: "/" every key, "/dir" the keys that start with
//     "dir/" (not dir itself, not dirx). MooseFS's "." (the meta file
//     system) means nothing here: such a line is skipped with a warning.
//   - OPTIONS, comma-separated: ro or readonly (the default, as in
//     MooseFS), rw or readwrite, password=PASS (at least secret.MinLen
//     characters, no comma). md5pass= is refused: the password itself is
//     needed to derive the key the client's proof is checked with. The
//     options of MooseFS that have no meaning for keys (alldirs,
//     dynamicip, ignoregid, admin, maproot=, mapall=, minversion=,
//     mingoal=, maxgoal=, mintrashtime=, maxtrashtime=, umask=,
//     sclassgroups=, mintrashretention=, maxtrashretention=, disable=,
//     canchangequota, nonrootmeta) are taken and ignored with a warning;
//     anything else is an error.
//
// A request is judged as MooseFS judges a mount: every line whose address
// range holds the client's address and whose directory covers the key (a
// list: its prefix) counts, a line with a password only when the client
// proved it, and the most permissive of them wins (rw over ro). The order
// of the lines does not matter.
package exports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/secret"
)

// Rule is one line of the file.
type Rule struct {
	Line     int
	Any      bool       // '*': every address
	From, To netip.Addr // the range, inclusive (unless Any)
	Path     string     // as written
	Prefix   string     // the keys it covers start with this ("" = every key)
	Write    bool       // rw
	Password string     // non-empty: the client must prove it
}

// Table is a parsed file.
type Table struct {
	File     string
	Rules    []Rule
	Warnings []string // file:line: what was ignored
}

// ignored are MooseFS's options that have no meaning for keys: taken,
// warned about, ignored. With '=': they take a value.
var ignored = map[string]bool{
	"alldirs": false, "dynamicip": false, "ignoregid": false, "admin": false, "canchangequota": false, "nonrootmeta": false,
	"maproot": true, "mapall": true, "minversion": true, "mingoal": true, "maxgoal": true, "mintrashtime": true,
	"maxtrashtime": true, "umask": true, "sclassgroups": true, "mintrashretention": true, "maxtrashretention": true, "disable": true,
}

// Load reads path. A missing file is no table at all (nil, nil): every
// client may read and write every key, as before the file existed.
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Parse(path, f)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o004 != 0 && len(t.Passwords()) > 0 {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s holds passwords and is readable by every user (mode %04o): chmod o-r %s",
			path, fi.Mode().Perm(), path))
	}
	return t, nil
}

// Parse reads a file's text; name is how messages name it. Every bad line
// is reported, each as name:line, in one error.
func Parse(name string, r io.Reader) (*Table, error) {
	t := &Table{File: name}
	var errs []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		at := fmt.Sprintf("%s:%d", name, n)
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		rule, warns, err := parseLine(line)
		for _, w := range warns {
			t.Warnings = append(t.Warnings, at+": "+w)
		}
		switch {
		case err != nil:
			errs = append(errs, at+": "+err.Error())
		case rule != nil:
			rule.Line = n
			t.Rules = append(t.Rules, *rule)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return t, nil
}

// parseLine reads one rule; nil without an error: a line to skip.
func parseLine(line string) (*Rule, []string, error) {
	fields := strings.Fields(line)
	for i, f := range fields {
		if i >= 2 && strings.HasPrefix(f, "#") {
			fields = fields[:i]
			break
		}
	}
	switch {
	case len(fields) < 2:
		return nil, nil, fmt.Errorf("%q: want ADDRESS PATH [OPTIONS], e.g. \"10.0.0.0/8 / rw\"", line)
	case len(fields) > 3:
		return nil, nil, fmt.Errorf("%q after the options: options are one comma-separated word, without spaces", strings.Join(fields[3:], " "))
	}
	r := &Rule{Path: fields[1]}
	if err := parseAddress(fields[0], r); err != nil {
		return nil, nil, err
	}
	var warns []string
	if fields[1] == "." {
		return nil, []string{"\".\" is MooseFS's meta file system, which has no counterpart here: line skipped"}, nil
	}
	p, err := parsePath(fields[1])
	if err != nil {
		return nil, nil, err
	}
	r.Prefix = p
	if len(fields) == 3 {
		w, err := parseOptions(fields[2], r)
		if err != nil {
			return nil, nil, err
		}
		warns = append(warns, w...)
	}
	return r, warns, nil
}

func parseAddress(s string, r *Rule) error {
	if s == "*" {
		r.Any = true
		return nil
	}
	if from, to, ok := strings.Cut(s, "-"); ok {
		f, err1 := netip.ParseAddr(from)
		t, err2 := netip.ParseAddr(to)
		if err1 != nil || err2 != nil || f.Is4() != t.Is4() || t.Less(f) {
			return fmt.Errorf("address range %q: want FROM-TO, two addresses of one family, the lower first", s)
		}
		r.From, r.To = f.Unmap(), t.Unmap()
		return nil
	}
	if ip, mask, ok := strings.Cut(s, "/"); ok && strings.Contains(mask, ".") {
		a, err1 := netip.ParseAddr(ip)
		m, err2 := netip.ParseAddr(mask)
		if err1 != nil || err2 != nil || !a.Is4() || !m.Is4() {
			return fmt.Errorf("address %q: want IPv4ADDRESS/NETMASK, e.g. 10.1.0.0/255.255.0.0", s)
		}
		bits, ok := maskBits(m.As4())
		if !ok {
			return fmt.Errorf("address %q: the netmask %s is not contiguous ones then zeros", s, mask)
		}
		p := netip.PrefixFrom(a, bits).Masked()
		r.From, r.To = p.Addr(), last(p)
		return nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("address %q: want ADDRESS/BITS, e.g. 10.1.0.0/16", s)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmappedBits(p)).Masked()
		r.From, r.To = p.Addr(), last(p)
		return nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Errorf("address %q: want *, an address, ADDRESS/BITS, ADDRESS/NETMASK or FROM-TO", s)
	}
	r.From, r.To = a.Unmap(), a.Unmap()
	return nil
}

// unmappedBits: the bits an IPv4-mapped IPv6 prefix loses once unmapped.
func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return 96
	}
	return 0
}

func maskBits(m [4]byte) (int, bool) {
	v := uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3])
	bits := 0
	for v&0x80000000 != 0 {
		bits++
		v <<= 1
	}
	return bits, v == 0
}

// last is the highest address of p.
func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// parsePath turns a directory into the prefix of the keys under it.
func parsePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: start with / (the root: every key; /dir: the keys under dir/)", p)
	}
	trimmed := strings.TrimSuffix(p, "/")
	if p == "/" {
		return "", nil
	}
	if clean := path.Clean(p); clean != trimmed {
		return "", fmt.Errorf("path %q: write it %s", p, clean)
	}
	return strings.TrimPrefix(trimmed, "/") + "/", nil
}

func parseOptions(s string, r *Rule) ([]string, error) {
	var warns, bad []string
	for _, o := range strings.Split(s, ",") {
		name, value, hasValue := strings.Cut(o, "=")
		switch {
		case o == "":
		case o == "ro" || o == "readonly":
			r.Write = false
		case o == "rw" || o == "readwrite":
			r.Write = true
		case name == "password" && hasValue:
			if err := secret.Check("password=", value); err != nil || value == "" {
				return nil, fmt.Errorf("password= is %d characters long, at least %d are needed", len(value), secret.MinLen)
			}
			r.Password = value
		case name == "md5pass":
			return nil, errors.New("md5pass= is not supported: give the password itself (password=), which the client's proof is checked against (docs/operations.md, \"Client access\")")
		default:
			if takes, ok := ignored[name]; ok && takes == hasValue {
				warns = append(warns, name)
				continue
			}
			bad = append(bad, o)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("unknown option %s (ro, rw, password=PASS)", strings.Join(bad, ", "))
	}
	if len(warns) > 0 {
		return []string{fmt.Sprintf("MooseFS option %s has no meaning for keys: ignored", strings.Join(warns, ", "))}, nil
	}
	return nil, nil
}

// Passwords are the distinct passwords of the table's rules.
func (t *Table) Passwords() []string {
	var out []string
	for _, r := range t.Rules {
		if r.Password != "" && !slices.Contains(out, r.Password) {
			out = append(out, r.Password)
		}
	}
	return out
}

// Denial is a verdict: Allowed, or why not.
type Denial uint8

// Verdicts.
const (
	Allowed         Denial = iota
	Denied                 // no line for this address covers this key
	ReadOnly               // lines cover it, none of them rw
	PasswordMissing        // a line would allow it, with a password the client did not prove
	PasswordWrong          // a line would allow it, and the client's proof is not of its password
)

func (d Denial) String() string {
	return [...]string{"allowed", "denied", "read-only", "password-missing", "password-wrong"}[d]
}

// Proof says what a client proved: given, that it sent a proof at all;
// ok, that the proof is of password. nil: no proof.
type Proof func(password string) (given, ok bool)

// Check judges a request from addr on key (list: a list of the keys under
// the prefix key), a change when write is set.
func (t *Table) Check(addr netip.Addr, key string, list, write bool, proof Proof) Denial {
	addr = addr.Unmap()
	read, rw := false, false
	var missing, wrong bool
	for _, r := range t.Rules {
		if !r.Any && (addr.Less(r.From) || r.To.Less(addr) || addr.Is4() != r.From.Is4()) {
			continue
		}
		if !strings.HasPrefix(key, r.Prefix) {
			continue
		}
		if r.Password != "" {
			given, ok := false, false
			if proof != nil {
				given, ok = proof(r.Password)
			}
			if !ok {
				if given {
					wrong = true
				} else {
					missing = true
				}
				continue
			}
		}
		read = true
		rw = rw || r.Write
	}
	switch {
	case rw || (read && !write):
		return Allowed
	case wrong:
		return PasswordWrong
	case missing:
		return PasswordMissing
	case read:
		return ReadOnly
	}
	return Denied
}
