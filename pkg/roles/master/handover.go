package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// handoverState is a planned handover under way at a LEADER.
type handoverState struct {
	handover       wire.MasterID
	handoverSince  roles.Instant
	handoverWhy    string
	handoverFailed roles.Instant // when the last handover timed out
	releaseNext    wire.MasterID // set just before a handover step-down
}

func (m *Master) startHandover(to wire.MasterID, why string) {
	m.handover, m.handoverSince, m.handoverWhy = to, m.now, why
	m.appendTo(to, true)
	m.tryHandover()
}

// tryHandover steps down once the target holds everything and every entry
// is acknowledged (so its voters will report the commit point it has).
func (m *Master) tryHandover() {
	if m.role != roles.Leader || m.handover == wire.NoMaster {
		return
	}
	p := m.progress[m.handover]
	last := m.log.Last()
	// A registry change in flight is put in force first: the target might
	// not be able to win under the joint tally (during bootstrap).
	if p == nil || p.match != last || m.acked != last || m.configPending() {
		return
	}
	m.releaseNext = m.handover
	m.yield() // a move made on purpose sticks (§3.10)
	m.stepDown(m.handoverWhy)
}
