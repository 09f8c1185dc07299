package masternode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// The operator's side of the witness on the master: mfscli -CWITNESS/on
// and -CWITNESS/test (-CWITNESS/off is an ordinary registry change that
// mfscli sends the LEADER), and the witness section of the status answer.
// Store I/O never runs on the loop: each command's calls run in a
// goroutine of the witness client's (stopped with it) under a deadline,
// and what must change the core comes back to the loop as an inCall input.

// witnessAdmin is what the driver keeps for the listings (loop only).
type witnessAdmin struct {
	// failSince: when the unbroken run of refused or ambiguous answers
	// began (zero: the last answer was neither).
	failSince time.Time
}

// witnessOnTimeout bounds -CWITNESS/on's store calls (a read, a create,
// and a read again after a lost race): a few call timeouts.
func witnessOnTimeout(store *s3store.Store) time.Duration { return 4 * store.CallTimeout() }

// witnessTestTimeout bounds an on-demand self-test, as the background one.
const witnessTestTimeout = 30 * time.Second

// witnessTrack notes an answer of the store for the listings: how long its
// calls have failed (refused or ambiguous) without a break.
func (n *MasterNode) witnessTrack(d witnessDone) {
	switch d.res.Class {
	case witness.Refused, witness.Ambiguous:
		if n.witAdm.failSince.IsZero() {
			n.witAdm.failSince = time.Now()
		}
	default:
		n.witAdm.failSince = time.Time{}
	}
}

// witnessCommand carries out -CWITNESS/on or /test (loop only).
func (n *MasterNode) witnessCommand(c *node.Conn, m protocol.AdminReq) {
	answer := func(ok bool, code wire.Code, text string) {
		c.Send(protocol.AdminResp{ID: m.ID, OK: ok, Code: code, Text: text})
	}
	if n.wit == nil {
		what := "this master"
		if m.Kind == protocol.AdminWitnessOn {
			what = "the LEADER"
		}
		answer(false, wire.CodeState, fmt.Sprintf("WITNESS_ENDPOINT is not set on %s (%s): it has no witness store; set the WITNESS_* keys in its mfsmaster.cfg and restart it", what, n.opt.Self))
		return
	}
	if m.Kind == protocol.AdminWitnessTest {
		n.witnessTest(c, m.ID)
		return
	}
	switch role := n.core.Role(); {
	case role != roles.Leader:
		answer(false, wire.CodeNotLeader, fmt.Sprintf("this master is %v, not LEADER: -CWITNESS/on goes to the LEADER", role))
		return
	case !n.opt.Core.Witness.Store:
		answer(false, wire.CodeState, "this master started without metadata (-e) and uses its witness store from its next start: restart it first")
		return
	}
	why, tested := n.wit.Ready()
	switch {
	case !tested:
		answer(false, wire.CodeState, "the witness store's self-test has not finished yet ("+n.wit.store.String()+"): retry in a few seconds")
		return
	case why != "":
		answer(false, wire.CodeState, "the witness store failed its self-test, so it may not break ties: "+why+
			" (fix the store, then mfscli -CWITNESS/test; the master tests it again every "+witnessRetest.String()+")")
		return
	}
	named := ""
	if cfg := n.core.Registry(); cfg != nil {
		named = cfg.Witness
	}
	self := witness.Self{ID: n.opt.Core.ID, Cluster: n.store.ClusterID()}
	w, store := n.wit, n.wit.store
	w.wg.Add(1) // on the loop, as stop's Wait is: no race between them
	go func() {
		defer w.wg.Done()
		ctx, cancel := context.WithTimeout(w.ctx, witnessOnTimeout(store))
		defer cancel()
		id, note, err := witnessOn(ctx, store, self, named, time.Now())
		in := input{kind: inCall, call: func() { n.witnessOnDecided(c, m.ID, id, note, err) }}
		select {
		case n.inbox <- in:
		case <-w.ctx.Done():
		}
	}()
}

// witnessOnDecided names witness id in the registry (loop only): the core
// answers, after note; err refuses instead.
func (n *MasterNode) witnessOnDecided(c *node.Conn, reqID uint64, id, note string, err error) {
	if err != nil {
		c.Send(protocol.AdminResp{ID: reqID, Code: wire.CodeState, Text: err.Error()})
		return
	}
	if id == "" { // the registry names it already: nothing to change
		c.Send(protocol.AdminResp{ID: reqID, OK: true, Text: note})
		return
	}
	n.log.Info().Str("witness", id).Str("store", n.wit.store.String()).Msg("witness: mfscli -CWITNESS/on names it in the registry")
	n.nextAdm++
	aid := n.nextAdm
	n.admins[aid] = adminWait{c: c, id: reqID, note: note}
	n.step(roles.Admin{ID: aid, Kind: roles.AdminChange, Change: registry.Change{Kind: registry.ChangeWitness, Name: id}})
}

// witnessOn finds or makes the lease object for -CWITNESS/on and returns
// the witness id to name in the registry ("" when named already equals
// it: nothing to change), with a note for the reply. The object is made
// once, free, by create-only PUT; one that exists is reused if it is this
// cluster's, and refused if it is another's or not a lease record.
func witnessOn(ctx context.Context, store *s3store.Store, self witness.Self, named string, now time.Time) (id, note string, err error) {
	key := store.ObjectKey(witness.Key)
	where := fmt.Sprintf("%s (%s)", key, store)
	read := func() (witness.Record, bool, error) {
		body, _, err := store.Get(ctx, witness.Key)
		switch s3store.Classify(err) {
		case s3store.OK:
		case s3store.Absent:
			return witness.Record{}, false, nil
		default:
			return witness.Record{}, false, fmt.Errorf("the witness store did not answer the read of %s: %v", where, err)
		}
		rec, derr := witness.Decode(body)
		if derr != nil {
			return witness.Record{}, true, fmt.Errorf("%s holds something that is not a lease record (%v): remove it, or give this cluster a WITNESS_PREFIX of its own", where, derr)
		}
		return rec, true, nil
	}
	rec, found, err := read()
	if err != nil {
		return "", "", err
	}
	if !found && named != "" {
		return "", "", fmt.Errorf("the registry names witness %s but its lease object %s is missing: turn it off (mfscli -CWITNESS/off) and on again, which makes a new one", named, where)
	}
	if !found {
		rec = witness.Record{Format: witness.Format, WitnessID: newWitnessID(), Cluster: self.Cluster, State: witness.Free,
			Holder: self.ID, Incarnation: 0, Nonce: randomNonce(), WrittenUnixMs: now.UnixMilli()}
		_, cerr := store.Create(ctx, witness.Key, rec.Encode())
		switch s3store.Classify(cerr) {
		case s3store.OK:
			note = fmt.Sprintf("lease object %s made; ", where)
			found = true
		case s3store.Conflict:
			// Another -CWITNESS/on made it first: use what it made.
			if rec, found, err = read(); err != nil {
				return "", "", err
			}
			if !found {
				return "", "", fmt.Errorf("the lease object %s was there and is gone again: retry", where)
			}
		default:
			return "", "", fmt.Errorf("the witness store refused to make %s: %v", where, cerr)
		}
	}
	switch {
	case rec.Cluster != self.Cluster:
		return "", "", fmt.Errorf("the bucket prefix holds another cluster's witness (%s is witness %s of cluster %s, this is %s): use a WITNESS_PREFIX of its own",
			where, rec.WitnessID, rec.Cluster, self.Cluster)
	case named != "" && rec.WitnessID != named:
		return "", "", fmt.Errorf("the registry names witness %s but %s is witness %s: turn it off (mfscli -CWITNESS/off), then on again", named, where, rec.WitnessID)
	case named != "":
		return "", fmt.Sprintf("witness %s is on already (lease object %s)", named, where), nil
	}
	if note == "" {
		note = fmt.Sprintf("lease object %s found, witness %s reused; ", where, rec.WitnessID)
	}
	return rec.WitnessID, note, nil
}

// newWitnessID is a new witness id: "w-" and 16 hex digits.
func newWitnessID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return "w-" + hex.EncodeToString(b)
}

func randomNonce() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// witnessTest runs the store's self-test now, in a goroutine of the
// witness client's, and answers with its report or its finding. A store
// the background test had refused is taken into use at once when this one
// passes; a failure here does not take a passed store out of use (the
// background test judges it again only while it fails).
func (n *MasterNode) witnessTest(c *node.Conn, reqID uint64) {
	w, log := n.wit, n.log
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		ctx, cancel := context.WithTimeout(w.ctx, witnessTestTimeout)
		rep, err := s3store.SelfTest(ctx, w.store, s3store.SelfTestOptions{})
		cancel()
		if w.ctx.Err() != nil {
			return // shutting down: the connection goes too
		}
		if err != nil {
			log.Warn().Err(err).Str("store", w.store.String()).Msg("witness: the self-test mfscli -CWITNESS/test asked for failed")
			c.Send(protocol.AdminResp{ID: reqID, Code: wire.CodeState, Text: fmt.Sprintf("%s: self-test failed: %v", w.store, err)})
			return
		}
		if why, _ := w.Ready(); why != "" {
			ok := ""
			w.ready.Store(&ok)
			w.report.Store(&rep)
			log.Info().Str("store", w.store.String()).Str("report", rep.String()).Msg("witness: the store passed the self-test mfscli -CWITNESS/test asked for; it may break ties")
		}
		c.Send(protocol.AdminResp{ID: reqID, OK: true, Text: fmt.Sprintf("%s: self-test passed: %s", w.store, rep)})
	}()
}

// witnessStatus is the status answer's witness section (loop only), from
// the core at now and the fence f (Held: the lease counted at now). nil
// when the registry names no witness and this master has no store.
func (n *MasterNode) witnessStatus(f master.Fence, now roles.Instant) *protocol.WitnessStatus {
	ws := n.core.Witness(now)
	if !ws.Configured && n.wit == nil {
		return nil
	}
	st := &protocol.WitnessStatus{ID: ws.ID, Held: f.WitnessAt(now)}
	if w := n.wit; w != nil {
		st.Endpoint, st.Bucket, st.Prefix = n.opt.Witness.Endpoint, n.opt.Witness.Bucket, n.opt.Witness.Prefix
		if why, tested := w.Ready(); tested {
			st.SelfTest = why
			if why == "" {
				st.SelfTest = protocol.WitnessSelfTestPassed
			}
		}
		if !n.opt.Core.Witness.Store {
			st.NotUsed = "started without metadata (-e): it uses its store from its next start"
		}
	}
	l := ws.Lease
	st.Known, st.Absent, st.Waiting, st.Blocked = l.Known && !l.Absent, l.Absent, l.Waiting, l.Blocked
	if st.Known && l.Record.WitnessID != "" {
		st.RecordID, st.RecordState, st.RecordEpoch = l.Record.WitnessID, l.Record.State, l.Record.Epoch
		st.RecordHolderID = l.Record.Holder
		if a, ok := n.addrKnown(l.Record.Holder); ok {
			st.RecordHolder = a
		}
	}
	if l.LastOp != 0 {
		st.LastOp, st.LastResult, st.LastError, st.LastLatency = l.LastOp.String(), l.LastClass.String(), l.LastErr, l.LastLatency
	}
	if l.LastWrite != 0 {
		// Both readings are this process's monotonic clock.
		st.LastWriteAge = max(now.Sub(roles.Instant(l.LastWrite)), 1)
	}
	if !n.witAdm.failSince.IsZero() {
		st.FailingFor = time.Since(n.witAdm.failSince)
	}
	for op, by := range l.Calls {
		for class, k := range by {
			if st.Calls == nil {
				st.Calls = map[string]uint64{}
			}
			st.Calls[op.String()+" "+class.String()] = k
		}
	}
	return st
}

// storeLogStatus is the store log as the core sees it, for the status
// answer; a LEADER's part only while the fence still shows it LEADER
// (role is the fenced one).
func (n *MasterNode) storeLogStatus(role roles.Role, now roles.Instant) *protocol.StoreLogStatus {
	s := n.core.StoreLog()
	if !s.Configured {
		return nil
	}
	w := n.opt.Core.Witness
	st := &protocol.StoreLogStatus{Known: s.Known, Objects: s.Objects, Bytes: s.Bytes, Base: s.Base.Version, Last: s.Last.Version,
		Epoch: s.Epoch, Snapshot: s.Snapshot.Version, Garbage: s.Garbage, Error: s.Error, Refused: s.Refused, MaxObjects: w.LogObjects, MaxBytes: w.LogBytes, MaxAge: w.LogAge}
	if s.OldestSince != 0 {
		st.OldestAge = now.Sub(s.OldestSince)
	}
	if role != roles.Leader {
		return st
	}
	st.StandsIn, st.OnStore = s.StandsIn, s.OnStore
	if s.BehindSince != 0 {
		st.BehindFor = now.Sub(s.BehindSince)
	}
	if d := n.core.Durability(); d.Waiting {
		st.WaitingFor = now.Sub(d.WaitingSince)
	}
	return st
}
