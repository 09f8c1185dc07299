package clusterview

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// HistoryRow is one record of the election history (mfscli -SLH): one
// role change of one master, as the replicated metadata keeps it.
type HistoryRow struct {
	TimeMs   int64         `json:"time_ms"` // the master's wall clock then; 0: not known
	IP       netip.Addr    `json:"ip"`      // the master ("" when its address is not known: MasterID says which)
	MasterID wire.MasterID `json:"master_id"`
	From     string        `json:"from"`
	To       string        `json:"to"`
	Epoch    uint64        `json:"epoch"`
	Reason   string        `json:"reason"`  // docs/roles.md's transition-table reason
	Section  string        `json:"section"` // and its section there
	Votes    []LocVotes    `json:"votes"`   // the master's tally per location then; [] when it counted none
	// A new LEADER's record: the LEADER before it ("" none or not known)
	// and why that one went (changelog.Why*); "" in the other records.
	Deposed   netip.Addr    `json:"deposed_ip"`
	DeposedID wire.MasterID `json:"deposed_id"`
	Why       string        `json:"why"`
	// The object-store witness's part in the tally (changelog.Witness*:
	// relied, no-lease, unused; "" when the registry named none) and the
	// lease_epoch of the lease the change relied on (0: none).
	Witness    string `json:"witness"`
	LeaseEpoch uint64 `json:"lease_epoch"`
	FromTone   Tone   `json:"-"`
	ToTone     Tone   `json:"-"`
}

// LocVotes is one location's part of a record's tally.
type LocVotes struct {
	Location string `json:"location"`
	Votes    int    `json:"votes"`
	Voters   int    `json:"voters"` // registered there
}

// HistoryView says whose history the rows are and what the masters report
// beside it.
type HistoryView struct {
	// Source is the master whose history is listed: the LEADER's is the
	// most complete (a follower's is what it has committed); without one,
	// the answer with the highest commit, then the most records. Its ip
	// is "" when no master answered.
	Source MasterRef `json:"source"`
	Held   int       `json:"records_held"` // the rows may be its newest only
	// LeaderChanges counts the LEADER changes ever recorded, by cause
	// (changelog.Whys, "other"): the history drops its oldest records,
	// the counts are kept.
	LeaderChanges      map[string]uint64 `json:"leader_changes"`
	LeaderChangesTotal uint64            `json:"leader_changes_total"`
	// Unrecorded lists the masters whose own role changes are not all in
	// the history (yet), by address; Note says it in one line ("" none).
	Unrecorded []UnrecordedRow `json:"unrecorded"`
	Note       string          `json:"note,omitempty"`
}

// UnrecordedRow is a master's role changes that the history lacks: waiting
// for a LEADER to write them (a LEADER writes what each master's status
// reports), or dropped (the master changed role more often than it keeps
// while no LEADER took them).
type UnrecordedRow struct {
	IP      netip.Addr `json:"ip"`
	Waiting int        `json:"waiting"`
	Lost    uint64     `json:"lost"`
}

// historyOf builds the history listing from the source's answer and what
// every answering master says it has not yet had written.
func historyOf(answers []Answer, leader *Answer) ([]HistoryRow, HistoryView) {
	v := HistoryView{LeaderChanges: map[string]uint64{}, Unrecorded: []UnrecordedRow{}}
	rows := []HistoryRow{}
	src := historySource(answers, leader)
	if src == nil {
		return rows, v
	}
	v.Source, v.Held = refOf(*src), src.St.HistoryTotal
	for why, n := range src.St.LeaderChanges {
		v.LeaderChanges[why] = n
		v.LeaderChangesTotal += n
	}
	for _, r := range src.St.History {
		rows = append(rows, historyRow(r))
	}
	// By time: the history holds records in the order the LEADERs wrote
	// them, and a master's change waits in its status until a LEADER can
	// write it (a deposed LEADER's own step-down comes after the next
	// LEADER's election). Equal times keep that order; a record of
	// unknown time (0) stays after the one written before it.
	type keyed struct {
		at  int64
		row HistoryRow
	}
	ks := make([]keyed, len(rows))
	var last int64
	for i, r := range rows {
		if r.TimeMs != 0 {
			last = r.TimeMs
		}
		ks[i] = keyed{last, r}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.at, b.at) })
	for i := range ks {
		rows[i] = ks[i].row
	}
	for _, a := range answers {
		if a.Err == nil && (a.St.HistoryWaiting > 0 || a.St.HistoryLost > 0) {
			v.Unrecorded = append(v.Unrecorded, UnrecordedRow{IP: a.Addr.Addr(), Waiting: a.St.HistoryWaiting, Lost: a.St.HistoryLost})
		}
	}
	slices.SortFunc(v.Unrecorded, func(a, b UnrecordedRow) int { return a.IP.Compare(b.IP) })
	v.Note = unrecordedNote(v.Unrecorded)
	return rows, v
}

// historySource is the answer whose history is listed: the LEADER's, else
// the highest commit, then the most records, then the lower address (so
// the answers' order does not matter).
func historySource(answers []Answer, leader *Answer) *Answer {
	if leader != nil {
		return leader
	}
	var best *Answer
	for i := range answers {
		a := &answers[i]
		if a.Err != nil {
			continue
		}
		if best == nil {
			best = a
			continue
		}
		if c := cmp.Or(cmp.Compare(a.St.Commit, best.St.Commit), cmp.Compare(a.St.HistoryTotal, best.St.HistoryTotal),
			best.Addr.Compare(a.Addr)); c > 0 {
			best = a
		}
	}
	return best
}

func historyRow(r protocol.RoleChangeStatus) HistoryRow {
	h := HistoryRow{TimeMs: r.UnixMs, IP: r.Master, MasterID: r.MasterID, From: r.From, To: r.To, Epoch: r.Epoch,
		Reason: r.Reason, Section: r.Section, Votes: make([]LocVotes, len(r.Votes)),
		Deposed: r.Deposed, DeposedID: r.DeposedID, Why: r.Why, Witness: r.Witness, LeaseEpoch: r.LeaseEpoch,
		FromTone: RoleNameTone(r.From), ToTone: RoleNameTone(r.To)}
	for i, lv := range r.Votes {
		h.Votes[i] = LocVotes{Location: lv.Location, Votes: lv.Votes, Voters: lv.Voters}
	}
	return h
}

// WitnessVotes is what the witness added to a record's tally, for the
// votes column: "+ witness lease_epoch 7" when the change relied on its
// lease, "+ no witness lease" on an exact half without it, "" otherwise.
func (r HistoryRow) WitnessVotes() string {
	switch r.Witness {
	case changelog.WitnessRelied:
		return fmt.Sprintf("+ witness lease_epoch %d", r.LeaseEpoch)
	case changelog.WitnessNoLease:
		return "+ no witness lease"
	}
	return ""
}

// ReasonText is a record's reason as the listings print it: the
// transition table's reason and section, and for a LEADER that left on
// half of the locations without the witness's lease (lost, not renewed in
// time, or never taken: its quorum lapsed with it, §3.8) that too.
func (r HistoryRow) ReasonText() string {
	s := strings.TrimSpace(r.Reason + " " + r.Section)
	if r.From == roles.Leader.String() && r.Witness == changelog.WitnessNoLease {
		s += ": half, no witness lease"
	}
	return s
}

// unrecordedNote is the line under the history while any master's role
// changes are not all in it.
func unrecordedNote(list []UnrecordedRow) string {
	var parts []string
	for _, u := range list {
		switch {
		case u.Waiting == 1:
			parts = append(parts, fmt.Sprintf("1 role change of %s, until a LEADER writes it", u.IP))
		case u.Waiting > 1:
			parts = append(parts, fmt.Sprintf("%d role changes of %s, until a LEADER writes them", u.Waiting, u.IP))
		}
		if u.Lost > 0 {
			parts = append(parts, fmt.Sprintf("%d role change(s) of %s, lost: it changed role more often than it keeps while no LEADER took them", u.Lost, u.IP))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "NOTE: not in the history: " + strings.Join(parts, "; ")
}

// Causes orders the causes of LEADER changes as the listings print them:
// the most frequent first, then by name; causes never counted are left
// out.
func Causes(counts map[string]uint64) []string {
	out := make([]string, 0, len(counts))
	for why, n := range counts {
		if n > 0 {
			out = append(out, why)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b)) })
	return out
}

// roleByName is a record's role name as a role (ok false for a name this
// version does not know: a record is a peer's word).
func roleByName(name string) (roles.Role, bool) {
	for r := roles.Dummy; r <= roles.Deputy; r++ {
		if r.String() == name {
			return r, true
		}
	}
	return 0, false
}
