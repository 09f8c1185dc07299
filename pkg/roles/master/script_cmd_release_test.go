package master

import (
	"strconv"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command release: a voter's input.
func init() {
	scriptEvents["release"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.VoteRelease{From: from, Incarnation: mustU(orDefault(a["inc"], "1")), Session: mustU(orDefault(a["session"], strconv.FormatUint(h.vsess, 10))),
			Next: wire.MasterID(mustU(orDefault(a["next"], "0")))}
	}
}
