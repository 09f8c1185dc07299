package witness

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Instant is a reading of one node's monotonic clock in nanoseconds (the
// same as roles.Instant). Instants of two nodes are never compared.
type Instant int64

// Never is a deadline that is not set.
const Never Instant = 1<<63 - 1

func (i Instant) add(d time.Duration) Instant { return i + Instant(d) }

// Op is one call on the store.
type Op uint8

const (
	// Get reads the lease object.
	Get Op = 1 + iota
	// Create writes it only if it does not exist (If-None-Match: *).
	Create
	// Swap writes it only if its ETag is still Request.ETag (If-Match).
	Swap
	// Delete removes an object of the store log (never the lease, never
	// the log's head); a missing object is done.
	Delete
)

func (o Op) String() string {
	switch o {
	case Get:
		return "get"
	case Create:
		return "create"
	case Swap:
		return "swap"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Class is what an answer means (the driver classifies by HTTP status:
// internal/witness/s3store).
type Class uint8

const (
	// OK: done; a write's answer carries the new ETag, a read's the body.
	OK Class = iota
	// Absent: the object does not exist (a read).
	Absent
	// Conflict: the condition failed (412, 409, 404 on If-Match): not ours
	// now; read again, never assume.
	Conflict
	// Ambiguous: a timeout, a 5xx, a connection lost after sending: a
	// write may have landed. Read back before acting.
	Ambiguous
	// Refused: the store refuses us (credentials, bucket, no conditional
	// writes): retrying soon will not help.
	Refused
)

func (c Class) String() string {
	switch c {
	case OK:
		return "ok"
	case Absent:
		return "absent"
	case Conflict:
		return "conflict"
	case Ambiguous:
		return "ambiguous"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Request is a call for the driver to make. Exactly one is out at a time;
// its Result must come back with the same Seq (late ones are ignored).
type Request struct {
	Seq uint64
	Op  Op
	// Key is the object under the cluster's prefix: "" for the lease
	// (Key), else the store log's head or one of its objects (storelog.go).
	Key string
	// Batch: a Create of a store log object; the driver encodes it
	// (pkg/witness/logobj) and answers with its descriptor (Result.Object).
	Batch *LogBatch
	// Want: a Get of a store log object; the driver checks what it reads
	// against it and answers with the entries (Result.Batch).
	Want *LogObject
	ETag string // Swap: the ETag the object must still have
	Body []byte // Create, Swap
}

// Result is the driver's answer to a Request.
type Result struct {
	Seq   uint64
	Key   string // the Request's
	Class Class
	ETag  string // the object's ETag after a write, or as read
	Body  []byte // a Get's content
	// Object: a store log object's descriptor, on every answer to its
	// Create (its size and SHA-256 as sent, whatever the answer).
	Object *LogObject
	// Batch: a store log object read and checked against Request.Want
	// (nil, with Err, when it does not match).
	Batch *LogBatch
	Err   string // what the store said, for operators
}

// Want is what the master asks of the lease now.
type Want struct {
	// Need: hold the lease (the master holds, or is about to hold, exactly
	// half of the locations). False: give it up if held.
	Need bool
	// Epoch is the master's election epoch, written as lease_epoch.
	Epoch uint64
	// Commit is the commit point to write, KnownReg the registry version
	// (the record keeps the larger of each).
	Commit   changelog.Pos
	KnownReg uint64
	// Confirm: a write emitted from now on confirms that the master still
	// held the lease after this point (a LEADER's read round); the lease
	// writes at once while Confirm is above what its last write confirmed.
	Confirm uint64
	// WitnessID is the registry's witness ("" when none is configured: the
	// lease is never taken then).
	WitnessID string
}

// Tick only moves time on.
type Tick struct{}

// Self is who this master is.
type Self struct {
	ID          wire.MasterID
	Incarnation uint64
	Cluster     string
}

// Config holds the lease's timing (docs/architecture.md §7.4).
type Config struct {
	// Lease (D): how long a taker watches a held record unchanged, on its
	// own clock, before it swaps it.
	Lease time.Duration
	// Drift (rho): the bound on clock rates, as for vote leases.
	Drift float64
	// Margin is taken off the holder's count on top of the drift.
	Margin time.Duration
	// RenewEvery: a holder that still needs the lease writes it again this
	// long after its last write.
	RenewEvery time.Duration
	// CallTimeout is the driver's deadline per call; a call not answered in
	// twice that is taken as ambiguous.
	CallTimeout time.Duration
	// Backoff: the wait after an error before the next call.
	Backoff time.Duration
}

// DefaultConfig: a 10 s lease (a crashed holder's record is taken 10 s
// after a taker first reads it; a free one at once), renewed every 2.5 s
// while needed, calls bounded by 1 s.
func DefaultConfig() Config {
	return Config{Lease: 10 * time.Second, Drift: 0.01, Margin: 50 * time.Millisecond,
		RenewEvery: 2500 * time.Millisecond, CallTimeout: time.Second, Backoff: 500 * time.Millisecond}
}

// Counted is how long after sending a write that succeeded the holder
// counts the lease. Clock rates lie within [1-rho, 1+rho]: the holder's
// count lasts at most Counted/(1-rho) true time from the send; the write
// landed after the send and a taker first saw it after that, then waited
// Lease on its clock, at least Lease/(1+rho) true time. Counted =
// Lease(1-rho)/(1+rho) - Margin ends the count strictly first.
func (c Config) Counted() time.Duration {
	d := time.Duration(float64(c.Lease)*(1-c.Drift)/(1+c.Drift)) - c.Margin
	return max(d, 0)
}

// Validate names the first value that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Lease < time.Second || c.Lease > 10*time.Minute:
		return fmt.Errorf("witness lease %v: want 1s to 10m", c.Lease)
	case c.Drift < 0 || c.Drift > 0.1:
		return fmt.Errorf("witness drift %v: want 0 to 0.1", c.Drift)
	case c.Margin < 0 || c.Margin >= c.Lease/4:
		return fmt.Errorf("witness margin %v: want 0 to a quarter of the lease (%v)", c.Margin, c.Lease/4)
	case c.CallTimeout <= 0:
		return fmt.Errorf("witness call timeout %v: want > 0", c.CallTimeout)
	case c.RenewEvery <= 0 || c.RenewEvery+2*c.CallTimeout >= c.Counted():
		return fmt.Errorf("witness renewal every %v with calls of up to %v: a renewal must land before the lease counted from the last one ends (%v)",
			c.RenewEvery, c.CallTimeout, c.Counted())
	case c.Backoff <= 0:
		return fmt.Errorf("witness backoff %v: want > 0", c.Backoff)
	}
	return nil
}

// Lease is one master's side of the witness lease: a pure state machine.
// Inputs are Want, Result and Tick with a clock reading; outputs are the
// calls to make. It never blocks and never fails.
//
// Invariant (mutual exclusion, with the store's conditional PUT atomic):
// Until(now) > now for at most one master at any true instant. A master
// counts the lease only from a write of its own that the store accepted
// (or that a read-back showed landed), for Counted from when it emitted
// that write; it takes a record written by another only if the record was
// Free, or after watching its ETag unchanged for Lease from its first read
// of it, and only with a conditional swap on that ETag.
type Lease struct {
	cfg  Config
	self Self
	want Want

	// What this master last learned of the object.
	known  bool
	absent bool
	etag   string
	rec    Record
	recErr string  // the object could not be decoded (rec unset)
	seenAt Instant // first read of etag: the taker's wait counts from here

	// Ours: the last write of ours the store took.
	held      bool
	until     Instant
	heldETag  string
	heldRec   Record
	lastWrite Instant

	// The call out, if any.
	out       *Request
	outAt     Instant
	pending   Record  // the record a write out (or being verified) carries
	pendingAt Instant // when that write was emitted: a count runs from there
	// pendingConfirm: Want.Confirm when that write was emitted;
	// heldConfirm: the same of the last write of ours the store took.
	pendingConfirm, heldConfirm uint64
	verify                      bool // a read to tell whether an ambiguous write landed
	retryAt                     Instant
	seq                         uint64
	needFrom                    uint64 // the lowest epoch that may take the record (0: none)

	// unusable says why the store cannot be used now: it refused us, or
	// its lease object is not this cluster's witness ("" when usable).
	unusable string

	st Status
}

// Status is the lease as operators see it (mfscli, the status document,
// metrics).
type Status struct {
	// Known: the object was read or written (Record, ETag valid); Absent:
	// it does not exist.
	Known, Absent bool
	Record        Record
	ETag          string
	// Held: this master counts the lease now.
	Held bool
	// Waiting: watching another's held record until it may be taken.
	Waiting bool
	// Blocked says why the lease cannot be taken now ("" if it can).
	Blocked string
	// LastOp, LastClass, LastErr: the last answer; LastLatency its time.
	LastOp      Op
	LastClass   Class
	LastErr     string
	LastLatency time.Duration
	// LastWrite: when this master emitted the last write of its own that
	// the store took (held or free; 0: none since it started), for the
	// age the listings show.
	LastWrite Instant
	// Counts by operation and class.
	Calls map[Op]map[Class]uint64
}

// New returns the lease of master self.
func New(cfg Config, self Self) *Lease {
	return &Lease{cfg: cfg, self: self, st: Status{Calls: map[Op]map[Class]uint64{}}}
}

// Step takes one input and returns the call to make, if any.
func (l *Lease) Step(now Instant, in any) []Request {
	switch e := in.(type) {
	case Want:
		l.want = e
	case Result:
		l.onResult(now, e)
	case Tick:
	}
	return l.decide(now)
}

// Until is the instant up to which this master counts the lease (0 when
// it does not): it may count the witness's vote at t only while t < Until.
func (l *Lease) Until(now Instant) Instant {
	if !l.held || now >= l.until {
		return 0
	}
	return l.until
}

// HeldEpoch is the lease_epoch of the record this master counts: a master
// counts the witness only at that epoch.
func (l *Lease) HeldEpoch() uint64 { return l.heldRec.Epoch }

// HeldWitnessID is the witness id of the record this master counts.
func (l *Lease) HeldWitnessID() string { return l.heldRec.WitnessID }

// HeldConfirm is Want.Confirm as it was when this master emitted the
// write it counts the lease from.
func (l *Lease) HeldConfirm() uint64 { return l.heldConfirm }

// HeldKnownReg is the registry version in the record this master counts.
func (l *Lease) HeldKnownReg() uint64 { return l.heldRec.KnownReg }

// HeldCommit is the commit point in the record this master last wrote and
// counts: what the witness is known to hold for the ack rule.
func (l *Lease) HeldCommit() changelog.Pos { return l.heldRec.Commit.Changelog() }

// SeenCommit is the commit point in the record as last read or written: a
// master that counts the witness in an election must hold it before it
// leads.
func (l *Lease) SeenCommit() changelog.Pos {
	if !l.known || l.absent || l.recErr != "" {
		return changelog.Pos{}
	}
	return l.rec.Commit.Changelog()
}

// Unusable says why this master cannot take the lease whatever its epoch
// or log ("" when it can, as far as it knows): the store refuses it, or
// the object is missing or not this cluster's witness.
func (l *Lease) Unusable() string { return l.unusable }

// NeedEpoch is the epoch this master must rise above before it may take
// the record (0 if none): another master wrote it at this epoch or a
// higher one than ours.
func (l *Lease) NeedEpoch() uint64 { return l.needFrom }

// Status returns the lease as operators see it.
func (l *Lease) Status(now Instant) Status {
	s := l.st
	s.Known, s.Absent, s.Record, s.ETag = l.known, l.absent, l.rec, l.etag
	s.Held = l.Until(now) != 0
	return s
}

// NextDeadline is when the lease next needs a Tick.
func (l *Lease) NextDeadline() Instant {
	d := Never
	if l.out != nil {
		return l.outAt.add(2 * l.cfg.CallTimeout)
	}
	if l.retryAt != 0 {
		d = min(d, l.retryAt)
	}
	if l.held {
		d = min(d, l.until)
		if l.want.Need {
			d = min(d, l.lastWrite.add(l.cfg.RenewEvery))
		}
	}
	if l.want.Need && !l.held && l.known && !l.absent && l.st.Waiting {
		d = min(d, l.seenAt.add(l.cfg.Lease))
	}
	return d
}

func (l *Lease) onResult(now Instant, r Result) {
	if l.out == nil || r.Seq != l.out.Seq {
		return // late: a call given up on (the watchdog) or a duplicate
	}
	op := l.out.Op
	l.out = nil
	l.count(op, r.Class, r.Err, now)
	l.unusable = ""
	if r.Class == Refused {
		l.st.Blocked = "the store refuses: " + r.Err
		l.unusable = l.st.Blocked
		l.retryAt = now.add(10 * l.cfg.Backoff)
		l.verify = false
		return
	}
	switch op {
	case Get:
		l.onRead(now, r)
	default:
		l.onWrite(now, op, r)
	}
}

func (l *Lease) onRead(now Instant, r Result) {
	switch r.Class {
	case OK:
		if !l.known || l.absent || r.ETag != l.etag {
			l.seenAt = now // a new write: the wait starts again
		}
		l.known, l.absent, l.etag = true, false, r.ETag
		rec, err := Decode(r.Body)
		l.rec, l.recErr = rec, ""
		if err != nil {
			l.rec, l.recErr = Record{}, err.Error()
		}
		if l.verify {
			l.verify = false
			switch {
			case l.recErr == "" && l.mine(rec) && rec.Nonce == l.pending.Nonce:
				l.won(r.ETag, l.pending) // the ambiguous write landed
			case l.held && r.ETag == l.heldETag:
				// Our earlier write is still there: the lease counted from
				// it stands; the renewal did not land.
			default:
				l.held = false
			}
		}
	case Absent:
		l.known, l.absent, l.etag, l.rec, l.recErr = true, true, "", Record{}, ""
		if l.verify {
			l.verify, l.held = false, false
		}
	default:
		l.retryAt = now.add(l.cfg.Backoff)
	}
}

func (l *Lease) onWrite(now Instant, op Op, r Result) {
	switch r.Class {
	case OK:
		l.won(r.ETag, l.pending)
		l.seenAt = now
	case Conflict, Absent:
		// Not ours now. Whatever we held, another took it or it is gone:
		// stop counting at once (a holder's record is swapped only after
		// its count ended, so this is the safe side of a broken store).
		l.known, l.held = false, false
		l.st.LastErr = fmt.Sprintf("%s lost: %s", op, r.Err)
	default:
		// The write may have landed: read back before acting. A lease
		// counted from an earlier write stands meanwhile.
		l.verify = true
		l.retryAt = 0
	}
}

// won records a write of ours that is in the store.
func (l *Lease) won(etag string, rec Record) {
	l.known, l.absent, l.etag, l.rec, l.recErr = true, false, etag, rec, ""
	l.st.LastWrite = l.pendingAt
	if rec.State != Held {
		l.held = false
		return
	}
	// The count runs from when the write was emitted, never from its
	// answer.
	l.held, l.heldETag, l.heldRec = true, etag, rec
	l.until, l.lastWrite = l.pendingAt.add(l.cfg.Counted()), l.pendingAt
	l.heldConfirm = l.pendingConfirm
}

// mine: the record was written by this run of this master.
func (l *Lease) mine(r Record) bool {
	return r.Holder == l.self.ID && r.Incarnation == l.self.Incarnation
}

func (l *Lease) decide(now Instant) []Request {
	if l.out != nil {
		if now < l.outAt.add(2*l.cfg.CallTimeout) {
			return nil
		}
		// No answer: the driver lost it. Take it as ambiguous.
		l.onResult(now, Result{Seq: l.out.Seq, Class: Ambiguous, Err: "no answer within twice the call timeout"})
	}
	if l.held && now >= l.until {
		l.held = false
	}
	if now < l.retryAt {
		return nil
	}
	l.retryAt = 0
	if l.verify {
		return l.call(now, Get, "", Record{})
	}
	l.st.Waiting, l.needFrom = false, 0
	if !l.want.Need || l.want.WitnessID == "" {
		l.st.Blocked = ""
		return l.release(now)
	}
	if l.held {
		due := now >= l.lastWrite.add(l.cfg.RenewEvery)
		if due || l.want.Epoch > l.heldRec.Epoch || l.want.Commit.NewerThan(l.heldRec.Commit.Changelog()) || l.want.KnownReg > l.heldRec.KnownReg ||
			l.want.Confirm > l.heldConfirm {
			return l.call(now, Swap, l.heldETag, l.next(now))
		}
		return nil
	}
	if !l.known {
		return l.call(now, Get, "", Record{})
	}
	if l.absent {
		// The object is made once, when the witness is configured (its id
		// then goes into the registry); a missing one is not re-made here,
		// or two stores could come to carry the same id.
		l.st.Blocked = "the lease object " + Key + " does not exist: configure the witness again (mfscli -CWITNESS)"
		l.unusable = l.st.Blocked
		l.known = false
		l.retryAt = now.add(10 * l.cfg.Backoff)
		return nil
	}
	if l.recErr == "" {
		switch {
		case l.rec.WitnessID != l.want.WitnessID:
			return l.block(now, fmt.Sprintf("the lease object belongs to witness %q, the registry names %q", l.rec.WitnessID, l.want.WitnessID))
		case l.rec.Cluster != l.self.Cluster:
			return l.block(now, fmt.Sprintf("the lease object belongs to cluster %q, this is %q: one bucket prefix per cluster", l.rec.Cluster, l.self.Cluster))
		case !l.mine(l.rec) && l.rec.Epoch >= l.want.Epoch:
			l.needFrom = l.rec.Epoch
			l.st.Blocked = fmt.Sprintf("lease_epoch %d written by M%d; this master is at epoch %d and must rise above it", l.rec.Epoch, l.rec.Holder, l.want.Epoch)
			return nil
		case l.mine(l.rec) && l.rec.Epoch > l.want.Epoch:
			return l.block(now, fmt.Sprintf("lease_epoch %d is ahead of this master's epoch %d", l.rec.Epoch, l.want.Epoch))
		}
	}
	l.st.Blocked = ""
	// A record it cannot read is someone else's held one, for all it knows.
	free := l.recErr == "" && (l.rec.State == Free || l.mine(l.rec))
	if !free && now < l.seenAt.add(l.cfg.Lease) {
		l.st.Waiting = true
		return nil
	}
	return l.call(now, Swap, l.etag, l.next(now))
}

// block stops taking for a reason the store's content gives, and reads
// again later.
func (l *Lease) block(now Instant, why string) []Request {
	l.st.Blocked, l.unusable = why, why
	l.known = false
	l.retryAt = now.add(10 * l.cfg.Backoff)
	return nil
}

// release gives the lease up: the count stops before the write goes out,
// so an ambiguous answer needs no read-back.
func (l *Lease) release(now Instant) []Request {
	if !l.held && !(l.known && !l.absent && l.recErr == "" && l.mine(l.rec) && l.rec.State == Held) {
		return nil
	}
	etag := l.etag
	if l.held {
		etag = l.heldETag
	}
	l.held = false
	rec := l.next(now)
	rec.State = Free
	rec.Epoch = max(l.rec.Epoch, l.heldRec.Epoch, rec.Epoch)
	l.known = false // read afresh when next needed
	return l.call(now, Swap, etag, rec)
}

// next is the record this master writes to hold the lease.
func (l *Lease) next(now Instant) Record {
	commit := l.want.Commit
	if c := l.SeenCommit(); c.NewerThan(commit) {
		commit = c
	}
	if c := l.heldRec.Commit.Changelog(); l.held && c.NewerThan(commit) {
		commit = c
	}
	reg := l.want.KnownReg
	if l.known && !l.absent && l.recErr == "" {
		reg = max(reg, l.rec.KnownReg)
	}
	if l.held {
		reg = max(reg, l.heldRec.KnownReg)
	}
	l.seq++
	return Record{Format: Format, WitnessID: l.want.WitnessID, Cluster: l.self.Cluster, State: Held,
		Holder: l.self.ID, Incarnation: l.self.Incarnation, Epoch: l.want.Epoch, Commit: PosOf(commit), KnownReg: reg, Nonce: l.seq}
}

func (l *Lease) call(now Instant, op Op, etag string, rec Record) []Request {
	l.seq++
	req := Request{Seq: l.seq, Op: op, ETag: etag}
	if op != Get {
		l.pending, l.pendingAt, l.pendingConfirm = rec, now, l.want.Confirm
		req.Body = rec.Encode()
	}
	l.out, l.outAt = &req, now
	return []Request{req}
}

func (l *Lease) count(op Op, c Class, err string, now Instant) {
	m := l.st.Calls[op]
	if m == nil {
		m = map[Class]uint64{}
		l.st.Calls[op] = m
	}
	m[c]++
	l.st.LastOp, l.st.LastClass, l.st.LastErr, l.st.LastLatency = op, c, err, time.Duration(now-l.outAt)
}
