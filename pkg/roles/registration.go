package roles

import (
	"fmt"
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// registration: the chunkservers asking to be registered, and the ids
// handed out for them.
type registration struct {
	toRegister map[wire.CSID]registry.Chunkserver
	assigned   map[netip.AddrPort]wire.CSID // ids handed out by AssignID
}

// registerNext turns a waiting registration into a config change, one at a
// time; first, a temporary removal into a permanent one.
func (m *Master) registerNext() {
	if m.configPending() || m.handover != wire.NoMaster {
		return
	}
	if m.removeForced() || m.removeTempRemoved() || len(m.toRegister) == 0 {
		return
	}
	next := wire.NoCS
	for id := range m.toRegister {
		if next == wire.NoCS || id < next {
			next = id
		}
	}
	cs := m.toRegister[next]
	delete(m.toRegister, next)
	if _, ok := m.Registry().Member(cs.ID); ok {
		return
	}
	if err := m.proposeChange(registry.Change{Kind: registry.ChangeRegister, CS: cs}); err != nil {
		m.ignore("registration-refused")
	}
}

// proposeChange appends a config entry. The caller has checked that no
// other change is in flight.
func (m *Master) proposeChange(c registry.Change) error {
	cur := m.Registry()
	next, err := c.Apply(cur)
	if err != nil {
		return err
	}
	if next.Electorate().Size() == 0 && cur.Electorate().Size() > 0 {
		return errNoElectorate
	}
	// The change is tallied jointly at once: refuse one under which the
	// votes this LEADER holds now would not make a quorum, rather than
	// step down over an admin command.
	if t := m.tallyUnder(next, m.now, nil); t.Outcome != quorum.Won {
		return fmt.Errorf("%w (%v)", errQuorumLost, t)
	}
	e := changelog.Entry{Pos: changelog.Pos{Version: m.log.Len() + 1, Epoch: m.hard.Epoch}, Kind: changelog.EntryConfig, Config: next}
	m.log.Append(e)
	m.persist(Persist{Append: []changelog.Entry{e}})
	m.replicate()
	m.advanceReplicated()
	return nil
}
