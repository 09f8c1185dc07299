package master

import (
	"fmt"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// The store log's calls on the object store and their answers: the
// objects and head written, the head and objects read back (storelog.go
// has the rules they serve).

// putObject writes the changes after last as one object (create-only,
// under a key no other write uses).
func (m *Master) putObject(last changelog.Pos) {
	es := m.log.From(last.Version, 64*maxBatch, 4*maxBatchBytes)
	if len(es) == 0 {
		return
	}
	b := &witness.LogBatch{Format: witness.LogFormat, Cluster: m.cfg.Witness.Cluster,
		WitnessID: m.Registry().Witness, Epoch: m.hard.Epoch, Holder: m.cfg.ID, Prev: last, Entries: es}
	key := witness.ObjectKey(m.hard.Epoch, witness.PosOf(last), witness.PosOf(es[len(es)-1].Pos), m.storeNonce())
	m.storeRequest(&logCall{op: witness.Create, key: key, batch: b})
}

// writeHead swaps the head to name base and objs at this epoch (creates
// it when there is none), with the head's snapshot while it is at base.
func (m *Master) writeHead(base changelog.Pos, objs []witness.LogObject) {
	var snap *witness.LogObject
	if h := m.srHead; h != nil && h.Snapshot != nil && h.Snapshot.Last.Changelog() == base {
		snap = h.Snapshot
	}
	m.writeHeadWith(snap, base, objs)
}

func (m *Master) writeHeadWith(snap *witness.LogObject, base changelog.Pos, objs []witness.LogObject) {
	h := witness.LogHead{Format: witness.LogFormat, WitnessID: m.Registry().Witness, Cluster: m.cfg.Witness.Cluster,
		Epoch: m.hard.Epoch, Holder: m.cfg.ID, Base: witness.PosOf(base), Snapshot: snap, Objects: objs, Nonce: m.storeNonce()}
	c := &logCall{op: witness.Swap, key: witness.LogKey, etag: m.srETag, head: &h, body: h.Encode()}
	if m.srETag == "" {
		c.op = witness.Create
	}
	m.storeRequest(c)
}

// storeNonce is unique to this call of this run of this master.
func (m *Master) storeNonce() uint64 {
	return uint64(m.cfg.ID)<<48 ^ m.hard.Incarnation<<24 ^ m.srSeq + 1
}

func (m *Master) storeRequest(c *logCall) {
	m.srSeq++
	c.seq, c.at = m.srSeq, m.now
	m.srCall = c
	req := witness.Request{Seq: c.seq, Op: c.op, Key: c.key, ETag: c.etag, Body: c.body, Batch: c.batch}
	if c.op == witness.Get && c.obj != nil {
		req.Want = c.obj
	}
	m.out.Witness = append(m.out.Witness, req)
}

// onStoreResult takes the answer to the call out.
func (m *Master) onStoreResult(r witness.Result) {
	c := m.srCall
	switch {
	case m.srDel != nil && r.Seq == m.srDel.seq:
		c, m.srDel = m.srDel, nil
	case c == nil || r.Seq != c.seq:
		m.ignore("stale-store-answer")
		return
	default:
		m.srCall = nil
	}
	fail := func(why string) {
		m.srErr = why
		m.srAgain = m.now.Add(m.cfg.PeerInterval)
	}
	switch {
	case r.Class == witness.Refused:
		fail(fmt.Sprintf("%s %s refused: %s", c.op, c.key, r.Err))
		m.srAgain = m.now.Add(10 * m.cfg.PeerInterval)
	case c.op == witness.Delete:
		if r.Class == witness.OK || r.Class == witness.Absent {
			m.srGarbage = dropKey(m.srGarbage, c.key)
		} else {
			fail(fmt.Sprintf("delete %s: %s %s", c.key, r.Class, r.Err))
		}
	case c.key == witness.LogKey && c.op == witness.Get:
		m.onHeadRead(c, r)
	case c.key == witness.LogKey:
		m.onHeadWritten(c, r)
	case c.op == witness.Get && c.back:
		// A read-back of an object whose write was ambiguous.
		if r.Class == witness.OK && r.Batch != nil {
			o := *c.obj
			m.landed(&o)
		} else {
			m.srGarbage = append(m.srGarbage, c.key)
			fail(fmt.Sprintf("an ambiguous write of %s did not land", c.key))
		}
	case c.op == witness.Get:
		m.onObjectRead(c, r)
	case c.op == witness.Create:
		o := r.Object
		if o == nil || o.Prev != witness.PosOf(c.batch.Prev) {
			fail(fmt.Sprintf("create %s: the driver did not describe the object", c.key))
			break
		}
		o.Key = c.key
		switch r.Class {
		case witness.OK:
			m.landed(o)
			m.srErr = ""
		case witness.Ambiguous:
			// Read back, never assumed (it may have landed).
			m.storeRequest(&logCall{op: witness.Get, key: c.key, obj: o, back: true})
		default:
			m.srGarbage = append(m.srGarbage, c.key)
			fail(fmt.Sprintf("create %s: %s %s", c.key, r.Class, r.Err))
		}
	}
}

// landed takes an object this LEADER wrote: a snapshot starts a rebase;
// an object continues the rebase, or waits to be named (srPut).
func (m *Master) landed(o *witness.LogObject) {
	rb := m.srRebase
	switch {
	case strings.HasPrefix(o.Key, witness.SnapDir):
		m.dropPending()
		m.srRebase = &storeRebase{snap: *o}
	case rb != nil && o.Prev.Changelog() == rb.tip():
		rb.objs = append(rb.objs, *o)
	case rb != nil:
		m.srGarbage = append(m.srGarbage, o.Key)
	default:
		m.srPut = o
	}
}

func dropKey(ks []string, k string) []string {
	for i, x := range ks {
		if x == k {
			return append(ks[:i:i], ks[i+1:]...)
		}
	}
	return ks
}

// onHeadRead takes a read of the head: the LEADER's once a term or after
// a conflict or an ambiguous write, an ELECT's for its catch-up.
func (m *Master) onHeadRead(c *logCall, r witness.Result) {
	var h *witness.LogHead
	switch r.Class {
	case witness.Absent:
	case witness.OK:
		d, err := witness.DecodeHead(r.Body)
		if err == nil && (d.Cluster != m.cfg.Witness.Cluster || d.WitnessID != m.Registry().Witness) {
			err = fmt.Errorf("witness log head of cluster %q witness %q; this is cluster %q witness %q", d.Cluster, d.WitnessID, m.cfg.Witness.Cluster, m.Registry().Witness)
		}
		if err != nil {
			m.srErr, m.srAgain = err.Error(), m.now.Add(10*m.cfg.PeerInterval)
			m.ignore("store-head-unreadable")
			return
		}
		h = &d
	default:
		m.srErr, m.srAgain = fmt.Sprintf("get %s: %s %s", witness.LogKey, r.Class, r.Err), m.now.Add(m.cfg.PeerInterval)
		return
	}
	m.srErr = ""
	m.srHead, m.srETag = h, r.ETag
	m.settleMaybe()
	m.noteOldest()
	if m.role == roles.Elect {
		m.storeCatchUp()
		return
	}
	if m.role != roles.Leader {
		return
	}
	m.srRead = true
	if w := c.head; c.back && h != nil && w != nil && h.Nonce == w.Nonce && h.Epoch == w.Epoch {
		m.headWritten(w, r.ETag) // the ambiguous write landed
		return
	}
	if h != nil && h.Epoch > m.hard.Epoch {
		// A later LEADER wrote it: this one is superseded (fence 1).
		m.srFenced = true
		m.srRefused++
		m.srErr = fmt.Sprintf("the store log was written at epoch %d, above this LEADER's %d", h.Epoch, m.hard.Epoch)
		if !m.implausible(h.Epoch) {
			m.onHigherEpoch(h.Epoch)
		}
	}
}

// onHeadWritten takes the answer to a write of the head.
func (m *Master) onHeadWritten(c *logCall, r witness.Result) {
	switch r.Class {
	case witness.OK:
		m.headWritten(c.head, r.ETag)
	case witness.Conflict:
		// Another wrote it: read it again, never assume.
		m.srRead = false
		m.srRefused++
	default:
		// Read back: it may have landed (or land yet: srOffered).
		m.srOffered = c.etag
		if c.op == witness.Create {
			m.srOffered = "absent"
		}
		m.storeRequest(&logCall{op: witness.Get, key: witness.LogKey, head: c.head, back: true})
	}
}

// headWritten: the head h is the store's, written by this LEADER in this
// term. What it names counts for (b) from now on.
func (m *Master) headWritten(h *witness.LogHead, etag string) {
	if m.srHead != nil {
		named := map[string]bool{}
		for _, o := range h.Objects {
			named[o.Key] = true
		}
		if h.Snapshot != nil {
			named[h.Snapshot.Key] = true
		}
		for _, o := range m.srHead.Objects {
			if !named[o.Key] {
				m.srGarbage = append(m.srGarbage, o.Key)
			}
		}
		if s := m.srHead.Snapshot; s != nil && !named[s.Key] {
			m.srGarbage = append(m.srGarbage, s.Key)
		}
	}
	if rb := m.srRebase; rb != nil && h.Snapshot != nil && h.Snapshot.Key == rb.snap.Key {
		m.srRebase = nil
	}
	m.srHead, m.srETag, m.srPut, m.srErr = h, etag, nil, ""
	m.settleMaybe()
	m.noteOldest()
	if m.role != roles.Leader || h.Epoch != m.hard.Epoch {
		return
	}
	if last := h.Last().Changelog(); m.log.Has(last) && last.Version > m.srMatch.Version {
		m.srMatch = last
		m.advanceReplicated()
		m.advanceAcked()
	}
}

// noteOldest keeps when the head began to name objects.
func (m *Master) noteOldest() {
	switch {
	case m.srHead == nil || len(m.srHead.Objects) == 0:
		m.srOldest = 0
	case m.srOldest == 0:
		m.srOldest = m.now
	}
}

// storeCatchUp: an ELECT has read the head for srNeed; it reads the first
// object it needs that continues its log (the answer brings the next).
func (m *Master) storeCatchUp() {
	h := m.srHead
	need := m.srNeed
	if h == nil || need == (changelog.Pos{}) || m.log.Has(need) {
		return
	}
	if s := h.Snapshot; s != nil && s.Last.Version > m.hard.Commit.Version && !(m.log.Has(h.Base.Changelog()) && h.Base.Version <= m.log.Len()) {
		// This log does not reach where the chain starts: the snapshot
		// there first.
		m.storeRequest(&logCall{op: witness.Get, key: s.Key, obj: s})
		return
	}
	for i := range h.Objects {
		o := h.Objects[i]
		if o.Last.Version <= m.hard.Commit.Version || o.Last.Version <= m.log.Len() && m.log.Has(o.Last.Changelog()) {
			continue // held
		}
		if o.Prev.Version >= need.Version || !m.log.Has(o.Prev.Changelog()) {
			// The chain starts past this log: the changes up to its
			// base (committed: the followers held them when the head
			// was written) from a master whose log reaches it, then the
			// objects.
			if base := h.Base.Changelog(); m.log.Len() < base.Version && m.now >= m.fetchAt && m.fetchToward(base) {
				return
			}
			m.ignore("store-log-gap")
			return
		}
		m.storeRequest(&logCall{op: witness.Get, key: o.Key, obj: &o})
		return
	}
}

// onObjectRead applies an object an ELECT read for its catch-up: the
// entries up to the commit point it asked for, never beyond (entries
// past a commit point a voter reports may be a superseded proposal), and
// never over a committed entry (merge).
func (m *Master) onObjectRead(c *logCall, r witness.Result) {
	if m.role != roles.Elect || m.srNeed == (changelog.Pos{}) {
		return
	}
	if r.Class != witness.OK {
		m.srErr = fmt.Sprintf("get %s: %s %s", c.key, r.Class, r.Err)
		return
	}
	b := r.Batch
	if b == nil || b.Cluster != m.cfg.Witness.Cluster || b.Epoch != c.obj.Epoch || witness.PosOf(b.Prev) != c.obj.Prev {
		m.srErr = fmt.Sprintf("%s is not the object the head names: %s", c.key, r.Err)
		m.ignore("store-object-damaged")
		return
	}
	if s := b.Snapshot; s != nil {
		m.onStoreSnapshot(c, s)
		return
	}
	es := b.Entries
	for len(es) > 0 && es[len(es)-1].Version > m.srNeed.Version {
		es = es[:len(es)-1]
	}
	if reason := checkEntries(b.Prev, es, min(EpochCeiling, max(m.hard.Epoch, m.hard.MaxEpoch)+MaxEpochJump)); reason != "" {
		m.ignore(reason)
		return
	}
	if !m.log.Has(b.Prev) || b.Prev.Version < m.hard.Commit.Version && len(es) > 0 && es[len(es)-1].Version <= m.hard.Commit.Version {
		m.ignore("store-object-base-mismatch")
		return
	}
	trunc, app, ok := m.merge(es)
	if !ok {
		return
	}
	if trunc != nil || len(app) > 0 {
		m.persist(roles.Persist{TruncateAfter: trunc, Append: app})
	}
	m.srErr = ""
	m.tryWin()
	if m.role == roles.Elect && m.srCall == nil {
		m.storeCatchUp()
	}
}

// onStoreSnapshot installs the snapshot an ELECT read for its catch-up:
// a LEADER snapshots only applied, so committed, changes.
func (m *Master) onStoreSnapshot(c *logCall, s *namespace.Snapshot) {
	switch {
	case witness.PosOf(s.Pos) != c.obj.Last || s.Latest == nil:
		m.ignore("store-object-damaged")
		return
	case s.Pos.Epoch > min(EpochCeiling, max(m.hard.Epoch, m.hard.MaxEpoch)+MaxEpochJump):
		m.ignore("store-snapshot-epoch-implausible")
		return
	case s.Pos.Version <= m.hard.Commit.Version:
		m.ignore("snapshot-not-needed")
		return
	}
	m.install(s, changelog.Pos{})
	m.srErr = ""
	m.tryWin()
	if m.role == roles.Elect && m.srCall == nil {
		m.storeCatchUp()
	}
}
