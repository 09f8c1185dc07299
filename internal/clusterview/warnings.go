package clusterview

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// LayoutWarning is an alarm (alarms.go): a trap or a fault the masters'
// answers show. mfscli prints the masters' under -SIM and the quorum's
// under -SLQ (SIMAlarms, SLQAlarms), and lists them all in -j.
type LayoutWarning struct {
	Kind    string       `json:"kind"` // one of AlarmKinds
	Masters []netip.Addr `json:"masters,omitempty"`
	Text    string       `json:"text"`
}

// The two layout alarms, with the others in alarms.go.
const (
	WarnKeep      = "keep_leadership" // KEEP_LEADERSHIP on more than one master
	WarnTieBreak  = "no_tie_break"    // an even number of locations, none of them the default
	keepAdviceFix = "set KEEP_LEADERSHIP = 1 on one master only"
)

// SIMAlarms are the alarms mfscli prints under -SIM, SLQAlarms those under
// -SLQ, SCSAlarms those under -SCS.
var (
	SIMAlarms = []string{AlarmTwoLeaders, AlarmSingleMaster, AlarmMetadataID, AlarmClockOffset, AlarmFollowerBehind, AlarmAckDurability, WarnKeep, AlarmVersionSkew, AlarmVoterRecord, AlarmWitness, AlarmStoreReplica, AlarmStoreBehind}
	SLQAlarms = []string{AlarmAckDurability, WarnKeep, AlarmLocationLoss, WarnTieBreak, AlarmVoterRecord, AlarmWitness, AlarmWitnessUnheld, AlarmStoreReplica, AlarmStoreBehind}
	SCSAlarms = []string{AlarmVoterRecord}
)

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
// count of the newest config (locRows puts them first). Not raised when
// the registry names a witness (alarmsOf): its lease breaks the tie.
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
	return LayoutWarning{Kind: WarnTieBreak, Text: fmt.Sprintf("WARNING: no tie-break: %d locations take part and the default location (%s) has no chunkserver, so losing half of them (a site or the link between) leaves no LEADER; add a chunkserver to %s (a voter-only one, with an empty mfshdd.cfg, is enough) or move the default mark to a location with chunkservers (-CDEF/name), or name an object-store witness (the WITNESS_* keys on every master, then mfscli -CWITNESS/on)", n, defName, defName)}, true
}
