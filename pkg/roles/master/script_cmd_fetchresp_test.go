package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command fetchresp: a master's input.
func init() {
	scriptEvents["fetchresp"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		base := parsePos(a["base"])
		r := roles.FetchResp{From: from, Base: base}
		for v := base.Version + 1; v <= mustU(a["upto"]); v++ {
			r.Entries = append(r.Entries, changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: mustU(a["epoch"])}, Kind: changelog.EntryNoop})
		}
		return r
	}
}
