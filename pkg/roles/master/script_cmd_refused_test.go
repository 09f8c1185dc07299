package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command refused: a voter's input.
func init() {
	scriptEvents["refused"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.Refused{Master: wire.MasterID(mustU(a["master"])), SentAt: h.now}
	}
}
