package masternode

import (
	"context"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/rs/zerolog"
)

// The background snapshot writer: a snapshot of the core's making is
// written beside the loop, which goes on renewing votes meanwhile.

// snapResult is how a background snapshot write ended.
type snapResult struct {
	snap *namespace.Snapshot
	w    metadata.SnapshotWrite
	took time.Duration
	err  error
	// retry: after a failure, when the write is tried again (the
	// background goroutine goes on with the same snapshot).
	retry time.Duration
}

// saveSnapshot writes a snapshot of the core's making in the background:
// it may be large, and the loop must go on renewing votes meanwhile. The
// core asks for one at a time and keeps every entry it covers until
// snapshotSaved tells it the file is durable. A failed write is reported
// and tried again after a back-off, until it succeeds or the master stops:
// only trimming the changelog waits for it, and every master snapshots at
// the same version, so stopping would stop them all on one full disk.
func (n *MasterNode) saveSnapshot(s *namespace.Snapshot) {
	n.snapWG.Add(1)
	go func() {
		defer n.snapWG.Done()
		backoff := n.snapRetry
		for {
			start := time.Now()
			w, err := n.store.SaveSnapshot(n.snapCtx, s)
			if n.snapCtx.Err() != nil {
				return
			}
			r := snapResult{snap: s, w: w, took: time.Since(start), err: err}
			if err != nil {
				r.retry = backoff
			}
			select {
			case n.snapDone <- r:
			case <-n.snapCtx.Done():
				return
			}
			if err == nil {
				return
			}
			select {
			case <-time.After(backoff):
			case <-n.snapCtx.Done():
				return
			}
			backoff = min(2*backoff, snapRetryMax)
		}
	}()
}

// snapshotSaved hands the core a finished background write, or logs and
// counts a failed one (the writer tries again by itself).
func (n *MasterNode) snapshotSaved(r snapResult) error {
	if r.err != nil {
		n.metrics.SnapshotFailed()
		n.log.Error().Err(r.err).Uint64("version", r.snap.Pos.Version).Uint64(obs.FieldEpoch, r.snap.Pos.Epoch).
			Str("file", n.store.SnapshotPath()).Dur("retry_in", r.retry).
			Msg("snapshot not saved: the changelog is kept in full until it is; trying again")
		return nil
	}
	n.metrics.SnapshotWritten(r.took)
	lvl := zerolog.InfoLevel
	if !r.w.Replaced {
		lvl = zerolog.DebugLevel // a newer snapshot had been installed meanwhile
	}
	n.log.WithLevel(lvl).Uint64("version", r.snap.Pos.Version).Uint64(obs.FieldEpoch, r.snap.Pos.Epoch).Int("items", len(r.snap.Data)).
		Int("sessions", len(r.snap.Sessions)).Int64("bytes", r.w.Bytes).Bool("replaced", r.w.Replaced).
		Dur("took", r.took).Str("file", n.store.SnapshotPath()).Msg("snapshot saved")
	n.step(roles.SnapshotSaved{Pos: r.snap.Pos})
	return nil
}

// snapWriter is the snapshot being written in the background
// (SaveSnapshot): its result comes back through snapDone; shutdown
// cancels and waits.
type snapWriter struct {
	snapCtx    context.Context
	snapCancel context.CancelFunc
	snapWG     sync.WaitGroup
	snapDone   chan snapResult
	// snapRetry is the first back-off after a failed snapshot write
	// (tests shorten it); it doubles up to snapRetryMax.
	snapRetry time.Duration
}
