package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command read: a master's input.
func init() {
	scriptEvents["read"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		return roles.ClientRead{Client: changelog.ClientID(mustU(a["client"])), Seq: mustU(a["seq"]), Key: a["key"]}
	}
}
