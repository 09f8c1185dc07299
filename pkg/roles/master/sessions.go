package master

import (
	"errors"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Changes refused for what they would do to the cluster (wire.CodeState),
// not for what they are.
var (
	errNoElectorate = errors.New("the change would leave no chunkserver counting towards quorum")
	errQuorumLost   = errors.New("refused: under the changed registry the votes this LEADER holds would not make a quorum")
)

func (m *Master) reply(c changelog.ClientID, seq uint64, r roles.ClientReply) {
	r.From, r.Client, r.Seq = m.cfg.ID, c, seq
	m.send(roles.ToClient(c), r)
}

// busy refuses a client operation, with CodeBusy, when MaxPending wait for
// their acknowledgement already: what a LEADER holds for its clients
// stays bounded however many of them write at once (each waiting
// operation holds its key and, until it is applied, its entry's value). A
// refused change is not in the log; the client asks again with the same
// sequence number, and a change is applied once whatever the retries.
func (m *Master) busy(c changelog.ClientID, seq uint64) bool {
	if !m.full(m.cfg.MaxPending) {
		return false
	}
	m.reply(c, seq, roles.ClientReply{Err: roles.ErrBusy, Code: wire.CodeBusy})
	return true
}

func (m *Master) onClientWrite(w roles.ClientWrite) {
	switch {
	case m.role == roles.Deputy:
		m.reply(w.Client, w.Seq, roles.ClientReply{Err: roles.ErrReadOnly, Code: wire.CodeReadOnly, Redirect: m.Leader()})
		return
	case m.role != roles.Leader:
		m.reply(w.Client, w.Seq, roles.ClientReply{Err: roles.ErrNotLeader, Code: wire.CodeNotLeader, Redirect: m.Leader()})
		return
	case m.handover != wire.NoMaster:
		m.reply(w.Client, w.Seq, roles.ClientReply{Err: roles.ErrHandover, Code: wire.CodeHandover, Redirect: m.handover})
		return
	}
	if !m.Accepting(m.now) {
		panic("invariant fence: a LEADER without quorum reached a client write")
	}
	if bad := roles.CheckWrite(w); bad != "" {
		m.reply(w.Client, w.Seq, roles.ClientReply{Err: bad, Code: wire.CodeInvalid})
		return
	}
	if m.busy(w.Client, w.Seq) {
		return
	}
	// A retried change (same session and sequence) is applied once.
	if v := findClientSeq(&m.log, &m.kv, w.Client, w.Seq); v > 0 {
		m.add(pendingOp{client: w.Client, seq: w.Seq, ver: v, key: w.Key})
		m.answerPending()
		return
	}
	if s, ok := m.kv.Sessions[w.Client]; ok && w.Seq < s.Seq {
		m.reply(w.Client, w.Seq, roles.ClientReply{Err: roles.ErrStaleSeq, Code: wire.CodeStaleSeq})
		return
	}
	kind := changelog.EntryPut
	switch {
	case w.Delete:
		kind = changelog.EntryDelete
	case w.CAS:
		kind = changelog.EntryCAS
	}
	e := changelog.Entry{Pos: changelog.Pos{Version: m.log.Len() + 1, Epoch: m.hard.Epoch}, Kind: kind, Client: w.Client, Seq: w.Seq, Key: w.Key, Value: w.Value, Expect: w.Expect}
	m.log.Append(e)
	m.persist(roles.Persist{Append: []changelog.Entry{e}})
	m.add(pendingOp{client: w.Client, seq: w.Seq, ver: e.Version, key: w.Key})
	m.replicateNew()
	m.advanceReplicated()
}

func (m *Master) onClientRead(r roles.ClientRead) {
	switch m.role {
	case roles.Leader:
		if m.busy(r.Client, r.Seq) {
			return
		}
		// Linearizable: answered once everything in the log at arrival is
		// acknowledged, and only while the quorum lease holds.
		m.add(pendingOp{client: r.Client, seq: r.Seq, ver: m.log.Len(), hb: m.hbSeq, key: r.Key,
			read: true, prefix: r.Prefix, after: r.After, limit: r.Limit})
		m.askReadRound()
		m.answerPending()
	case roles.Deputy:
		rep := m.readReply(pendingOp{key: r.Key, prefix: r.Prefix, after: r.After, limit: r.Limit})
		rep.Version, rep.Stale = m.kv.Applied, true
		m.reply(r.Client, r.Seq, rep)
	default:
		m.reply(r.Client, r.Seq, roles.ClientReply{Err: roles.ErrNotLeader, Code: wire.CodeNotLeader, Redirect: m.Leader()})
	}
}

// askReadRound makes the next heartbeat broadcast (at once) a read round,
// unless one is in flight already: the reads that arrive meanwhile wait
// for the round after it, so one round confirms every read of a burst.
func (m *Master) askReadRound() {
	if m.askRound(m.cfg.LeaseReads) {
		m.heartbeatNow()
	}
}

// confirmedSeq is the newest heartbeat a quorum of votes has acknowledged:
// a read that arrived before it was sent is answered by a LEADER that was
// still LEADER after the read arrived. Leases alone cannot say so after a
// pause the monotonic clock did not count (docs/architecture.md §7, Reads).
func (m *Master) confirmedSeq() uint64 {
	ok := m.countable(m.now, nil)
	newest := uint64(0) // an empty registry the founder may bootstrap is won by any
	for _, v := range m.withWitness(nil) {
		newest = max(newest, v.ackedSeq)
	}
	for _, v := range m.voters {
		if ok(v) {
			newest = max(newest, v.ackedSeq)
		}
	}
	s, won := thresholdOf(m, ^uint64(0), func(v *voterRec) (uint64, bool) { return v.ackedSeq, ok(v) })
	if !won {
		return 0
	}
	return min(s, newest)
}

// answerPending replies to every waiting client whose change or read index
// is acknowledged (and, for a read, confirmed by a heartbeat round).
func (m *Master) answerPending() {
	if m.role != roles.Leader || !m.wonAt(m.now) {
		return
	}
	confirmed := uint64(0)
	if m.readHB != 0 {
		confirmed = m.confirmedSeq()
		if m.roundConfirmed(confirmed) {
			m.readGate.done()
		} else {
			m.readGate.missed()
		}
	}
	ready, waiting := m.takeReady(m.acked.Version, confirmed, m.cfg.LeaseReads)
	for _, op := range ready {
		if op.read {
			r := m.readReply(op)
			r.Version = m.acked.Version
			m.reply(op.client, op.seq, r)
			continue
		}
		// The session table holds the outcome of the client's newest
		// change (one in flight per session: pkg/client).
		s := m.kv.Sessions[op.client]
		m.reply(op.client, op.seq, roles.ClientReply{OK: true, Version: op.ver, Conflict: s.Version == op.ver && s.Failed,
			KeyVersion: m.kv.Data[op.key].Version})
	}
	if waiting {
		m.askReadRound()
	}
}

// readReply answers a read of op.key, or with op.prefix set one page of
// a list (keys under the prefix op.key, after op.after, at most op.limit),
// from the applied namespace.
func (m *Master) readReply(op pendingOp) roles.ClientReply {
	if op.prefix {
		limit := op.limit
		if limit <= 0 || limit > namespace.ListMax {
			limit = namespace.ListMax
		}
		es, more := m.kv.List(op.key, op.after, limit, namespace.ListMaxBytes)
		return roles.ClientReply{OK: true, Entries: es, More: more}
	}
	if !namespace.Client(op.key) {
		return roles.ClientReply{OK: true} // the cluster's own keys are no client's to read
	}
	it, ok := m.kv.Data[op.key]
	return roles.ClientReply{OK: true, Value: it.Value, Found: ok, KeyVersion: it.Version}
}

// findClientSeq returns the version of the entry written for (client,
// seq): from the session table for applied entries, by a scan of the
// entries not yet applied (a few, bounded by what is in flight) for the
// rest.
func findClientSeq(l *changelog.Log, kv *namespace.KV, c changelog.ClientID, seq uint64) uint64 {
	if c == 0 {
		return 0
	}
	for v := l.Len(); v > kv.Applied && v > l.Base().Pos.Version; v-- {
		if e, _ := l.At(v); e.Client == c && e.Seq == seq {
			return v
		}
	}
	if s, ok := kv.Sessions[c]; ok && s.Seq == seq {
		return s.Version
	}
	return 0
}
