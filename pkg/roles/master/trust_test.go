package master

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Hostile and careless peers against the core (../shared/reviews/security.md
// C1, H2, M5, M6, M7, L1, L2, L9). Each test failed before its fix.

// leaderOf3 is a LEADER at epoch 1 counting CS1 and CS2 of a registry of
// three (10.0.1.1-3).
func leaderOf3(t *testing.T) *harness {
	t.Helper()
	return leaderAmong(t, "1")
}

// leaderAmong is leaderOf3 with other masters configured beside M1
// (masters: the MASTER_HOST ids, M1 first), so that their statuses count.
func leaderAmong(t *testing.T, masters string) *harness {
	t.Helper()
	h := newHarness(t)
	h.run("master id=1 masters=" + masters + " registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 acks=0")
	for _, cmd := range []string{"hello cs=1 nominate", "hello cs=2", "ack cs=1", "ack cs=2"} {
		h.run(cmd)
	}
	if h.m.Role() != roles.Leader || h.m.Epoch() != 1 {
		t.Fatalf("setup: %v at epoch %d, want LEADER at 1", h.m.Role(), h.m.Epoch())
	}
	return h
}

func hasIgnored(ignored []string, reason string) bool { return slices.Contains(ignored, reason) }

// C1: acks that echo a real voter's session from another address (a clone,
// or an impostor the driver let through) never count; the LEADER fences
// itself when the real voters fall silent.
func TestImpostorAcksNotCounted(t *testing.T) {
	h := leaderOf3(t)
	for i := 0; i < 20; i++ {
		h.run("time +100ms")
		h.run("tick")
		if h.m.Role() != roles.Leader {
			break
		}
		for _, cs := range []string{"1", "2"} {
			out := h.run("ack cs=" + cs + " addr=10.0.9.9")
			if !strings.Contains(out, "wrong-address") {
				t.Fatalf("an ack from another address was not refused:\n%s", out)
			}
		}
	}
	if h.m.Role() == roles.Leader {
		t.Fatal("a LEADER whose real voters fell silent stayed LEADER on an impostor's acks")
	}
	// A bye from another address does not end the real session either.
	h = leaderOf3(t)
	if out := h.run("bye cs=1 addr=10.0.9.9"); !strings.Contains(out, "wrong-address") {
		t.Fatalf("a bye from another address was taken:\n%s", out)
	}
}

// H2: one VoteHello with a huge epoch unseats nothing and is not adopted;
// the epoch a peer may move this master to is bounded; newEpoch never
// wraps.
func TestEpochBombs(t *testing.T) {
	h := leaderOf3(t)
	for _, hello := range []string{
		"hello cs=999 addr=10.0.9.9 session=7 maxepoch=18446744073709551614", // unregistered
		"hello cs=3 addr=10.0.9.9 session=7 maxepoch=18446744073709551615",   // a member's id, another address
		"hello cs=3 session=8 maxepoch=6",                                    // the member itself: a LEADER never steps down on a hello
	} {
		h.run(hello)
		if h.m.Role() != roles.Leader || h.m.Epoch() != 1 || h.m.Hard().MaxEpoch != 1 {
			t.Fatalf("after %q: %v epoch %d max %d, want LEADER 1 max 1", hello, h.m.Role(), h.m.Epoch(), h.m.Hard().MaxEpoch)
		}
	}
	// A member's refusal with an epoch far above any seen is refused too.
	acts := h.m.Step(h.now, roles.HeartbeatAck{CS: 1, Session: 1, Seq: 1, MaxEpoch: 1 << 40, EpochOwner: 2, Addr: netip.MustParseAddr("10.0.1.1")})
	if !hasIgnored(acts.Ignored, "epoch-implausible") || h.m.Role() != roles.Leader || h.m.Hard().MaxEpoch != 1 {
		t.Fatalf("an implausible refusal: %v max %d, %v", h.m.Role(), h.m.Hard().MaxEpoch, acts)
	}
	// A master's status and Append are bounded alike.
	f := newHarness(t)
	f.run("master id=2 masters=1,2 registry=1@10.0.1.1 acks=0")
	acts = f.m.Step(f.now, roles.PeerStatus{From: 1, Incarnation: 1, Role: roles.Leader, Epoch: math.MaxUint64, MaxEpoch: math.MaxUint64})
	if !hasIgnored(acts.Ignored, "epoch-implausible") || f.m.Hard().MaxEpoch != 0 {
		t.Fatalf("a status with epoch 2^64-1 was taken: max %d, %v", f.m.Hard().MaxEpoch, acts)
	}
	acts = f.m.Step(f.now, roles.Append{From: 1, Epoch: EpochCeiling + 1, Prev: changelog.Pos{Version: 2}})
	if !hasIgnored(acts.Ignored, "epoch-implausible") || f.m.Hard().LeaderEpoch != 0 {
		t.Fatalf("an Append above the ceiling was taken: %+v, %v", f.m.Hard(), acts)
	}
	// A store already at the ceiling (damaged, or bombed before the bound)
	// cannot elect: it says so and stays FOLLOWER, never wrapping to 0.
	c := newHarness(t)
	c.run("master id=1 masters=1 registry=1@10.0.1.1 acks=0 epoch=" + uintString(EpochCeiling))
	acts = c.m.Step(c.now, roles.VoteHello{CS: 1, Addr: netip.MustParseAddr("10.0.1.1"), Session: 1, Nominate: true})
	if !hasIgnored(acts.Ignored, "epoch-exhausted") || c.m.Role() != roles.Follower || c.m.Hard().Epoch != EpochCeiling {
		t.Fatalf("at the ceiling: %v epoch %d, %v", c.m.Role(), c.m.Hard().Epoch, acts)
	}
}

func uintString(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// M6: malformed Appends, fetch answers and snapshot chunks are dropped
// whole; none panics (review T3, E5).
func TestMalformedPeerMessages(t *testing.T) {
	f := newHarness(t)
	f.run("master id=2 masters=1,2 registry=1@10.0.1.1 acks=0")
	for name, ev := range map[string]roles.Event{
		"epochs fall":           roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 3, Epoch: 7}, Kind: changelog.EntryNoop}, {Pos: changelog.Pos{Version: 4, Epoch: 1}, Kind: changelog.EntryNoop}}},
		"entry above its epoch": roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 3, Epoch: 7}, Kind: changelog.EntryNoop}}},
		"gap":                   roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 4, Epoch: 5}, Kind: changelog.EntryNoop}}},
		"nil config":            roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 3, Epoch: 5}, Kind: changelog.EntryConfig}}},
		"unknown kind":          roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 3, Epoch: 5}, Kind: 99}}},
		"commit above epoch":    roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Commit: changelog.Pos{Version: 2, Epoch: 9}},
		"unsorted members": roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 3, Epoch: 5}, Kind: changelog.EntryConfig,
			Config: &registry.ClusterConfig{Version: 3, Members: []registry.Chunkserver{{ID: 2}, {ID: 1}}}}}},
		"chunk past its total": roles.SnapshotChunk{From: 1, Epoch: 5, Pos: changelog.Pos{Version: 9, Epoch: 5}, Total: 1, Offset: 3},
		"chunk longer than its total": roles.SnapshotChunk{From: 1, Epoch: 5, Pos: changelog.Pos{Version: 9, Epoch: 5}, Total: 1,
			Items: []namespace.KVEntry{{Key: "a"}, {Key: "b"}}},
	} {
		before := f.m.Log().Last()
		acts := f.m.Step(f.now, ev)
		if f.m.Log().Last() != before || f.m.Hard().LeaderEpoch != 0 {
			t.Errorf("%s: taken (log %v -> %v, leader epoch %d): %v", name, before, f.m.Log().Last(), f.m.Hard().LeaderEpoch, acts)
		}
	}
	// The review's E5: from a master's address, one entry of epoch 0 after
	// the LEADER's own entries, at a higher epoch.
	h := leaderOf3(t)
	last := h.m.Log().Last()
	h.m.Step(h.now, roles.Append{From: 2, Epoch: 2, Prev: last, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: last.Version + 1, Epoch: 0}, Kind: changelog.EntryNoop}}})
	if h.m.Log().Last() != last {
		t.Fatalf("the crafted Append was taken: log %v", h.m.Log().Last())
	}
}

// L9: a grant of an hour counts for no longer than the lease asked for.
func TestGrantedCapped(t *testing.T) {
	h := leaderOf3(t)
	for _, cs := range []wire.CSID{1, 2} {
		hb := h.lastHB[cs]
		h.m.Step(h.now, roles.HeartbeatAck{CS: cs, Session: hb.Session, Seq: hb.Seq, OK: true, Granted: time.Hour,
			MaxEpoch: hb.Epoch, EpochOwner: 1, Addr: h.csAddr[cs]})
	}
	h.run("time +2s")
	h.run("tick")
	if h.m.Role() == roles.Leader {
		t.Fatal("votes granted for an hour were still counted 2 s later, past the lease asked for")
	}
}

// M7: a voter refuses its own epoch from another incarnation of its owner
// (a master whose data directory was rolled back), and such a master takes
// a new epoch instead of writing a second log at the old one.
func TestRolledBackMasterCannotReuseEpoch(t *testing.T) {
	h := newHarness(t)
	cfg := voter.DefaultConfig(3, netip.MustParseAddr("10.0.1.3"), []wire.MasterID{1})
	v, _ := voter.New(cfg, roles.VoterHardState{MaxEpoch: 7, EpochOwner: 1, EpochInc: 4}, 0)
	h.v = v
	h.now = roles.Instant(cfg.MaxPromise + time.Second)
	h.run("reply from=1 role=ELECT epoch=7")
	acts := v.Step(h.now, roles.Heartbeat{From: 1, Incarnation: 2, Session: v.Session(), Seq: 1, Role: roles.Elect, Epoch: 7, Lease: 800 * time.Millisecond})
	var nack *roles.HeartbeatAck
	for _, s := range acts.Sends {
		if ack, ok := s.Msg.(roles.HeartbeatAck); ok {
			nack = &ack
		}
	}
	if nack == nil || nack.OK || nack.Reason != "epoch-reused" || nack.EpochInc != 4 {
		t.Fatalf("the voter did not refuse epoch 7 from incarnation 2 (it was given to incarnation 4): %+v", nack)
	}
	// The master's side: an ELECT at epoch 7 told its own epoch belongs to
	// another incarnation of itself moves above it.
	m := newHarness(t)
	m.run("master id=1 masters=1 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 acks=0 epoch=6")
	m.run("hello cs=1 nominate")
	m.run("hello cs=2")
	if m.m.Role() != roles.Elect || m.m.Epoch() != 7 {
		t.Fatalf("setup: %v at %d", m.m.Role(), m.m.Epoch())
	}
	hb := m.lastHB[1]
	m.m.Step(m.now, roles.HeartbeatAck{CS: 1, Session: hb.Session, Seq: hb.Seq, Reason: "epoch-reused", MaxEpoch: 7, EpochOwner: 1,
		EpochInc: m.m.Hard().Incarnation + 5, Addr: m.csAddr[1]})
	if m.m.Epoch() != 8 {
		t.Fatalf("an ELECT told its epoch was taken by another incarnation stayed at %d, want 8", m.m.Epoch())
	}
}

// M5 (review T1): a crash after a received snapshot's rename, before the
// log's trim commits, leaves a stored log that does not continue the
// snapshot. The core repairs the store before anything is appended.
func TestStoredLogRepairedAfterSnapshotInstall(t *testing.T) {
	entries, inForce := registryLog("1@10.0.1.1", "")
	for v := uint64(3); v <= 10; v++ {
		entries = append(entries, changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: 2}, Kind: changelog.EntryNoop})
	}
	snap := &namespace.Snapshot{Pos: changelog.Pos{Version: 15, Epoch: 4}, Latest: entries[1].Config, Previous: entries[0].Config, Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{}}
	cfg := DefaultConfig(2, []wire.MasterID{1, 2})
	m, acts := New(cfg, roles.Stored{Hard: roles.HardState{Commit: changelog.Pos{Version: 10, Epoch: 2}, InForce: inForce}, Snapshot: snap, Entries: entries}, 0)
	var repair *roles.Persist
	for _, p := range acts.Persist {
		if p.Trim != nil {
			repair = &p
		}
	}
	if repair == nil || repair.Trim.Pos != snap.Pos || repair.TruncateAfter == nil || *repair.TruncateAfter != 15 {
		t.Fatalf("no repair of the stored log: %v", acts)
	}
	if m.Log().Last() != snap.Pos {
		t.Fatalf("log last %v, want the snapshot's %v", m.Log().Last(), snap.Pos)
	}
}

// L1: an ELECT catching up fetches only from a master whose log is at
// least as new as the commit point its voters report, never from a stale
// master whose log is merely longer.
func TestCatchUpSourceNotStale(t *testing.T) {
	h := newHarness(t)
	h.run("master id=1 masters=1,2,3 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 acks=0 epoch=5")
	h.run("peer from=2 last=20@3")
	h.run("peer from=3 last=4@6")
	h.run("hello cs=1 nominate")
	h.run("hello cs=2")
	out := h.run("ack cs=1 commit=18@5 tag=5") + h.run("ack cs=2 commit=18@5 tag=5")
	if strings.Contains(out, "send M2 fetch") {
		t.Fatalf("fetched from the stale M2 (last 20@3) for commit 18@5:\n%s", out)
	}
	if !strings.Contains(out, "no-catch-up-source") {
		t.Fatalf("want no catch-up source (M2 stale, M3 short):\n%s", out)
	}
	h.run("peer from=3 last=19@6")
	h.run("time +200ms")
	if out := h.run("tick"); !strings.Contains(out, "send M3 fetch") {
		t.Fatalf("no fetch from M3 (last 19@6):\n%s", out)
	}
}

// H1: a flood of made-up chunkservers holds a bounded amount on the
// LEADER: ids handed out but never registered, and registrations queued.
func TestRegistrationFloodBounded(t *testing.T) {
	h := leaderOf3(t)
	refused := 0
	for i := 0; i < 2*MaxPendingRegistrations; i++ {
		addr := netip.AddrFrom4([4]byte{10, 7, byte(i / 250), byte(1 + i%250)})
		if _, ok := h.m.AssignID(addr, 9422); !ok {
			refused++
		}
	}
	if len(h.m.assigned) > MaxPendingRegistrations || refused != MaxPendingRegistrations {
		t.Fatalf("%d ids held for unregistered chunkservers, %d refused; want at most %d held", len(h.m.assigned), refused, MaxPendingRegistrations)
	}
	for i := 0; i < 2*MaxPendingRegistrations; i++ {
		cs := 100 + i
		h.run(fmt.Sprintf("hello cs=%d addr=10.8.%d.%d session=1", cs, i/250, 1+i%250))
		h.run(fmt.Sprintf("ack cs=%d", cs))
	}
	if len(h.m.toRegister) > MaxPendingRegistrations {
		t.Fatalf("%d registrations queued, want at most %d", len(h.m.toRegister), MaxPendingRegistrations)
	}
}

// M3: a LEADER resumed after a pause its monotonic clock did not count
// (a paused VM) still holds leases that look live. A read is answered only
// once a quorum acknowledged a heartbeat sent after the read arrived; here
// the voters have moved on to epoch 2 and refuse, so the read gets no
// answer from the old state and the LEADER steps down. With LeaseReads
// (the opt-in) the lease alone answers it.
func TestReadConfirmedAfterPause(t *testing.T) {
	h := leaderOf3(t)
	// Settle: everything in the log acknowledged.
	h.run("ack cs=1")
	h.run("ack cs=2")
	out := h.run("read client=2 seq=1 key=a")
	if strings.Contains(out, "send C2 reply") {
		t.Fatalf("a read was answered before any heartbeat sent after it was acknowledged:\n%s", out)
	}
	if !strings.Contains(out, "heartbeat") {
		t.Fatalf("a read did not start a heartbeat round:\n%s", out)
	}
	for _, cs := range []string{"1", "2"} {
		out = h.run("ack cs=" + cs + " nack=stale-epoch maxepoch=2 owner=2")
		if strings.Contains(out, "send C2 reply seq=1 ok") {
			t.Fatalf("the read was answered from the old state after the voters refused:\n%s", out)
		}
	}
	if h.m.Role() == roles.Leader {
		t.Fatal("the LEADER did not step down on the voters' refusal")
	}

	h = newHarness(t)
	h.run("master id=1 masters=1 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 acks=0")
	h.m.cfg.LeaseReads = true
	for _, cmd := range []string{"hello cs=1 nominate", "hello cs=2", "ack cs=1", "ack cs=2", "ack cs=1", "ack cs=2"} {
		h.run(cmd)
	}
	if out := h.run("read client=2 seq=1 key=a"); !strings.Contains(out, "send C2 reply seq=1 ok") {
		t.Fatalf("with LeaseReads a read was not answered from the lease:\n%s", out)
	}
}

// M8: a founder (a master wiped and re-initialised instead of started with
// -e) that finds a master of MASTER_HOST in another cluster does not
// bootstrap a second cluster beside it.
func TestFounderBesideAnotherClusterDoesNotBootstrap(t *testing.T) {
	h := newHarness(t)
	h.run("master id=1 masters=1,2 genesis")
	h.run("foreign master=2")
	for i := 0; i < 12; i++ {
		h.run("time +1s")
		h.run("tick")
	}
	if h.m.Role() != roles.Follower || h.m.Eligible() {
		t.Fatalf("a founder beside another cluster's master is %v (eligible %v)", h.m.Role(), h.m.Eligible())
	}
	// Without that master, it bootstraps as before.
	h = newHarness(t)
	h.run("master id=1 masters=1,2 genesis")
	for i := 0; i < 12 && h.m.Role() != roles.Leader; i++ {
		h.run("time +1s")
		h.run("tick")
	}
	if h.m.Role() != roles.Leader {
		t.Fatalf("a founder alone did not bootstrap: %v", h.m.Role())
	}
}

// H1: a registry stuffed with members that will never vote again (three
// made-up chunkservers that registered and left) cannot elect anybody, and
// removing them needs a LEADER. Repaired offline on every master
// (HardState.ForcedOut), the real chunkserver alone elects a LEADER, which
// writes the removals; once they are in force the record is cleared.
func TestForcedRemovalUnsticksStuffedRegistry(t *testing.T) {
	entries, inForce := registryLog("1@10.0.1.1,2@10.7.0.1,3@10.7.0.2,4@10.7.0.3", "")
	start := func(forced []wire.CSID) *harness {
		h := newHarness(t)
		var acts Batch
		h.m, acts = New(DefaultConfig(1, []wire.MasterID{1}), roles.Stored{Entries: entries,
			Hard: roles.HardState{Commit: changelog.Pos{Version: 2}, InForce: inForce, ForcedOut: forced}}, 0)
		h.format(ofMaster(acts))
		h.run("time 6s")
		h.run("hello cs=1 nominate")
		for i := 0; i < 3; i++ {
			h.run("ack cs=1")
		}
		return h
	}
	if h := start(nil); h.m.Role() == roles.Leader || h.m.Underway(h.now) != "" {
		t.Fatalf("one live chunkserver of four elected a LEADER: %v", h.m.Role())
	}
	if _, err := ForcedOutOf(entries[1].Config, []wire.CSID{1, 2, 3, 4}); err == nil {
		t.Fatal("a repair removing every member was accepted")
	}
	if _, err := ForcedOutOf(entries[1].Config, []wire.CSID{9}); err == nil {
		t.Fatal("a repair removing an unknown id was accepted")
	}
	forced, err := ForcedOutOf(entries[1].Config, []wire.CSID{4, 2, 3, 3})
	if err != nil {
		t.Fatal(err)
	}
	h := start(forced)
	if h.m.Role() != roles.Leader {
		t.Fatalf("after the repair: %v, want LEADER", h.m.Role())
	}
	for i := 0; i < 50 && len(h.m.Hard().ForcedOut) > 0; i++ {
		h.run("time +100ms")
		h.run("tick")
		h.run("ack cs=1")
	}
	if got := h.m.Registry().Members; len(got) != 1 || got[0].ID != 1 || len(h.m.Hard().ForcedOut) != 0 || h.m.Role() != roles.Leader {
		t.Fatalf("registry %v, forced out %v, %v; want CS1 alone, the record cleared, still LEADER", got, h.m.Hard().ForcedOut, h.m.Role())
	}
}

// H2 and C1: a peer that is not a registered member cannot start elections
// (each would take a new epoch), and a made-up session number for an id not
// registered yet does not lock the real holder out.
func TestUnregisteredPeersCannotNominateOrLockOut(t *testing.T) {
	h := newHarness(t)
	h.run("master id=2 masters=1,2 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 acks=0")
	for i, hello := range []string{
		"hello cs=5000 addr=10.9.9.9 session=1 nominate", // unregistered
		"hello cs=1 addr=10.9.9.9 session=2 nominate",    // a member's id, another address
	} {
		h.run("time +50ms")
		h.run(hello)
		if h.m.Role() != roles.Follower || h.m.Hard().Epoch != 0 {
			t.Fatalf("hello %d started an election: %v at epoch %d", i, h.m.Role(), h.m.Hard().Epoch)
		}
	}
	if h.run("hello cs=1 nominate"); h.m.Role() != roles.Elect {
		t.Fatalf("a member's nomination was not taken: %v", h.m.Role())
	}
	// Bootstrap: with an empty registry, an unregistered chunkserver may
	// nominate the founder.
	b := newHarness(t)
	b.run("master id=1 masters=1,2 genesis")
	if b.run("hello cs=7 addr=10.0.1.7 nominate"); b.m.Role() != roles.Leader {
		t.Fatalf("the founder was not elected on an unregistered chunkserver's nomination: %v", b.m.Role())
	}
	// A made-up session number for id 9 (not registered) from one address
	// does not keep the real chunkserver at another from opening its own.
	l := leaderOf3(t)
	l.run("hello cs=9 addr=10.9.9.9 session=9223372036854775807")
	l.run("hello cs=9 addr=10.0.1.9 session=4294967297")
	if v := l.m.voters[9]; v == nil || v.addr != netip.MustParseAddr("10.0.1.9") {
		t.Fatalf("the real holder of id 9 was locked out by a made-up session: %+v", v)
	}
}

// The start rules of docs/roles.md §6.4 as a table: only a record that may
// hide a standing promise makes a voter keep quiet.
func TestQuietAfterStart(t *testing.T) {
	cfg := voter.DefaultConfig(3, netip.MustParseAddr("10.0.1.3"), []wire.MasterID{1})
	lost := cfg
	lost.RecordLost = true
	for _, c := range []struct {
		name string
		cfg  voter.Config
		hard roles.VoterHardState
		want time.Duration
	}{
		{"never voted", cfg, roles.VoterHardState{}, 0},
		{"never voted, started before", cfg, roles.VoterHardState{Boot: 3}, 0},
		{"clean stop", cfg, roles.VoterHardState{MaxEpoch: 4, EpochOwner: 1, MaxGranted: 800 * time.Millisecond, CleanStop: true}, 0},
		{"crash after promising", cfg, roles.VoterHardState{MaxEpoch: 4, EpochOwner: 1, MaxGranted: 800 * time.Millisecond}, cfg.MaxPromise},
		{"crash, a longer promise once", cfg, roles.VoterHardState{EpochOwner: 1, MaxGranted: 10 * time.Second}, 10 * time.Second},
		{"crash, a record from before MaxGranted", cfg, roles.VoterHardState{MaxEpoch: 4, EpochOwner: 1}, cfg.MaxPromise},
		{"an empty record for a known member (wiped)", lost, roles.VoterHardState{}, cfg.MaxPromise},
	} {
		if got := voter.QuietAfterStart(c.cfg, c.hard); got != c.want {
			t.Errorf("%s: quiet %v, want %v", c.name, got, c.want)
		}
	}
}

// The clean-stop mark is cleared in the start's first Persist (which the
// driver makes durable before stepping the voter), and written only in
// the batch that says Stopped, after which nothing is granted.
func TestCleanStopMark(t *testing.T) {
	cfg := voter.DefaultConfig(3, netip.MustParseAddr("10.0.1.3"), []wire.MasterID{1})
	v, acts := voter.New(cfg, roles.VoterHardState{MaxEpoch: 4, EpochOwner: 1, MaxGranted: time.Second, CleanStop: true}, 0)
	for _, s := range acts.Sends {
		if s.Msg.MsgType() != (roles.Probe{}).MsgType() {
			t.Fatalf("start: %v, want the Persist, then probes only", acts)
		}
	}
	if len(acts.Persist) != 1 || acts.Persist[0].Voter == nil || acts.Persist[0].Voter.CleanStop || acts.Persist[0].Voter.Boot != 1 {
		t.Fatalf("start: %+v, want a Persist of the record with the mark cleared", acts.Persist)
	}
	if v.Hard().CleanStop {
		t.Fatal("the mark is still set in the running voter's record")
	}
	now := roles.Instant(time.Millisecond)
	v.Step(now, roles.ProbeReply{From: 1, Incarnation: 1, Role: roles.Leader, Epoch: 4, Eligible: true})
	if v.VoteFor() != 1 {
		t.Fatal("a voter whose last run stopped clean did not vote at once")
	}
	v.Step(now, roles.Heartbeat{From: 1, Incarnation: 1, Session: v.Session(), Seq: 1, Role: roles.Leader, Epoch: 4, Lease: time.Second})
	sess := v.Session()
	acts = v.Step(now, roles.StopRequested{})
	for _, p := range acts.Persist {
		if p.Voter != nil && p.Voter.CleanStop {
			t.Fatal("the mark was written while the promise stood")
		}
	}
	// A heartbeat of the old session is refused, not granted.
	for _, s := range v.Step(now, roles.Heartbeat{From: 1, Incarnation: 1, Session: sess, Seq: 2, Role: roles.Leader, Epoch: 4, Lease: time.Second}).Sends {
		if ack, ok := s.Msg.(roles.HeartbeatAck); ok && ack.OK {
			t.Fatal("a stopping voter granted a promise")
		}
	}
	acts = v.Step(now, roles.VoteRelease{From: 1, Incarnation: 1, Session: sess})
	marked := false
	for _, p := range acts.Persist {
		marked = p.Voter != nil && p.Voter.CleanStop
	}
	if !marked || !acts.Stopped || !v.Stopped() || v.NextDeadline() != roles.Never {
		t.Fatalf("after the release: %v", acts)
	}
}

// Ineligible names why a master may not be ELECT, for mfscli -SLQ: a
// master without metadata, a non-founder before any registration is in
// force (the founder gone early), and none for a founder or a master of a
// registry it could win.
func TestIneligibleReasons(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"master id=2 masters=1,2 empty", IneligibleNoMetadata},
		{"master id=2 masters=1,2 genesis founder=1", IneligibleFounder},
		{"master id=1 masters=1,2 genesis founder=1", ""},
		{"master id=2 masters=1,2 registry=1@10.0.1.1", ""},
	} {
		h := newHarness(t)
		h.run(c.cmd)
		if got := h.m.Ineligible(); got != c.want {
			t.Errorf("%s: %q, want %q", c.cmd, got, c.want)
		}
	}
	// The founder beside a master of another cluster says so, not merely
	// that only the founder can win (it is the founder).
	h := newHarness(t)
	h.run("master id=1 masters=1,2 genesis founder=1")
	h.run("foreign master=2")
	if got := h.m.Ineligible(); got != IneligibleForeign {
		t.Errorf("the founder beside another cluster's master: %q, want %q", got, IneligibleForeign)
	}
}

// Every grant leaves a durable record that shows it, before the
// acknowledgement that carries it is sent: MaxGranted at least the grant
// and an epoch owner named, so NeverPromised (which lets a start vote at
// once) never holds of a record from which a promise went out. Random
// heartbeats, keepalives, releases, refusals and ticks from three masters;
// the record is the last Persist carried out, in batch order.
func TestGrantsDurableBeforeSent(t *testing.T) {
	grants := 0
	for seed := uint64(1); seed <= 200; seed++ {
		r := seed*0x9E3779B97F4A7C15 | 1
		next := func(n uint64) uint64 {
			r ^= r << 13
			r ^= r >> 7
			r ^= r << 17
			return r % n
		}
		cfg := voter.DefaultConfig(2, netip.MustParseAddr("10.0.1.2"), []wire.MasterID{1, 2, 3})
		v, acts := voter.New(cfg, roles.VoterHardState{}, 0)
		var durable roles.VoterHardState
		carry := func(b voter.Batch) {
			for _, p := range b.Persist {
				if p.Voter != nil {
					durable = *p.Voter
				}
			}
			for _, s := range b.Sends {
				if ack, ok := s.Msg.(roles.HeartbeatAck); ok && ack.OK && ack.Granted > 0 {
					if durable.NeverPromised() || durable.MaxGranted < ack.Granted {
						t.Fatalf("seed %d: a grant of %v sent while the durable record is %+v", seed, ack.Granted, durable)
					}
					grants++
				}
			}
		}
		carry(acts)
		now := roles.Instant(0)
		epoch := uint64(1)
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(next(200)) * time.Millisecond)
			m := wire.MasterID(1 + next(3))
			var ev roles.Event
			switch next(6) {
			case 0:
				ev = roles.ProbeReply{From: m, Incarnation: 1, Role: []roles.Role{roles.Leader, roles.Elect, roles.Follower}[next(3)], Epoch: epoch, Eligible: true}
			case 1, 2:
				if next(4) == 0 {
					epoch++
				}
				ev = roles.Heartbeat{From: m, Incarnation: 1, Session: v.Session(), Seq: uint64(step), Role: roles.Leader, Epoch: epoch,
					Lease: time.Duration(next(3)) * 400 * time.Millisecond, Keepalive: next(5) == 0}
			case 3:
				ev = roles.VoteRelease{From: m, Incarnation: 1, Session: v.Session()}
			case 4:
				ev = roles.Refused{Master: m, SentAt: now}
			default:
				ev = roles.Tick{}
			}
			carry(v.Step(now, ev))
		}
	}
	if grants < 100 {
		t.Fatalf("only %d grants in 200 runs: the check saw too little", grants)
	}
	t.Logf("%d grants, each durable before it was sent", grants)
}

// A master restored from an older copy on a clock that is behind starts
// below the incarnation of the run it replaced: a peer takes its status
// once its view of that run is older than PeerTimeout (and ignores a
// lower incarnation while the view is fresh: a late status of a run that
// is gone).
func TestPeerTakesLowerIncarnationWhenStale(t *testing.T) {
	h := newHarness(t)
	h.run("master id=1 masters=1,2 registry=1@10.0.1.1 acks=0")
	m := h.m
	m.Step(h.now, roles.PeerStatus{From: 2, Incarnation: 10, Role: roles.Follower, Epoch: 1, MaxEpoch: 1})
	h.now = h.now.Add(m.cfg.PeerTimeout / 2)
	m.Step(h.now, roles.PeerStatus{From: 2, Incarnation: 5, Role: roles.Follower, Epoch: 1, MaxEpoch: 1})
	if got := m.peers[2].st.Incarnation; got != 10 {
		t.Fatalf("a fresh view took a lower incarnation: %d", got)
	}
	h.now = h.now.Add(m.cfg.PeerTimeout)
	m.Step(h.now, roles.PeerStatus{From: 2, Incarnation: 5, Role: roles.Follower, Epoch: 1, MaxEpoch: 1})
	if got := m.peers[2].st.Incarnation; got != 5 {
		t.Fatalf("a view older than PeerTimeout ignored the restored run: incarnation %d", got)
	}
}

// An ELECT adopts a voter's word that a config version is in force only
// from a voter whose commit point its own log holds: below it the logs are
// one, so the version names the same config entry. A voter that followed
// another LEADER, on a log that parted from this one, may know another
// config of the same number in force (simulator seed 283 with a witness:
// the ELECT put its own unacknowledged config in force on such a word and
// won on half of the sites, without entries a quorum had acknowledged).
func TestElectAdoptsInForceOnlyFromItsOwnLog(t *testing.T) {
	for _, tt := range []struct {
		commit string
		want   uint64
	}{
		{"9@7", 2}, // a position this log does not hold
		{"2@0", 3}, // one it holds
	} {
		h := newHarness(t)
		h.run("master id=1 masters=1 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 pending=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3,4@10.0.1.4,5@10.0.1.5 acks=0")
		h.run("hello cs=1 nominate")
		for _, cs := range []string{"2", "3"} {
			h.run("hello cs=" + cs)
		}
		for _, cs := range []string{"1", "2", "3"} {
			h.run("ack cs=" + cs + " inforce=3 reg=3 tag=7 commit=" + tt.commit)
		}
		if got := h.m.Hard().InForce; got != tt.want {
			t.Errorf("voters' commit %s: in force %d, want %d", tt.commit, got, tt.want)
		}
	}
}
