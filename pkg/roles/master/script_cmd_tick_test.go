package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command tick: a master's input.
func init() {
	scriptEvents["tick"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.Tick{}
	}
}
