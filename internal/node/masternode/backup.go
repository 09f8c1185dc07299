package masternode

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/internal/exports"
	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Backups (mfscli --backup, docs/operations.md "Backups and disaster
// recovery"). The LEADER
// first confirms its commit point exactly as for a linearizable read: the
// driver steps a read of its own, and the core answers it once everything
// in the log at its arrival is acknowledged and a heartbeat round sent
// after it came back from a quorum. Only then is the namespace copied (on
// the loop, as for a periodic snapshot), so the backup holds every change
// acknowledged before the request, whoever acknowledged it. The copy is
// encoded and sent off the loop, at most protocol.BackupWindow bytes ahead
// of what mfscli acknowledged; one backup at a time per master.

// backupStall is how long a backup may wait for mfscli to acknowledge
// bytes before the connection is cut: a reader gone quiet must not hold
// the copy of the namespace for ever.
const backupStall = 60 * time.Second

// backupConfirmMax is how long a backup waits for its commit point to be
// confirmed (a LEADER that cannot commit, for want of a follower master
// with ACK_REPLICAS, answers no read either) before it is refused.
const backupConfirmMax = 10 * time.Second

// backupSide is the driver's state for backups.
type backupSide struct {
	bkWait *backupWait // the backup whose commit point is being confirmed (loop only)
	bkBusy atomic.Bool // a backup is being confirmed or sent
}

// backupWait is a backup request waiting for its confirming read.
type backupWait struct {
	c      *node.Conn
	id     uint64             // the AdminReq's
	client changelog.ClientID // the read's session
	asked  time.Time
}

// backupFor starts the backup an authorised AdminReq asks for (loop only).
// Without ADMIN_PASSWORD (check adminOpen) it is also judged as a read of
// every key by mfsexports.cfg: a backup shows what a client listing all
// keys would see.
func (n *MasterNode) backupFor(c *node.Conn, m protocol.AdminReq, check adminCheck) {
	refuse := func(code wire.Code, text string) {
		n.metrics.Backup("refused", 0, time.Time{})
		c.Send(protocol.AdminResp{ID: m.ID, Code: code, Text: text})
	}
	if check == adminOpen {
		if ex := n.acc.exports.Load(); ex != nil && ex.t != nil {
			none := func(string) (bool, bool) { return false, false }
			if d := ex.t.Check(c.Remote, "", true, false, exports.Proof(none)); d != exports.Allowed {
				refuse(wire.CodeDenied, fmt.Sprintf("a backup holds every key: mfsexports.cfg does not let %v list them all without a password (%v), and this master has no ADMIN_PASSWORD to prove instead", c.Remote, d))
				return
			}
		}
	}
	if role := n.core.Role(); role != roles.Leader {
		refuse(wire.CodeNotLeader, fmt.Sprintf("this master is %v, not LEADER: a backup is taken from the LEADER", role))
		return
	}
	n.backupExpire(time.Now())
	if !n.bkBusy.CompareAndSwap(false, true) {
		refuse(wire.CodeBusy, "a backup is already being taken from this master: try again when it is done")
		return
	}
	n.nextCl++
	cl := protocol.AnonymousClient | changelog.ClientID(n.nextCl)
	n.bkWait = &backupWait{c: c, id: m.ID, client: cl, asked: time.Now()}
	n.step(roles.ClientRead{Client: cl, Seq: 1})
}

// backupExpire refuses a backup whose commit point was not confirmed
// within backupConfirmMax (loop only; the loop calls it every tick). Its
// read's answer, if it ever comes, goes to no one.
func (n *MasterNode) backupExpire(now time.Time) {
	limit := backupConfirmMax
	if n.opt.backupConfirmOverride > 0 {
		limit = n.opt.backupConfirmOverride
	}
	w := n.bkWait
	if w == nil || now.Sub(w.asked) < limit {
		return
	}
	n.bkWait = nil
	n.bkBusy.Store(false)
	n.metrics.Backup("refused", 0, time.Time{})
	w.c.Send(protocol.AdminResp{ID: w.id, Code: wire.CodeState, Text: fmt.Sprintf("the LEADER could not confirm its commit point within %v: "+
		"changes wait too (is a quorum of chunkservers voting, and are ACK_REPLICAS follower masters present? mfscli -SIM)", limit)})
}

// backupConfirmed takes the core's answer to the confirming read (loop
// only, from route): on success the namespace as applied now, which holds
// everything the read's answer does, is copied and sent.
func (n *MasterNode) backupConfirmed(r roles.ClientReply) {
	w := n.bkWait
	n.bkWait = nil
	if !r.OK {
		n.bkBusy.Store(false)
		n.metrics.Backup("refused", 0, time.Time{})
		w.c.Send(protocol.AdminResp{ID: w.id, Code: r.Code, Text: "the commit point could not be confirmed: " + r.Err})
		return
	}
	if w.c.Closed() {
		n.bkBusy.Store(false)
		n.metrics.Backup("failed", 0, time.Time{})
		return
	}
	snap := n.core.Backup()
	cluster := n.store.ClusterID()
	n.log.Info().Str(obs.FieldPeer, w.c.Remote.String()).Uint64("version", snap.Pos.Version).Uint64(obs.FieldEpoch, snap.Pos.Epoch).
		Int("keys", len(snap.Data)).Dur("confirmed_in", time.Since(w.asked)).Msg("backup: commit point confirmed, sending")
	f := &backupFlow{more: make(chan struct{}, 1)}
	n.acc.backups.Store(w.c, f)
	n.snapWG.Add(1)
	go func() {
		defer n.snapWG.Done()
		defer n.bkBusy.Store(false)
		defer n.acc.backups.Delete(w.c)
		start := time.Now()
		size, err := sendBackup(n.snapCtx, w.c, f, w.id, cluster, snap)
		if err != nil {
			w.c.Close()
			n.metrics.Backup("failed", 0, time.Time{})
			n.log.Warn().Err(err).Str(obs.FieldPeer, w.c.Remote.String()).Uint64("version", snap.Pos.Version).Msg("backup not sent")
			return
		}
		n.metrics.Backup("sent", size, time.Now())
		n.log.Info().Str(obs.FieldPeer, w.c.Remote.String()).Uint64("version", snap.Pos.Version).Int64("bytes", size).
			Dur("took", time.Since(start)).Msg("backup sent")
	}()
}

// backupFlow is how far mfscli has acknowledged a backup (its connection's
// reader stores, the sender waits).
type backupFlow struct {
	acked atomic.Uint64
	more  chan struct{} // a wake-up for the sender, at most one pending
}

// ack records an acknowledgement (from the connection's reader).
func (f *backupFlow) ack(offset uint64) {
	for {
		old := f.acked.Load()
		if offset <= old || f.acked.CompareAndSwap(old, offset) {
			break
		}
	}
	select {
	case f.more <- struct{}{}:
	default:
	}
}

// sendBackup encodes snap as a backup file into chunks sent on c, each
// once the window allows it, and the last with the file's size and
// SHA-256.
func sendBackup(ctx context.Context, c *node.Conn, f *backupFlow, id uint64, cluster string, snap *namespace.Snapshot) (int64, error) {
	w := &chunkWriter{ctx: ctx, c: c, f: f, id: id, sum: sha256.New(), buf: make([]byte, 0, protocol.BackupChunkBytes)}
	size, err := metadata.WriteBackup(ctx, w, cluster, snap)
	if err == nil {
		err = w.flush(true)
	}
	return size, err
}

// chunkWriter cuts what it is given into BackupChunks.
type chunkWriter struct {
	ctx context.Context
	c   *node.Conn
	f   *backupFlow
	id  uint64
	sum hash.Hash
	buf []byte
	off uint64 // the file offset of buf's first byte
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), cap(w.buf)-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(false); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush sends what is buffered once the window has room for it.
func (w *chunkWriter) flush(last bool) error {
	stall := time.NewTimer(backupStall)
	defer stall.Stop()
	for w.off+uint64(len(w.buf)) > w.f.acked.Load()+protocol.BackupWindow {
		select {
		case <-w.f.more:
		case <-w.c.Done():
			return fmt.Errorf("the connection closed at byte %d", w.off)
		case <-w.ctx.Done():
			return fmt.Errorf("the master is stopping: %w", w.ctx.Err())
		case <-stall.C:
			return fmt.Errorf("nothing acknowledged for %v at byte %d", backupStall, w.f.acked.Load())
		}
	}
	// Checked before the send, not after: mfscli closes the connection
	// as soon as the last chunk is in.
	if w.c.Closed() {
		return fmt.Errorf("the connection closed at byte %d", w.off)
	}
	w.sum.Write(w.buf)
	ch := protocol.BackupChunk{ID: w.id, Offset: w.off, Data: w.buf}
	if last {
		ch.Last, ch.Size, ch.SHA256 = true, w.off+uint64(len(w.buf)), w.sum.Sum(nil)
	}
	w.c.Send(ch)
	w.off += uint64(len(w.buf))
	w.buf = w.buf[:0] // Send encoded it already
	return nil
}
