package master

import (
	"fmt"
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command hello: a master's input.
func init() {
	scriptEvents["hello"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		addr := netip.MustParseAddr(orDefault(a["addr"], fmt.Sprintf("10.0.1.%d", cs)))
		h.csAddr[cs] = addr
		return roles.VoteHello{CS: cs, Addr: addr, Session: mustU(orDefault(a["session"], "1")),
			Nominate: a["nominate"] == "true", MaxEpoch: mustU(orDefault(a["maxepoch"], "0"))}
	}
}
