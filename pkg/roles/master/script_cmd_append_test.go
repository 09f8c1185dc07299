package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command append: a master's input.
func init() {
	scriptEvents["append"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		ap := roles.Append{From: from, Epoch: mustU(a["epoch"]), Prev: parsePos(orDefault(a["prev"], "0@0")), Commit: parsePos(orDefault(a["commit"], "0@0"))}
		if n, ok := a["noop"]; ok {
			ap.Entries = []changelog.Entry{{Pos: parsePos(n), Kind: changelog.EntryNoop}}
		}
		return ap
	}
}
