package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// What the store log shows: the catch-up a master waits for, and the
// status mfscli and the web page report.

// catchWait is an ELECT's won tally held up by the catch-up rule: the
// commit point it lacks (the newest told, by the LEADER of epoch tag),
// since when. Reported (CatchUpWait) so that an operator can tell a wait
// for a master to come back from one for changes that are gone.
type catchWait struct {
	need  changelog.Pos
	tag   uint64
	since roles.Instant
}

// CatchUpWait is an ELECT's wait for changes its log lacks although its
// votes would win: Need, told committed by the LEADER of epoch Tag; Since
// when; Sources, whether a master it hears or the store log could give
// them (false: none can: only a master that is gone held them).
type CatchUpWait struct {
	Need    changelog.Pos
	Tag     uint64
	Since   roles.Instant
	Sources bool
}

// StoreLogStatus is the store log as this master sees it, for operators.
type StoreLogStatus struct {
	// Configured: the store may stand in for missing followers.
	Configured bool
	// Known: Objects, Bytes and Last are from a head read or written
	// (by a LEADER in its term, an ELECT in a catch-up).
	Known   bool
	Objects int
	Bytes   int64
	// Snapshot: where the head's snapshot object is (zero: none).
	Snapshot changelog.Pos
	Base     changelog.Pos
	Last     changelog.Pos
	Epoch    uint64 // the head's
	// OldestSince: since when the head has named objects (0: none).
	OldestSince roles.Instant
	// StandsIn: this LEADER has fewer followers present than
	// ACK_REPLICAS; Holds: what its writes of this term hold.
	StandsIn bool
	Holds    changelog.Pos
	// OnStore: the newest acknowledgement rested on the store.
	OnStore bool
	// BehindSince: since when the store has stood in with changes it
	// does not hold yet (0: not behind).
	BehindSince roles.Instant
	// Garbage: objects to delete. Error: the last failure. Refused:
	// head writes of this master's the store refused, and head reads
	// that showed it superseded (fence 1).
	Garbage int
	Error   string
	Refused int
}

// StoreLog reports the store log as of the last step.
func (m *Master) StoreLog() StoreLogStatus {
	s := StoreLogStatus{Configured: m.storeConfigured(), Error: m.srErr, Garbage: len(m.srGarbage), OldestSince: m.srOldest, Refused: m.srRefused}
	if h := m.srHead; h != nil {
		s.Known, s.Objects, s.Bytes, s.Epoch = true, len(h.Objects), h.Size(), h.Epoch
		if h.Snapshot != nil {
			s.Snapshot = h.Snapshot.Last.Changelog()
		}
		s.Base, s.Last = h.Base.Changelog(), h.Last().Changelog()
	} else if m.srRead {
		s.Known = true
	}
	if m.role == roles.Leader && m.srTerm == m.hard.Epoch {
		s.StandsIn, s.Holds, s.OnStore, s.BehindSince = m.storeStandsIn(), m.srMatch, m.srAcks, m.srBehind
	}
	return s
}
