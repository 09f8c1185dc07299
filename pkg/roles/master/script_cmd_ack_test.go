package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command ack: a master's input.
func init() {
	scriptEvents["ack"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		hb := h.lastHB[cs]
		ack := roles.HeartbeatAck{CS: cs, Session: hb.Session, Seq: hb.Seq, OK: a["nack"] == "", Granted: hb.Lease,
			MaxEpoch: hb.Epoch, EpochOwner: hb.From, KnownReg: hb.RegVersion, InForce: hb.InForce, Addr: h.sourceOf(cs, a)}
		if hb.Keepalive {
			ack.Granted = 0 // as a voter does: a keepalive is promised nothing
		}
		if hb.Role == roles.Leader {
			// As a voter does: commit knowledge only from a LEADER.
			ack.Commit, ack.CommitTag = hb.Commit, hb.Epoch
		}
		if t, ok := a["tag"]; ok {
			ack.CommitTag = mustU(t)
		}
		if r, ok := a["nack"]; ok {
			ack.Reason = r
		}
		if e, ok := a["maxepoch"]; ok {
			ack.MaxEpoch = mustU(e)
		}
		if o, ok := a["owner"]; ok {
			ack.EpochOwner = wire.MasterID(mustU(o))
		}
		if c, ok := a["commit"]; ok {
			ack.Commit = parsePos(c)
		}
		if r, ok := a["reg"]; ok {
			ack.KnownReg = mustU(r)
		}
		if r, ok := a["inforce"]; ok {
			ack.InForce = mustU(r)
		}
		return ack
	}
}
