package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command appendack: a master's input.
func init() {
	scriptEvents["appendack"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.AppendAck{From: from, Epoch: mustU(a["epoch"]), OK: a["ok"] != "false", Match: parsePos(orDefault(a["match"], "0@0")), Last: mustU(orDefault(a["last"], "0"))}
	}
}
