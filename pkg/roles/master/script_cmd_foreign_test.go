package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command foreign: a master's input.
func init() {
	scriptEvents["foreign"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.ForeignCluster{Master: wire.MasterID(mustU(a["master"]))}
	}
}
