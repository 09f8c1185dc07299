package changelog

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// RoleChange is one role change of one master, as the election history
// keeps it (in an EntryHistory entry, or a new LEADER's EntryNoop). The
// LEADER writes the records: its own with its first entry, and the ones
// the other masters report in their status, so that the
// history is in the replicated metadata and a new LEADER holds the old
// one's. Nothing in the election reads it: it is for the operator.
type RoleChange struct {
	UnixMs int64 // the master's wall clock when it changed (0: not known)
	Master wire.MasterID
	// Inc and Seq number the change: the master's incarnation and its
	// count of role changes in it. A record is kept once (ApplyUpTo skips
	// one not newer than the last kept of its master).
	Inc     uint64
	Seq     uint64
	From    string // role names (LEADER, ELECT, ...)
	To      string
	Epoch   uint64
	Reason  string // the transition table's reason (docs/roles.md)
	Section string // and its section there
	// Votes: the master's tally per location at that moment (a master
	// that counts votes: ELECT, LEADER, DEPUTY, or one leaving them).
	Votes []LocationVotes `msgpack:",omitempty"`
	// Deposed and Why: for a new LEADER, the LEADER before it and why
	// that one went (Why* below), as the voters that nominated it saw it.
	Deposed wire.MasterID `msgpack:",omitempty"`
	Why     string        `msgpack:",omitempty"`
	// Witness and LeaseEpoch: the object-store witness's part in the
	// tally (docs/roles.md §7), for a record counted under a registry that
	// names one: what its lease did (Witness* below; "" when none was
	// named, or the record is older than the witness), and the lease_epoch
	// of the lease the change relied on (WitnessRelied only, else 0). The
	// json tags keep an older record's stored form byte for byte.
	Witness    string `msgpack:",omitempty" json:",omitempty"`
	LeaseEpoch uint64 `msgpack:",omitempty" json:",omitempty"`
}

// LocationVotes is one location's part of a tally: the votes the master
// counted and the voters registered there.
type LocationVotes struct {
	Location string
	Votes    int
	Voters   int
}

// Why a LEADER went, as a new LEADER's record says.
const (
	WhyLeaseLapsed   = "lease-lapsed"       // it stopped renewing its votes (frozen, cut off, overloaded)
	WhyRefused       = "connection-refused" // its host closed the vote connections and refused new ones (the process died)
	WhyClosed        = "connection-closed"  // its host closed the vote connections
	WhyConnLost      = "connection-lost"    // the vote connections failed (no close from its host)
	WhyHandover      = "handover"           // it handed leadership over (mfscli -CLU, KEEP_LEADERSHIP)
	WhyReleased      = "released"           // it let its votes go itself (lost its quorum, saw a newer epoch, shut down)
	WhyStepDown      = "stepped-down"       // it answered that it no longer leads
	WhyAdmin         = "admin"              // an operator made another master USURPER
	WhyKeep          = "keep-leadership"    // a KEEP_LEADERSHIP master took it back
	WhyRestarted     = "restarted"          // it came back as a new incarnation
	WhyNoLeader      = "no-leader"          // no LEADER was known (bootstrap, every master restarted)
	WhySelfNominated = "self-nominated"     // no voter nominated anybody; the master nominated itself
)

// The witness's part in a record's tally (RoleChange.Witness).
const (
	// WitnessRelied: exactly half of the locations, and the witness's lease
	// held: the lease was the deciding vote.
	WitnessRelied = "relied"
	// WitnessNoLease: exactly half of the locations, and no lease (lost,
	// not renewed in time, or never taken): a LEADER that leaves with it
	// lost its quorum because of the witness (§3.8).
	WitnessNoLease = "no-lease"
	// WitnessUnused: a witness was named, and the lease had no part (a
	// strict majority of the locations, or less than half).
	WitnessUnused = "unused"
)

// WitnessParts lists the values a record's Witness may hold besides "".
var WitnessParts = []string{WitnessRelied, WitnessNoLease, WitnessUnused}

// Whys lists the causes a LEADER change is counted under (anything else
// counts as "other").
var Whys = []string{WhyLeaseLapsed, WhyRefused, WhyClosed, WhyConnLost, WhyHandover, WhyReleased,
	WhyStepDown, WhyAdmin, WhyKeep, WhyRestarted, WhyNoLeader, WhySelfNominated}

// Bounds on what a record may hold: it is carried in a peer's status and
// kept in the metadata, so a peer's claim is checked (CheckRoleChange)
// before it is written.
const (
	MaxHistoryText  = 64 // bytes of a role name, reason, section, why or witness part
	MaxEntryHistory = 16 // records in one entry
)

// CheckHistory names what is wrong with an entry's records, or returns "".
func CheckHistory(rs []RoleChange) string {
	if len(rs) > MaxEntryHistory {
		return "malformed-history-count"
	}
	for i := range rs {
		if bad := CheckRoleChange(&rs[i]); bad != "" {
			return bad
		}
	}
	return ""
}

// CheckRoleChange names what is wrong with a record, or returns "".
func CheckRoleChange(r *RoleChange) string {
	for _, s := range []string{r.From, r.To, r.Reason, r.Section, r.Why, r.Witness} {
		if len(s) > MaxHistoryText || !utf8.ValidString(s) {
			return "malformed-history-text"
		}
	}
	switch {
	case r.Master == wire.NoMaster:
		return "malformed-history-master"
	case r.Seq == 0:
		return "malformed-history-seq"
	case len(r.Votes) > locations.MaxLocations:
		return "malformed-history-votes"
	case r.Witness != "" && !slices.Contains(WitnessParts, r.Witness):
		// A value this version does not know: a new one comes with a
		// protocol version, as the history itself did.
		return "malformed-history-witness"
	case (r.Witness == WitnessRelied) != (r.LeaseEpoch != 0) || r.LeaseEpoch > r.Epoch:
		// A lease relied on was given at the epoch the master counted in
		// (its lease_epoch), never above it.
		return "malformed-history-witness"
	}
	for _, v := range r.Votes {
		if len(v.Location) > locations.MaxNameLen || !utf8.ValidString(v.Location) || v.Votes < 0 || v.Voters < 0 {
			return "malformed-history-votes"
		}
	}
	return ""
}

func (r RoleChange) String() string {
	s := fmt.Sprintf("master %d %s -> %s epoch %d (%s, %s)", r.Master, r.From, r.To, r.Epoch, r.Reason, r.Section)
	if r.Why != "" {
		s += fmt.Sprintf(" after %d: %s", r.Deposed, r.Why)
	}
	switch r.Witness {
	case WitnessRelied:
		s += fmt.Sprintf(" with the witness's lease (lease_epoch %d)", r.LeaseEpoch)
	case WitnessNoLease:
		s += " on half of the locations without the witness's lease"
	}
	return s
}
