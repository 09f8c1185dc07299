package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command connlost: a master's or a voter's input.
func init() {
	scriptEvents["connlost"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		if h.v != nil {
			return roles.VoteConnLost{Master: wire.MasterID(mustU(a["master"])), Closed: a["closed"] == "true"}
		}
		return roles.ConnLost{CS: cs}
	}
}
