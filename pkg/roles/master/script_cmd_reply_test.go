package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command reply: a voter's input.
func init() {
	scriptEvents["reply"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		r := roles.ProbeReply{From: from, Incarnation: mustU(orDefault(a["inc"], "1")), Role: roleOf(orDefault(a["role"], "FOLLOWER")),
			Epoch: mustU(orDefault(a["epoch"], "0")), Eligible: a["eligible"] != "false", Sync: roles.Synced,
			Usurper: a["usurper"] == "true", Keep: a["keep"] == "true", Last: parsePos(orDefault(a["last"], "2@0"))}
		if l, ok := a["leader"]; ok {
			r.Leader, r.LeaderFresh = wire.MasterID(mustU(l)), true
		}
		return r
	}
}
