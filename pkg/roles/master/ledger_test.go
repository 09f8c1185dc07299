package master

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

func newLedger() *election { return &election{voters: map[wire.CSID]*voterRec{}, idsOK: true} }

// counted is a counted lease of a quarter less than granted.
func counted(g time.Duration) time.Duration { return g * 3 / 4 }

var ledgerAddr = netip.MustParseAddr("10.0.1.1")

// A vote counts until the heartbeat's send time plus the counted lease of
// what was granted, never of more than was asked.
func TestLedgerGrantCapsAtAsked(t *testing.T) {
	e := newLedger()
	v := &voterRec{session: 7, addr: ledgerAddr}
	e.open(1, v, 0, 3)
	sent := sentHB{at: roles.Instant(time.Second), epoch: 3, lease: 800 * time.Millisecond}
	if !e.grant(v, roles.HeartbeatAck{CS: 1, Seq: 5, Granted: time.Hour}, sent, roles.Instant(2*time.Second), 3, counted) {
		t.Fatal("a fresh grant was refused")
	}
	if want := roles.Instant(time.Second + 600*time.Millisecond); v.validUntil != want {
		t.Fatalf("a grant of an hour counts until %v, want %v (the asked lease, counted)", v.validUntil, want)
	}
	if v.ackedSeq != 5 || v.ackEpoch != 3 || e.lastVoteSeen != roles.Instant(2*time.Second) {
		t.Fatalf("recorded %+v, last vote seen %v", v, e.lastVoteSeen)
	}
	if !v.countsAt(roles.Instant(1500*time.Millisecond), 3) || v.countsAt(roles.Instant(1600*time.Millisecond), 3) || v.countsAt(0, 4) {
		t.Fatal("countsAt disagrees with validUntil and the epoch")
	}
}

// A grant shorter than asked is remembered (rounds must come within it),
// and shortening a vote's lease moves votersGen: a cached deadline that
// counted on the longer lease no longer holds.
func TestLedgerShortGrant(t *testing.T) {
	e := newLedger()
	v := &voterRec{session: 7, addr: ledgerAddr}
	e.open(1, v, 0, 3)
	e.grant(v, roles.HeartbeatAck{Seq: 1, Granted: time.Second}, sentHB{at: 0, epoch: 3, lease: time.Second}, 0, 3, counted)
	gen := e.votersGen
	// At a newer epoch, a shorter grant replaces the longer one.
	e.grant(v, roles.HeartbeatAck{Seq: 2, Granted: 100 * time.Millisecond}, sentHB{at: 0, epoch: 4, lease: time.Second}, 0, 4, counted)
	if e.shortGrant != 100*time.Millisecond {
		t.Fatalf("short grant %v, want 100ms", e.shortGrant)
	}
	if v.validUntil != roles.Instant(75*time.Millisecond) || e.votersGen == gen {
		t.Fatalf("shortened to %v with votersGen %d -> %d: the caches were not told", time.Duration(v.validUntil), gen, e.votersGen)
	}
}

// An ack of a heartbeat older than the epoch the voter already
// acknowledged changes nothing.
func TestLedgerStaleGrant(t *testing.T) {
	e := newLedger()
	v := &voterRec{session: 7, addr: ledgerAddr, ackEpoch: 5, validUntil: 10}
	e.open(1, v, 0, 5)
	v.ackEpoch, v.validUntil = 5, 10
	if e.grant(v, roles.HeartbeatAck{Seq: 1, Granted: time.Second}, sentHB{epoch: 4, lease: time.Second}, 0, 5, counted) {
		t.Fatal("an ack of an older epoch's heartbeat was recorded")
	}
	if v.validUntil != 10 || v.ackEpoch != 5 {
		t.Fatalf("a stale ack changed the record: %+v", v)
	}
}

// A new session of the same voter process at the same address, after its
// connection closed from its side, carries the vote on; any other new
// session ends the old one's count.
func TestLedgerOpen(t *testing.T) {
	now, epoch := roles.Instant(time.Second), uint64(3)
	base := func(detached bool) (*election, *voterRec) {
		e := newLedger()
		old := &voterRec{session: 1<<32 | 1, addr: ledgerAddr, port: 9422, validUntil: 2 * now, ackEpoch: epoch, ackedSeq: 9, detached: detached}
		e.open(1, old, 0, epoch)
		old.validUntil, old.ackEpoch, old.ackedSeq = 2*now, epoch, 9
		return e, old
	}
	for _, tt := range []struct {
		name     string
		detached bool
		rec      voterRec
		carried  bool
		sessions bool // sessionsGen moves
	}{
		{"back after its connection closed", true, voterRec{session: 1<<32 | 2, addr: ledgerAddr, port: 9422}, true, false},
		{"a new boot", true, voterRec{session: 2<<32 | 1, addr: ledgerAddr, port: 9422}, false, false},
		{"not detached", false, voterRec{session: 1<<32 | 2, addr: ledgerAddr, port: 9422}, false, false},
		{"another port", true, voterRec{session: 1<<32 | 2, addr: ledgerAddr, port: 9423}, false, true},
	} {
		e, _ := base(tt.detached)
		gen, sgen := e.votersGen, e.sessionsGen
		rec := tt.rec
		e.open(1, &rec, now, epoch)
		if got := rec.countsAt(now, epoch); got != tt.carried {
			t.Errorf("%s: the new session counts %v, want %v", tt.name, got, tt.carried)
		}
		if tt.carried && (rec.ackedSeq != 9 || e.votersGen != gen) {
			t.Errorf("%s: carried %+v, votersGen %d -> %d", tt.name, rec, gen, e.votersGen)
		}
		if !tt.carried && e.votersGen == gen {
			t.Errorf("%s: a counting vote ended without moving votersGen", tt.name)
		}
		if moved := e.sessionsGen != sgen; moved != tt.sessions {
			t.Errorf("%s: sessionsGen moved %v, want %v", tt.name, moved, tt.sessions)
		}
		if e.voters[1] != &rec {
			t.Errorf("%s: the new session is not the one recorded", tt.name)
		}
	}
}

// Dropping a session forgets its id and moves the generations: always
// sessionsGen, votersGen only when its vote counted.
func TestLedgerDrop(t *testing.T) {
	e := newLedger()
	v := &voterRec{session: 1, addr: ledgerAddr}
	e.open(1, v, 0, 3)
	v.validUntil, v.ackEpoch = 10, 3
	e.idsOK = true
	gen, sgen := e.votersGen, e.sessionsGen
	e.drop(1, 5, 3)
	if e.voters[1] != nil || e.idsOK || e.votersGen == gen || e.sessionsGen == sgen {
		t.Fatalf("after the drop: voters %v idsOK %v votersGen %d -> %d sessionsGen %d -> %d", e.voters, e.idsOK, gen, e.votersGen, sgen, e.sessionsGen)
	}
	e.drop(1, 5, 3) // gone already: nothing moves
	if e.sessionsGen != sgen+1 {
		t.Fatal("dropping an absent session moved sessionsGen")
	}
}
