package clusterview

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// LayoutWarning is a configuration trap the masters' answers show: it is
// printed under -SIM (keep) and -SLQ (keep, tie-break), and listed in -j.
type LayoutWarning struct {
	Kind    string       `json:"kind"` // "keep_leadership", "no_tie_break"
	Masters []netip.Addr `json:"masters,omitempty"`
	Text    string       `json:"text"`
}

const (
	WarnKeep      = "keep_leadership"
	WarnTieBreak  = "no_tie_break"
	titleWarning  = "Warning"
	keepAdviceFix = "set KEEP_LEADERSHIP = 1 on one master only"
)

// warningsOf lists the traps: KEEP_LEADERSHIP on more than one master
// (docs/roles.md §3.12: only the highest-ranked one that has not yielded
// takes the role back), and a layout whose even split elects nobody.
func warningsOf(answers []Answer, locs []LocRow) []LayoutWarning {
	var out []LayoutWarning
	if w, ok := keepWarning(answers); ok {
		out = append(out, w)
	}
	if w, ok := tieWarning(locs); ok {
		out = append(out, w)
	}
	return out
}

func keepWarning(answers []Answer) (LayoutWarning, bool) {
	keep := map[netip.Addr]bool{}
	yielded := map[netip.Addr]bool{}
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		for _, m := range a.St.KeepMasters {
			keep[m] = true
		}
		if a.St.Keep {
			keep[a.Addr.Addr()] = true
		}
		yielded[a.Addr.Addr()] = a.St.Yielded
	}
	if len(keep) < 2 {
		return LayoutWarning{}, false
	}
	ms := make([]netip.Addr, 0, len(keep))
	for m := range keep {
		ms = append(ms, m)
	}
	// Masters rank as the election ranks them: by id, which for IPv4 is
	// the address itself.
	slices.SortFunc(ms, func(a, b netip.Addr) int { return cmp.Compare(masterhost.IDOf(a), masterhost.IDOf(b)) })
	names := make([]string, len(ms))
	first := ""
	for i, m := range ms {
		names[i] = m.String()
		if yielded[m] {
			names[i] += " (yielded)"
		} else if first == "" {
			first = m.String()
		}
	}
	text := fmt.Sprintf("WARNING: KEEP_LEADERSHIP is on on %d masters (%s): ", len(ms), strings.Join(names, ", "))
	if first != "" {
		text += "only " + first + " (the lowest address that has not yielded) takes the LEADER role back, the others behave as KEEP_LEADERSHIP = 0; "
	} else {
		text += "all have yielded, none takes the LEADER role back until -CLU; "
	}
	return LayoutWarning{Kind: WarnKeep, Masters: ms, Text: text + keepAdviceFix}, true
}

// tieWarning: an even number of locations take part and the default is
// not among them, so a split half/half elects nobody. The rows are the
// count of the newest config (locRows puts them first).
func tieWarning(locs []LocRow) (LayoutWarning, bool) {
	if len(locs) == 0 {
		return LayoutWarning{}, false
	}
	n, def, defName := 0, false, ""
	for _, l := range locs {
		if l.Config != locs[0].Config {
			continue
		}
		if l.Default {
			defName = l.Name
		}
		if l.Participating {
			n++
			def = def || l.Default
		}
	}
	if n == 0 || n%2 == 1 || def {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: WarnTieBreak, Text: fmt.Sprintf("WARNING: no tie-break: %d locations take part and the default location (%s) has no chunkserver, so losing half of them (a site or the link between) leaves no LEADER; add a chunkserver to %s (a voter-only one, with an empty mfshdd.cfg, is enough) or move the default mark to a location with chunkservers (-CDEF/name)", n, defName, defName)}, true
}
