package master

import (
	"fmt"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// The witness's store as a stand-in replica (docs/architecture.md §7.5,
// issue "Nothing acknowledged rests on one disk"). While fewer than
// ACK_REPLICAS follower masters are present, the LEADER writes the changes
// they lack to the bucket: one object per group (create-only), then the
// head (log.json) swapped to name it. That swap, answered OK to this
// term's LEADER, is what counts for (b) of the ack rule in place of the
// missing followers; (a) and (c) are unchanged. An ELECT whose log lacks
// a commit point the voters report, and that no peer can give, reads the
// head and the objects and takes the changes up to that point.
//
// Fences. (1) The store's: a LEADER swaps the head only while its epoch
// is at least the head's, and every swap is conditional on the ETag it
// last saw; once a later LEADER has swapped the head, no earlier one's
// write can ever count. (2) The voters': an acknowledgement still needs
// (c), a quorum of this epoch's vote leases, so a superseded LEADER
// acknowledges nothing whatever the store says. (3) Visibility: a LEADER
// tells the voters a commit point only after the swap that holds it was
// answered, and an ELECT reads the head only after it has the report that
// asks for it, so a store with read-after-write consistency always shows
// it the objects an acknowledgement rested on.

// storeReplica is what a master keeps of the store log.
type storeReplica struct {
	srTerm  uint64           // the epoch srMatch and srRead belong to
	srHead  *witness.LogHead // as last read or written (nil: absent or unknown)
	srETag  string           // its ETag ("": absent)
	srRead  bool             // srHead is known in this term
	srMatch changelog.Pos    // this term: the store holds everything above the followers' point up to it
	srCall  *logCall         // the one call out (but deletes)
	// srDel: the one delete out, beside srCall: garbage is deleted on a
	// lane of its own, so that it never delays an object or a head.
	srDel *logCall
	srSeq uint64             // the last call's Seq
	srPut *witness.LogObject // an object written, not yet named by the head
	// srRebase: a snapshot written to restart the chain at it, and the
	// objects after it written since (see storeRebase).
	srRebase *storeRebase
	srAgain  roles.Instant // no call before this (after a failure)
	srErr    string        // the last failure, for operators
	// srTermCommit: the commit point this LEADER started its term with;
	// those changes met (b) under the LEADER that acknowledged them, so a
	// chain started afresh need not hold them.
	srTermCommit uint64
	// srGarbage: objects no head names (trimmed, or written and never
	// named); deleted one at a time when nothing else is to do.
	srGarbage []string
	// srMaybe: objects written and given up that a head write with an
	// ambiguous answer may name; srOffered: that write's If-Match
	// ("absent" for a create). They go to srGarbage once the head is
	// seen with another ETag (that write can then never land) and does
	// not name them (settleMaybe).
	srMaybe   []string
	srOffered string
	// srFenced: the head was written at an epoch above this LEADER's.
	srFenced bool
	// srNeed: an ELECT's catch-up asks the store for this commit point
	// (zero: nothing asked); srReadAt: not before this.
	srNeed    changelog.Pos
	srReadAt  roles.Instant
	catchWait catchWait
	// srOldest: since when the head has named objects (0: none), on this
	// master's clock; srBehind: since when the store has stood in with
	// changes it does not hold yet (0: not).
	srOldest roles.Instant
	srBehind roles.Instant
	// srAcks: the newest acknowledgement rested on the store.
	srAcks bool
	// srRefused counts this master's head writes the store refused
	// (another had swapped it) and reads that showed a later LEADER's.
	srRefused int
}

// storeRebase restarts the chain at a snapshot of this LEADER's: when
// its log no longer holds the changes that would continue the chain (it
// trimmed them under its snapshot as a follower), or the chain grew heavy
// (half of WITNESS_LOG_OBJECTS or WITNESS_LOG_BYTES). The snapshot object
// is written first, then objects from its position on, and one head
// write names them all once they reach as far as the chain they replace:
// until then the old chain stays named, so no change the store held is
// ever unnamed.
type storeRebase struct {
	snap witness.LogObject
	objs []witness.LogObject
}

func (r *storeRebase) tip() changelog.Pos {
	if n := len(r.objs); n > 0 {
		return r.objs[n-1].Last.Changelog()
	}
	return r.snap.Last.Changelog()
}

func (r *storeRebase) keys() []string {
	ks := []string{r.snap.Key}
	for _, o := range r.objs {
		ks = append(ks, o.Key)
	}
	return ks
}

// logCall is one call on the store log and what it is for.
type logCall struct {
	seq   uint64
	op    witness.Op
	key   string
	at    roles.Instant
	head  *witness.LogHead // a head write: what it writes
	obj   *witness.LogObject
	etag  string
	body  []byte
	batch *witness.LogBatch // an object's Create
	back  bool              // a read-back after an ambiguous write
}

// logCallLimit: a call unanswered this long is given up (the driver
// answers every call by its deadline; this only guards against a lost
// answer).
const logCallLimit = 30 * time.Second

// snapCallLimit is logCallLimit for a snapshot object's write or read:
// the driver gives a call on n bytes its timeout plus n at 8 MiB/s.
const snapCallLimit = logCallLimit + witness.MaxLogSnapshotSize/(8<<20)*time.Second

func (c *logCall) limit() time.Duration {
	if strings.HasPrefix(c.key, witness.SnapDir) {
		return snapCallLimit
	}
	return logCallLimit
}

// CatchUpWait reports the wait, if this master is an ELECT held up by
// the catch-up rule (ok false otherwise).
func (m *Master) CatchUpWait() (w CatchUpWait, ok bool) {
	c := m.catchWait
	if m.role != roles.Elect || c.since == 0 {
		return w, false
	}
	w = CatchUpWait{Need: c.need, Tag: c.tag, Since: c.since}
	for _, id := range m.cfg.Masters {
		if p := m.peers[id]; id != m.cfg.ID && m.fresh(p) && p.st.Last.Version >= c.need.Version && !c.need.NewerThan(p.st.Last) {
			w.Sources = true
		}
	}
	if h := m.srHead; m.storeUsable() && h != nil && h.Last().Version >= c.need.Version {
		w.Sources = true
	}
	return w, true
}

// storeAside: an ELECT whose won tally has waited asideWait for changes
// that no master it hears holds, and that cannot read the store log
// itself, hands its voters to the best master that can (a VoteRelease
// naming it, as stepAside does). Such changes were acknowledged with the
// store standing in for the followers (§7.5): staying, this ELECT would
// hold every vote for ever while a master with the store could lead.
// With no such master it stays: the LEADER that wrote them may come back.
func (m *Master) storeAside() {
	c := m.catchWait
	if m.role != roles.Elect || c.since == 0 || m.storeUsable() || m.now.Sub(c.since) < m.asideWait() {
		return
	}
	if w, _ := m.CatchUpWait(); w.Sources {
		return
	}
	m.handAside(func(st roles.PeerStatus) bool { return st.StoreLog })
}

// storeConfigured: the registry names a witness and this master has a
// store for it. Then the store may stand in for missing followers, so
// (b) asks for ACK_REPLICAS copies even of a cluster with fewer other
// masters (a one-master cluster with a witness).
func (m *Master) storeConfigured() bool {
	return m.cfg.Witness.Store && m.cfg.Witness.Log && m.HasMetadata() && m.Registry().Witness != ""
}

// storeUsable: the store may be called now (configured, and its
// self-test passed as far as the lease knows).
func (m *Master) storeUsable() bool {
	return m.storeConfigured() && m.wit != nil && m.wit.Unusable() == ""
}

// followerPoint is (b) by the followers alone: the newest version held
// durably by ACK_REPLICAS of the other masters of its set, silent ones
// included (a silent follower's disk still holds what it confirmed). A
// set with fewer other masters than ACK_REPLICAS needs all of them, and
// none when it names this master alone, unless a store is configured to
// stand in for the rest.
func (m *Master) followerPoint() uint64 {
	var ms []uint64
	for _, id := range m.cfg.Masters {
		if id == m.cfg.ID {
			continue
		}
		v := uint64(0)
		if p := m.progress[id]; p != nil {
			v = p.match.Version
		}
		ms = append(ms, v)
	}
	req := m.cfg.AckReplicas
	if req > len(ms) {
		if m.storeConfigured() {
			return 0 // the store stands in for the missing ones
		}
		req = len(ms)
	}
	return changelog.ReplicatedVersion(m.log.Len(), ms, req)
}

// replicatedLimit is (a) and (b) of the ack rule: the followers' point,
// or what this term's writes to the store hold, or with ACK_ALONE what
// the followers heard lately hold (none heard: this disk alone).
func (m *Master) replicatedLimit() uint64 {
	r := m.followerPoint()
	if m.srTerm == m.hard.Epoch && m.srMatch.Version > r {
		r = min(m.srMatch.Version, m.log.Len())
	}
	if m.cfg.AckAlone {
		r = max(r, changelog.ReplicatedVersion(m.log.Len(), m.followerMatches(), m.cfg.AckReplicas))
	}
	return r
}

// presentFollowers counts the other masters of its set heard within
// PeerTimeout, by their appends' answers or their status.
func (m *Master) presentFollowers() int {
	n := 0
	for _, id := range m.cfg.Masters {
		if id == m.cfg.ID {
			continue
		}
		if p := m.progress[id]; p != nil && p.present(m.now, m.cfg.PeerTimeout) {
			n++
		} else if m.fresh(m.peers[id]) {
			n++
		}
	}
	return n
}

// storeStandsIn: fewer than ACK_REPLICAS followers are present, so the
// store must hold what they lack before it is acknowledged.
func (m *Master) storeStandsIn() bool {
	return m.role == roles.Leader && m.storeConfigured() && m.presentFollowers() < m.cfg.AckReplicas
}

// storeFull says why the store may take no more (a bound reached), or "".
func (m *Master) storeFull(h *witness.LogHead) string {
	if h == nil {
		return ""
	}
	w := m.cfg.Witness
	objs := witness.MaxLogObjects
	if w.LogObjects > 0 {
		objs = min(objs, w.LogObjects)
	}
	switch {
	case len(h.Objects) >= objs:
		return fmt.Sprintf("the store log names %d objects (WITNESS_LOG_OBJECTS = %d)", len(h.Objects), objs)
	case w.LogBytes > 0 && uint64(h.Size()) >= w.LogBytes:
		return fmt.Sprintf("the store log holds %d bytes (WITNESS_LOG_BYTES = %d)", h.Size(), w.LogBytes)
	}
	return ""
}

// storeChain is what the head would keep of the store log now: the
// objects this log agrees with, past what the followers hold (log
// matching: an object whose last position this log holds agrees with it
// throughout). The rest is dropped: objects the followers hold (trimmed),
// and a superseded LEADER's objects this log does not hold (never
// acknowledged: every acknowledged change is in this LEADER's log).
func (m *Master) storeChain() (base changelog.Pos, kept, dropped []witness.LogObject) {
	// full: what the followers hold durably. This master's own snapshot
	// does not count: it is the same disk the store stands in for.
	full := m.followerPoint()
	var objs []witness.LogObject
	if h := m.srHead; h != nil {
		base, objs = h.Base.Changelog(), h.Objects
	}
	i := 0
	if m.log.Has(base) && base.Version <= m.log.Len() {
		for i < len(objs) && m.log.Has(objs[i].Last.Changelog()) && objs[i].Last.Version <= m.log.Len() {
			i++
		}
	} else {
		// A fresh chain: below the log's base everything was committed
		// before this term (a master trims only under its snapshot, and
		// a LEADER with the store configured not past full: maybeTrim).
		base = m.log.PosAt(max(full, m.log.BasePos().Version))
	}
	kept, dropped = objs[:i:i], append([]witness.LogObject(nil), objs[i:]...)
	j := 0
	for j < len(kept) && kept[j].Last.Version <= full {
		j++
	}
	if j > 0 {
		base = kept[j-1].Last.Changelog()
		dropped = append(dropped, kept[:j]...)
		kept = kept[j:]
	}
	fresh := max(full, m.log.BasePos().Version, min(m.srTermCommit, m.log.Len()))
	if h := m.srHead; h != nil && h.Snapshot != nil && h.Snapshot.Last.Changelog() == base {
		// A snapshot is dropped only once the followers hold it: what a
		// previous LEADER left there may rest on the store alone.
		fresh = full
	}
	if len(kept) == 0 && base.Version < fresh {
		// Not for dropping objects: what a previous LEADER wrote there
		// may rest on the store alone (its disk lost since).
		base = m.log.PosAt(fresh)
	}
	return base, kept, dropped
}

// storeStep makes the next call on the store log, if one is due.
func (m *Master) storeStep() {
	if m.role == roles.Leader && m.srTerm != m.hard.Epoch {
		m.dropPending()
		m.srTerm, m.srRead, m.srMatch, m.srFenced, m.srAcks = m.hard.Epoch, false, changelog.Pos{}, false, false
		m.srTermCommit = m.hard.Commit.Version
		m.srBehind = 0
	}
	if m.role != roles.Leader {
		m.srBehind, m.srAcks = 0, false
	}
	m.noteWaiting()
	if m.role != roles.Elect {
		m.srNeed = changelog.Pos{}
	}
	if m.srCall != nil && m.now.Sub(m.srCall.at) >= m.srCall.limit() {
		m.srErr, m.srCall = "a call on the store log went unanswered", nil
	}
	if m.srDel != nil && m.now.Sub(m.srDel.at) >= logCallLimit {
		m.srDel = nil
	}
	if m.role == roles.Leader && m.srDel == nil && len(m.srGarbage) > 0 && m.now >= m.srAgain && m.storeUsable() {
		m.srSeq++
		m.srDel = &logCall{seq: m.srSeq, op: witness.Delete, key: m.srGarbage[0], at: m.now}
		m.out.Witness = append(m.out.Witness, witness.Request{Seq: m.srSeq, Op: witness.Delete, Key: m.srGarbage[0]})
	}
	if m.srCall != nil || m.now < m.srAgain || !m.storeUsable() {
		return
	}
	switch m.role {
	case roles.Leader:
		m.storeLead()
	case roles.Elect:
		if m.srNeed != (changelog.Pos{}) && m.now >= m.srReadAt {
			m.srReadAt = m.now.Add(m.cfg.PeerInterval)
			m.storeRequest(&logCall{op: witness.Get, key: witness.LogKey})
		}
	}
}

// dropPending gives up the objects written and not yet named: they go
// to the garbage.
func (m *Master) dropPending() {
	if m.srPut != nil {
		m.srMaybe = append(m.srMaybe, m.srPut.Key)
	}
	if m.srRebase != nil {
		m.srMaybe = append(m.srMaybe, m.srRebase.keys()...)
	}
	m.srPut, m.srRebase = nil, nil
}

// settleMaybe moves the objects given up to the garbage once no head
// write of this master's can still land (see srMaybe), except those the
// head names.
func (m *Master) settleMaybe() {
	cur := m.srETag
	if cur == "" {
		cur = "absent"
	}
	if m.srOffered != "" && cur != m.srOffered {
		m.srOffered = "" // ETags never repeat (every head has a nonce)
	}
	if m.srOffered != "" || len(m.srMaybe) == 0 {
		return
	}
	named := map[string]bool{}
	if h := m.srHead; h != nil {
		for _, o := range h.Objects {
			named[o.Key] = true
		}
		if h.Snapshot != nil {
			named[h.Snapshot.Key] = true
		}
	}
	for _, k := range m.srMaybe {
		if !named[k] {
			m.srGarbage = append(m.srGarbage, k)
		}
	}
	m.srMaybe = nil
}

// storeLead is the LEADER's next call: read the head once a term; then
// name a written object; write what the followers lack while the store
// stands in; drop what they hold; delete what no head names.
func (m *Master) storeLead() {
	standsIn := m.storeStandsIn()
	if standsIn && m.srBehind == 0 && m.srMatch.Version < m.log.Len() {
		m.srBehind = m.now
	}
	if !m.srRead {
		// Once a term (a healthy cluster makes this one call a
		// failover): what a LEADER before it left there.
		m.storeRequest(&logCall{op: witness.Get, key: witness.LogKey})
		return
	}
	if m.srFenced {
		return
	}
	base, kept, dropped := m.storeChain()
	if m.srRebase != nil {
		m.rebaseStep(base, kept)
		return
	}
	if o := m.srPut; o != nil {
		// It replaces the objects after the chain position it continues
		// (none: it appends; several: a compaction), and must reach at
		// least as far as they do.
		i := chainAt(base, kept, o.Prev.Changelog())
		if i < 0 || o.Last.Version < chainLast(base, kept).Version {
			// The head moved under it: it names nothing (unless a head
			// write with an ambiguous answer lands yet: settleMaybe).
			m.srMaybe = append(m.srMaybe, o.Key)
			m.srPut = nil
		} else {
			m.writeHead(base, append(kept[:i:i], *o))
			return
		}
	}
	last := chainLast(base, kept)
	if standsIn && (last.Version < m.log.BasePos().Version || m.storeHeavy(kept)) {
		// The chain cannot go on from this log, or it grew heavy:
		// restart it at a snapshot (taken now if there is none past it).
		switch {
		case m.snap != nil && m.snap.Pos.Version > base.Version:
			m.putSnapshot()
			return
		case m.snapSaving == nil && m.kv.Applied > base.Version:
			m.takeSnapshot()
		}
	}
	full := m.storeFull(m.srHead)
	switch {
	case standsIn && full == "" && len(kept) >= compactAt:
		if from, ok := m.compactFrom(base, kept); ok {
			m.putObject(from)
			return
		}
		if last.Version < m.log.Len() {
			m.putObject(last)
			return
		}
	case standsIn && last.Version < m.log.Len() && full == "":
		m.putObject(last)
		return
	case standsIn && full != "":
		m.srErr = full
	case len(dropped) > 0 || (m.srHead != nil && m.srHead.Epoch < m.hard.Epoch && len(m.srHead.Objects) > 0),
		m.srHead != nil && m.srHead.Snapshot != nil && base != m.srHead.Base.Changelog():
		// Trim what the followers hold, drop a superseded LEADER's
		// objects, and claim the head for this epoch (fence 1).
		m.writeHead(base, kept)
		return
	}
	if standsIn && last.Version >= m.log.Len() {
		m.srBehind = 0
	}
}

// storeHeavy: the chain's objects reached half a bound (count or bytes):
// time to restart it at a snapshot.
func (m *Master) storeHeavy(kept []witness.LogObject) bool {
	w := m.cfg.Witness
	objs := witness.MaxLogObjects
	if w.LogObjects > 0 {
		objs = min(objs, w.LogObjects)
	}
	var n int64
	for _, o := range kept {
		n += int64(o.Bytes)
	}
	return len(kept) >= max(2, objs/2) || w.LogBytes > 0 && uint64(n) >= w.LogBytes/2
}

// rebaseStep carries a rebase on: another object from its tip, or, once
// it reaches as far as the chain it replaces, the head that names it.
func (m *Master) rebaseStep(base changelog.Pos, kept []witness.LogObject) {
	rb := m.srRebase
	tip := rb.tip()
	if tip.Version >= chainLast(base, kept).Version {
		m.writeHeadWith(&rb.snap, rb.snap.Last.Changelog(), rb.objs)
		return
	}
	if tip.Version < m.log.BasePos().Version || !m.log.Has(tip) {
		m.dropPending() // cannot go on from this log: start again
		return
	}
	m.putObject(tip)
}

// storeSnapAt is the position of the snapshot the store log's head (as
// this LEADER knows it this term) starts at; 0 when none.
func (m *Master) storeSnapAt() uint64 {
	if h := m.srHead; m.role == roles.Leader && m.srRead && h != nil && h.Snapshot != nil {
		return h.Snapshot.Last.Version
	}
	return 0
}

// putSnapshot writes this master's snapshot as an object (create-only).
func (m *Master) putSnapshot() {
	s := m.snap
	b := &witness.LogBatch{Format: witness.LogFormat, Cluster: m.cfg.Witness.Cluster,
		WitnessID: m.Registry().Witness, Epoch: m.hard.Epoch, Holder: m.cfg.ID, Snapshot: s}
	key := witness.SnapshotKey(m.hard.Epoch, witness.PosOf(s.Pos), m.storeNonce())
	m.storeRequest(&logCall{op: witness.Create, key: key, batch: b})
}

// compactAt: with this many objects named, the LEADER merges the newest
// small ones into one (with what is new) instead of adding one more: one
// object per group commit would otherwise reach WITNESS_LOG_OBJECTS in
// seconds under load, and every head write names them all.
const compactAt = 16

// compactMax bounds the objects merged by a compaction.
const compactMax = 2 * maxBatchBytes

// compactFrom is the chain position a compaction rewrites from: the
// longest run of newest objects that together hold at most compactMax
// bytes, if it is at least two long and this log still holds its
// entries.
func (m *Master) compactFrom(base changelog.Pos, kept []witness.LogObject) (changelog.Pos, bool) {
	// In entries too: the merged object must reach the chain's last
	// within what putObject takes from the log.
	i, size := len(kept), 0
	top := kept[len(kept)-1].Last.Version
	for i > 0 && size+kept[i-1].Bytes <= compactMax && top-kept[i-1].Prev.Version <= 32*maxBatch {
		i--
		size += kept[i].Bytes
	}
	if len(kept)-i < 2 {
		return changelog.Pos{}, false
	}
	from := base
	if i > 0 {
		from = kept[i-1].Last.Changelog()
	}
	if from.Version < m.log.BasePos().Version {
		return changelog.Pos{}, false // trimmed here: only in the snapshot
	}
	return from, true
}

// chainAt is the index of the object that follows chain position p (len
// when p is the chain's last; -1 when p is no boundary of it).
func chainAt(base changelog.Pos, kept []witness.LogObject, p changelog.Pos) int {
	if p == base {
		return 0
	}
	for i, o := range kept {
		if o.Last.Changelog() == p {
			return i + 1
		}
	}
	return -1
}

func chainLast(base changelog.Pos, kept []witness.LogObject) changelog.Pos {
	if len(kept) == 0 {
		return base
	}
	return kept[len(kept)-1].Last.Changelog()
}
