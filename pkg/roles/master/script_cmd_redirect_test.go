package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command redirect: a voter's input.
func init() {
	scriptEvents["redirect"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.Redirect{From: from, Session: h.vsess, Leader: wire.MasterID(mustU(orDefault(a["leader"], "0")))}
	}
}
