package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

func sampleHeartbeat() roles.Heartbeat {
	return roles.Heartbeat{From: 7, Incarnation: 99, Session: 1<<32 | 3, Seq: 41, Role: roles.Leader, Epoch: 5,
		Lease: 450 * time.Millisecond, RegVersion: 3, InForce: 3, Commit: changelog.Pos{Version: 120, Epoch: 5}, Rank: 1, Ranks: 3}
}

// TestDatagramSealOpen: a datagram opens under its key into the message
// sealed, and any change to it, another key, another kind or a header that
// names another session or sequence number than the message is refused.
func TestDatagramSealOpen(t *testing.T) {
	key, other := NewDatagramKey(), NewDatagramKey()
	hb := sampleHeartbeat()
	h := DgHeader{DgHeartbeat, 7, hb.Session, hb.Seq}
	b := SealDatagram(key, h, hb)
	if b == nil || len(b) > dgMax {
		t.Fatalf("sealed %d bytes", len(b))
	}
	got, err := parseDatagram(b, DgHeartbeat)
	if err != nil || got != h {
		t.Fatalf("header %+v, %v; want %+v", got, err, h)
	}
	m, err := openDatagram(b, key, got, DgMasterIn)
	if err != nil {
		t.Fatal(err)
	}
	if m.(roles.Heartbeat) != hb {
		t.Fatalf("opened %+v, sealed %+v", m, hb)
	}
	if _, err := parseDatagram(b, DgAck); err == nil {
		t.Fatal("a heartbeat datagram parsed as an acknowledgement")
	}
	if _, err := openDatagram(b, other, got, DgMasterIn); err == nil {
		t.Fatal("opened under another key")
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		if h2, err := parseDatagram(c, DgHeartbeat); err == nil {
			if _, err := openDatagram(c, key, h2, DgMasterIn); err == nil {
				t.Fatalf("byte %d changed and still opened", i)
			}
		}
	}
	for _, n := range []int{0, 10, dgHeaderLen, len(b) - 1} {
		if h2, err := parseDatagram(b[:n], DgHeartbeat); err == nil {
			if _, err := openDatagram(b[:n], key, h2, DgMasterIn); err == nil {
				t.Fatalf("cut to %d bytes and still opened", n)
			}
		}
	}
	// A header naming another sequence number than its message, under the
	// right key (a bug, or a peer replaying a message as a newer one).
	lie := SealDatagram(key, DgHeader{DgHeartbeat, 7, hb.Session, hb.Seq + 1}, hb)
	if h2, err := parseDatagram(lie, DgHeartbeat); err != nil {
		t.Fatal(err)
	} else if _, err := openDatagram(lie, key, h2, DgMasterIn); err == nil {
		t.Fatal("a header naming another sequence number than its message opened")
	}
	// A release travels as kind 3 with sequence number 0; a heartbeat
	// under that kind is refused.
	rel := roles.VoteRelease{From: 7, Incarnation: 99, Session: hb.Session, Next: 9}
	rb := SealDatagram(key, DgHeader{DgRelease, 7, rel.Session, 0}, rel)
	if h2, err := parseDatagram(rb, DgHeartbeat, DgRelease); err != nil {
		t.Fatal(err)
	} else if m, err := openDatagram(rb, key, h2, DgMasterIn); err != nil || m.(roles.VoteRelease) != rel {
		t.Fatalf("release opened as %+v, %v", m, err)
	}
	posed := SealDatagram(key, DgHeader{DgRelease, 7, hb.Session, hb.Seq}, hb)
	if h2, err := parseDatagram(posed, DgHeartbeat, DgRelease); err != nil {
		t.Fatal(err)
	} else if _, err := openDatagram(posed, key, h2, DgMasterIn); err == nil {
		t.Fatal("a heartbeat under the release kind opened")
	}
	long := roles.HeartbeatAck{CS: 3, Session: 1, Seq: 2, Reason: string(make([]byte, dgMax))}
	if SealDatagram(key, DgHeader{DgAck, 3, 1, 2}, long) != nil {
		t.Fatal("a message longer than a datagram was sealed")
	}
}

// TestSeqFilter: per peer and session, only rising sequence numbers pass;
// a later session starts over, an earlier one passes untouched.
func TestSeqFilter(t *testing.T) {
	f := SeqFilter{}
	steps := []struct {
		peer         uint32
		session, seq uint64
		want         bool
	}{
		{1, 10, 5, true},
		{1, 10, 5, false}, // the second copy
		{1, 10, 4, false}, // older
		{1, 10, 9, true},
		{2, 10, 1, true},  // another peer
		{1, 9, 100, true}, // an earlier session: the core refuses it
		{1, 10, 8, false}, // still filtered as session 10
		{1, 11, 1, true},  // a new session starts over
		{1, 10, 50, true}, // earlier again
		{1, 11, 1, false},
	}
	for i, s := range steps {
		if got := f.Admit(s.peer, s.session, s.seq); got != s.want {
			t.Fatalf("step %d %+v: admitted %v", i, s, got)
		}
	}
}

// FuzzDatagram: whatever arrives on a datagram port, parsing and opening
// it never panics, and a datagram that opens carries a message naming the
// session and sequence number of its header, under the one key that made
// it (the fuzzer does not hold it; a mutated MAC must not pass).
func FuzzDatagram(f *testing.F) {
	key := bytes.Repeat([]byte{7}, DgKeyLen)
	hb := sampleHeartbeat()
	f.Add(SealDatagram(key, DgHeader{DgHeartbeat, 7, hb.Session, hb.Seq}, hb))
	a := roles.HeartbeatAck{CS: 3, Session: 9, Seq: 12, OK: true, Granted: time.Second, Commit: changelog.Pos{Version: 4, Epoch: 2}}
	f.Add(SealDatagram(key, DgHeader{DgAck, 3, 9, 12}, a))
	f.Add([]byte(dgMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		for kind, reg := range map[uint8]*frame.Registry{DgHeartbeat: DgMasterIn, DgRelease: DgMasterIn, DgAck: DgAckIn} {
			h, err := parseDatagram(b, kind)
			if err != nil {
				continue
			}
			m, err := openDatagram(b, key, h, reg)
			if err != nil {
				continue
			}
			var session, seq uint64
			switch v := m.(type) {
			case roles.Heartbeat:
				session, seq = v.Session, v.Seq
			case roles.HeartbeatAck:
				session, seq = v.Session, v.Seq
			case roles.VoteRelease:
				session = v.Session
			default:
				t.Fatalf("opened a %T", m)
			}
			if session != h.Session || seq != h.Seq {
				t.Fatalf("header %+v, message %d/%d", h, session, seq)
			}
		}
	})
}
