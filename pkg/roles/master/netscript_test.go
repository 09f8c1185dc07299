package master

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
	"github.com/mfs-election/mfs-election/pkg/witness/logobj"
)

// Multi-node scripts: "net masters=1,2 cs=1,2,3" starts real Masters and
// Voters in one script, and their messages wait in a queue the script
// drives, as etcd's interaction tests do: nothing is typed by hand.
//
//	net masters=1,2 cs=1,2,3   masters with a registry of the chunkservers
//	                           (10.0.1.N, one location), voters that never
//	                           promised (they vote at once)
//	net ... sites=2 witness=W  the chunkservers split in two locations, a
//	                           (10.0.1.N, the first half) and b (10.0.2.N),
//	                           the registry naming witness W, every master
//	                           with a store (a 2s lease): its calls print as
//	                           "S3: M1 swap ok" when delivered
//	net ... nostore=1          master 1 has no store (it cannot take the lease)
//	net ... logobjects=N       WITNESS_LOG_OBJECTS = N
//	net ... snapevery=N        a snapshot every N changes (durable at once;
//	                           LogRetain 0), carried over a restart
//	store down / store up      the store answers nothing / again
//	time +D                    every node's clock moves on; each is ticked
//	run +D                     time moves on in steps of 10ms, each
//	                           followed by a stabilize (a network with no
//	                           delay); prints what the nodes did
//	deliver                    the messages queued now are delivered (what
//	                           they cause waits for the next deliver)
//	stabilize                  deliver until nothing is queued
//	cut M1 / heal              M1's messages, both ways, are lost / not
//	split M2,CS3,CS4           the named nodes and the rest cannot reach
//	                           each other (the store answers both); heal
//	                           ends it
//	kill M1                    M1 stops: what is queued for it is lost
//	on M1 <command>            one input of the single-node commands, to M1
//	status                     each node's role, epoch and vote
//	history                    each master's applied election history,
//	                           and its role changes not yet in it
//
// Deliveries print "M1 -> CS2 heartbeat ..."; what a node does on its own
// prints as "M1: transition ...". Probes, their replies and peer status
// broadcasts are routine and left out of the print, never out of the run.
type netScript struct {
	names []string // in order: masters, then chunkservers
	nodes map[string]*netNode
	queue []netMsg
	cut   map[string]bool
	// side, while set, splits the nodes in two: those named and the rest;
	// messages between the two are lost (the store answers both).
	side map[string]bool
	// The witness's store: a linearizable object, its calls queued like
	// messages; down, it answers none (each master's lease then gives the
	// call up as ambiguous).
	store     scriptStore
	calls     []storeCall
	storeDown bool
}

type storeCall struct {
	from string
	req  witness.Request
}

// scriptStore is the bucket: the lease object and the store log, each
// ETag the MD5 of its content.
type scriptStore struct{ logobj.Bucket }

func (s *scriptStore) apply(r witness.Request) witness.Result { return s.Apply(r) }

func (s *scriptStore) exists() bool { return s.Exists(witness.Key) }

type netNode struct {
	m    *Master
	v    *voter.Voter
	addr netip.Addr // a chunkserver's
	down bool
}

type netMsg struct {
	from, to string
	msg      any // a wire.Message, or a roles.WitnessResult from the store
}

// runStep is how far "run" moves the clocks between ticks: finer than
// every timer of the default configs (probes every 50ms, heartbeats every
// 100ms), so no deadline is late by more than it.
const runStep = 10 * time.Millisecond

// stabilizeBound: deliveries a stabilize may take. A handful settle an
// election; more means the nodes talk forever without time passing.
const stabilizeBound = 200

func masterName(id wire.MasterID) string { return fmt.Sprintf("M%d", id) }
func csName(id wire.CSID) string         { return fmt.Sprintf("CS%d", id) }

func (h *harness) netStart(a map[string]string) string {
	masters := ids(a["masters"])
	css := strings.Split(a["cs"], ",")
	addrOf := func(i int, c string) string {
		if a["sites"] == "2" && i >= len(css)/2 {
			return "10.0.2." + c
		}
		return "10.0.1." + c
	}
	var reg []string
	for i, c := range css {
		reg = append(reg, fmt.Sprintf("%s@%s", c, addrOf(i, c)))
	}
	ranges := ""
	if a["sites"] == "2" {
		ranges = "10.0.1.0/24:a,10.0.2.0/24:b"
	}
	n := &netScript{nodes: map[string]*netNode{}, cut: map[string]bool{}}
	h.net = n
	var lines []string
	for _, id := range masters {
		entries, inForce := registryLog(strings.Join(reg, ","), ranges)
		if w := a["witness"]; w != "" {
			entries[len(entries)-1].Config.Witness = w
		}
		st := roles.Stored{Entries: entries, Hard: roles.HardState{InForce: inForce, Commit: changelog.Pos{Version: 2}}}
		cfg := DefaultConfig(id, masters)
		cfg.CheckCaches = 1
		cfg.VoteLease = 800 * time.Millisecond // the lease the scripts were written for
		if v := a["snapevery"]; v != "" {
			cfg.SnapshotEvery, cfg.LogRetain = mustU(v), 0
		}
		if w := a["witness"]; w != "" {
			cfg.Witness.LogObjects = int(mustU(orDefault(a["logobjects"], "0")))
			cfg.Witness.Store, cfg.Witness.Cluster = !slices.Contains(ids(orDefault(a["nostore"], "0")), id), "c1"
			cfg.Witness.Lease.Lease, cfg.Witness.Lease.RenewEvery, cfg.Witness.Lease.CallTimeout = 2*time.Second, 500*time.Millisecond, 200*time.Millisecond
			if id == masters[0] && !n.store.exists() {
				// Made once, when the witness is configured.
				n.store.apply(witness.Request{Op: witness.Create, Body: witness.Record{Format: witness.Format, WitnessID: w,
					Cluster: "c1", State: witness.Free, Holder: id, Incarnation: 0}.Encode()})
			}
		}
		m, b := New(cfg, st, h.now)
		name := masterName(id)
		n.names = append(n.names, name)
		n.nodes[name] = &netNode{m: m}
		lines = append(lines, h.netCarry(name, ofMaster(b))...)
	}
	for i, c := range css {
		id := wire.CSID(mustU(c))
		addr := netip.MustParseAddr(addrOf(i, c))
		cfg := voter.DefaultConfig(id, addr, masters)
		cfg.Seed = uint64(id)
		v, b := voter.New(cfg, roles.VoterHardState{}, h.now)
		name := csName(id)
		n.names = append(n.names, name)
		n.nodes[name] = &netNode{v: v, addr: addr}
		lines = append(lines, h.netCarry(name, ofVoter(b))...)
	}
	return joinOrNothing(lines)
}

// netRun runs one command of a multi-node script.
func (h *harness) netRun(cmd string, fields []string, a map[string]string) string {
	n := h.net
	switch fields[0] {
	case "time":
		h.now = h.now.Add(mustDur(strings.TrimPrefix(fields[1], "+")))
		lines := []string{fmt.Sprintf("now %v", time.Duration(h.now))}
		for _, name := range n.names {
			lines = append(lines, h.netStep(name, roles.Tick{})...)
		}
		return strings.Join(lines, "\n")
	case "run":
		// The cluster runs for a while on a network with no delay: each
		// runStep every clock moves on, every node is ticked, and what
		// they say is delivered until all is quiet.
		end := h.now.Add(mustDur(strings.TrimPrefix(fields[1], "+")))
		var lines []string
		for h.now < end {
			h.now = min(h.now.Add(runStep), end)
			var step []string
			for _, name := range n.names {
				step = append(step, h.netStep(name, roles.Tick{})...)
			}
			for _, l := range append(step, h.netStabilize()...) {
				lines = append(lines, fmt.Sprintf("%v %s", time.Duration(h.now), l))
			}
		}
		return strings.Join(append(lines, fmt.Sprintf("now %v", time.Duration(h.now))), "\n")
	case "deliver":
		return joinOrNothing(h.netDeliver(true))
	case "stabilize":
		return joinOrNothing(h.netStabilize())
	case "cut":
		n.cut[fields[1]] = true
		return "(nothing)"
	case "split":
		n.side = map[string]bool{}
		for _, name := range strings.Split(fields[1], ",") {
			if n.nodes[name] == nil {
				h.t.Fatalf("split %s: no node %s", fields[1], name)
			}
			n.side[name] = true
		}
		return "(nothing)"
	case "heal":
		clear(n.cut)
		n.side = nil
		return "(nothing)"
	case "kill":
		n.nodes[fields[1]].down = true
		return "(nothing)"
	case "restart":
		// From what it held when killed (its disk), or from nothing but
		// the registry ("wiped"): a new master process.
		node := n.nodes[fields[1]]
		var b both
		switch {
		case node.m != nil:
			old := node.m
			st := roles.Stored{Hard: old.hard, Snapshot: old.snap, Base: old.log.Base(), Entries: old.log.From(old.log.BasePos().Version, 0, 0)}
			var mb Batch
			node.m, mb = New(old.cfg, st, h.now)
			b = ofMaster(mb)
		default:
			var vb voter.Batch
			node.v, vb = voter.New(node.v.Config(), node.v.Hard(), h.now)
			b = ofVoter(vb)
		}
		node.down = false
		return joinOrNothing(h.netCarry(fields[1], b))
	case "storelog":
		var lines []string
		for _, name := range n.names {
			node := n.nodes[name]
			if node.m == nil || node.down {
				continue
			}
			l, d := node.m.StoreLog(), node.m.Durability()
			lines = append(lines, fmt.Sprintf("%s %v acked %v of %v (snapshot %v): store log known=%v snapshot=%v objects=%d %v..%v stands_in=%v holds=%v on_store=%v waiting=%v refused=%d error=%q",
				name, node.m.Role(), node.m.Acked(), node.m.Log().Last(), node.m.SnapshotAt(), l.Known, l.Snapshot, l.Objects, l.Base, l.Last, l.StandsIn, l.Holds, l.OnStore, d.Waiting, l.Refused, l.Error))
		}
		lines = append(lines, fmt.Sprintf("bucket: %s", strings.Join(n.store.Keys(), " ")))
		return strings.Join(lines, "\n")
	case "store":
		n.storeDown = fields[1] == "down"
		return "(nothing)"
	case "on":
		rest := fields[2:]
		ev := h.event(rest[0], parseArgs(rest[1:]))
		return joinOrNothing(h.netStep(fields[1], ev))
	case "status":
		return h.netStatus()
	case "history":
		return h.netHistory()
	}
	h.t.Fatalf("%q: not a command of a multi-node script", cmd)
	return ""
}

// netStabilize delivers until nothing is queued.
func (h *harness) netStabilize() []string {
	var lines []string
	for rounds := 0; len(h.net.queue) > 0 || len(h.net.calls) > 0; rounds++ {
		if rounds == stabilizeBound {
			h.t.Fatalf("stabilize: still talking after %d deliveries", stabilizeBound)
		}
		lines = append(lines, h.netDeliver(false)...)
	}
	return lines
}

// netDeliver hands every message queued now to its node, in order.
// verbose prints each delivery; otherwise only what the nodes did.
func (h *harness) netDeliver(verbose bool) []string {
	n := h.net
	q := n.queue
	n.queue = nil
	var lines []string
	calls := n.calls
	n.calls = nil
	for _, c := range calls {
		if n.storeDown || n.cut[c.from] || n.nodes[c.from].down {
			continue // lost: the caller's lease gives it up
		}
		res := n.store.apply(c.req)
		lines = append(lines, fmt.Sprintf("S3: %s %v %v", c.from, c.req.Op, res.Class))
		n.queue = append(n.queue, netMsg{"S3", c.from, roles.WitnessResult{Result: res}})
	}
	for _, m := range q {
		if m.from == "S3" {
			if !n.cut[m.to] {
				lines = append(lines, h.netStep(m.to, m.msg.(roles.Event))...)
			}
			continue
		}
		to := n.nodes[m.to]
		if to == nil || to.down || n.cut[m.from] || n.cut[m.to] || (n.side != nil && n.side[m.from] != n.side[m.to]) {
			continue
		}
		if verbose && !routine(m.msg.(wire.Message)) {
			lines = append(lines, fmt.Sprintf("%s -> %s %s", m.from, m.to, msgText(m.msg.(wire.Message))))
		}
		ev, ok := m.msg.(roles.Event)
		if !ok {
			h.t.Fatalf("%s sent %s a %T, which is no input of the core", m.from, m.to, m.msg)
		}
		if from := n.nodes[m.from]; from.v != nil {
			ev = withSourceAddr(ev, from.addr) // as the master's driver stamps it
		}
		lines = append(lines, h.netStep(m.to, ev)...)
	}
	return lines
}

// netStep steps one node and carries out its batch.
func (h *harness) netStep(name string, ev roles.Event) []string {
	node := h.net.nodes[name]
	if node.down {
		return nil
	}
	if node.m != nil {
		return h.netCarry(name, ofMaster(node.m.Step(h.now, ev)))
	}
	return h.netCarry(name, ofVoter(node.v.Step(h.now, ev)))
}

// netCarry queues a batch's messages (goodbyes first) and prints what the
// node did besides sending.
func (h *harness) netCarry(name string, b both) []string {
	n := h.net
	var lines []string
	for _, r := range b.AdminReplies {
		code := ""
		if r.Code != wire.CodeNone {
			code = fmt.Sprintf("code=%v ", r.Code)
		}
		lines = append(lines, fmt.Sprintf("%s: admin ok=%v %s%s", name, r.OK, code, r.Text))
	}
	for _, t := range b.Transitions {
		for _, d := range t.Disconnects {
			for _, g := range d.Goodbyes {
				n.queue = append(n.queue, netMsg{name, peerName(g.To), g.Msg})
			}
		}
		lines = append(lines, fmt.Sprintf("%s: transition %v -> %v epoch %d (%s %s)", name, t.From, t.To, t.Epoch, t.Reason, t.Section))
	}
	for _, s := range b.Sends {
		n.queue = append(n.queue, netMsg{name, peerName(s.To), s.Msg})
	}
	for _, r := range b.Ignored {
		lines = append(lines, fmt.Sprintf("%s: ignored %s", name, r))
	}
	for _, r := range b.Witness {
		n.calls = append(n.calls, storeCall{name, r})
	}
	if s := b.SaveSnapshot; s != nil {
		// Durable at once (a disk with no delay).
		lines = append(lines, fmt.Sprintf("%s: snapshot %v durable", name, s.Pos))
		lines = append(lines, h.netStep(name, roles.SnapshotSaved{Pos: s.Pos})...)
	}
	return lines
}

func (h *harness) netHistory() string {
	n := h.net
	var lines []string
	for _, name := range n.names {
		node := n.nodes[name]
		if node.m == nil || node.down {
			continue
		}
		rs, total := node.m.History(0)
		waiting, lost := node.m.Unrecorded()
		lines = append(lines, fmt.Sprintf("%s: %d records, %d waiting, %d lost", name, total, waiting, lost))
		for _, r := range rs {
			line := fmt.Sprintf("  %s#%d %s -> %s epoch %d (%s %s)", masterName(r.Master), r.Seq, r.From, r.To, r.Epoch, r.Reason, r.Section)
			for _, v := range r.Votes {
				line += fmt.Sprintf(" %s=%d/%d", v.Location, v.Votes, v.Voters)
			}
			if r.Why != "" {
				line += fmt.Sprintf(" deposed %s: %s", masterName(r.Deposed), r.Why)
			}
			if r.Witness != "" {
				line += " witness=" + r.Witness
			}
			if r.LeaseEpoch != 0 {
				line += fmt.Sprintf(" lease_epoch=%d", r.LeaseEpoch)
			}
			lines = append(lines, line)
		}
		if lc := node.m.LeaderChanges(); len(lc) > 0 {
			lines = append(lines, fmt.Sprintf("  leader changes %v", lc))
		}
	}
	return strings.Join(lines, "\n")
}

func (h *harness) netStatus() string {
	n := h.net
	var lines []string
	for _, name := range n.names {
		node := n.nodes[name]
		state := ""
		switch {
		case node.down:
			state = "down"
		case node.m != nil:
			counted := node.m.CountedVoters()
			var cs []string
			for _, id := range counted {
				cs = append(cs, csName(id))
			}
			state = fmt.Sprintf("%v epoch %d counts [%s]", node.m.Role(), node.m.Epoch(), strings.Join(cs, " "))
			if w := node.m.Witness(h.now); w.Counted {
				state += " and the witness"
			} else if w.Lease.Blocked != "" {
				state += " (witness: " + w.Lease.Blocked + ")"
			} else if w.Lease.Waiting {
				state += " (waiting for the witness)"
			} else if c := w.Lease.LastClass; w.Configured && (c == witness.Ambiguous || c == witness.Refused) {
				state += fmt.Sprintf(" (witness: %v, %s)", c, w.Lease.LastErr)
			}
		default:
			vote := "nobody"
			if f := node.v.VoteFor(); f != wire.NoMaster {
				vote = masterName(f)
			}
			state = fmt.Sprintf("votes for %s, epoch %d", vote, node.v.Hard().MaxEpoch)
		}
		if n.cut[name] {
			state += " (cut off)"
		}
		lines = append(lines, name+" "+state)
	}
	return strings.Join(lines, "\n")
}

func peerName(p roles.Peer) string {
	switch p.Kind {
	case roles.PeerMaster:
		return masterName(wire.MasterID(p.ID))
	case roles.PeerCS:
		return csName(wire.CSID(p.ID))
	}
	return fmt.Sprintf("C%d", p.ID)
}

// routine messages are left out of a delivery's print.
func routine(m wire.Message) bool {
	switch m.(type) {
	case roles.Probe, roles.ProbeReply, roles.PeerStatus:
		return true
	}
	return false
}

// withSourceAddr stamps a chunkserver's message with the source address of
// its connection, as a master's driver does.
func withSourceAddr(ev roles.Event, addr netip.Addr) roles.Event {
	switch m := ev.(type) {
	case roles.VoteHello:
		m.Addr = addr
		return m
	case roles.VoteBye:
		m.Addr = addr
		return m
	case roles.HeartbeatAck:
		m.Addr = addr
		return m
	}
	return ev
}

func joinOrNothing(lines []string) string {
	if len(lines) == 0 {
		return "(nothing)"
	}
	return strings.Join(lines, "\n")
}
