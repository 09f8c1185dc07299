package master

import (
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The script command admin: a master's input.
func init() {
	scriptEvents["admin"] = func(h *harness, a map[string]string, cs wire.CSID, from wire.MasterID) roles.Event {
		ad := roles.Admin{ID: 1}
		switch a["do"] {
		case "usurper":
			ad.Kind = roles.AdminSetUsurper
		case "cancel":
			ad.Kind = roles.AdminCancelUsurper
		case "stepdown":
			ad.Kind = roles.AdminStepDown
		case "shutdown":
			ad.Kind = roles.AdminShutdown
		case "remove":
			ad.Kind, ad.Change = roles.AdminChange, registry.Change{Kind: registry.ChangeRemove, ID: uint32(cs)}
		case "register":
			ad.Kind, ad.Change = roles.AdminChange, registry.Change{Kind: registry.ChangeRegister, CS: registry.Chunkserver{ID: cs, Addr: netip.MustParseAddr(a["addr"])}}
		case "map":
			ad.Kind, ad.Change = roles.AdminChange, registry.Change{Kind: registry.ChangeMapRange, Prefix: netip.MustParsePrefix(a["prefix"]), Name: a["name"]}
		case "default":
			ad.Kind, ad.Change = roles.AdminChange, registry.Change{Kind: registry.ChangeSetDefault, Name: a["name"]}
		case "off":
			ad.Kind, ad.Change = roles.AdminChange, registry.Change{Kind: registry.ChangeSetOn, Name: a["name"]}
		}
		return ad
	}
}
