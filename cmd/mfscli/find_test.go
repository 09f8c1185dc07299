package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/urfave/cli/v2"
)

var errUnreachable = fmt.Errorf("%w: connection refused", client.ErrUnreachable)

// TestResolve: -H lists names or addresses separated by commas and spaces;
// duplicates are asked once; a name that does not resolve is reported and
// the rest still used.
func TestResolve(t *testing.T) {
	if got := clusterview.HostItems(" a,b  c,,\td "); !reflect.DeepEqual(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("hostItems: %q", got)
	}
	got, errs := clusterview.Resolve("127.0.0.12, 127.0.0.11 127.0.0.12,127.0.0.11:9500 name.invalid", 9421)
	want := []netip.AddrPort{at("127.0.0.11"), netip.MustParseAddrPort("127.0.0.11:9500"), at("127.0.0.12")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolve: %v, want %v", got, want)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "-H name.invalid") || strings.Contains(errs[0].Error(), "MASTER_HOST") {
		t.Errorf("errors: %v", errs)
	}
	if _, errs := clusterview.Resolve(" , ", 9421); len(errs) != 1 {
		t.Errorf("an empty -H: %v", errs)
	}
}

// TestUnreachableOrBusy: real loopback sockets. A closed port is
// UNREACHABLE; a listener that accepts and never answers is BUSY.
func TestUnreachableOrBusy(t *testing.T) {
	busy := fixture.Listen(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // held open, silent
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := netip.MustParseAddrPort(closed.Addr().String())
	closed.Close()

	answers := clusterview.AskAll([]netip.AddrPort{busy, dead}, 300*time.Millisecond)
	if !errors.Is(answers[0].Err, client.ErrBusy) || clusterview.StateWord(answers[0]) != "BUSY" || clusterview.ToneOf(answers[0]) != clusterview.ToneBusy {
		t.Errorf("silent listener: %v -> %s", answers[0].Err, clusterview.StateWord(answers[0]))
	}
	if !errors.Is(answers[1].Err, client.ErrUnreachable) || clusterview.StateWord(answers[1]) != "UNREACHABLE" || clusterview.ToneOf(answers[1]) != clusterview.ToneUnreachable {
		t.Errorf("closed port: %v -> %s", answers[1].Err, clusterview.StateWord(answers[1]))
	}
	if clusterview.ReachedAny(answers) {
		t.Error("reachedAny with no answer")
	}
}

// TestStateWords: words and colours of MOOSEFS-FACTS.md.
func TestStateWords(t *testing.T) {
	st := func(r roles.Role, s roles.SyncState, tr string) clusterview.Answer {
		x := master("127.0.0.1", r, 1, 1)
		x.Sync, x.Transition = s, tr
		return clusterview.Answer{St: x}
	}
	removed := func(a clusterview.Answer) clusterview.Answer { a.St.Removed = true; return a }
	cases := []struct {
		a    clusterview.Answer
		word string
		tone clusterview.Tone
		code int
	}{
		{st(roles.Leader, roles.Synced, ""), "LEADER", clusterview.ToneLeader, 34},
		{st(roles.Follower, roles.Synced, ""), "FOLLOWER", clusterview.ToneFollower, 30},
		{st(roles.Follower, roles.Desync, ""), "FOLLOWER (DESYNC)", clusterview.ToneDesync, 19},
		{st(roles.Follower, roles.Init, ""), "FOLLOWER (INIT)", clusterview.ToneDesync, 19},
		{st(roles.Follower, roles.Delayed, ""), "FOLLOWER (DELAYED)", clusterview.ToneDesync, 19},
		{st(roles.Usurper, roles.Synced, ""), "USURPER", clusterview.ToneFollower, 30},
		{st(roles.Elect, roles.Desync, ""), "ELECT", clusterview.ToneElect, 226},
		{st(roles.Elect, roles.Desync, "ELECT -> LEADER"), "transition ELECT -> LEADER", clusterview.ToneTransition, 244},
		{st(roles.Deputy, roles.Desync, ""), "DEPUTY", clusterview.ToneDeputy, 208},
		{st(roles.Dummy, roles.Synced, ""), "DUMMY", clusterview.ToneDummy, 244},
		{removed(st(roles.Follower, roles.Desync, "")), "FOLLOWER (REMOVED)", clusterview.ToneDummy, 244},
		{clusterview.Answer{Err: errUnreachable}, "UNREACHABLE", clusterview.ToneUnreachable, 196},
		{clusterview.Answer{Err: fmt.Errorf("%w: i/o timeout", client.ErrBusy)}, "BUSY", clusterview.ToneBusy, 55},
	}
	for _, c := range cases {
		if w, tn := clusterview.StateWord(c.a), clusterview.ToneOf(c.a); w != c.word || tn != c.tone || colours[tn] != c.code {
			t.Errorf("%s: got %s tone %d (%d)", c.word, w, tn, colours[tn])
		}
	}
	if got := paint("LEADER", clusterview.ToneLeader, true); got != "\x1b[38;5;34mLEADER\x1b[0m" {
		t.Errorf("paint: %q", got)
	}
}

// TestChooseView: LEADER or DEPUTY, then ELECT, then USURPER, then a
// FOLLOWER; the higher epoch among equals.
func TestChooseView(t *testing.T) {
	mk := func(ip string, r roles.Role, epoch uint64) clusterview.Answer {
		return clusterview.Answer{Addr: at(ip), St: master(ip, r, epoch, 1)}
	}
	cases := []struct {
		answers []clusterview.Answer
		want    string
	}{
		{[]clusterview.Answer{mk("127.0.0.1", roles.Follower, 5), mk("127.0.0.2", roles.Usurper, 5), mk("127.0.0.3", roles.Elect, 6), mk("127.0.0.4", roles.Leader, 5)}, "127.0.0.4"},
		{[]clusterview.Answer{mk("127.0.0.1", roles.Follower, 5), mk("127.0.0.2", roles.Deputy, 4), mk("127.0.0.3", roles.Elect, 6)}, "127.0.0.2"},
		{[]clusterview.Answer{mk("127.0.0.1", roles.Follower, 5), mk("127.0.0.2", roles.Usurper, 5), mk("127.0.0.3", roles.Elect, 6)}, "127.0.0.3"},
		{[]clusterview.Answer{mk("127.0.0.1", roles.Follower, 5), mk("127.0.0.2", roles.Usurper, 5)}, "127.0.0.2"},
		{[]clusterview.Answer{mk("127.0.0.1", roles.Follower, 5), mk("127.0.0.2", roles.Follower, 7), {Addr: at("127.0.0.3"), Err: errUnreachable}}, "127.0.0.2"},
		{[]clusterview.Answer{{Addr: at("127.0.0.3"), Err: errUnreachable}}, ""},
	}
	for i, c := range cases {
		got := ""
		if v := clusterview.ChooseView(c.answers); v != nil {
			got = v.Addr.Addr().String()
		}
		if got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}

// TestMetadataIDFlag: a master whose metadata id differs from the
// LEADER's is flagged; without a LEADER, from the majority's. A master
// without one yet (-e) is not.
func TestMetadataIDFlag(t *testing.T) {
	a := healthy()
	a[2].St.ClusterID = "0000000000000001"
	ds := clusterview.Build(a, "mfsmaster", t0)
	flagged := map[string]bool{}
	for _, m := range ds.Masters {
		flagged[m.IP.String()] = m.MetaIDDiffers
	}
	if !flagged["127.0.0.13"] || flagged["127.0.0.11"] || flagged["127.0.0.12"] {
		t.Errorf("with a LEADER: %v", flagged)
	}
	a[1].St.Role, a[0].St.ClusterID = roles.Follower, "0000000000000001" // no LEADER; two of three agree
	ds = clusterview.Build(a, "mfsmaster", t0)
	for _, m := range ds.Masters {
		if want := m.IP.String() == "127.0.0.11"; m.MetaIDDiffers != want {
			t.Errorf("majority: %s flagged %v", m.IP, m.MetaIDDiffers)
		}
	}
	a = inFlight()
	for _, m := range clusterview.Build(a, "mfsmaster", t0).Masters {
		if m.MetaIDDiffers {
			t.Errorf("%s flagged", m.IP)
		}
	}
}

// TestSorting: -o N orders by the Nth column (numbers as numbers, masters
// that did not answer first), -r reverses.
func TestSorting(t *testing.T) {
	ds := clusterview.Build(election(), "mfsmaster", t0)
	sortRows(ds.Masters, masterCols(time.UTC), 7, true) // metadata version, descending
	var got []string
	for _, m := range ds.Masters {
		got = append(got, m.IP.String())
	}
	want := []string{"127.0.0.12", "127.0.0.14", "127.0.0.13", "127.0.0.11"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("-o 7 -r: %v, want %v", got, want)
	}
	ds = clusterview.Build(healthy(), "mfsmaster", t0)
	sortRows(ds.Chunkservers, csCols(), 7, false) // used space; voter-only rows hold 0
	if ds.Chunkservers[0].VoterOnly != true || ds.Chunkservers[5].IP.String() != "127.0.3.1" {
		t.Errorf("-o 7 on chunkservers: %+v", ds.Chunkservers)
	}
}

// TestCheckSort: a -o that fits no table is refused with the reason.
func TestCheckSort(t *testing.T) {
	show := func(ls ...listing) map[listing]bool {
		m := map[listing]bool{}
		for _, l := range ls {
			m[l] = true
		}
		return m
	}
	cases := []struct {
		o    options
		want string
	}{
		{options{show: show(listMasters), sortCol: 19}, ""},
		{options{show: show(listMasters), sortCol: 21}, `-o 21: the "Metadata Servers (masters)" table (-SIM) has 20 columns`},
		{options{show: show(listMasters, listLocations), sortCol: 12}, `-o 12: the "Locations and quorum" table (-SLQ) has 9 columns`},
		{options{show: show(listSummary), sortCol: 1}, "-SIG is a list of values"},
		{options{show: show(listSummary, listChunkservers), sortCol: 2}, ""},
		{options{show: show(listHistory), sortCol: 8}, ""},
		{options{show: show(listHistory), sortCol: 9}, `-o 9: the "Election history" table (-SLH) has 8 columns`},
		{options{show: show(listMasters), sortCol: -1}, "columns are counted from 1"},
	}
	for _, c := range cases {
		err := checkSort(c.o)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// TestFlagCombinations: what mfscli refuses before asking any master.
func TestFlagCombinations(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-j", "-p"}, "-j and -p are two output modes"},
		{[]string{"-SIG", "-o", "1"}, "-SIG is a list of values"},
		{[]string{"-SCS", "-o", "17"}, `"Chunkservers" table (-SCS) has 16 columns`},
		{[]string{"-CLS", "-SIM"}, "-CLS is an admin command: it cannot be combined with -SIM"},
		{[]string{"-CRC/127.0.3.1/9422", "-j"}, "cannot be combined with -j"},
		{[]string{"-SIM", "get", "k"}, "the namespace commands take no listing flags (-SIM)"},
		{[]string{"-SLH", "-CLS"}, "-CLS is an admin command: it cannot be combined with -SLH"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		// Checked before any master is asked (issue 37).
		{[]string{"-P", "99999"}, "-P 99999: a port is 1 to 65535"},
		{[]string{"--timeout", "-5s"}, "--timeout -5s: must be above zero"},
		{[]string{"--wait", "0", "get", "k"}, "--wait 0s: must be above zero"},
		{[]string{"-CRC/1.2.3.4"}, "-CRC/1.2.3.4: want -CRC/ip/port (ip an address, port 1 to 65535)"},
		{[]string{"-CRC/1.2.3.4/0"}, "want -CRC/ip/port"},
		{[]string{"-CMAP/10.0.0.0/33/west"}, "want -CMAP/cidr/name (cidr a range as 10.1.0.0/16)"},
		{[]string{"-CLS/x"}, "-CLS/x: want -CLS"},
		{[]string{"-CMR/x"}, "want -CMR or -CMR/ip"},
		{[]string{"-CWITNESS/test/x"}, "want -CWITNESS/on or -CWITNESS/off or -CWITNESS/test or -CWITNESS/test/ip"},
		{[]string{"-CFOO/1"}, "unknown admin command -CFOO/1 (RC/ip/port"},
		{[]string{"--backup", "x", "-SIM"}, "--backup takes no listing"},
		{[]string{"--backup", "x", "get", "k"}, "--backup takes no listing, admin command or namespace command"},
		{[]string{"--backup", "find_test.go"}, "--backup find_test.go: the file exists: refusing to overwrite it"},
	}
	for _, c := range cases {
		app := newApp()
		app.ExitErrHandler = func(*cli.Context, error) {} // keep the test process alive
		app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
		err := app.Run(rewriteAdmin(append([]string{"mfscli", "-H", "127.0.0.1", "-P", "1"}, c.args...)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestHelpers(t *testing.T) {
	for in, want := range map[string]string{"mfsmaster": "mfsmaster", "10.0.0.1,10.0.0.2": "10.0.0.1,10.0.0.2",
		"a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := clusterview.ShellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	for d, want := range map[time.Duration]string{42 * time.Second: "42s", 200 * time.Second: "3m20s",
		26 * time.Hour: "26h00m", 50 * time.Hour: "2d02h", -time.Minute: "in the future: clocks differ"} {
		if got := ago(d); got != want {
			t.Errorf("ago(%v) = %s, want %s", d, got, want)
		}
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 100 << 30: "100.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestOnlyOffLocation: an OFF location is listed, takes no part, and is
// counted among the locations of the summary.
func TestOnlyOffLocation(t *testing.T) {
	a := healthy()
	for i := range a {
		a[i].St.Locations[3].On = false
	}
	lead := &a[1].St
	lead.Tallies = []protocol.TallyStatus{tally(3, "WON", loc("dc1", 2, 2, 2), loc("dc2", 2, 2, 2))}
	ds := clusterview.Build(a, "mfsmaster", t0)
	if ds.Summary.LocationsOn != 3 || ds.Summary.Locations != 4 {
		t.Errorf("summary locations %d of %d", ds.Summary.LocationsOn, ds.Summary.Locations)
	}
	out := render(t, a, options{mode: modePlain, show: map[listing]bool{listLocations: true}})
	if !strings.Contains(out, "dc3\t127.0.3.0/24\tOFF\tno\t2\t-\t-\t-") {
		t.Errorf("OFF location not shown:\n%s", out)
	}
}

// TestWrongPortHint (issue 37): a port that accepts and never says hello
// (an HTTP port, another service) is named as the likely mistake.
func TestWrongPortHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the listener goes
		}
	}()
	port := netip.MustParseAddrPort(ln.Addr().String()).Port()
	app := newApp()
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
	err = app.Run([]string{"mfscli", "-H", "127.0.0.1", "-P", fmt.Sprint(port), "--timeout", "200ms", "-p"})
	want := fmt.Sprintf("is -P %d the masters' client port, 9421 by default?", port)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %q", err, want)
	}
}
