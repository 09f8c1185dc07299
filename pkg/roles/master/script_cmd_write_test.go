package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command write: a master's input.
func init() {
	scriptEvents["write"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		w := roles.ClientWrite{Client: changelog.ClientID(mustU(a["client"])), Seq: mustU(a["seq"]), Key: a["key"], Value: a["val"], Delete: a["delete"] == "true"}
		if e, ok := a["expect"]; ok {
			w.CAS, w.Expect = true, mustU(e)
		}
		return w
	}
}
