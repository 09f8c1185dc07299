package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command bye: a master's input.
func init() {
	scriptEvents["bye"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.VoteBye{CS: cs, Session: mustU(orDefault(a["session"], "1")), Addr: h.sourceOf(cs, a)}
	}
}
