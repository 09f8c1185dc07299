package master

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

func (m *Master) onAdmin(a roles.Admin) {
	ok, code, text := m.admin(a)
	m.out.AdminReplies = append(m.out.AdminReplies, roles.AdminReply{ID: a.ID, OK: ok, Code: code, Text: text})
}

// admin carries out a; a refusal is decided here, with its code.
func (m *Master) admin(a roles.Admin) (bool, wire.Code, string) {
	switch a.Kind {
	case roles.AdminSetUsurper:
		switch {
		case m.role == roles.Leader:
			return false, wire.CodeState, "this master is already LEADER"
		case m.role == roles.Usurper:
			return true, wire.CodeNone, "already USURPER"
		case m.role != roles.Follower:
			return false, wire.CodeState, fmt.Sprintf("only a FOLLOWER can become USURPER (this master is %v)", m.role)
		case !m.HasMetadata():
			return false, wire.CodeState, "this master has no metadata yet (INIT); wait until it is synced"
		case !m.Eligible():
			return false, wire.CodeState, "this master cannot win a vote under its registry yet; wait until the registry change in progress is in force"
		case m.Sync() != roles.Synced:
			return false, wire.CodeState, fmt.Sprintf("this master is not synced (%v); wait until it is", m.Sync())
		}
		if m.hard.Yielded {
			m.hard.Yielded = false
			m.persistHard()
		}
		m.placed = true
		m.become(roles.Usurper, roles.ReasonAdminUsurper)
		return true, wire.CodeNone, "USURPER: will take over as soon as it has caught up"
	case roles.AdminCancelUsurper:
		if m.role != roles.Usurper {
			return false, wire.CodeState, fmt.Sprintf("this master is %v, not USURPER", m.role)
		}
		m.become(roles.Follower, roles.ReasonAdminCancel)
		return true, wire.CodeNone, "USURPER cancelled; back to FOLLOWER"
	case roles.AdminStepDown:
		if m.role != roles.Leader {
			return false, wire.CodeNotLeader, fmt.Sprintf("this master is %v, not LEADER", m.role)
		}
		m.yield()
		target := m.bestFollower()
		if target == wire.NoMaster {
			m.stepDown(roles.ReasonStepDown)
			return true, wire.CodeNone, "stepped down; no synced follower to hand over to, the chunkservers will nominate"
		}
		m.startHandover(target, roles.ReasonStepDown)
		return true, wire.CodeNone, fmt.Sprintf("handing over to %v", target)
	case roles.AdminTempRemove:
		return m.tempRemove(wire.CSID(a.Change.ID))
	case roles.AdminShutdown:
		m.become(roles.Dummy, roles.ReasonShutdown)
		return true, wire.CodeNone, "shutting down"
	case roles.AdminChange:
		if m.role != roles.Leader {
			return false, wire.CodeNotLeader, "Can't perform any operation because there is no leading master"
		}
		if m.configPending() {
			return false, wire.CodeChangePending, roles.ErrChangePending + "; retry shortly"
		}
		if a.Change.Kind == registry.ChangeWitness && a.Change.Name != "" && !m.speaks(WitnessProtocol) {
			// A master that cannot read the field would break ties by the
			// default location while the others use the witness.
			return false, wire.CodeState, fmt.Sprintf("a witness needs every master to speak protocol %d or later; upgrade them first (mfscli -SIM shows each one's)", WitnessProtocol)
		}
		if a.Change.Kind == registry.ChangeRemove {
			if v := m.voters[wire.CSID(a.Change.ID)]; v != nil {
				return false, wire.CodeState, fmt.Sprintf("chunkserver CS%d can't be removed because it is still active", a.Change.ID)
			}
		}
		if err := m.proposeChange(a.Change); err != nil {
			code := wire.CodeInvalid
			if errors.Is(err, errNoElectorate) || errors.Is(err, errQuorumLost) {
				code = wire.CodeState
			}
			return false, code, err.Error()
		}
		return true, wire.CodeNone, fmt.Sprintf("%v: config version %d written; in force once quorums under both versions have it", a.Change, m.Registry().Version)
	}
	return false, wire.CodeInvalid, fmt.Sprintf("unknown admin command %d", a.Kind)
}

// bestFollower is the synced, eligible follower a step-down hands over to.
func (m *Master) bestFollower() wire.MasterID {
	best := wire.NoMaster
	var bc roles.Candidate
	for _, id := range m.cfg.Masters {
		p := m.peers[id]
		if id == m.cfg.ID || !m.fresh(p) || !p.st.Eligible || p.st.Sync != roles.Synced {
			continue
		}
		// A master that keeps is preferred: it would take the role from
		// anyone else, a second move.
		c := peerCandidate(p.st)
		if best == wire.NoMaster || roles.Better(c, bc) {
			best, bc = id, c
		}
	}
	return best
}

// AssignID answers a chunkserver at addr:port that asks for an id. Only a
// LEADER assigns: a member already registered from that address keeps its
// id; a newcomer gets one above every registered id and every id this
// master assigned before. The id is registered once the chunkserver votes
// with it (noteRegistration). An id assigned by a LEADER that died before
// registering it may be assigned again by the next one; Chunkserver.Is
// keeps the two holders apart and the loser is told IDTaken.
func (m *Master) AssignID(addr netip.Addr, port uint16) (wire.CSID, bool) {
	if m.role != roles.Leader || !addr.IsValid() {
		return wire.NoCS, false
	}
	key := netip.AddrPortFrom(addr, port)
	cfg := m.Registry()
	top := cfg.TopID // never an id a removed chunkserver had
	for _, c := range cfg.Members {
		if c.Is(addr, port) {
			return c.ID, true
		}
		top = max(top, c.ID)
	}
	if id, ok := m.assigned[key]; ok {
		if _, taken := cfg.Member(id); !taken {
			return id, true
		}
	}
	for _, id := range m.assigned {
		top = max(top, id)
	}
	if m.assigned == nil {
		m.assigned = map[netip.AddrPort]wire.CSID{}
	}
	if len(m.assigned) >= MaxPendingRegistrations {
		// Ids that made it into the registry need no record here; ids that
		// never did (a registration flood, chunkservers that asked and
		// left) are not handed out without bound.
		for k, id := range m.assigned {
			if _, ok := cfg.Member(id); ok {
				delete(m.assigned, k)
			}
		}
		if len(m.assigned) >= MaxPendingRegistrations {
			m.ignore("registration-queue-full")
			return wire.NoCS, false
		}
	}
	m.assigned[key] = top + 1
	return top + 1, true
}
