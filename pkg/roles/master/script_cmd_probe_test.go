package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command probe: a master's input.
func init() {
	scriptEvents["probe"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.Probe{CS: cs, Nonce: 1}
	}
}
