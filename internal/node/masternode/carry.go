package masternode

import (
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// The master's disk and effects as master.Carry uses them.

// masterDisk is the master's store as roles.Carry uses it: a failure ends
// the process (never run ahead of the disk); an installed snapshot is
// logged and counted.
type masterDisk struct{ n *MasterNode }

// masterFx carries a batch's effects out to the connections, the logs and
// the metrics (master.Effects).
type masterFx struct{ n *MasterNode }

func (d masterDisk) Apply(ps ...roles.Persist) error {
	n := d.n
	leader := n.core.Role() == roles.Leader
	var appended uint64
	if leader {
		for _, p := range ps {
			for _, e := range p.Append {
				n.stages.appended(e, n.groupAt)
				appended = max(appended, e.Pos.Version)
			}
		}
	}
	if err := n.store.Apply(ps...); err != nil {
		return err
	}
	if appended > 0 {
		n.stages.durable(appended, time.Now())
	}
	for _, p := range ps {
		if s := p.Snapshot; s != nil {
			// One received from another master: this one was behind its
			// trimmed changelog (or had no metadata at all).
			n.metrics.SnapshotInstalled()
			n.log.Info().Uint64("version", s.Pos.Version).Uint64(obs.FieldEpoch, s.Pos.Epoch).Int("items", len(s.Data)).
				Int("sessions", len(s.Sessions)).Str("file", n.store.SnapshotPath()).Msg("snapshot installed")
		}
	}
	return nil
}

// Durable: before anything leaves, a step-down's vote releases let the
// voters move on, and no report may say LEADER once they can.
func (fx masterFx) Durable() { fx.n.publishFence() }

func (fx masterFx) WallUnixMs() int64 { return time.Now().UnixMilli() }

func (fx masterFx) Send(to roles.Peer, msg wire.Message) { fx.n.route(to, msg) }

func (fx masterFx) Close(class roles.ConnClass) { fx.n.disconnect(class) }

func (fx masterFx) Transitioned(t roles.Transition) {
	fx.n.log.Info().Str(obs.FieldFrom, t.From.String()).Str(obs.FieldTo, t.To.String()).
		Uint64(obs.FieldEpoch, t.Epoch).Str(obs.FieldReason, t.Reason).Str("section", t.Section).Msg("role change")
}

func (fx masterFx) AdminReplied(r roles.AdminReply) {
	if w, ok := fx.n.admins[r.ID]; ok {
		w.c.Send(protocol.AdminResp{ID: w.id, OK: r.OK, Text: w.note + r.Text, Code: r.Code})
		delete(fx.n.admins, r.ID)
	}
}

func (fx masterFx) SaveSnapshot(s *namespace.Snapshot) { fx.n.saveSnapshot(s) }

// Witness hands a call on the witness's store to its client.
func (fx masterFx) Witness(r witness.Request) { fx.n.witnessCall(r) }

func (fx masterFx) Ignored(reason string) {
	fx.n.metrics.Ignored(reason)
	fx.n.log.Debug().Str(obs.FieldReason, reason).Msg("ignored")
}
