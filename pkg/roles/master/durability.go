package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Durability is what a LEADER's newest acknowledgement rests on, set
// against ACK_REPLICAS ((b) of the ack rule, docs/architecture.md §7). The
// rule asks for ACK_REPLICAS follower copies, or the witness's store in
// place of the missing ones (storelog.go). Without either a change waits
// (Waiting), unless ACK_ALONE lets it rest on fewer followers heard
// within PeerTimeout: with none heard, on this master's disk only (Short),
// and a loss of that disk then loses acknowledged changes (every later
// ELECT waits for them). Durability makes each case visible (review N7);
// it changes nothing of what is acknowledged.
type Durability struct {
	Required  int // ACK_REPLICAS
	Followers int // the other masters of its set
	// Replicas: the followers of its set known to hold the newest
	// acknowledged change durably (counted when it is acknowledged, raised
	// as followers confirm it). 0 on a master that is not LEADER.
	Replicas int
	// Short: an acknowledgement of this term rested on fewer than Required
	// follower copies, and the newest one still does. The episode begins
	// with that acknowledgement and ends once the newest acknowledged
	// change is held by Required followers (a later acknowledgement that
	// is, or the followers catching up), or when this master stops being
	// LEADER. In the first PeerTimeout of a term it is not declared: (b)
	// counts no follower before one has answered this LEADER, and a
	// follower that answers within that time is not missing.
	Short bool
	// Since: when the episode began (the acknowledgement that fell
	// short), on this master's clock; set while Short.
	Since roles.Instant
	// Unheard: the masters of its set not heard within PeerTimeout, in
	// id order; set while Short (empty: its set names no other master, or
	// ACK_REPLICAS is above the followers it has).
	Unheard []wire.MasterID
	// OnStore: the newest acknowledgement rests on the witness's store
	// in place of missing followers.
	OnStore bool
	// Waiting: changes wait for a copy (fewer than ACK_REPLICAS followers
	// present and no store that holds them, ACK_ALONE off); WaitingSince:
	// since when, on this master's clock.
	Waiting      bool
	WaitingSince roles.Instant
}

// ackDurability is the LEADER's running count behind Durability; it
// belongs to one term and starts afresh with the next.
type ackDurability struct {
	term      uint64        // the epoch it counts for (0: none yet)
	termStart roles.Instant // when this master was first seen LEADER of that term
	copies    int           // followers holding the newest acknowledged change
	pending   bool          // the newest acknowledgement lacks copies
	short     bool          // ... and the term is past its first PeerTimeout
	since     roles.Instant // when pending began
}

// durabilityTerm is the count for the current term, reset when the term
// is new.
func (m *Master) durabilityTerm() *ackDurability {
	if m.dur.term != m.hard.Epoch {
		m.dur = ackDurability{term: m.hard.Epoch, termStart: m.now}
	}
	return &m.dur
}

// copiesOf counts the followers of its set that hold version v durably:
// those whose acknowledged match reaches it, whether or not they were
// heard lately (a silent follower's disk still holds what it confirmed).
func (m *Master) copiesOf(v uint64) int {
	n := 0
	for _, id := range m.cfg.Masters {
		if p := m.progress[id]; id != m.cfg.ID && p != nil && p.match.Version >= v {
			n++
		}
	}
	return n
}

// noteAcked counts the copies of the newly acknowledged change: an
// acknowledgement with fewer than ACK_REPLICAS begins an episode, one with
// enough ends it.
func (m *Master) noteAcked() {
	if m.role != roles.Leader {
		return
	}
	d := m.durabilityTerm()
	d.copies = m.copiesOf(m.acked.Version)
	m.srAcks = m.acked.Version > m.followerPoint() && m.srMatch.Version >= m.acked.Version
	if d.copies >= m.cfg.AckReplicas || m.srAcks {
		d.pending, d.short = false, false
		return
	}
	if !d.pending {
		d.pending, d.since = true, m.now
	}
	d.short = m.now.Sub(d.termStart) >= m.cfg.PeerTimeout
}

// recheckDurability: followers answered, fell silent, or the set
// changed. Copies of the newest acknowledged change only ever add up here
// (a follower's refusal resets its match for the sending, not its disk),
// so an episode begins only with an acknowledgement; it ends here when
// the followers have caught up, and is declared once the term's first
// PeerTimeout is over.
func (m *Master) recheckDurability() {
	if m.role != roles.Leader {
		return
	}
	d := m.durabilityTerm()
	d.copies = max(d.copies, m.copiesOf(m.acked.Version))
	if d.copies >= m.cfg.AckReplicas {
		d.pending, d.short = false, false
		return
	}
	d.short = d.pending && m.now.Sub(d.termStart) >= m.cfg.PeerTimeout
}

// Durability reports on how many follower copies this LEADER's newest
// acknowledgement rests, against ACK_REPLICAS, as of its last step.
func (m *Master) Durability() Durability {
	d := Durability{Required: m.cfg.AckReplicas}
	for _, id := range m.cfg.Masters {
		if id != m.cfg.ID {
			d.Followers++
		}
	}
	if m.role != roles.Leader || m.dur.term != m.hard.Epoch {
		return d
	}
	d.Replicas = m.dur.copies
	d.OnStore = m.srAcks && m.srTerm == m.hard.Epoch
	d.Waiting, d.WaitingSince = m.waitSince != 0, m.waitSince
	if !m.dur.short {
		return d
	}
	d.Short, d.Since = true, m.dur.since
	for _, id := range m.cfg.Masters {
		if id == m.cfg.ID {
			continue
		}
		if p := m.progress[id]; p == nil || !p.present(m.now, m.cfg.PeerTimeout) {
			d.Unheard = append(d.Unheard, id)
		}
	}
	return d
}

// noteWaiting keeps since when changes have waited for a copy: the
// LEADER holds changes (b) does not cover, with fewer than ACK_REPLICAS
// followers present and ACK_ALONE off (a store that stands in and
// answers soon covers them; a store that does not, or none, leaves them
// waiting). Each step.
func (m *Master) noteWaiting() {
	// A store that stands in and answers is behind for a moment at each
	// change, not waiting (StoreLogStatus.BehindSince says how long).
	if m.role == roles.Leader && !m.cfg.AckAlone && m.replicatedLimit() < m.log.Len() && m.presentFollowers() < m.cfg.AckReplicas &&
		!(m.storeUsable() && m.srBehind != 0 && m.now.Sub(m.srBehind) < m.cfg.PeerTimeout) {
		if m.waitSince == 0 {
			m.waitSince = m.now
		}
		return
	}
	m.waitSince = 0
}
