package master

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// registration: the chunkservers asking to be registered, and the ids
// handed out for them.
type registration struct {
	toRegister map[wire.CSID]registry.Chunkserver
	assigned   map[netip.AddrPort]wire.CSID // ids handed out by AssignID
}

// registerBatch bounds the chunkservers one config entry registers: a
// cluster of thousands that starts for the first time is registered in a
// few dozen changes, not thousands (each waits for the one before it to be
// in force: docs/architecture.md §5).
const registerBatch = 512

// registerNext turns the waiting registrations, lowest ids first, into one
// config change; first, a temporary removal into a permanent one.
func (m *Master) registerNext() {
	if m.configPending() || m.handover != wire.NoMaster {
		return
	}
	if m.removeForced() || m.removeTempRemoved() || len(m.toRegister) == 0 {
		return
	}
	ids := make([]wire.CSID, 0, len(m.toRegister))
	for id := range m.toRegister {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var changes []registry.Change
	for _, id := range ids[:min(len(ids), registerBatch)] {
		cs := m.toRegister[id]
		delete(m.toRegister, id)
		if _, ok := m.Registry().Member(cs.ID); !ok {
			changes = append(changes, registry.Change{Kind: registry.ChangeRegister, CS: cs})
		}
	}
	if len(changes) == 0 {
		return
	}
	if err := m.proposeChange(changes...); err != nil {
		m.ignore("registration-refused")
	}
}

// proposeChange appends one config entry that makes the changes, in
// order. The caller has checked that no other change is in flight.
func (m *Master) proposeChange(cs ...registry.Change) error {
	cur := m.Registry()
	next := cur
	for _, c := range cs {
		var err error
		if next, err = c.Apply(next); err != nil {
			return err
		}
	}
	next.Version = cur.Version + 1 // one entry, one version, however many changes
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
	m.persist(roles.Persist{Append: []changelog.Entry{e}})
	m.replicate()
	m.advanceReplicated()
	return nil
}
