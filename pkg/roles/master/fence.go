package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// RoleReport is what a master tells the outside about its role (listings,
// metrics, health checks): the role, its epoch, the LEADER it knows of and
// its sync state.
type RoleReport struct {
	Role   roles.Role
	Epoch  uint64
	Leader wire.MasterID
	Sync   roles.SyncState
}

// VoteLease is one vote a master counts and the instant (its own clock)
// from which it may no longer count it.
type VoteLease struct {
	CS    wire.CSID
	Until roles.Instant
}

// Fence is what a master may say of its role at any instant t from its last
// step on, without stepping again: the core's own answer to "what would the
// re-tally at the start of the next Step (checkQuorum, roles.md §3.8) make
// of this master at t". It is for reports built away from the loop that
// owns the core (a metrics scrape, a health check), from a copy the loop
// takes after its steps, judged at the instant the report is built.
//
// Invariant, for every t >= At with no input stepped since the copy: if Now
// is LEADER, ReportAt(t) is what Role, Epoch, Leader and Sync say after
// Step(t, Tick{}), HoldsQuorum(t) is the core's HoldsQuorum(t), and
// CountedAt(t) its CountedVoters(). For another role Now stands (its timers
// never make it LEADER: that takes a vote, which is an input), and nothing
// is over-reported: HoldsQuorum is false and CountedAt counts only votes
// whose lease still holds at t.
type Fence struct {
	At  roles.Instant // the instant of the last step
	Now RoleReport    // the master as it stands at At
	// Until: a LEADER is fenced from this instant on, the first at which
	// the votes it may count no longer make a quorum (Never: its count
	// cannot lapse, as for a founder with no registered chunkserver).
	// At for any other role.
	Until roles.Instant
	// Fenced is what a LEADER is from Until on (a FOLLOWER: §3.8); Now for
	// any other role.
	Fenced RoleReport
	Votes  []VoteLease // the votes counted at At, by id
	// Witness: until when the master counts the witness's lease (0: it
	// does not), judged like a vote's lease.
	Witness roles.Instant
}

// Fence returns the master's fence as of its last step.
func (m *Master) Fence() Fence {
	f := Fence{At: m.now, Until: m.now,
		Now: RoleReport{Role: m.role, Epoch: m.Epoch(), Leader: m.Leader(), Sync: m.Sync()}}
	f.Fenced = f.Now
	if m.wit != nil {
		f.Witness = roles.Instant(m.wit.Until(witness.Instant(m.now)))
	}
	ok := m.countable(m.now, nil)
	for _, id := range m.voterIDs() {
		if v := m.voters[id]; ok(v) {
			f.Votes = append(f.Votes, VoteLease{CS: id, Until: v.validUntil})
		}
	}
	if m.role != roles.Leader {
		return f
	}
	f.Until = m.quorumLapse()
	// What become(Follower) leaves: the epoch shown is the highest seen, the
	// recorded LEADER is the handover target (if any), none heard of yet.
	f.Fenced = RoleReport{Role: roles.Follower, Epoch: m.hard.MaxEpoch, Leader: m.handover, Sync: roles.Desync}
	if !m.HasMetadata() {
		f.Fenced.Sync = roles.Init
	}
	return f
}

// quorumLapse is the first instant from m.now on at which this LEADER's
// counted votes no longer make a quorum (the check of checkQuorum), or
// Never: the quorum deadline (scale.go), recomputed here so that it is
// the exact one (the cached one is a lower bound once acknowledgements
// came in after it). O(voters): the daemon takes a fence after a group of
// steps, not after each.
func (m *Master) quorumLapse() roles.Instant {
	m.qc.valid = false
	if !m.wonAt(m.now) {
		return m.now // not stepped down yet (a vote lost within this step)
	}
	return m.quorumUntil(m.now)
}

// HoldsQuorum reports whether the master holds a quorum at t (t >= At).
func (f Fence) HoldsQuorum(t roles.Instant) bool {
	return f.Now.Role == roles.Leader && t < f.Until
}

// WitnessAt reports whether the master counts the witness's lease at t
// (t >= At).
func (f Fence) WitnessAt(t roles.Instant) bool { return t < f.Witness }

// ReportAt is what the master may report of its role at t (t >= At): Now,
// or Fenced once a LEADER's quorum has lapsed.
func (f Fence) ReportAt(t roles.Instant) RoleReport {
	if f.Now.Role == roles.Leader && t >= f.Until {
		return f.Fenced
	}
	return f.Now
}

// CountedAt lists, by id, the votes the master may count at t (t >= At):
// none once a LEADER is fenced (stepping down releases them all).
func (f Fence) CountedAt(t roles.Instant) []wire.CSID {
	if f.Now.Role == roles.Leader && t >= f.Until {
		return nil
	}
	var out []wire.CSID
	for _, v := range f.Votes {
		if v.Until > t {
			out = append(out, v.CS)
		}
	}
	return out
}
