package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command peer: a master's input.
func init() {
	scriptEvents["peer"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		st := roles.PeerStatus{From: from, Incarnation: 1, Role: roleOf(orDefault(a["role"], "FOLLOWER")), Epoch: mustU(orDefault(a["epoch"], "0")),
			Eligible: a["eligible"] != "false", Sync: roles.Synced, Usurper: a["usurper"] == "true", Keep: a["keep"] == "true",
			KeepSet: a["keep"] == "true" || a["yielded"] == "true", Placed: a["placed"] == "true"}
		st.MaxEpoch = st.Epoch
		if l, ok := a["last"]; ok {
			st.Last = parsePos(l)
		}
		st.Proto = uint16(mustU(orDefault(a["proto"], "0"))) // 0: a version-2 master, which does not say
		return st
	}
}
