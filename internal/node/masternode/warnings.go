package masternode

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// layoutWarnings remembers what warnLayout last said, so that each
// configuration trap is logged once when it appears (and again when it
// changes), not on every status rebuild.
type layoutWarnings struct {
	keep       string // the KEEP_LEADERSHIP masters last warned about
	tieChecked uint64 // the config version last checked for a tie-break
}

// warnLayout logs the configurations an operator would otherwise find too
// late: KEEP_LEADERSHIP on more than one master (only the highest-ranked
// one reclaims, docs/roles.md §3.12), and a location layout in which an
// even split elects nobody (no tie-break). Called from observe, so it runs
// at start and whenever the view changes.
func (n *MasterNode) warnLayout() {
	keep := n.keepMasters()
	names := make([]string, len(keep))
	for i, a := range keep {
		names[i] = a.String()
	}
	if k := strings.Join(names, ","); k != n.layout.keep {
		n.layout.keep = k
		if len(keep) > 1 {
			n.log.Warn().Strs("masters", names).Str("reclaims", names[0]).
				Msg("KEEP_LEADERSHIP is on on more than one master: only the one with the lowest address that has not yielded takes the role back, the others behave as KEEP_LEADERSHIP = 0; set it on one master only")
		}
	}
	cfg := n.core.Registry()
	if cfg == nil || cfg.Version == n.layout.tieChecked {
		return
	}
	n.layout.tieChecked = cfg.Version
	if e := cfg.Electorate(); !e.TieBreak() {
		def, _ := cfg.Locations.Location(cfg.Locations.Default())
		n.log.Warn().Uint64("config", cfg.Version).Str("default_location", def.Name).
			Msg("no tie-break: an even number of locations take part and the default location has no chunkserver, so an even split (a site or a link lost) elects nobody; add a chunkserver to the default location (a voter-only one, with an empty mfshdd.cfg, is enough) or move the default mark to a location with chunkservers (mfscli -CDEF/name)")
	}
}

// keepMasters lists the masters known to have KEEP_LEADERSHIP on, by
// address, lowest (highest-ranked) first.
func (n *MasterNode) keepMasters() []netip.Addr {
	var out []netip.Addr
	for _, id := range n.core.KeepMasters() {
		if a, ok := n.addrKnown(id); ok {
			out = append(out, a)
		}
	}
	// Masters rank by id (masterhost.IDOf: an IPv4 address is its own number).
	slices.SortFunc(out, func(a, b netip.Addr) int { return cmp.Compare(masterhost.IDOf(a), masterhost.IDOf(b)) })
	return out
}
