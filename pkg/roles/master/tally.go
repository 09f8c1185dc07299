package master

import (
	"slices"

	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The tally of the votes this master holds: who counts, under which
// config, and whether they make a quorum (pkg/quorum does the counting).

// voterIDs returns the ids of the vote sessions here, sorted. Cached until
// a session is added or dropped (every heartbeat round and every fence
// walks it; sorting 5,000 ids each time was a tenth of a crowd LEADER's
// processor). Callers must not change it. It is replaced, never changed in
// place, so a walk over it may drop voters.
func (m *Master) voterIDs() []wire.CSID {
	if m.idsOK {
		return m.ids
	}
	ids := make([]wire.CSID, 0, len(m.voters))
	for id := range m.voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	m.ids, m.idsOK = ids, true
	return ids
}

// quorumAt tallies the votes this master may count at time t, under its
// newest config and, while that config is not yet in force, the one before
// it too (joint). pred narrows which votes count (nil: all).
func (m *Master) quorumAt(t roles.Instant, pred func(*voterRec) bool) quorum.Outcome {
	if !m.role.TakesVotes() {
		return quorum.Lost
	}
	return m.outcome(m.countable(t, pred))
}

// countable: the vote may be counted at t (its lease holds and it was
// given to this master's current epoch), and pred (if any) holds.
func (m *Master) countable(t roles.Instant, pred func(*voterRec) bool) func(*voterRec) bool {
	return func(v *voterRec) bool {
		return v.validUntil > t && v.ackEpoch == m.hard.Epoch && (pred == nil || pred(v))
	}
}

// sessionsQuorum: the open vote sessions alone would make a quorum. An ELECT
// proposes its epoch to voters only from then on (a pre-vote): a candidate
// cut off with a minority never raises the voters' epochs, so it cannot
// unseat a healthy LEADER when it comes back.
func (m *Master) sessionsQuorum() bool {
	return m.sessionsCached()
}

// outcome tallies the votes for which counts holds under the newest config
// and, while that is not yet in force, the one before it too (joint).
func (m *Master) outcome(counts func(*voterRec) bool) quorum.Outcome {
	return m.outcomeW(counts, func(c *registry.ClusterConfig) quorum.Vote { return m.witnessVote(c, counts) })
}

// outcomeW is outcome with the witness's vote under each config from wv.
func (m *Master) outcomeW(counts func(*voterRec) bool, wv func(*registry.ClusterConfig) quorum.Vote) quorum.Outcome {
	latest, prev := m.log.Configs(m.log.Len())
	if latest == nil {
		return quorum.Lost
	}
	if prev != nil && latest.Version > m.hard.InForce {
		return quorum.Joint(m.tallyW(prev, counts, wv(prev)), m.tallyW(latest, counts, wv(latest)))
	}
	return m.tallyW(latest, counts, wv(latest)).Outcome
}

// tallyUnder counts the votes valid at t under one config.
func (m *Master) tallyUnder(c *registry.ClusterConfig, t roles.Instant, pred func(*voterRec) bool) quorum.Tally {
	return m.tally(c, m.countable(t, pred))
}

// tally counts under one config. An empty registry can be won only by the
// founder, and only before any chunkserver ever registered (bootstrap:
// docs/roles.md §5.2, docs/architecture.md §6).
func (m *Master) tally(c *registry.ClusterConfig, counts func(*voterRec) bool) quorum.Tally {
	return m.tallyW(c, counts, m.witnessVote(c, counts))
}

// tallyW is tally with the witness's vote wv (docs/architecture.md §7.4:
// it breaks an exact half only).
func (m *Master) tallyW(c *registry.ClusterConfig, counts func(*voterRec) bool, wv quorum.Vote) quorum.Tally {
	e := m.electorate(c)
	if e.Size() == 0 {
		if m.mayBootstrap(c) {
			return quorum.Tally{Outcome: quorum.Won, Empty: true}
		}
		return quorum.Tally{Outcome: quorum.Lost, Empty: true}
	}
	return e.TallyWitness(func(id wire.CSID) quorum.Vote {
		// A session from another address than the member's is not that
		// member's vote (an id handed out twice: see Chunkserver.Is).
		if v := m.voters[id]; v != nil && counts(v) && v.isMemberOf(c, id) {
			return quorum.For
		}
		return quorum.Unknown
	}, wv)
}

func (m *Master) electorate(c *registry.ClusterConfig) quorum.Electorate {
	e, ok := m.electorates[c]
	if !ok {
		if len(m.electorates) > 8 || m.electorates == nil {
			m.electorates = map[*registry.ClusterConfig]quorum.Electorate{}
			m.electGen++
		}
		e = m.withoutTempRemoved(c).Electorate()
		m.electorates[c] = e
	}
	return e
}

// betterElectSeen is a master whose status, heard within three peer
// intervals, says it is ELECT and a better candidate than this one (none:
// NoMaster).
func (m *Master) betterElectSeen() wire.MasterID {
	for _, id := range m.cfg.Masters {
		p := m.peers[id]
		if id != m.cfg.ID && p != nil && p.seen && p.st.Role == roles.Elect && m.now.Sub(p.heard) <= 3*m.cfg.PeerInterval &&
			roles.Better(peerCandidate(p.st), m.candidate()) {
			return id
		}
	}
	return wire.NoMaster
}

// dropElectorates forgets the electorates (the temporarily removed
// changed): what was counted under them is stale at once, so the
// generation the caches key on moves now, not at the next recomputation.
func (m *Master) dropElectorates() {
	m.electorates = nil
	m.electGen++
}

// counted returns the votes valid now, sorted by id.
func (m *Master) counted() []*voterRec {
	var out []*voterRec
	ok := m.countable(m.now, nil)
	for _, id := range m.voterIDs() {
		if v := m.voters[id]; ok(v) {
			out = append(out, v)
		}
	}
	return out
}

// checkQuorum fences a LEADER whose countable votes no longer make a quorum.
func (m *Master) checkQuorum() {
	if m.role == roles.Leader && !m.wonAt(m.now) {
		m.stepDown(roles.ReasonQuorumLost)
	}
}
