package masternode

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Client admission: how much of one group client requests may take, so
// that lists and writes never starve the votes.

func isList(in input) bool {
	r, ok := in.msg.(roles.ClientRead)
	return ok && r.Prefix
}

// listRoom reports whether another list may go to the core now.
func (n *MasterNode) listRoom() bool {
	if len(n.listsOut) < maxListsOut {
		return true
	}
	cut := time.Now().Add(-listsOutMaxAge)
	for k, at := range n.listsOut {
		if at.Before(cut) {
			delete(n.listsOut, k)
		}
	}
	return len(n.listsOut) < maxListsOut
}

// clientCost is what one client input counts against clientBudget.
func clientCost(in input) int {
	switch m := in.msg.(type) {
	case roles.ClientRead:
		if m.Prefix {
			return clientBudget / 2 // a list copies and sorts keys
		}
	case protocol.StatusReq:
		return 4 // tallies and every registered chunkserver
	}
	return 1
}

// admission: listsOut, the list requests handed to the core and not
// answered yet; clHeld, a list request waiting until fewer are (see
// runGroup).
type admission struct {
	listsOut map[listKey]time.Time
	clHeld   *input
}
