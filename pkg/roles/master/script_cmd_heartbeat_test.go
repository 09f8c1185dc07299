package master

import (
	"strconv"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command heartbeat: a voter's input.
func init() {
	scriptEvents["heartbeat"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		if a["lease"] == "0s" {
			return roles.Heartbeat{From: from, Incarnation: 1, Session: h.vsess, Seq: 1, Role: roleOf(orDefault(a["role"], "ELECT")), Keepalive: true}
		}
		return roles.Heartbeat{From: from, Incarnation: mustU(orDefault(a["inc"], "1")), Session: mustU(orDefault(a["session"], strconv.FormatUint(h.vsess, 10))),
			Seq: mustU(orDefault(a["seq"], "1")), Role: roleOf(orDefault(a["role"], "ELECT")), Epoch: mustU(a["epoch"]),
			Lease: mustDur(orDefault(a["lease"], "800ms")), RegVersion: mustU(orDefault(a["reg"], "0")), Commit: parsePos(orDefault(a["commit"], "0@0")),
			Rank: uint32(mustU(orDefault(a["rank"], "0"))), Ranks: uint32(mustU(orDefault(a["ranks"], "0")))}
	}
}
