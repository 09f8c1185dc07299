package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command masterset: a master's input.
func init() {
	scriptEvents["masterset"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.MasterSet{Masters: ids(a["masters"]), Member: a["member"] != "false"}
	}
}
