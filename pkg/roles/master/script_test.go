package master

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Golden scripts: each file under testdata/ is a protocol trace. A block is
// one command, a line "----", and the actions it must produce ("(nothing)"
// when none); "elect cs=1,2" is the usual election preamble in one. Run with
// -update to rewrite the expectations after a deliberate change (and read
// the diff). Every script names the docs/roles.md sections it covers in a
// "# covers: §x.y ..." line; TestScriptsCoverTable checks that every row of
// the table and every disconnect rule is covered.

var update = flag.Bool("update", false, "rewrite golden script expectations")

type harness struct {
	t      *testing.T
	now    roles.Instant
	m      *Master
	v      *voter.Voter
	lastHB map[wire.CSID]roles.Heartbeat
	vsess  uint64 // the voter's current session, as last seen in a VoteHello
	csAddr map[wire.CSID]netip.Addr
	net    *netScript // a multi-node script (netscript_test.go)
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, lastHB: map[wire.CSID]roles.Heartbeat{}, csAddr: map[wire.CSID]netip.Addr{}}
}

func parseArgs(fields []string) map[string]string {
	a := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			v = "true"
		}
		a[k] = v
	}
	return a
}

func mustDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func mustU(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func parsePos(s string) changelog.Pos {
	v, e, _ := strings.Cut(s, "@")
	return changelog.Pos{Version: mustU(v), Epoch: mustU(e)}
}

func ids(s string) []wire.MasterID {
	var out []wire.MasterID
	for _, x := range strings.Split(s, ",") {
		out = append(out, wire.MasterID(mustU(x)))
	}
	return out
}

// registry builds a log: genesis by master 1, then one config entry that
// registers the chunkservers "1@10.0.1.1,2@10.0.2.1" and maps the given
// ranges, in force.
func registryLog(spec, ranges string) ([]changelog.Entry, uint64) {
	log := changelog.Genesis(1)
	cfg := log[0].Config.Clone()
	cfg.Version = 2
	cfg.Bootstrap = false
	for _, cs := range strings.Split(spec, ",") {
		id, addr, _ := strings.Cut(cs, "@")
		cfg.Members = append(cfg.Members, registry.Chunkserver{ID: wire.CSID(mustU(id)), Addr: netip.MustParseAddr(addr)})
	}
	if ranges != "" {
		for _, r := range strings.Split(ranges, ",") {
			p, name, _ := strings.Cut(r, ":")
			var err error
			cfg.Locations, err = cfg.Locations.MapRange(netip.MustParsePrefix(p), name)
			if err != nil {
				panic(err)
			}
		}
	}
	log = append(log, changelog.Entry{Pos: changelog.Pos{Version: 2, Epoch: 0}, Kind: changelog.EntryConfig, Config: cfg})
	return log, 2
}

func (h *harness) run(cmd string) string {
	fields := strings.Fields(cmd)
	a := parseArgs(fields[1:])
	switch {
	case fields[0] == "net":
		return h.netStart(a)
	case h.net != nil:
		return h.netRun(cmd, fields, a)
	}
	switch fields[0] {
	case "master":
		cfg := DefaultConfig(wire.MasterID(mustU(a["id"])), ids(a["masters"]))
		cfg.CheckCaches = 1
		cfg.VoteLease = 800 * time.Millisecond         // the lease the scripts were written for
		cfg.HeartbeatInterval = 100 * time.Millisecond // and the interval
		cfg.KeepLeadership = a["keep"] == "true"
		if d, ok := a["deputy"]; ok {
			cfg.DeputyElectionTime = mustDur(d)
		}
		if n, ok := a["acks"]; ok {
			cfg.AckReplicas = int(mustU(n))
		}
		cfg.AckAlone = a["alone"] == "true"
		if n, ok := a["maxpending"]; ok {
			cfg.MaxPending = int(mustU(n))
		}
		var st roles.Stored
		switch {
		case a["empty"] == "true":
		case a["genesis"] == "true":
			st.Entries = changelog.Genesis(wire.MasterID(mustU(orDefault(a["founder"], a["id"]))))
		default:
			st.Entries, st.Hard.InForce = registryLog(a["registry"], a["ranges"])
			st.Hard.Commit = changelog.Pos{Version: 2}
			if p, ok := a["pending"]; ok {
				// A registry change written but not yet in force: version 3
				// with these members, uncommitted.
				next, _ := registryLog(p, a["ranges"])
				cfg := next[len(next)-1].Config
				cfg.Version = 3
				st.Entries = append(st.Entries, changelog.Entry{Pos: changelog.Pos{Version: 3}, Kind: changelog.EntryConfig, Config: cfg})
			}
		}
		if e, ok := a["epoch"]; ok {
			st.Hard.Epoch, st.Hard.MaxEpoch = mustU(e), mustU(e)
		}
		var b Batch
		h.m, b = New(cfg, st, h.now)
		return h.format(ofMaster(b))
	case "voter":
		cfg := voter.DefaultConfig(wire.CSID(mustU(a["id"])), netip.MustParseAddr(a["addr"]), ids(a["masters"]))
		var hs roles.VoterHardState
		if e, ok := a["epoch"]; ok {
			hs.MaxEpoch = mustU(e)
		}
		if c, ok := a["commit"]; ok {
			hs.Commit = parsePos(c)
		}
		if o, ok := a["owner"]; ok {
			hs.EpochOwner = wire.MasterID(mustU(o))
		}
		if i, ok := a["inc"]; ok {
			hs.EpochInc = mustU(i)
		}
		if g, ok := a["granted"]; ok {
			hs.MaxGranted = mustDur(g)
		}
		hs.CleanStop = a["clean"] == "true"
		cfg.RecordLost = a["lost"] == "true"
		cfg.RecordDamaged = a["damaged"] == "true"
		hs.Uncertain = a["uncertain"] == "true"
		var b voter.Batch
		h.v, b = voter.New(cfg, hs, h.now)
		return h.format(ofVoter(b))
	case "elect":
		return h.elect(strings.Split(a["cs"], ","))
	case "time":
		if strings.HasPrefix(fields[1], "+") {
			h.now = h.now.Add(mustDur(fields[1][1:]))
		} else {
			h.now = roles.Instant(mustDur(fields[1]))
		}
		return fmt.Sprintf("now %v", time.Duration(h.now))
	}
	ev := h.event(fields[0], a)
	if h.m != nil {
		return h.format(ofMaster(h.m.Step(h.now, ev)))
	}
	return h.format(ofVoter(h.v.Step(h.now, ev)))
}

// elect is the usual preamble in one command: the first chunkserver
// nominates the master, the others open vote sessions, then each
// acknowledges the heartbeat it was sent. It prints the role changes and
// where they left the master; the rest (heartbeats, the LEADER's no-op)
// is what nominated.txt and the other scripts of the election show.
func (h *harness) elect(css []string) string {
	var lines []string
	keep := func(out string) {
		for _, l := range strings.Split(out, "\n") {
			if _, t, ok := strings.Cut(l, ": transition "); ok {
				l = "transition " + t // a multi-node script's "[1.2s ]M1: transition ..."
			}
			if strings.HasPrefix(l, "transition ") {
				lines = append(lines, l)
			}
		}
	}
	for i, cs := range css {
		cmd := "hello cs=" + cs
		if i == 0 {
			cmd += " nominate"
		}
		keep(h.run(cmd))
	}
	for _, cs := range css {
		keep(h.run("ack cs=" + cs))
	}
	return strings.Join(append(lines, fmt.Sprintf("role %v epoch %d", h.m.Role(), h.m.Epoch())), "\n")
}

// sourceOf is the source address of a chunkserver's connection, as the
// driver stamps it: addr= when given, else where its hello came from.
func (h *harness) sourceOf(cs wire.CSID, a map[string]string) netip.Addr {
	if s, ok := a["addr"]; ok {
		return netip.MustParseAddr(s)
	}
	if addr, ok := h.csAddr[cs]; ok {
		return addr
	}
	return netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", cs))
}

// eventBuilder builds the input a script command names, from its
// arguments (cs= and from= are parsed for every command).
type eventBuilder func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event

// scriptEvents holds every command's builder: one file each,
// script_cmd_<command>_test.go, which adds it at init.
var scriptEvents = map[string]eventBuilder{}

func (h *harness) event(name string, a map[string]string) roles.Event {
	build, ok := scriptEvents[name]
	if !ok {
		h.t.Fatalf("unknown command %q", name)
	}
	return build(h, a, wire.CSID(mustU(orDefault(a["cs"], "0"))), wire.MasterID(mustU(orDefault(a["from"], "0"))))
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func roleOf(s string) roles.Role {
	for r := roles.Dummy; r <= roles.Deputy; r++ {
		if r.String() == s {
			return r
		}
	}
	panic("unknown role " + s)
}

// both is a batch of either machine, as the harness prints it.
type both struct {
	Batch
	IDTaken *roles.IDTaken
	Stopped bool
}

func ofMaster(b Batch) both { return both{Batch: b} }

func ofVoter(b voter.Batch) both {
	return both{Batch: Batch{Batch: b.Batch}, IDTaken: b.IDTaken, Stopped: b.Stopped}
}

// format prints a batch the way the golden files show it, in the order
// Carry carries it out. Probes and peer status broadcasts are left out:
// they are routine and would drown the rest.
func (h *harness) format(b both) string {
	var lines []string
	for _, p := range b.Persist {
		lines = append(lines, "persist "+persistText(p))
	}
	for _, r := range b.AdminReplies {
		if r.Code != wire.CodeNone {
			lines = append(lines, fmt.Sprintf("admin ok=%v code=%v %s", r.OK, r.Code, r.Text))
			continue
		}
		lines = append(lines, fmt.Sprintf("admin ok=%v %s", r.OK, r.Text))
	}
	for _, t := range b.Transitions {
		for _, d := range t.Disconnects {
			var gs []string
			for _, g := range d.Goodbyes {
				gs = append(gs, g.To.String()+":"+msgText(g.Msg))
			}
			lines = append(lines, fmt.Sprintf("disconnect %v %s", d.Class, strings.Join(gs, " ")))
		}
		lines = append(lines, fmt.Sprintf("transition %v -> %v epoch %d (%s %s)", t.From, t.To, t.Epoch, t.Reason, t.Section))
	}
	for _, s := range b.Sends {
		switch m := s.Msg.(type) {
		case roles.Probe, roles.PeerStatus:
			continue
		case roles.Heartbeat:
			h.lastHB[wire.CSID(s.To.ID)] = m
		case roles.VoteHello:
			h.vsess = m.Session
		}
		early := ""
		if s.Early {
			early = " (early)" // leaves before this batch's persist
		}
		lines = append(lines, fmt.Sprintf("send %v %s%s", s.To, msgText(s.Msg), early))
	}
	if b.Stopped {
		lines = append(lines, "stopped")
	}
	for _, r := range b.Ignored {
		lines = append(lines, "ignored "+r)
	}
	if len(lines) == 0 {
		return "(nothing)"
	}
	return strings.Join(lines, "\n")
}

func persistText(p roles.Persist) string {
	var parts []string
	if p.Hard != nil {
		parts = append(parts, fmt.Sprintf("hard{epoch=%d max=%d commit=%v inforce=%d yielded=%v}", p.Hard.Epoch, p.Hard.MaxEpoch, p.Hard.Commit, p.Hard.InForce, p.Hard.Yielded))
	}
	if p.TruncateAfter != nil {
		parts = append(parts, fmt.Sprintf("truncate-after=%d", *p.TruncateAfter))
	}
	for _, e := range p.Append {
		parts = append(parts, "append="+entryText(e))
	}
	if v := p.Voter; v != nil {
		clean := ""
		if v.CleanStop {
			clean = " clean"
		}
		if v.Uncertain {
			clean += " uncertain"
		}
		parts = append(parts, fmt.Sprintf("voter{epoch=%d owner=%v reg=%d inforce=%d commit=%v%s}", v.MaxEpoch, v.EpochOwner, v.KnownReg, v.InForce, v.Commit, clean))
	}
	return strings.Join(parts, " ")
}

func entryText(e changelog.Entry) string {
	switch e.Kind {
	case changelog.EntryNoop:
		return e.Pos.String() + ":noop" + historyText(e.History)
	case changelog.EntryConfig:
		return fmt.Sprintf("%v:config-v%d", e.Pos, e.Config.Version)
	case changelog.EntryPut:
		return fmt.Sprintf("%v:put(%s=%s)", e.Pos, e.Key, e.Value)
	case changelog.EntryDelete:
		return fmt.Sprintf("%v:delete(%s)", e.Pos, e.Key)
	case changelog.EntryCAS:
		return fmt.Sprintf("%v:cas(%s=%s if version %d)", e.Pos, e.Key, e.Value, e.Expect)
	case changelog.EntryHistory:
		return e.Pos.String() + ":history" + historyText(e.History)
	}
	return e.Pos.String()
}

// historyText shows an entry's role changes (the election history).
func historyText(rs []changelog.RoleChange) string {
	if len(rs) == 0 {
		return ""
	}
	var parts []string
	for _, r := range rs {
		s := fmt.Sprintf("M%d#%d %s->%s %s", r.Master, r.Seq, r.From, r.To, r.Reason)
		if r.Why != "" {
			s += fmt.Sprintf(" after M%d %s", r.Deposed, r.Why)
		}
		parts = append(parts, s)
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

var sessionRe = regexp.MustCompile(`Session:\d{6,}`)

func msgText(m wire.Message) string {
	switch m := m.(type) {
	case roles.Heartbeat:
		return fmt.Sprintf("heartbeat seq=%d %v epoch=%d lease=%v reg=%d inforce=%d commit=%v rank=%d/%d", m.Seq, m.Role, m.Epoch, m.Lease, m.RegVersion, m.InForce, m.Commit, m.Rank, m.Ranks)
	case roles.HeartbeatAck:
		if !m.OK {
			return fmt.Sprintf("nack %s maxepoch=%d owner=%v", m.Reason, m.MaxEpoch, m.EpochOwner)
		}
		return fmt.Sprintf("ack seq=%d granted=%v epoch=%d reg=%d commit=%v", m.Seq, m.Granted, m.MaxEpoch, m.KnownReg, m.Commit)
	case roles.VoteRelease:
		return fmt.Sprintf("release next=%v", m.Next)
	case roles.Redirect:
		return fmt.Sprintf("redirect leader=%v", m.Leader)
	case roles.VoteHello:
		return fmt.Sprintf("hello nominate=%v maxepoch=%d", m.Nominate, m.MaxEpoch)
	case roles.VoteBye:
		return "bye"
	case roles.Append:
		var es []string
		for _, e := range m.Entries {
			es = append(es, entryText(e))
		}
		return fmt.Sprintf("append epoch=%d prev=%v commit=%v [%s]", m.Epoch, m.Prev, m.Commit, strings.Join(es, " "))
	case roles.AppendAck:
		return fmt.Sprintf("appendack epoch=%d ok=%v match=%v last=%d", m.Epoch, m.OK, m.Match, m.Last)
	case roles.FetchReq:
		return fmt.Sprintf("fetch after=%d", m.After)
	case roles.ClientReply:
		if !m.OK {
			return fmt.Sprintf("reply seq=%d err=%q code=%v redirect=%v", m.Seq, m.Err, m.Code, m.Redirect)
		}
		return fmt.Sprintf("reply seq=%d ok value=%q found=%v version=%d stale=%v", m.Seq, m.Value, m.Found, m.Version, m.Stale)
	case roles.ProbeReply:
		return fmt.Sprintf("probe-reply %v epoch=%d eligible=%v", m.Role, m.Epoch, m.Eligible)
	}
	return sessionRe.ReplaceAllString(fmt.Sprintf("%T%+v", m, m), "Session:N")
}

// runScript plays one file and returns its text with fresh expectations.
func runScript(t *testing.T, path string) (got, want string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want = string(raw)
	h := newHarness(t)
	var out strings.Builder
	blocks := strings.Split(strings.TrimRight(want, "\n"), "\n\n")
	for i, b := range blocks {
		cmdPart, _, _ := strings.Cut(b, "\n----")
		var cmds []string
		for _, l := range strings.Split(cmdPart, "\n") {
			if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
				out.WriteString(l + "\n")
				continue
			}
			cmds = append(cmds, l)
		}
		if len(cmds) == 0 {
			if i < len(blocks)-1 {
				out.WriteString("\n")
			}
			continue
		}
		if len(cmds) > 1 {
			// One command a block, as etcd's datadriven files: every
			// output line then belongs to the command above it.
			t.Fatalf("%s: a block with %d commands (%q ...): give each its own block", path, len(cmds), cmds[0])
		}
		var res []string
		for _, c := range cmds {
			out.WriteString(c + "\n")
			res = append(res, h.run(c))
		}
		out.WriteString("----\n" + strings.Join(res, "\n") + "\n")
		if i < len(blocks)-1 {
			out.WriteString("\n")
		}
	}
	return out.String(), want
}

func scriptFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scripts under testdata/: %v", err)
	}
	sort.Strings(files)
	return files
}

func TestScripts(t *testing.T) {
	for _, f := range scriptFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			got, want := runScript(t, f)
			if *update {
				if err := os.WriteFile(f, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s differs from its expectation (run with -update and read the diff):\n%s", f, lineDiff(want, got))
			}
		})
	}
}

func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, a, b)
		}
	}
	return ""
}

var coversRe = regexp.MustCompile(`§[0-9]+\.[0-9]+`)

// TestScriptsCoverTable: every transition row and every disconnect rule of
// docs/roles.md is exercised by at least one golden script that cites it,
// and every transition the scripts produce is cited by them.
func TestScriptsCoverTable(t *testing.T) {
	cited := map[string]bool{}
	produced := map[string]bool{}
	for _, f := range scriptFiles(t) {
		raw, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "# covers:") {
				for _, s := range coversRe.FindAllString(l, -1) {
					cited[s] = true
				}
			}
			if _, after, ok := strings.Cut(l, ": transition "); ok && !strings.HasPrefix(l, "#") {
				l = "transition " + after // a multi-node script's "2.25s M1: transition ..."
			}
			if strings.HasPrefix(l, "transition ") {
				// "transition A -> B epoch N (reason §x)"
				f := strings.Fields(l)
				produced[f[1]+" "+f[3]+" "+l[strings.LastIndex(l, "(")+1:len(l)-1]] = true
			}
		}
	}
	for _, r := range roles.Transitions {
		if !cited[r.Section] {
			t.Errorf("no golden script cites %s (%v -> %v)", r.Section, r.From, r.To)
		}
		if !produced[fmt.Sprintf("%v %v %s %s", r.From, r.To, r.Reason, r.Section)] {
			t.Errorf("no golden script produces %v -> %v (%s %s)", r.From, r.To, r.Reason, r.Section)
		}
	}
	for _, s := range []string{"§4.1", "§4.2", "§4.3", "§4.4", "§5.1", "§5.2", "§6.1", "§6.2", "§6.3", "§6.4", "§6.5"} {
		if !cited[s] {
			t.Errorf("no golden script cites %s", s)
		}
	}
}

// TestDocTable: docs/roles.md prints exactly the rows of Transitions.
func TestDocTable(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/roles.md")
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "| §3.") {
			doc = append(doc, l)
		}
	}
	var code []string
	for _, r := range roles.Transitions {
		d := "no"
		if r.Disconnect {
			d = "yes"
		}
		code = append(code, fmt.Sprintf("| %s | %v | %v | `%s` | %s |", r.Section, r.From, r.To, r.Reason, d))
	}
	if strings.Join(doc, "\n") != strings.Join(code, "\n") {
		t.Errorf("docs/roles.md table and roles.Transitions differ:\ndoc:\n%s\ncode:\n%s", strings.Join(doc, "\n"), strings.Join(code, "\n"))
	}
}
