package master

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// ---- a small loop around one core, for tests that need a working LEADER ----------

// coreRig drives one master core the way its peers would: every heartbeat
// it sends to a chunkserver is acknowledged by that chunkserver, every
// Append it sends to the other master is acknowledged in full, and the
// replies it sends to clients are collected.
type coreRig struct {
	t       testing.TB
	now     roles.Instant
	m       *Master
	other   wire.MasterID // the other master (it never speaks first)
	replies []roles.ClientReply
	addr    func(wire.CSID) netip.Addr // a chunkserver's address (nil: rigAddr)
}

// rigMembers are the registered chunkservers of every rig: 1..3 at
// 10.0.1.1..3.
func rigAddr(cs wire.CSID) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 1, byte(cs)}) }

// rigStored is the metadata every rig starts from: genesis by master 1,
// then a config entry registering chunkservers 1..3 (in force, committed).
func rigStored() roles.Stored {
	log := changelog.Genesis(1)
	cfg := log[0].Config.Clone()
	cfg.Version, cfg.Bootstrap = 2, false
	for cs := wire.CSID(1); cs <= 3; cs++ {
		cfg.Members = append(cfg.Members, registry.Chunkserver{ID: cs, Addr: rigAddr(cs)})
	}
	log = append(log, changelog.Entry{Pos: changelog.Pos{Version: 2}, Kind: changelog.EntryConfig, Config: cfg})
	return roles.Stored{Entries: log, Hard: roles.HardState{InForce: 2, Commit: changelog.Pos{Version: 2}}}
}

// newLeaderRig returns master 1 of masters 1 and 2, LEADER at epoch 1,
// chunkservers 1 and 2 voting for it.
func newLeaderRig(t testing.TB) *coreRig {
	t.Helper()
	cfg := DefaultConfig(1, []wire.MasterID{1, 2})
	cfg.CheckCaches = 1
	m, _ := New(cfg, rigStored(), 0)
	r := &coreRig{t: t, m: m, other: 2}
	r.step(roles.VoteHello{CS: 1, Addr: rigAddr(1), Session: 1, Nominate: true})
	r.step(roles.VoteHello{CS: 2, Addr: rigAddr(2), Session: 1})
	if m.Role() != roles.Leader {
		t.Fatalf("the rig's master is %v, want LEADER", m.Role())
	}
	return r
}

// newFollowerRig returns master 2 of masters 1 and 2, a FOLLOWER of
// master 1 at epoch 1 holding n committed puts after the LEADER's noop.
func newFollowerRig(t testing.TB, n int) *coreRig {
	t.Helper()
	m, _ := New(DefaultConfig(2, []wire.MasterID{1, 2}), rigStored(), 0)
	r := &coreRig{t: t, m: m, other: 1}
	es := []changelog.Entry{{Pos: changelog.Pos{Version: 3, Epoch: 1}, Kind: changelog.EntryNoop}}
	for i := 0; i < n; i++ {
		es = append(es, changelog.Entry{Pos: changelog.Pos{Version: uint64(4 + i), Epoch: 1}, Kind: changelog.EntryPut, Client: 7, Seq: uint64(i + 1),
			Key: fmt.Sprintf("k/%03d", i), Value: "v"})
	}
	last := es[len(es)-1].Pos
	r.step(roles.Append{From: 1, Epoch: 1, Prev: changelog.Pos{Version: 2}, Entries: es, Commit: last, InForce: 2})
	if m.Role() != roles.Follower || m.Log().Last() != last {
		t.Fatalf("the rig's master is %v at %v, want a FOLLOWER at %v", m.Role(), m.Log().Last(), last)
	}
	return r
}

// step steps ev and then whatever the peers answer, until nothing is left
// (bounded: a rig that does not settle is a bug).
func (r *coreRig) step(ev roles.Event) {
	queue := []roles.Event{ev}
	for i := 0; len(queue) > 0; i++ {
		if i > 10_000+4*len(r.m.voters) {
			r.t.Fatal("the rig did not settle")
		}
		ev, queue = queue[0], queue[1:]
		queue = append(queue, r.answer(r.m.Step(r.now, ev))...)
	}
}

func (r *coreRig) csAddr(cs wire.CSID) netip.Addr {
	if r.addr != nil {
		return r.addr(cs)
	}
	return rigAddr(cs)
}

// answer is what the rig's peers say to acts.
func (r *coreRig) answer(b Batch) []roles.Event {
	var out []roles.Event
	for _, s := range b.Sends {
		switch msg := s.Msg.(type) {
		case roles.Heartbeat:
			cs := wire.CSID(s.To.ID)
			if msg.Keepalive {
				continue
			}
			ack := roles.HeartbeatAck{CS: cs, Session: msg.Session, Seq: msg.Seq, OK: true, Granted: msg.Lease,
				MaxEpoch: msg.Epoch, EpochOwner: msg.From, KnownReg: msg.RegVersion, InForce: msg.InForce, Addr: r.csAddr(cs)}
			if msg.Role == roles.Leader {
				ack.Commit, ack.CommitTag = msg.Commit, msg.Epoch
			}
			out = append(out, ack)
		case roles.Append:
			if wire.MasterID(s.To.ID) != r.other {
				continue
			}
			match := msg.Prev
			if len(msg.Entries) > 0 {
				match = msg.Entries[len(msg.Entries)-1].Pos
			}
			out = append(out, roles.AppendAck{From: r.other, Epoch: msg.Epoch, OK: true, Match: match, Last: match.Version})
		case roles.ClientReply:
			if !msg.OK && msg.Code == wire.CodeNone {
				r.t.Fatalf("a refusal without a code: %+v", msg)
			}
			r.replies = append(r.replies, msg)
		}
	}
	return out
}

// ---- FuzzMasterStep: decode, then Step -------------------------------------------------

var writeCorpus = flag.Bool("write-corpus", false, "write FuzzMasterStep's seeds to testdata/fuzz/FuzzMasterStep/")

// peerRegistry decodes what a master's peers may send it: the messages of
// its three ports (internal/node/masternode's matomlIn, matocsIn and matoclIn, the
// election core's part of them).
var peerRegistry = func() *frame.Registry {
	r := frame.NewRegistry()
	for _, m := range []wire.Message{
		roles.PeerStatus{}, roles.Append{}, roles.AppendAck{}, roles.FetchReq{}, roles.FetchResp{}, roles.SnapshotChunk{},
		roles.Probe{}, roles.VoteHello{}, roles.VoteBye{}, roles.HeartbeatAck{},
		roles.ClientWrite{}, roles.ClientRead{},
	} {
		t := reflect.TypeOf(m)
		r.Register(m.MsgType(), func() wire.Message { return reflect.New(t).Interface().(wire.Message) })
	}
	return r
}()

// fuzzSeeds are valid messages of every type the target decodes, aimed at
// the rigs' masters (epoch 1, masters 1 and 2, chunkservers 1..3).
func fuzzSeeds() []wire.Message {
	noop := changelog.Entry{Pos: changelog.Pos{Version: 3, Epoch: 1}, Kind: changelog.EntryNoop}
	put := changelog.Entry{Pos: changelog.Pos{Version: 4, Epoch: 1}, Kind: changelog.EntryPut, Client: 9, Seq: 1, Key: "a", Value: "x"}
	cfg := rigStored().Entries[1].Config.Clone()
	cfg.Version = 3
	return []wire.Message{
		roles.PeerStatus{From: 2, Incarnation: 1, Role: roles.Follower, Epoch: 1, MaxEpoch: 1, Last: changelog.Pos{Version: 3, Epoch: 1}, Commit: changelog.Pos{Version: 3, Epoch: 1}, Eligible: true, Sync: roles.Synced, Leader: 1},
		roles.PeerStatus{From: 1, Incarnation: 1, Role: roles.Leader, Epoch: 2, MaxEpoch: 2, Last: changelog.Pos{Version: 3, Epoch: 1}, Eligible: true, Sync: roles.Synced, Leader: 1},
		roles.Append{From: 1, Epoch: 1, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{noop, put}, Commit: put.Pos, InForce: 2},
		roles.Append{From: 1, Epoch: 2, Prev: changelog.Pos{Version: 2}, Entries: []changelog.Entry{noop, {Pos: changelog.Pos{Version: 4, Epoch: 2}, Kind: changelog.EntryConfig, Config: cfg}}, InForce: 2},
		roles.AppendAck{From: 2, Epoch: 1, OK: true, Match: changelog.Pos{Version: 3, Epoch: 1}, Last: 3},
		roles.FetchReq{From: 2, After: 2},
		roles.FetchResp{From: 2, Base: changelog.Pos{Version: 2}, Entries: []changelog.Entry{noop, put}, Commit: changelog.Pos{Version: 3, Epoch: 1}},
		roles.SnapshotChunk{From: 1, Epoch: 1, Pos: changelog.Pos{Version: 9, Epoch: 1}, Total: 2, Latest: cfg,
			Items: []namespace.KVEntry{{Key: "a", Value: "x", Version: 4}}, Sessions: []namespace.SessionEntry{{Client: 9, Session: namespace.Session{Seq: 1, Version: 4}}},
			Commit: changelog.Pos{Version: 9, Epoch: 1}, InForce: 2},
		roles.Probe{CS: 3, Nonce: 1},
		roles.VoteHello{CS: 3, Addr: rigAddr(3), Session: 1, Nominate: true, MaxEpoch: 1},
		roles.VoteBye{CS: 1, Session: 1},
		roles.HeartbeatAck{CS: 1, Session: 1, Seq: 3, OK: true, Granted: 800 * time.Millisecond, MaxEpoch: 1, EpochOwner: 1, KnownReg: 2, InForce: 2, Commit: changelog.Pos{Version: 3, Epoch: 1}, CommitTag: 1},
		roles.ClientWrite{Client: 9, Seq: 1, Key: "a", Value: "x"},
		roles.ClientWrite{Client: 9, Seq: 2, Key: "a", Value: "y", CAS: true, Expect: 4},
		roles.ClientRead{Client: 9, Seq: 3, Key: "a"},
		roles.ClientRead{Client: 9, Seq: 4, Key: "k/", Prefix: true, After: "k/001", Limit: 2},
	}
}

// FuzzMasterStep: no sequence of frames a peer can send makes a master's
// core panic (docs/architecture.md §12: a master cannot panic another,
// finding M6). The first byte picks the core (even: a LEADER, odd:
// a FOLLOWER holding a few entries), the rest is frames back to back, each
// decoded as a driver would and stepped, with time moving on between them.
func FuzzMasterStep(f *testing.F) {
	files := map[string][]byte{}
	for _, m := range fuzzSeeds() {
		b, err := frame.Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		for core, name := range []string{"leader", "follower"} {
			in := append([]byte{byte(core)}, b...)
			f.Add(in)
			files[fmt.Sprintf("seed-%s-type-%d-%d", name, m.MsgType(), len(files))] = in
		}
	}
	if *writeCorpus {
		dir := filepath.Join("testdata", "fuzz", f.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%+q)\n", b)), 0o644); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		var r *coreRig
		if in[0]%2 == 0 {
			r = newLeaderRig(t)
		} else {
			r = newFollowerRig(t, 3)
		}
		rd := bytes.NewReader(in[1:])
		for i := 0; i < 64; i++ {
			msg, err := peerRegistry.ReadFrame(rd, frame.DefaultMaxFrame)
			if err != nil {
				return
			}
			ev, ok := reflect.ValueOf(msg).Elem().Interface().(roles.Event)
			if !ok {
				continue // no input of the core: the driver refuses it
			}
			// The driver stamps a chunkserver's inputs with the source
			// address of its connection: here the registered one, the
			// hardest case (an impostor on the member's address).
			switch e := ev.(type) {
			case roles.HeartbeatAck:
				e.Addr = rigAddr(e.CS)
				ev = e
			case roles.VoteBye:
				e.Addr = rigAddr(e.CS)
				ev = e
			}
			r.now = r.now.Add(50 * time.Millisecond)
			sends := append(r.m.Step(r.now, ev).Sends, r.m.Step(r.now, roles.Tick{}).Sends...)
			for _, s := range sends {
				// A client decides by the code whether to retry.
				if rep, ok := s.Msg.(roles.ClientReply); ok && !rep.OK && rep.Code == wire.CodeNone {
					t.Fatalf("a refusal without a code: %+v", rep)
				}
			}
		}
	})
}
