package clusterview

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
)

// locRows lists the location map of the master that counts votes (the
// View master when none does), each location with that master's count
// under its newest config; while a change is in flight, the locations of
// the previous config's count follow.
func locRows(view, counter *Answer) []LocRow {
	src := counter
	if src == nil {
		src = view
	}
	if src == nil {
		return []LocRow{}
	}
	st := src.St
	var newest *protocol.TallyStatus
	cfg := st.ConfigVersion
	if len(st.Tallies) > 0 {
		newest, cfg = &st.Tallies[0], st.Tallies[0].Config
	}
	perLoc := registeredPerLocation(st.Chunkservers)
	rows := make([]LocRow, 0, len(st.Locations))
	for _, l := range st.Locations {
		r := LocRow{Config: cfg, Name: l.Name, Ranges: append([]netip.Prefix{}, l.Ranges...), On: l.On,
			Default: l.Default, Registered: perLoc[l.Name]}
		r.Participating = r.On && r.Registered > 0
		if newest != nil {
			r.Participating = false
			if lt, ok := findLoc(*newest, l.Name); ok {
				r.Participating, r.Registered, r.LocCount = true, lt.Registered, countOf(lt)
			}
		}
		rows = append(rows, r)
	}
	for i, t := range st.Tallies {
		for _, lt := range t.Locations {
			if i == 0 && hasLocation(st.Locations, lt.Name) {
				continue
			}
			// A location of an older config: its ranges are not reported.
			rows = append(rows, LocRow{Config: t.Config, Name: lt.Name, On: true, Default: lt.Default,
				Registered: lt.Registered, Participating: true, LocCount: countOf(lt)})
		}
	}
	return rows
}

func registeredPerLocation(list []protocol.CSStatus) map[string]int {
	out := map[string]int{}
	for _, c := range list {
		out[c.Location]++
	}
	return out
}

func findLoc(t protocol.TallyStatus, name string) (protocol.LocTally, bool) {
	for _, lt := range t.Locations {
		if lt.Name == name {
			return lt, true
		}
	}
	return protocol.LocTally{}, false
}

func hasLocation(list []protocol.LocStatus, name string) bool {
	for _, l := range list {
		if l.Name == name {
			return true
		}
	}
	return false
}

func countOf(lt protocol.LocTally) *LocCount {
	return &LocCount{Reach: lt.Reach, Votes: lt.Votes, Carried: lt.Carried, CanCarry: lt.CanCarry}
}

// quorumOf is the quorum view of the master that counts votes, with its
// verdict line.
func quorumOf(answers []Answer, counter *Answer) QuorumView {
	if counter == nil {
		return QuorumView{Tallies: []TallyRow{}, Verdict: noCounterVerdict(answers) + uncertainNote(answers)}
	}
	st := counter.St
	q := QuorumView{Master: refOf(*counter), ConfigVersion: st.ConfigVersion, InForce: st.InForce,
		Tallies: make([]TallyRow, 0, len(st.Tallies)), Held: len(st.Tallies) > 0}
	for _, t := range st.Tallies {
		q.Tallies = append(q.Tallies, TallyRow{Config: t.Config, Outcome: t.Outcome, Participating: t.Participating,
			Carried: t.Carried, Needed: t.Needed, DefaultCarried: defaultCarried(t)})
		q.Held = q.Held && won(t)
	}
	q.Verdict = verdict(*counter)
	if !q.Held {
		q.Verdict += uncertainNote(answers)
	}
	return q
}

// uncertainNote names the chunkservers whose votes wait for a LEADER to
// restore their records (docs/architecture.md §7, "Voters that forgot"):
// with no quorum held, they may be what the election waits for, and only
// the operator can vouch for them.
func uncertainNote(answers []Answer) string {
	seen := map[netip.AddrPort]bool{}
	var list []string
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		for _, c := range a.St.Chunkservers {
			if ap := netip.AddrPortFrom(c.Addr, c.Port); c.Connected && c.Uncertain && !seen[ap] {
				seen[ap] = true
				list = append(list, ap.String())
			}
		}
	}
	if len(list) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d chunkserver(s) uncertain, granting no vote until a LEADER restores their records: %s "+
		"(if the others cannot make a quorum, bring back those that are down, or vouch with mfscli -CTRUST/ip/port at the risk it states)",
		len(list), strings.Join(list, ", "))
}

func won(t protocol.TallyStatus) bool { return t.Outcome == "WON" }

func defaultCarried(t protocol.TallyStatus) bool {
	for _, lt := range t.Locations {
		if lt.Default && lt.Carried {
			return true
		}
	}
	return false
}

// noCounterVerdict: nobody counts votes; say so and list every master's
// state, with why it may not be elected where it may not, so the reason
// is at hand (a founder gone before any registration was in force leaves
// masters that no chunkserver can elect).
func noCounterVerdict(answers []Answer) string {
	var states []string
	for _, a := range answers {
		s := fmt.Sprintf("%s %s", a.Addr.Addr(), StateWord(a))
		if a.Err == nil && a.St.NotEligible != "" {
			s += " (not eligible: " + a.St.NotEligible + ")"
		}
		states = append(states, s)
	}
	return "no LEADER or ELECT counts votes: " + strings.Join(states, ", ")
}

// verdict explains the count of a LEADER, ELECT or DEPUTY in one line:
// held, with the numbers; or not held, naming every location that is not
// carried and why; and, while a registry change is in flight, both counts.
func verdict(a Answer) string {
	who := fmt.Sprintf("%s %s", a.St.Role, a.Addr.Addr())
	ts := a.St.Tallies
	all := len(ts) > 0
	for _, t := range ts {
		all = all && won(t)
	}
	switch {
	case len(ts) == 0:
		return fmt.Sprintf("no quorum for %s: it reports no count (it holds no registry config)", who)
	case len(ts) == 1 && all:
		return fmt.Sprintf("quorum held by %s (%s)", who, wonText(ts[0])) + catchUpText(a.St.CatchUp)
	case len(ts) == 1:
		return fmt.Sprintf("no quorum for %s: %s", who, missingText(ts[0])+witnessHalf(ts[0], a.St.Witness))
	}
	head := "no quorum for " + who
	if all {
		head = "quorum held by " + who + " under both configs"
	}
	parts := []string{fmt.Sprintf("%s: config %d is being put in force (in force: %d), both counts must be won",
		head, ts[0].Config, a.St.InForce)}
	for _, t := range ts {
		if won(t) {
			parts = append(parts, fmt.Sprintf("Config %d: won (%s)", t.Config, wonText(t)))
		} else {
			parts = append(parts, fmt.Sprintf("Config %d: %s", t.Config, missingText(t)+witnessHalf(t, a.St.Witness)))
		}
	}
	return strings.Join(parts, ". ") + catchUpText(a.St.CatchUp)
}

// LostChangesText is what the verdict says of an ELECT that no master
// and no store log can give the changes it needs.
const LostChangesText = "waiting for the changes that only the lost master held"

// catchUpText: an ELECT's won count held up by the catch-up rule.
func catchUpText(c *protocol.CatchUpStatus) string {
	if c == nil {
		return ""
	}
	t := fmt.Sprintf(", but it may not lead before its changelog holds version %d (epoch %d), which the LEADER of epoch %d told the voters was committed; for %v",
		c.NeedVersion, c.NeedEpoch, c.Tag, c.For.Round(100*time.Millisecond))
	if c.Sources {
		return t + ": it is fetching it from a master or the witness's store"
	}
	return t + ": " + LostChangesText + " (no master it hears and no store log has them). Bring that master back; if its disk is gone for good, " +
		"stop this master, run `mfsmaster -c <its config> --accept-loss repair` on it and start it: it leads without them, and those acknowledged changes are lost (docs/operations.md, \"Bringing a lost site back\")"
}

// wonText: the numbers of a won count, and the locations it does without.
func wonText(t protocol.TallyStatus) string {
	if t.Participating == 1 {
		l := t.Locations[0]
		return fmt.Sprintf("%d of %d chunkservers vote for it, needs %d", l.Votes, l.Registered, l.Registered/2+1)
	}
	s := fmt.Sprintf("%d of %d locations carried, %s", t.Carried, t.Participating, needsText(t))
	if missing := uncarried(t); len(missing) > 0 {
		s += "; not carried: " + strings.Join(missing, "; ")
	}
	return s
}

// missingText: what a count that is not won lacks.
func missingText(t protocol.TallyStatus) string {
	switch {
	case t.Empty || len(t.Locations) == 0:
		return "no chunkserver is registered in a location that is ON"
	case t.Participating == 1:
		return strings.Join(uncarried(t), "; ")
	}
	return strings.Join(append(uncarried(t), fmt.Sprintf("%d of %d locations carried, %s", t.Carried, t.Participating, needsText(t))), "; ")
}

// uncarried names each location that is not carried, with its numbers.
func uncarried(t protocol.TallyStatus) []string {
	var out []string
	for _, l := range t.Locations {
		if !l.Carried {
			out = append(out, fmt.Sprintf("location %s: %s", l.Name, locShort(l)))
		}
	}
	return out
}

// locShort: why a location is not carried. A location is carried by
// strictly more than half of its registered chunkservers; when enough
// reach the master but their votes are not counted (yet), say so.
func locShort(l protocol.LocTally) string {
	need := l.Registered/2 + 1
	if l.Reach < need {
		return fmt.Sprintf("%d of %d chunkservers reach it, needs %d", l.Reach, l.Registered, need)
	}
	return fmt.Sprintf("%d of %d chunkservers reach it but %d of their votes are counted, needs %d", l.Reach, l.Registered, l.Votes, need)
}

// witnessHalf: for a count not won that carries exactly half of the
// locations under a registry that names a witness, why the lease does
// not break the tie for this master ("" otherwise).
func witnessHalf(t protocol.TallyStatus, w *protocol.WitnessStatus) string {
	if !t.Witness || t.WitnessHeld || t.Participating == 0 || 2*t.Carried != t.Participating {
		return ""
	}
	return "; " + halfReason(w)
}

// needsText: how many carried locations win. With an even number taking
// part and the default location among them, exactly half wins when the
// default is carried (the tie-break): say which way it goes. With a
// witness named, its lease breaks the tie instead, for the master that
// holds it.
func needsText(t protocol.TallyStatus) string {
	p := t.Participating
	if t.Witness && p%2 == 0 {
		if t.WitnessHeld {
			return fmt.Sprintf("needs %d (half, with the witness's lease)", p/2)
		}
		return fmt.Sprintf("needs %d, or %d with the witness's lease", p/2+1, p/2)
	}
	for _, l := range t.Locations {
		if !l.Default || p%2 != 0 {
			continue
		}
		if l.Carried {
			return fmt.Sprintf("needs %d (half, with the default location %s)", p/2, l.Name)
		}
		return fmt.Sprintf("needs %d, or %d with the default location %s", p/2+1, p/2, l.Name)
	}
	return fmt.Sprintf("needs %d", t.Needed)
}
