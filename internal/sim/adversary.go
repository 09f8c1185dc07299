package sim

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The adversary fault: peers that lie or were cloned, as the master's core
// sees them once its driver has done its part (AUTH_CODE, the source
// address stamped on every chunkserver message). Three modes:
//
//   - impostor: a host beside one master hears every heartbeat it sends (it
//     sits where the driver might have routed them) and answers each with a
//     vote for every chunkserver, granting an hour, whatever the real voters
//     do: the review's E2, where the master is cut off from its real voters
//     and the impostor is not. Its packets come from its own address;
//   - clone: a copy of a chunkserver's VM at another address; it sees what
//     the original sees and says what the original says, from its own
//     address;
//   - epoch bombs: VoteHellos from unregistered ids and from members' ids at
//     the wrong address, and refusals echoing real sessions, all carrying
//     epochs far above anything seen (up to 2^64-1).
//
// Whatever they do, the invariants hold and no epoch anywhere moves past
// honestBound (checker.after).

// adversary is what is going on now; ref{kAdversary, i} is its i-th host.
type adversary struct {
	impostor map[int]bool // master index -> someone answers the heartbeats it sends
	clone    map[int]bool // chunkserver index -> a clone repeats what it says
	sent     int          // forged messages, for the run's summary
}

const kAdversary kind = 100

// honestBound: no epoch in a run of minutes comes near it, and every bomb
// is far above it.
const honestBound = 1 << 40

// advAddr is the source address of an adversary host: outside every
// location's range, so the driver's stamp never matches a member.
func advAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 9, 9, byte(1 + i%250)}) }

// hostileKind is which of the three the adversary fault starts.
type hostileKind int

const (
	hostileImpostor hostileKind = iota
	hostileClone
	hostileBombs
)

// hostile starts one of the three for dur: an impostor beside master
// (the LEADER instead, when there is one), a clone of chunkserver cs, or
// epoch bombs, the first made from bomb.
type hostile struct {
	kind       hostileKind
	master, cs int
	bomb       int
	dur        int64
}

func (f hostile) fire(w *world, _ *adminIDs) {
	if w.adv.impostor == nil {
		w.adv.impostor, w.adv.clone = map[int]bool{}, map[int]bool{}
	}
	switch f.kind {
	case hostileImpostor:
		m := f.master
		if l := w.leaderIdx(); l >= 0 {
			m = l
		}
		w.adv.impostor[m] = true
		w.tracef("ADVERSARY impostor beside M%d answers its heartbeats for %v", m+1, time.Duration(f.dur))
		w.at(w.now+f.dur, func() { delete(w.adv.impostor, m) })
	case hostileClone:
		w.adv.clone[f.cs] = true
		w.tracef("ADVERSARY clone of CS%d for %v", f.cs+1, time.Duration(f.dur))
		w.at(w.now+f.dur, func() { delete(w.adv.clone, f.cs) })
	default:
		w.tracef("ADVERSARY epoch bombs")
		for k := 0; k < 5; k++ {
			w.at(w.now+int64(k)*int64(100*time.Millisecond), func() { w.epochBomb(f.bomb + k) })
		}
	}
}

// epochBomb sends every master hellos with absurd epochs: from an
// unregistered id, and from a member's id at the adversary's address.
func (w *world) epochBomb(pick int) {
	epochs := []uint64{math.MaxUint64, math.MaxUint64 - 1, master.EpochCeiling + 1, honestBound * 4}
	e := epochs[pick%len(epochs)]
	// Its own hosts (advAddr 201-207): a bomb never shares an address with
	// the impostor (1-) or a clone (101-), whose acks would otherwise count
	// for the sessions its hellos opened, registering made-up members,
	// which a holder of AUTH_CODE can do (the trust model) but these
	// faults are not about.
	from := ref{kAdversary, 200 + pick%7}
	for i := range w.masters {
		to := ref{kMaster, i}
		member := wire.CSID(1 + pick%len(w.css))
		w.send(from, to, roles.VoteHello{CS: 5000 + wire.CSID(pick%100), Session: uint64(pick) << 20, MaxEpoch: e, Nominate: pick%2 == 0}, 0)
		w.send(from, to, roles.VoteHello{CS: member, Session: math.MaxUint64 / 2, MaxEpoch: e, Nominate: true}, 0)
		w.adv.sent += 2
	}
}

// snoop: a master sends a heartbeat to chunkserver index cs. An impostor
// beside it answers with a vote of its own making.
func (w *world) snoop(m ref, cs int, hb roles.Heartbeat) {
	if m.k != kMaster || !w.adv.impostor[m.i] || hb.Keepalive {
		return
	}
	ack := roles.HeartbeatAck{CS: wire.CSID(cs + 1), Session: hb.Session, Seq: hb.Seq, OK: true, Granted: time.Hour,
		MaxEpoch: hb.Epoch, EpochOwner: hb.From, KnownReg: hb.RegVersion, InForce: hb.InForce, Commit: hb.Commit, CommitTag: hb.Epoch}
	if hb.Seq%50 == 0 && cs == 0 {
		// Now and then a refusal claiming an epoch from the end of the range.
		ack.OK, ack.Granted, ack.MaxEpoch, ack.Reason = false, 0, math.MaxUint64-uint64(hb.Seq), "stale-epoch"
	}
	w.send(ref{kAdversary, cs}, m, ack, 0)
	w.adv.sent++
}

// echo: chunkserver index cs sends msg to a master; its clone, seeing the
// same traffic, sends the same from its own address.
func (w *world) echo(cs int, to ref, msg wire.Message) {
	if !w.adv.clone[cs] || to.k != kMaster {
		return
	}
	w.send(ref{kAdversary, 100 + cs}, to, msg, 0)
	w.adv.sent++
}

// checkEpochs: no master or voter ever adopts a bomb's epoch.
func (c *checker) checkEpochs(w *world) {
	for _, m := range w.masters {
		if h := m.m.Hard(); h.MaxEpoch >= honestBound || h.Epoch >= honestBound {
			w.violate("%v took a forged epoch: epoch %d max %d", m.ref, h.Epoch, h.MaxEpoch)
		}
	}
	for _, cs := range w.css {
		if cs.v != nil && cs.v.Hard().MaxEpoch >= honestBound {
			w.violate("%v took a forged epoch: max %d", cs.ref, cs.v.Hard().MaxEpoch)
		}
	}
}

func (a adversary) String() string { return fmt.Sprintf("%d forged messages", a.sent) }
