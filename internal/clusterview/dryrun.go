package clusterview

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// DryRun is what an admin command would do to the registry and to the
// LEADER's quorum (mfscli --dry-run). It is computed from the LEADER's
// status with what the LEADER would run (live.go): registry.Change.Apply
// on its config, then the LEADER's own refusals in its order (the
// chunkserver to remove still active, the change itself invalid, no
// chunkserver left counting, the votes it holds no quorum under the new
// config), every count by pkg/quorum. Nothing is sent.
type DryRun struct {
	Command   string      `json:"command"`
	Sent      bool        `json:"sent"`   // always false
	Master    MasterRef   `json:"master"` // whose registry and votes (ip "": no master counts)
	Change    string      `json:"change"` // as the LEADER would write it ("": not a registry change)
	Before    *DryCount   `json:"before"` // nil: the master counts no votes
	After     *DryCount   `json:"after"`  // nil: not computed (Refused or Notes say why)
	Locations []DryLocRow `json:"locations"`
	Accepted  bool        `json:"accepted"`    // the LEADER would take the change
	Keeps     bool        `json:"quorum_kept"` // and hold its quorum under both configs while it is put in force
	Refused   string      `json:"refused"`     // why it would not ("" it would)
	Notes     []string    `json:"notes"`
	Verdict   string      `json:"verdict"`
}

// DryCount is one count: now, or under the changed config.
type DryCount struct {
	Config        uint64 `json:"config"`
	Outcome       string `json:"outcome"`
	Participating int    `json:"participating"`
	Carried       int    `json:"carried"`
	Needed        int    `json:"needed"`
	Margin        int    `json:"margin"` // how many more chunkservers could be lost, whichever (-1: not won)
	Text          string `json:"text"`
}

// DryLocRow is one location before and after (nil: not in that map).
type DryLocRow struct {
	Name   string  `json:"name"`
	Before *DryLoc `json:"before"`
	After  *DryLoc `json:"after"`
}

// DryLoc is one location under one config.
type DryLoc struct {
	Name          string `json:"name"`
	On            bool   `json:"on"`
	Default       bool   `json:"default"`
	Registered    int    `json:"registered"`
	Participating bool   `json:"participating"`
	Votes         int    `json:"votes"` // for the master, when it participates
	Carried       bool   `json:"carried"`
}

// NoLeader is the refusal of a command for the LEADER when none answers.
const NoLeader = "Can't perform any operation because there is no leading master"

// DryRunChange is the dry run of a registry or location change given to
// the LEADER (-CRC, -CM1, -CM0, -CMAP, -CUNMAP, -CREN, -CDEF, -CON,
// -COFF).
func DryRunChange(answers []Answer, command string, c registry.Change) DryRun {
	d := dryRunOf(command)
	leader := FirstWithRole(answers, roles.Leader)
	if leader == nil {
		d.Refused = NoLeader
		d.countBefore(VoteCounter(answers))
		return d.settle()
	}
	d.Change = c.String()
	lv, ok := d.countBefore(leader)
	if !ok {
		return d.settle()
	}
	if c.Kind == registry.ChangeRemove {
		if cs, found := findCS(leader.St.Chunkservers, wire.CSID(c.ID)); found && cs.Connected {
			d.Refused = fmt.Sprintf("chunkserver CS%d can't be removed because it is still active (connected to the LEADER)", c.ID)
			return d.settle()
		}
	}
	next, err := c.Apply(lv.cfg)
	if err != nil {
		d.Refused = err.Error()
		return d.settle()
	}
	before := lv.today()
	after := tallyWith(next, func(id wire.CSID) bool { return lv.votes[id] })
	d.After = dryCount(next, after)
	d.Locations = dryLocRows(lv.cfg, before, next, after)
	switch {
	case next.Electorate().Size() == 0 && lv.cfg.Electorate().Size() > 0:
		d.Refused = "the change would leave no chunkserver counting towards quorum"
	case after.Outcome != quorum.Won:
		d.Refused = "under the changed registry the votes the LEADER holds would not make a quorum (" + d.After.Text + ")"
	}
	d.Accepted = d.Refused == ""
	d.Keeps = d.Accepted && quorum.Joint(before, after) == quorum.Won
	return d.settle()
}

// DryRunTempRemove is the dry run of -CTR: refused as mfscli would
// refuse to send it (refused: a LEADER answers, or a master already
// leaves out another of the location), else the count of the master that
// counts votes now and after, each under the masters' own leave-out rule
// (registry.LeaveOut: at most one per location, never the last of its
// location, in a location with an even number only the highest id:
// docs/architecture.md §5.1), with the chunkservers it leaves out now.
func DryRunTempRemove(answers []Answer, command string, cs protocol.CSStatus, refused string) DryRun {
	d := dryRunOf(command)
	d.Refused = refused
	counter := VoteCounter(answers)
	lv, ok := d.countBefore(counter)
	if d.Refused != "" || !ok {
		return d.settle()
	}
	votes := func(id wire.CSID) bool { return lv.votes[id] }
	out := map[wire.CSID]bool{}
	for _, id := range lv.st.TempRemoved {
		out[id] = true
	}
	now, _ := registry.LeaveOut(lv.cfg, out)
	before := tallyWith(now, votes)
	d.Before = dryCount(now, before)
	out[cs.ID] = true
	next, left := registry.LeaveOut(lv.cfg, out)
	if !left[cs.ID] {
		d.Refused = fmt.Sprintf("the leave-out rule keeps %s:%d (id %d) in the count: it is the last of its location, another of its location is left out already, or its location holds an even number and it is not the highest id there", cs.Addr, cs.Port, cs.ID)
		return d.settle()
	}
	after := tallyWith(next, votes)
	d.After = dryCount(next, after)
	d.Locations = dryLocRows(now, before, next, after)
	d.Accepted = true
	d = d.settle()
	who := "the master that counts votes"
	if counter != nil {
		who = fmt.Sprintf("%s %s", StateWord(*counter), counter.Addr.Addr())
	}
	if after.Outcome == quorum.Won {
		d.Verdict = fmt.Sprintf("dry run, nothing sent: every master would count without it, and %s would then hold a quorum: %s", who, d.After.Text)
	} else {
		d.Verdict = fmt.Sprintf("dry run, nothing sent: every master would count without it, and %s would still hold no quorum: %s", who, d.After.Text)
	}
	return d
}

func dryRunOf(command string) DryRun {
	return DryRun{Command: command, Locations: []DryLocRow{}, Notes: []string{}}
}

// countBefore rebuilds the count of master a (nil: none counts) as it is
// now; false when there is none to rebuild.
func (d *DryRun) countBefore(a *Answer) (live, bool) {
	if a == nil {
		return live{}, false
	}
	d.Master = refOf(*a)
	lv, err := liveOf(a.St)
	if err != nil {
		d.Notes = append(d.Notes, fmt.Sprintf("the registry of %s cannot be rebuilt: %v", a.Addr.Addr(), err))
		return live{}, false
	}
	t := lv.today()
	d.Before = dryCount(lv.cfg, t)
	d.Locations = dryLocRows(lv.cfg, t, nil, quorum.Tally{})
	for _, n := range []string{lv.inFlight(), lv.mismatch(t)} {
		if n != "" {
			d.Notes = append(d.Notes, n)
		}
	}
	return lv, true
}

func dryCount(cfg *registry.ClusterConfig, t quorum.Tally) *DryCount {
	margin, _ := t.Margin()
	return &DryCount{Config: cfg.Version, Outcome: t.Outcome.String(), Participating: t.Participating,
		Carried: t.Carried, Needed: t.Needed, Margin: margin, Text: countText(cfg, t)}
}

// dryLocRows pairs the locations of two configs by id (a rename keeps
// it; a location a change creates is new); next nil: before only.
func dryLocRows(cur *registry.ClusterConfig, before quorum.Tally, next *registry.ClusterConfig, after quorum.Tally) []DryLocRow {
	rows := []DryLocRow{}
	at := map[wire.LocationID]int{}
	for _, l := range cur.Locations.Locations() {
		at[l.ID] = len(rows)
		b := dryLoc(cur, before, l.ID)
		rows = append(rows, DryLocRow{Name: b.Name, Before: b})
	}
	if next == nil {
		return rows
	}
	for _, l := range next.Locations.Locations() {
		a := dryLoc(next, after, l.ID)
		i, ok := at[l.ID]
		if !ok {
			i = len(rows)
			rows = append(rows, DryLocRow{})
		}
		rows[i].Name, rows[i].After = a.Name, a
	}
	return rows
}

func dryLoc(cfg *registry.ClusterConfig, t quorum.Tally, id wire.LocationID) *DryLoc {
	l, _ := cfg.Locations.Location(id)
	d := &DryLoc{Name: l.Name, On: !l.Off, Default: cfg.Locations.Default() == id}
	for _, m := range cfg.Members {
		if cfg.Locations.Locate(m.Addr) == id {
			d.Registered++
		}
	}
	for _, lt := range t.Locations {
		if lt.Loc == id {
			d.Participating, d.Votes, d.Carried = true, lt.For, lt.Carried
		}
	}
	return d
}

// settle writes the verdict line.
func (d DryRun) settle() DryRun {
	head := "dry run, nothing sent: "
	switch {
	case d.Refused != "":
		d.Verdict = head + "it would be refused: " + d.Refused
	case d.After == nil:
		d.Verdict = head + "the count after it is not computed (see the note)"
	case d.Keeps:
		d.Verdict = fmt.Sprintf("%sthe LEADER would accept it and keep its quorum: %s, margin %d", head, d.After.Text, d.After.Margin)
	default:
		d.Verdict = head + "the LEADER would accept it but not hold its quorum while it is put in force: " + d.After.Text
	}
	return d
}
