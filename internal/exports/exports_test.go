package exports

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pw = "export-password-0123" // at least 16 characters

// TestParse: MooseFS's syntax, one rule per line; what each line becomes.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       Rule
	}{
		{"everything, read-only by default", "*\t/", Rule{Any: true, Prefix: "", Path: "/"}},
		{"one address, rw", "10.0.0.5 / rw", Rule{From: a("10.0.0.5"), To: a("10.0.0.5"), Write: true, Path: "/"}},
		{"bits, masked", "10.1.2.3/16 /app readwrite", Rule{From: a("10.1.0.0"), To: a("10.1.255.255"), Prefix: "app/", Path: "/app", Write: true}},
		{"netmask", "192.168.7.0/255.255.255.0 /a/b/ ro", Rule{From: a("192.168.7.0"), To: a("192.168.7.255"), Prefix: "a/b/", Path: "/a/b/"}},
		{"range", "10.0.0.10-10.0.0.20 / rw,password=" + pw, Rule{From: a("10.0.0.10"), To: a("10.0.0.20"), Write: true, Password: pw, Path: "/"}},
		{"ipv6 prefix", "fd00::/8 / rw", Rule{From: a("fd00::"), To: a("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), Write: true, Path: "/"}},
		{"last of ro/rw wins", "* / rw,readonly", Rule{Any: true, Path: "/"}},
		{"trailing comment", "* /x rw # the x tree", Rule{Any: true, Prefix: "x/", Path: "/x", Write: true}},
		{"options of MooseFS that mean nothing here", "* / rw,alldirs,maproot=0:0,mapall=nobody,dynamicip,ignoregid,admin,minversion=3.0,mingoal=1,maxgoal=9,mintrashtime=1d,maxtrashtime=1w,umask=022",
			Rule{Any: true, Write: true, Path: "/"}},
	} {
		tb, err := Parse("mfsexports.cfg", strings.NewReader("# comment\n\n"+c.line+"\n"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(tb.Rules) != 1 {
			t.Errorf("%s: %d rules", c.name, len(tb.Rules))
			continue
		}
		c.want.Line = 3
		if got := tb.Rules[0]; got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestIgnoredOptionsWarned: MooseFS options that mean nothing for keys are
// taken, each named once in a warning with its line; a "." line (MooseFS's
// meta file system) is skipped with a warning.
func TestIgnoredOptionsWarned(t *testing.T) {
	tb, err := Parse("ex.cfg", strings.NewReader("* / rw,alldirs,maproot=0\n* . rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(tb.Warnings, "\n")
	if len(tb.Rules) != 1 || !strings.Contains(w, "ex.cfg:1") || !strings.Contains(w, "alldirs") || !strings.Contains(w, "maproot") ||
		!strings.Contains(w, "ex.cfg:2") {
		t.Fatalf("rules %d, warnings:\n%s", len(tb.Rules), w)
	}
}

// TestBadLines: every bad line is named with file:line and what is wrong,
// all of them in one error; nothing is half taken.
func TestBadLines(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"*", "want ADDRESS PATH [OPTIONS]"},
		{"10.0.0.300 / rw", "10.0.0.300"},
		{"10.0.0.0/33 /", "10.0.0.0/33"},
		{"10.0.0.0/255.0.255.0 /", "netmask"},
		{"10.0.0.9-10.0.0.1 /", "range"},
		{"10.0.0.1-fd00::1 /", "range"},
		{"* dir rw", "start with /"},
		{"* /a//b rw", "/a/b"},
		{"* /a/../b rw", "/b"},
		{"* / rw,password=short", "at least 16"},
		{"* / rw,password=", "at least 16"},
		{"* / md5pass=0123456789abcdef0123456789abcdef", "md5pass"},
		{"* / rw,frobnicate", "frobnicate"},
		{"* / rw extra", "extra"},
	} {
		_, err := Parse("mfsexports.cfg", strings.NewReader("* / ro\n"+c.line+"\n"))
		if err == nil || !strings.Contains(err.Error(), "mfsexports.cfg:2") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.line, err)
		}
	}
	_, err := Parse("f", strings.NewReader("bad\n* / rw\nworse /\n"))
	if err == nil || !strings.Contains(err.Error(), "f:1") || !strings.Contains(err.Error(), "f:3") {
		t.Errorf("every bad line is not named: %v", err)
	}
}

// proof is what a client proved: given says it sent a proof, good the
// passwords it proves.
func proof(given bool, good ...string) Proof {
	return func(password string) (bool, bool) {
		for _, g := range good {
			if g == password {
				return given, true
			}
		}
		return given, false
	}
}

// TestCheck: a request is allowed when some line for the client's address
// covers its key (or a list's prefix) with what it needs; as in MooseFS
// every matching line counts, the most permissive the client qualifies for
// wins, a line with a password counts only when proved, and the order of
// the lines does not matter.
func TestCheck(t *testing.T) {
	const file = `
10.0.0.0/8      /          ro
10.1.0.0/16     /app       rw
10.2.0.0/16     /          rw,password=` + pw + `
10.3.0.1        /secret    password=` + pw + `
`
	tb, err := Parse("mfsexports.cfg", strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		addr  string
		key   string
		list  bool
		write bool
		proof Proof
		want  Denial
	}{
		{"read anywhere from 10/8", "10.9.0.1", "x", false, false, nil, Allowed},
		{"write refused: read-only", "10.9.0.1", "x", false, true, nil, ReadOnly},
		{"write under /app from 10.1", "10.1.0.1", "app/a", false, true, nil, Allowed},
		{"write beside /app from 10.1", "10.1.0.1", "apple", false, true, nil, ReadOnly},
		{"list /app from 10.1 is read", "10.1.0.1", "app/", true, false, nil, Allowed},
		{"list everything from 10.1 (10/8 ro)", "10.1.0.1", "", true, false, nil, Allowed},
		{"no line for this address", "192.168.0.1", "x", false, false, nil, Denied},
		{"a password line without a proof: ro from 10/8", "10.2.0.1", "x", false, true, nil, PasswordMissing},
		{"with the proof: rw", "10.2.0.1", "x", false, true, proof(true, pw), Allowed},
		{"a wrong proof", "10.2.0.1", "x", false, true, proof(true), PasswordWrong},
		{"a wrong proof still reads through 10/8", "10.2.0.1", "x", false, false, proof(true), Allowed},
		{"10.3.0.1 reads secret/ through 10/8", "10.3.0.1", "secret/k", false, false, nil, Allowed},
		{"ipv4-mapped address", "::ffff:10.1.0.1", "app/a", false, true, nil, Allowed},
	} {
		got := tb.Check(netip.MustParseAddr(c.addr), c.key, c.list, c.write, c.proof)
		if got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The order of the lines does not matter.
	lines := strings.Split(strings.TrimSpace(file), "\n")
	rev := ""
	for i := len(lines) - 1; i >= 0; i-- {
		rev += lines[i] + "\n"
	}
	tr, _ := Parse("r", strings.NewReader(rev))
	if tr.Check(a("10.1.0.1"), "app/a", false, true, nil) != Allowed || tr.Check(a("10.9.0.1"), "x", false, true, nil) != ReadOnly {
		t.Error("the order of the lines changed a verdict")
	}
	// 10.3.0.1 is also in 10/8: the password line is not needed to read.
	if d := tb.Check(a("10.3.0.1"), "secret/k", false, true, nil); d != PasswordMissing {
		t.Errorf("write to the password line without a proof: %v", d)
	}
	if d := tb.Check(a("11.3.0.1"), "secret/k", false, false, nil); d != Denied {
		t.Errorf("outside every range: %v", d)
	}
}

// TestPasswordOnlyLine: an address whose only line needs a password is
// refused without the proof (missing), with a wrong one (wrong), and
// served with the right one.
func TestPasswordOnlyLine(t *testing.T) {
	tb, err := Parse("f", strings.NewReader("10.3.0.1 / rw,password="+pw+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    Proof
		want Denial
	}{{nil, PasswordMissing}, {proof(false), PasswordMissing}, {proof(true), PasswordWrong}, {proof(true, pw), Allowed}} {
		if got := tb.Check(a("10.3.0.1"), "k", false, false, c.p); got != c.want {
			t.Errorf("%v, want %v", got, c.want)
		}
	}
	if ps := tb.Passwords(); len(ps) != 1 || ps[0] != pw {
		t.Errorf("passwords %v", ps)
	}
}

// TestLoad: a missing file is no table (everything open); a present one
// is parsed with its path in every message.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	tb, err := Load(filepath.Join(dir, "none.cfg"))
	if tb != nil || err != nil {
		t.Fatalf("missing file: %v %v", tb, err)
	}
	p := filepath.Join(dir, "mfsexports.cfg")
	if err := os.WriteFile(p, []byte("* / rw\nnonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+":2") {
		t.Fatalf("bad file: %v", err)
	}
	if err := os.WriteFile(p, []byte("* / rw,password="+pw+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	tb, err = Load(p)
	if err != nil || len(tb.Rules) != 1 || !strings.Contains(strings.Join(tb.Warnings, "\n"), "readable by every user") {
		t.Fatalf("%v %+v", err, tb)
	}
}

func a(s string) netip.Addr { return netip.MustParseAddr(s) }
