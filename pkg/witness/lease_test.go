package witness

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// fakeStore is a linearizable lease object whose ETag is the MD5 of the
// content, as on most S3 stores.
type fakeStore struct {
	exists bool
	etag   string
	body   []byte
	writes int
}

func (s *fakeStore) apply(req Request) Result {
	switch req.Op {
	case Get:
		if !s.exists {
			return Result{Seq: req.Seq, Class: Absent, Err: "NoSuchKey"}
		}
		return Result{Seq: req.Seq, Class: OK, ETag: s.etag, Body: append([]byte(nil), s.body...)}
	case Create:
		if s.exists {
			return Result{Seq: req.Seq, Class: Conflict, Err: "412 PreconditionFailed"}
		}
	case Swap:
		if !s.exists {
			return Result{Seq: req.Seq, Class: Conflict, Err: "404 NoSuchKey"}
		}
		if s.etag != req.ETag {
			return Result{Seq: req.Seq, Class: Conflict, Err: "412 PreconditionFailed"}
		}
	}
	sum := md5.Sum(req.Body)
	s.exists, s.etag, s.body = true, hex.EncodeToString(sum[:]), append([]byte(nil), req.Body...)
	s.writes++
	return Result{Seq: req.Seq, Class: OK, ETag: s.etag}
}

func (s *fakeStore) record(t *testing.T) Record {
	t.Helper()
	r, err := Decode(s.body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const wid = "w-0001"

func seeded(rec Record) *fakeStore {
	s := &fakeStore{}
	rec.Format, rec.WitnessID, rec.Cluster = Format, wid, "c1"
	s.apply(Request{Op: Create, Body: rec.Encode()})
	return s
}

// drive runs the lease against the store until it asks for nothing, at
// instant now; it returns the calls made.
func drive(t *testing.T, l *Lease, s *fakeStore, now Instant, in any) []Op {
	t.Helper()
	var ops []Op
	reqs := l.Step(now, in)
	for i := 0; len(reqs) > 0; i++ {
		if i > 20 {
			t.Fatalf("the lease kept calling at one instant: %v", ops)
		}
		ops = append(ops, reqs[0].Op)
		reqs = l.Step(now, s.apply(reqs[0]))
	}
	return ops
}

func newLease(id wire.MasterID) *Lease {
	return New(DefaultConfig(), Self{ID: id, Incarnation: 100 + uint64(id), Cluster: "c1"})
}

func need(epoch uint64) Want { return Want{Need: true, Epoch: epoch, WitnessID: wid} }

func sec(s float64) Instant { return Instant(s * float64(time.Second)) }

func TestTakeFreeRecordAtOnce(t *testing.T) {
	s := seeded(Record{State: Free, Holder: 2, Incarnation: 7, Epoch: 3})
	l := newLease(1)
	ops := drive(t, l, s, sec(1), need(4))
	if got := l.Until(sec(1)); got != sec(1).add(DefaultConfig().Counted()) {
		t.Fatalf("a free record was not taken at once: calls %v, until %v", ops, got)
	}
	if r := s.record(t); r.Holder != 1 || r.State != Held || r.Epoch != 4 {
		t.Fatalf("record after the take: %+v", r)
	}
}

func TestWaitOutAnothersHeldRecord(t *testing.T) {
	s := seeded(Record{State: Held, Holder: 2, Incarnation: 7, Epoch: 3})
	l := newLease(1)
	drive(t, l, s, sec(1), need(4))
	if l.Until(sec(1)) != 0 || !l.Status(sec(1)).Waiting {
		t.Fatalf("took another's held record without waiting: %+v", l.Status(sec(1)))
	}
	if d := l.NextDeadline(); d != sec(11) {
		t.Fatalf("next deadline %v, want the read plus the lease (11s)", time.Duration(d))
	}
	drive(t, l, s, sec(10.9), Tick{})
	if l.Until(sec(10.9)) != 0 {
		t.Fatal("took it before the lease had passed")
	}
	drive(t, l, s, sec(11), Tick{})
	if l.Until(sec(11)) == 0 {
		t.Fatalf("did not take it after watching it unchanged for the lease: %+v", l.Status(sec(11)))
	}
}

// The holder renews while the taker waits: the taker's swap fails, it reads
// the new record and starts watching again.
func TestRenewalDefeatsTaker(t *testing.T) {
	s := &fakeStore{}
	holder, taker := newLease(2), newLease(1)
	s.apply(Request{Op: Create, Body: Record{Format: Format, WitnessID: wid, Cluster: "c1", State: Free, Holder: 9, Incarnation: 1}.Encode()})
	drive(t, holder, s, sec(0), need(3))
	drive(t, taker, s, sec(0.5), need(4))
	for now := 1.0; now <= 30; now += 0.5 {
		drive(t, holder, s, sec(now), Tick{})
		drive(t, taker, s, sec(now), Tick{})
		if holder.Until(sec(now)) == 0 {
			t.Fatalf("the holder lost a lease it renewed, at %vs", now)
		}
		if taker.Until(sec(now)) != 0 {
			t.Fatalf("the taker took a lease its holder kept renewing, at %vs", now)
		}
	}
	if n := taker.Status(sec(30)).Calls[Swap][Conflict]; n < 2 {
		t.Fatalf("the taker tried to swap %d times in 30s; it should try once per lease and lose", n)
	}
}

func TestEpochRules(t *testing.T) {
	s := seeded(Record{State: Free, Holder: 2, Incarnation: 7, Epoch: 5})
	l := newLease(1)
	drive(t, l, s, sec(1), need(5))
	if l.Until(sec(1)) != 0 || l.NeedEpoch() != 5 {
		t.Fatalf("took a record at its own epoch from another master (need %d): %+v", l.NeedEpoch(), l.Status(sec(1)))
	}
	drive(t, l, s, sec(1), need(6))
	if l.Until(sec(1)) == 0 || s.record(t).Epoch != 6 {
		t.Fatalf("did not take it at a higher epoch: %+v", s.record(t))
	}
	// Its own record, from this run, at a new epoch: at once.
	drive(t, l, s, sec(2), Want{Epoch: 6, WitnessID: wid}) // released
	drive(t, l, s, sec(3), need(7))
	if l.Until(sec(3)) == 0 || l.HeldEpoch() != 7 {
		t.Fatalf("did not retake its own record at its new epoch: %+v", s.record(t))
	}
}

func TestRefusesForeignRecords(t *testing.T) {
	for _, tt := range []struct {
		name string
		rec  Record
		want string
	}{
		{"other witness", Record{Format: Format, WitnessID: "w-9999", Cluster: "c1", State: Free, Holder: 2}, "belongs to witness"},
		{"other cluster", Record{Format: Format, WitnessID: wid, Cluster: "c2", State: Free, Holder: 2}, "belongs to cluster"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeStore{}
			s.apply(Request{Op: Create, Body: tt.rec.Encode()})
			l := newLease(1)
			drive(t, l, s, sec(1), need(4))
			st := l.Status(sec(1))
			if l.Until(sec(1)) != 0 || !strings.Contains(st.Blocked, tt.want) || s.writes != 1 {
				t.Fatalf("blocked %q (want %q), writes %d", st.Blocked, tt.want, s.writes)
			}
		})
	}
	// A missing object is not made again by a master.
	s := &fakeStore{}
	l := newLease(1)
	drive(t, l, s, sec(1), need(4))
	if s.exists || !strings.Contains(l.Status(sec(1)).Blocked, "does not exist") {
		t.Fatalf("a missing lease object: exists %v, blocked %q", s.exists, l.Status(sec(1)).Blocked)
	}
}

// An unreadable record is someone's held one for all a taker knows: it
// waits the lease out before it overwrites it.
func TestUnreadableRecordIsWaitedOut(t *testing.T) {
	s := &fakeStore{}
	s.apply(Request{Op: Create, Body: []byte("{garbage")})
	l := newLease(1)
	drive(t, l, s, sec(1), need(4))
	if l.Until(sec(1)) != 0 {
		t.Fatal("overwrote an unreadable record at once")
	}
	drive(t, l, s, sec(11), Tick{})
	if l.Until(sec(11)) == 0 {
		t.Fatalf("never took over an unreadable record: %+v", l.Status(sec(11)))
	}
}

// An ambiguous write is read back: it counts (from when it was sent) if it
// landed, and not otherwise; never assumed either way.
func TestAmbiguousWriteIsReadBack(t *testing.T) {
	for _, landed := range []bool{true, false} {
		s := seeded(Record{State: Free, Holder: 2, Incarnation: 7, Epoch: 3})
		l := newLease(1)
		reqs := l.Step(sec(1), need(4))
		if len(reqs) != 1 || reqs[0].Op != Get {
			t.Fatalf("first call %v", reqs)
		}
		reqs = l.Step(sec(1), s.apply(reqs[0]))
		if len(reqs) != 1 || reqs[0].Op != Swap {
			t.Fatalf("second call %v", reqs)
		}
		if landed {
			s.apply(reqs[0])
		}
		reqs = l.Step(sec(1.5), Result{Seq: reqs[0].Seq, Class: Ambiguous, Err: "timeout"})
		if l.Until(sec(1.5)) != 0 {
			t.Fatal("counted an ambiguous write before reading it back")
		}
		if len(reqs) != 1 || reqs[0].Op != Get {
			t.Fatalf("after an ambiguous write: %v, want a read-back", reqs)
		}
		l.Step(sec(1.6), s.apply(reqs[0]))
		held := l.Until(sec(1.6)) != 0
		if held != landed {
			t.Fatalf("landed %v, counted %v", landed, held)
		}
		if landed && l.Until(sec(1.6)) != sec(1).add(DefaultConfig().Counted()) {
			t.Fatal("a write that landed counted from its answer, not from when it was sent")
		}
	}
}

// A call the driver never answers is taken as ambiguous after twice the
// call timeout; its late answer is ignored.
func TestWatchdog(t *testing.T) {
	s := seeded(Record{State: Free, Holder: 2, Incarnation: 7, Epoch: 3})
	l := newLease(1)
	get := l.Step(sec(1), need(4))
	swap := l.Step(sec(1), s.apply(get[0]))
	s.apply(swap[0]) // landed, answer lost
	if reqs := l.Step(sec(2.9), Tick{}); len(reqs) != 0 {
		t.Fatalf("gave up before twice the call timeout: %v", reqs)
	}
	reqs := l.Step(sec(3), Tick{})
	if len(reqs) != 1 || reqs[0].Op != Get {
		t.Fatalf("no read-back after the watchdog: %v", reqs)
	}
	l.Step(sec(3), Result{Seq: swap[0].Seq, Class: OK, ETag: "late"}) // ignored
	l.Step(sec(3), s.apply(reqs[0]))
	if l.Until(sec(3)) == 0 || l.Status(sec(3)).ETag == "late" {
		t.Fatalf("after the read-back: %+v", l.Status(sec(3)))
	}
}

func TestRenewReleaseAndCommit(t *testing.T) {
	s := seeded(Record{State: Free, Holder: 2, Incarnation: 7, Epoch: 3, Commit: Pos{Version: 40, Epoch: 3}})
	l := newLease(1)
	w := need(4)
	w.Commit = changelog.Pos{Version: 30, Epoch: 3}
	drive(t, l, s, sec(0), w)
	if c := s.record(t).Commit; c.Version != 40 {
		t.Fatalf("the record's commit went down to %+v", c)
	}
	if ops := drive(t, l, s, sec(2), Tick{}); len(ops) != 0 {
		t.Fatalf("renewed early: %v", ops)
	}
	if ops := drive(t, l, s, sec(2.5), Tick{}); len(ops) != 1 || ops[0] != Swap {
		t.Fatalf("no renewal after RenewEvery: %v", ops)
	}
	w.Commit = changelog.Pos{Version: 45, Epoch: 4}
	if ops := drive(t, l, s, sec(2.6), w); len(ops) != 1 || s.record(t).Commit.Version != 45 || l.HeldCommit().Version != 45 {
		t.Fatalf("a newer commit point was not written at once: %v %+v", ops, s.record(t))
	}
	drive(t, l, s, sec(3), Want{Epoch: 4, WitnessID: wid})
	if l.Until(sec(3)) != 0 || s.record(t).State != Free || s.record(t).Commit.Version != 45 {
		t.Fatalf("release: until %v, record %+v", l.Until(sec(3)), s.record(t))
	}
	if ops := drive(t, l, s, sec(60), Tick{}); len(ops) != 0 {
		t.Fatalf("calls at rest: %v", ops)
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.RenewEvery = 9 * time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "renewal") {
		t.Fatalf("a renewal that cannot land in time was accepted: %v", err)
	}
	if got := DefaultConfig().Counted(); got >= 10*time.Second*99/101 {
		t.Fatalf("counted %v is not below lease(1-rho)/(1+rho)", got)
	}
}

func TestDecodeChecksEveryField(t *testing.T) {
	good := Record{Format: Format, WitnessID: wid, Cluster: "c1", State: Held, Holder: 1, Epoch: 2}
	if _, err := Decode(good.Encode()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"format":2,"witness_id":"w","cluster":"c","state":"held","holder":1}`, "format 2"},
		{`{"format":1,"witness_id":"","cluster":"c","state":"held","holder":1}`, "witness_id"},
		{`{"format":1,"witness_id":"w","cluster":"c","state":"mine","holder":1}`, "state"},
		{`{"format":1,"witness_id":"w","cluster":"c","state":"held","holder":0}`, "no holder"},
		{`{"format":1,"witness_id":"w","cluster":"c","state":"held","holder":1,"extra":1}`, "unknown field"},
		{strings.Repeat(" ", MaxRecordSize+1), "bytes"},
	} {
		if _, err := Decode([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.60s: %v, want %q", tt.body, err, tt.want)
		}
	}
}

// TestCountEndsBeforeTake is the bound at its tightest: the holder's clock
// at the slowest rate, the taker's at the fastest, the taker's first read
// at the very instant the holder's write was sent. The holder's count
// still ends (in true time) before the taker may swap.
func TestCountEndsBeforeTake(t *testing.T) {
	for _, rho := range []float64{0, 0.001, 0.01, 0.05, 0.1} {
		for _, lease := range []time.Duration{time.Second, 10 * time.Second, 10 * time.Minute} {
			c := Config{Lease: lease, Drift: rho, Margin: 0}
			holderEnds := float64(c.Counted()) / (1 - rho)
			takerSwaps := float64(c.Lease) / (1 + rho)
			if holderEnds > takerSwaps {
				t.Errorf("rho %v lease %v: the holder counts until %.0f ns, the taker swaps at %.0f ns", rho, lease, holderEnds, takerSwaps)
			}
		}
	}
}

// TestStatusLastWrite: the status says when this master sent the last
// write of its own the store took (the listings show its age): none
// before, the take, then each renewal, then the release.
func TestStatusLastWrite(t *testing.T) {
	s := seeded(Record{State: Free, Holder: 2, Incarnation: 7, Epoch: 3})
	l := newLease(1)
	if w := l.Status(sec(0.5)).LastWrite; w != 0 {
		t.Fatalf("a last write before any: %v", w)
	}
	drive(t, l, s, sec(1), need(4))
	if w := l.Status(sec(1)).LastWrite; w != sec(1) {
		t.Fatalf("last write %v after the take at %v", w, sec(1))
	}
	drive(t, l, s, sec(4), Tick{}) // past RenewEvery: renewed
	if w := l.Status(sec(4)).LastWrite; w != sec(4) {
		t.Fatalf("last write %v after the renewal at %v", w, sec(4))
	}
	drive(t, l, s, sec(5), Want{Epoch: 4, WitnessID: wid}) // not needed: set free
	if w := l.Status(sec(5)).LastWrite; w != sec(5) || s.record(t).State != Free {
		t.Fatalf("last write %v, record %+v after the release at %v", w, s.record(t), sec(5))
	}
}
