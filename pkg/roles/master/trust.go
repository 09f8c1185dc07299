package master

import (
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// What a peer may claim. The drivers authenticate peers (AUTH_CODE on 9419
// and 9420) and stamp the source address on every chunkserver input; the
// checks below are the core's own: nothing a peer sends may break an
// invariant (and so panic), and no claim moves this master's state further
// than an honest peer could (docs/architecture.md, "Trust model").

// Epoch bounds. Every election raises the epoch by one, so an honest peer
// is never more than a few epochs ahead of what this master has seen, and
// no cluster reaches EpochCeiling (2^62: one election a millisecond for a
// hundred million years). An epoch above the ceiling, or more than
// MaxEpochJump above the highest this master has seen, is a forgery or
// damage: it is refused and counted, never adopted, so epoch arithmetic can
// never wrap and one frame can never push a cluster to the end of the range.
const (
	MaxEpochJump uint64 = 1 << 32
	EpochCeiling uint64 = 1 << 62
)

// VersionCeiling bounds a changelog version a peer's snapshot may claim
// (2^62: a change a nanosecond for 146 years). A snapshot at the top of
// the range, installed, left its holder a log that could never grow
// (the next version wraps): the adversary suite's "snapshot-empty-top",
// taken by a LEADER the same forgery had just unseated, kept its cluster
// from converging.
const VersionCeiling uint64 = 1 << 62

// mayBootstrap: under config c (an empty registry) this master alone wins
// the tally: it is the founder, no chunkserver ever registered, and no
// master of MASTER_HOST belongs to another cluster.
func (m *Master) mayBootstrap(c *registry.ClusterConfig) bool {
	return c.Bootstrap && c.Founder == m.cfg.ID && len(m.foreign) == 0
}

// MaxPendingRegistrations bounds the chunkservers a LEADER has handed ids
// to but not registered yet, and those waiting for their registry change:
// enough for a rack brought up at once (they register one change at a
// time anyway), small enough that a flood of made-up chunkservers holds
// nothing. Past it, a newcomer is asked to come back later.
const MaxPendingRegistrations = 256

// plausibleEpoch: e may be adopted by this master.
func (m *Master) plausibleEpoch(e uint64) bool {
	if e > EpochCeiling {
		return false
	}
	top := max(m.hard.Epoch, m.hard.MaxEpoch)
	return e <= top || e-top <= MaxEpochJump
}

// implausible reports an epoch that failed plausibleEpoch (for the
// refusal counter) and returns true when it did.
func (m *Master) implausible(e uint64) bool {
	if m.plausibleEpoch(e) {
		return false
	}
	m.ignore("epoch-implausible")
	return true
}

// registeredAt: the registry gives id to this address and port. Only such a
// chunkserver's word about epochs is taken (an unregistered one cannot be
// counted anyway, so ignoring it costs nothing).
func (m *Master) registeredAt(id wire.CSID, addr netip.Addr, port uint16) bool {
	cfg := m.Registry()
	if cfg == nil {
		return false // no metadata: no registry yet
	}
	c, ok := cfg.Member(id)
	return ok && c.Is(addr, port)
}

// checkEntries validates entries a peer sent to follow prev under a LEADER
// of epoch epoch: contiguous versions, epochs that never fall, none above
// the sender's epoch, and every config entry carrying a config. It returns
// a stable reason, or "" when they are well formed. Log.append would panic
// on the first two; the rest would corrupt the state machine.
func checkEntries(prev changelog.Pos, es []changelog.Entry, epoch uint64) string {
	if prev.Epoch > epoch {
		return "malformed-prev"
	}
	last := prev
	for i := range es {
		e := &es[i]
		switch {
		case e.Version != last.Version+1:
			return "malformed-gap"
		case e.Epoch < last.Epoch || e.Epoch > epoch:
			return "malformed-epoch"
		}
		switch e.Kind {
		case changelog.EntryNoop, changelog.EntryPut, changelog.EntryDelete, changelog.EntryCAS, changelog.EntryHistory:
		case changelog.EntryConfig:
			if reason := checkConfig(e.Config); reason != "" {
				return reason
			}
		default:
			return "malformed-kind"
		}
		if reason := changelog.CheckHistory(e.History); reason != "" {
			return reason
		}
		last = e.Pos
	}
	return ""
}

// checkConfig validates a config a peer sent inside an entry or a snapshot.
func checkConfig(c *registry.ClusterConfig) string {
	if c == nil {
		return "malformed-config"
	}
	// Members sorted by id, each once: Member searches them.
	prev := wire.NoCS
	for _, mem := range c.Members {
		if mem.ID <= prev {
			return "malformed-config"
		}
		prev = mem.ID
	}
	// TopID, once kept, is at least every member's id (0: not kept).
	if c.TopID != 0 && c.TopID < prev {
		return "malformed-config"
	}
	return ""
}
