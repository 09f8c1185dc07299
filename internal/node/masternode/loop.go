package masternode

import (
	"errors"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
)

// The master's loop: one goroutine steps the core, groups what is waiting
// and carries each group out with one fsync.

// iteration is what the loop holds of the iteration it runs: its clock
// reading, and the group of steps being built (loop only).
type iteration struct {
	// iterAt, iterMono: the loop's reading of clock at the start of the
	// current iteration, and Go's monotonic clock then (loopNow).
	iterAt   roles.Instant
	iterMono time.Time
	// The group being built: the batches of the steps since the last
	// flush, and the driver's own replies that must follow them.
	group []master.Batch
	after []func()
	// groupAt is when the group being stepped began (stages);
	// roundStart, when the step that started a heartbeat round began
	// (zero: no round in the group being stepped).
	groupAt    time.Time
	roundStart time.Time
}

func (n *MasterNode) loop() {
	defer n.life.End()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d := n.core.NextDeadline()
		wait := time.Hour
		if d != roles.Never {
			wait = max(time.Duration(d-n.loopNow()), 0)
		}
		timer.Reset(wait)
		// A held list request blocks the client inbox (it keeps its
		// place in the order) until the lists before it are answered.
		clInbox := n.clInbox
		if n.clHeld != nil {
			clInbox = nil
		}
		var err error
		select {
		case in := <-n.inbox:
			n.readClock()
			err = n.runGroup(&in, false)
		case in := <-clInbox:
			n.readClock()
			err = n.runGroup(&in, true)
		case <-timer.C:
			n.readClock()
			n.step(roles.Tick{WallUnixMs: time.Now().UnixMilli()})
			n.backupExpire(time.Now())
		case r := <-n.snapDone:
			n.readClock()
			err = n.snapshotSaved(r)
		case d := <-n.witDone:
			n.readClock()
			n.witnessTrack(d)
			n.witnessAnswered(d)
		case <-n.life.StopAsked():
			n.readClock()
			n.step(roles.Admin{Kind: roles.AdminShutdown})
			if n.core.Role() != roles.Dummy {
				err = errors.New("the role machine did not reach DUMMY on shutdown")
			}
		}
		if err == nil {
			err = n.flush()
		}
		if err == nil && n.clHeld != nil && n.listRoom() {
			n.readClock()
			if err = n.runGroup(nil, true); err == nil {
				err = n.flush()
			}
		}
		if err != nil || n.core.Role() == roles.Dummy {
			n.shutdown(err)
			return
		}
	}
}

// runGroup handles one group sharing one fsync (group commit). Vote and
// peer inputs come first, all that are queued; then a tick if one is due,
// so that heartbeats are never held back behind client work; then client
// inputs up to clientBudget, a held list first. first (may be nil) came
// from clInbox when client is set.
func (n *MasterNode) runGroup(first *input, client bool) error {
	n.groupAt = time.Now()
	if first != nil && !client {
		if err := n.handle(*first); err != nil {
			return err
		}
	}
	if err := drain(n.inbox, node.GroupMax, n.handle); err != nil {
		return err
	}
	if d := n.core.NextDeadline(); d != roles.Never && n.loopNow() >= d {
		n.step(roles.Tick{WallUnixMs: time.Now().UnixMilli()})
	}
	budget := clientBudget
	// take hands one client input to the core, or holds a list while the
	// core has maxListsOut unanswered (false: stop taking client work).
	take := func(in input) (bool, error) {
		if isList(in) && !n.listRoom() {
			n.clHeld = &in
			return false, nil
		}
		budget -= clientCost(in)
		return true, n.handle(in)
	}
	if held := n.clHeld; held != nil {
		n.clHeld = nil
		if ok, err := take(*held); !ok || err != nil {
			return err
		}
	}
	if first != nil && client {
		if ok, err := take(*first); !ok || err != nil {
			return err
		}
	}
	for budget > 0 {
		select {
		case in := <-n.clInbox:
			if ok, err := take(in); !ok || err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// drain handles what is already queued in inbox, at most max inputs,
// stopping at the first error.
func drain[T any](inbox <-chan T, max int, handle func(T) error) error {
	for i := 0; i < max; i++ {
		select {
		case in := <-inbox:
			if err := handle(in); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// step runs one event through the machine; its actions wait in the group
// until flush.
func (n *MasterNode) step(ev roles.Event) {
	before, _ := n.core.Round()
	start := time.Now()
	if b := n.core.Step(n.loopNow(), ev); !b.Empty() {
		n.group = append(n.group, b)
	}
	if seq, _ := n.core.Round(); seq != before {
		n.roundStart = start // timed to the end of its flush
	}
}

// later queues a reply of the driver's own (status, registration) to leave
// after the group's actions: never before the disk has what it reports.
func (n *MasterNode) later(f func()) { n.after = append(n.after, f) }

// flush carries out the group (roles.Carry: one fsync, then the effects
// in order), then the driver's own replies.
func (n *MasterNode) flush() error {
	group, after := n.group, n.after
	n.group, n.after = nil, nil
	if len(group) > 0 {
		if err := master.Carry(masterDisk{n}, masterFx{n}, group...); err != nil {
			return err
		}
		if !n.roundStart.IsZero() {
			_, voters := n.core.Round()
			n.metrics.HeartbeatRound(time.Since(n.roundStart), voters)
			n.roundStart = time.Time{}
		}
		n.observe()
		n.watchAcks()
	} else {
		n.publishFence() // acknowledgements renew votes without an action
	}
	for _, f := range after {
		f()
	}
	return nil
}
