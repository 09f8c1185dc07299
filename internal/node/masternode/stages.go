package masternode

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

// stages times each client change through the ack rule on a LEADER
// (docs/architecture.md §7), for mfs_master_change_stage_seconds: the
// driver sees every step of it (the entry in the group's Persist, the
// Persist done, a follower's AppendAck, the heartbeat that tells the
// chunkservers, the reply). Only the loop goroutine touches it. At most
// stagesMax changes are followed; the oldest are dropped past that (a
// LEADER that lost its role never answers them).
type stages struct {
	order []uint64 // versions followed, oldest first
	at    map[uint64]*stageTimes
	by    map[stageKey]uint64 // the change's session and sequence -> version
	// The highest version each stage was seen for: a heartbeat round
	// tells every chunkserver the same commit point, and only the first
	// of its heartbeats may move anything.
	durableTo, replicatedTo, sentTo uint64
}

type stageKey struct {
	client changelog.ClientID
	seq    uint64
}

// stageTimes are the instants one change reached each stage (zero: not
// yet).
type stageTimes struct {
	key                                      stageKey
	stepped, durable, replicated, commitSent time.Time
}

const stagesMax = 1 << 16

// Stage names, in order: each measures from the end of the one before.
const (
	stageLeaderWrite = "leader_write" // stepped -> the LEADER's Persist is durable: (a)
	stageReplication = "replication"  // -> a follower acknowledged it: (b)
	stageCommitSend  = "commit_send"  // -> the heartbeat telling the chunkservers it is committed left
	stageVoterRound  = "voter_round"  // -> the reply: a quorum of chunkservers stored it, (c)
	stageTotal       = "total"        // stepped -> the reply
)

func newStages() *stages {
	return &stages{at: map[uint64]*stageTimes{}, by: map[stageKey]uint64{}}
}

// appended: a client change entered the log at version v, stepped at t.
func (s *stages) appended(e changelog.Entry, t time.Time) {
	if e.Client == 0 {
		return
	}
	if v := e.Pos.Version - 1; v < s.durableTo || v < s.replicatedTo || v < s.sentTo {
		// A log cut back and written again (this master was a follower in
		// between): the marks belong to the old versions.
		s.durableTo, s.replicatedTo, s.sentTo = min(s.durableTo, v), min(s.replicatedTo, v), min(s.sentTo, v)
	}
	k := stageKey{e.Client, e.Seq}
	if old, ok := s.by[k]; ok {
		delete(s.at, old) // the same change again (a LEADER that lost it)
	}
	s.prune()
	for len(s.order) >= stagesMax {
		old := s.order[0]
		s.order = s.order[1:]
		if st := s.at[old]; st != nil {
			delete(s.by, st.key)
			delete(s.at, old)
		}
	}
	s.order = append(s.order, e.Pos.Version)
	s.at[e.Pos.Version] = &stageTimes{key: k, stepped: t}
	s.by[k] = e.Pos.Version
}

// prune drops the versions at the front that are no longer followed
// (replied: the maps forget a change at once, the order when it reaches
// the front).
func (s *stages) prune() {
	for len(s.order) > 0 && s.at[s.order[0]] == nil {
		s.order = s.order[1:]
	}
}

// reach marks the changes at or below v as having reached a stage at t:
// stage picks that stage's instant, prev the one before it, which must
// be set (nil: none). mark is the stage's highest version seen: a
// version at or below it has nothing left to mark.
func (s *stages) reach(mark *uint64, v uint64, t time.Time, stage, prev func(*stageTimes) *time.Time) {
	s.prune()
	if len(s.order) == 0 {
		return
	}
	// A follower's acknowledgement names the version; a mark past every
	// change followed would stop this stage being seen for good.
	v = min(v, s.order[len(s.order)-1])
	if v <= *mark {
		return
	}
	*mark = v
	for _, ver := range s.order {
		if ver > v {
			return
		}
		st := s.at[ver]
		if st == nil || (prev != nil && prev(st).IsZero()) {
			continue
		}
		if at := stage(st); at.IsZero() {
			*at = t
		}
	}
}

// durable: every followed change at or below v is on this master's disk.
func (s *stages) durable(v uint64, t time.Time) {
	s.reach(&s.durableTo, v, t, func(st *stageTimes) *time.Time { return &st.durable }, nil)
}

// replicated: a follower holds every change at or below v.
func (s *stages) replicated(v uint64, t time.Time) {
	s.reach(&s.replicatedTo, v, t, func(st *stageTimes) *time.Time { return &st.replicated },
		func(st *stageTimes) *time.Time { return &st.durable })
}

// commitSent: a heartbeat saying "committed up to v" left.
func (s *stages) commitSent(v uint64, t time.Time) {
	s.reach(&s.sentTo, v, t, func(st *stageTimes) *time.Time { return &st.commitSent },
		func(st *stageTimes) *time.Time { return &st.replicated })
}

// replied: the change (client, seq) was acknowledged at t; observe gets
// each stage's duration, and the change is no longer followed.
func (s *stages) replied(client changelog.ClientID, seq uint64, t time.Time, observe func(stage string, d time.Duration)) {
	k := stageKey{client, seq}
	v, ok := s.by[k]
	if !ok {
		return
	}
	st := s.at[v]
	delete(s.by, k)
	delete(s.at, v)
	if st == nil || st.commitSent.IsZero() {
		return // a stage was not seen (a restart, a dropped record): not counted
	}
	observe(stageLeaderWrite, st.durable.Sub(st.stepped))
	observe(stageReplication, st.replicated.Sub(st.durable))
	observe(stageCommitSend, st.commitSent.Sub(st.replicated))
	observe(stageVoterRound, t.Sub(st.commitSent))
	observe(stageTotal, t.Sub(st.stepped))
}
