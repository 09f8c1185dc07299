package clusterview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The planner (-SQP) and the dry runs (--dry-run) count what the LEADER
// counts, with its own pure functions: the registry config rebuilt from
// its status answer, the location map through locations.Restore, a
// change through registry.Change.Apply, every count through
// pkg/quorum. Nothing here decides a count by itself.

// live is a master's registry config rebuilt from its status answer, and
// the votes it counts now.
type live struct {
	st    protocol.StatusResp
	cfg   *registry.ClusterConfig
	votes map[wire.CSID]bool
}

// liveOf rebuilds the newest config a master holds. The status names
// locations but not their ids: they get 1, 2, ... in the order listed
// (the master lists them by id), which changes no count; Restore checks
// the map as the core's store does.
func liveOf(st protocol.StatusResp) (live, error) {
	snap := locations.Snapshot{Next: wire.LocationID(len(st.Locations) + 1)}
	for i, l := range st.Locations {
		id := wire.LocationID(i + 1)
		snap.Locations = append(snap.Locations, locations.Location{ID: id, Name: l.Name, Off: !l.On})
		for _, p := range l.Ranges {
			snap.Ranges = append(snap.Ranges, locations.Range{Prefix: p, Loc: id})
		}
		if l.Default {
			snap.Default = id
		}
	}
	m, err := locations.Restore(snap)
	if err != nil {
		return live{}, fmt.Errorf("its location map: %w", err)
	}
	lv := live{st: st, cfg: &registry.ClusterConfig{Version: st.ConfigVersion, Locations: m}, votes: map[wire.CSID]bool{}}
	if st.Witness != nil {
		lv.cfg.Witness = st.Witness.ID
	}
	for _, c := range st.Chunkservers {
		lv.cfg.Members = append(lv.cfg.Members, registry.Chunkserver{ID: c.ID, Addr: c.Addr, Port: c.Port,
			VoterOnly: c.VoterOnly, Maintenance: c.Maintenance})
		if c.Voting {
			lv.votes[c.ID] = true
		}
	}
	slices.SortFunc(lv.cfg.Members, func(a, b registry.Chunkserver) int { return cmp.Compare(a.ID, b.ID) })
	return lv, nil
}

// tallyWith counts under cfg with the votes for the master in votes; the
// rest are Unknown, as a master counts them, and so is the witness's.
func tallyWith(cfg *registry.ClusterConfig, votes func(wire.CSID) bool) quorum.Tally {
	return tallyLease(cfg, votes, false)
}

// tallyLease is tallyWith with the witness's vote for the master when
// lease is set (it holds the lease or can take it: canLease); it counts
// only where cfg names a witness.
func tallyLease(cfg *registry.ClusterConfig, votes func(wire.CSID) bool, lease bool) quorum.Tally {
	w := quorum.Unknown
	if lease {
		w = quorum.For
	}
	return cfg.Electorate().TallyWitness(func(id wire.CSID) quorum.Vote {
		if votes(id) {
			return quorum.For
		}
		return quorum.Unknown
	}, w)
}

// today is the master's count now, as rebuilt.
func (lv live) today() quorum.Tally {
	return tallyWith(lv.cfg, func(id wire.CSID) bool { return lv.votes[id] })
}

// locName names a location of cfg.
func locName(cfg *registry.ClusterConfig, id wire.LocationID) string {
	l, _ := cfg.Locations.Location(id)
	return l.Name
}

// statusOf puts a count in the listing's form, so the words of the
// verdict line (needsText) say it the same way.
func statusOf(cfg *registry.ClusterConfig, t quorum.Tally) protocol.TallyStatus {
	s := protocol.TallyStatus{Config: cfg.Version, Outcome: t.Outcome.String(), Empty: t.Empty, Divided: t.Divided,
		Participating: t.Participating, Carried: t.Carried, Needed: t.Needed, Witness: t.Witness, WitnessHeld: t.WitnessHeld}
	for _, l := range t.Locations {
		s.Locations = append(s.Locations, protocol.LocTally{Name: locName(cfg, l.Loc), Default: l.Default,
			Registered: l.Registered, Votes: l.For, Reach: l.For, Carried: l.Carried, CanCarry: l.CanCarry})
	}
	return s
}

// countText is a count's numbers in words: "2 of 3 locations carried,
// needs 2", or undivided "4 of 6 chunkservers vote for it, needs 4".
func countText(cfg *registry.ClusterConfig, t quorum.Tally) string {
	switch {
	case t.Empty || len(t.Locations) == 0:
		return "no chunkserver is registered in a location that is ON"
	case !t.Divided:
		l := t.Locations[0]
		return fmt.Sprintf("%d of %d chunkservers vote for it, needs %d", l.For, l.Registered, l.Registered/2+1)
	}
	st := statusOf(cfg, t)
	// A lease counted for the master (the planner's "could take it")
	// decides only an exact half: above it, say what it needs either way.
	st.WitnessHeld = st.WitnessHeld && 2*t.Carried == t.Participating
	return fmt.Sprintf("%d of %d locations carried, %s", t.Carried, t.Participating, needsText(st))
}

// mismatch compares the rebuilt count with the one the master reports
// for the same config; "" when they agree. They differ when the master
// counts without chunkservers its status lists (a -CTR, or a repair, not
// yet written as removals), or when the answer was built between two
// steps of a change.
func (lv live) mismatch(t quorum.Tally) string {
	if len(lv.st.Tallies) == 0 {
		return ""
	}
	rep := lv.st.Tallies[0]
	mine := statusOf(lv.cfg, t)
	same := rep.Outcome == mine.Outcome && rep.Participating == mine.Participating && rep.Carried == mine.Carried &&
		len(rep.Locations) == len(mine.Locations)
	for i := 0; same && i < len(rep.Locations); i++ {
		a, b := rep.Locations[i], mine.Locations[i]
		same = a.Name == b.Name && a.Registered == b.Registered && a.Votes == b.Votes
	}
	if same {
		return ""
	}
	return fmt.Sprintf("mfscli's count from the listed registry (%s: %s) is not the one %s reports (%s: %s)",
		mine.Outcome, perLocation(mine), lv.st.Addr, rep.Outcome, perLocation(rep))
}

// perLocation is "dc1 2/2 dc2 1/2" (votes/registered).
func perLocation(t protocol.TallyStatus) string {
	s := make([]string, len(t.Locations))
	for i, l := range t.Locations {
		s[i] = fmt.Sprintf("%s %d/%d", l.Name, l.Votes, l.Registered)
	}
	return strings.Join(s, " ")
}

// inFlight says, while a registry change is being put in force, that a
// count made here is under the newest config alone ("" otherwise).
func (lv live) inFlight() string {
	if len(lv.st.Tallies) < 2 && lv.st.ConfigVersion == lv.st.InForce {
		return ""
	}
	return fmt.Sprintf("config %d is being put in force (in force: %d): the LEADER must win under both, and this count is under config %d alone; ask again in a moment",
		lv.st.ConfigVersion, lv.st.InForce, lv.st.ConfigVersion)
}
