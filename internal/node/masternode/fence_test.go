package masternode

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// fenceCore is master 1 (of 1 and 2), LEADER at epoch 1 counting three of
// four chunkservers: 1 of 1 and 2 in location west (10.0.2.0/24), and 3 and
// 4 in the default location (half the locations, the default among them,
// win). Each vote was renewed by a heartbeat of its own, 100 ms apart, so
// each lapses at its own instant: the quorum lapses with 3's vote, the
// second to go.
func fenceCore(t *testing.T) (*master.Master, roles.Instant) {
	t.Helper()
	g := changelog.Genesis(1)
	west, err := g[0].Config.Locations.MapRange(netip.MustParsePrefix("10.0.2.0/24"), "west")
	if err != nil {
		t.Fatal(err)
	}
	addr := map[wire.CSID]netip.Addr{1: netip.MustParseAddr("10.0.2.1"), 2: netip.MustParseAddr("10.0.2.2"),
		3: netip.MustParseAddr("10.0.1.3"), 4: netip.MustParseAddr("10.0.1.4")}
	cfg := &registry.ClusterConfig{Version: 2, Founder: 1, Locations: west}
	for id := wire.CSID(1); id <= 4; id++ {
		cfg.Members = append(cfg.Members, registry.Chunkserver{ID: id, Addr: addr[id]})
	}
	st := roles.Stored{Entries: append(g, changelog.Entry{Pos: changelog.Pos{Version: 2}, Kind: changelog.EntryConfig, Config: cfg}),
		Hard: roles.HardState{InForce: 2, Commit: changelog.Pos{Version: 2}}}
	core, _ := master.New(master.DefaultConfig(1, []wire.MasterID{1, 2}), st, 0)
	now := roles.Instant(0)
	hbs := map[wire.CSID]roles.Heartbeat{}
	step := func(ev roles.Event) {
		for _, s := range core.Step(now, ev).Sends {
			if hb, ok := s.Msg.(roles.Heartbeat); ok && s.To.Kind == roles.PeerCS {
				hbs[wire.CSID(s.To.ID)] = hb
			}
		}
	}
	ack := func(id wire.CSID) {
		hb := hbs[id]
		step(roles.HeartbeatAck{CS: id, Session: hb.Session, Seq: hb.Seq, OK: true, Granted: hb.Lease, MaxEpoch: hb.Epoch,
			EpochOwner: hb.From, KnownReg: hb.RegVersion, InForce: hb.InForce, Addr: addr[id]})
	}
	step(roles.VoteHello{CS: 1, Addr: addr[1], Session: 1, Nominate: true})
	step(roles.VoteHello{CS: 3, Addr: addr[3], Session: 1})
	step(roles.VoteHello{CS: 4, Addr: addr[4], Session: 1})
	for _, id := range []wire.CSID{1, 3, 4} {
		now = now.Add(100 * time.Millisecond)
		step(roles.Tick{})
		ack(id)
	}
	if core.Role() != roles.Leader || !core.HoldsQuorum(now) {
		t.Fatalf("setup: %v, quorum %v", core.Role(), core.HoldsQuorum(now))
	}
	return core, now
}

// TestOutwardFenced: what /healthz, the role gauges and the status on 9421
// say is judged at the instant they are built. Before the LEADER's counted
// quorum lapses they say LEADER with its votes per location; from that
// instant on (whether or not the loop has stepped since) they say FOLLOWER,
// holding no quorum and counting no vote, with every location's gauge
// still there at 0, and the metrics stay well-formed.
func TestOutwardFenced(t *testing.T) {
	core, now := fenceCore(t)
	lapse := func() roles.Instant { // the second vote to go: 3's
		f := core.Fence()
		return f.Votes[1].Until
	}()
	n := &MasterNode{core: core}
	n.book.Store(&masterBook{addrOf: map[wire.MasterID]netip.Addr{1: netip.MustParseAddr("10.0.0.1"), 2: netip.MustParseAddr("10.0.0.2")}})
	n.publishFence()
	o := n.fenceOut.Load()
	until := o.fence.Until
	if until != lapse || until <= now {
		t.Fatalf("Until %v, want %v (now %v)", until, lapse, now)
	}

	before := o.at(until - 1)
	if before.Role != roles.Leader || !before.quorum || before.Epoch != 1 || before.votes["west"] != 0 || before.votes["default"] != 2 {
		t.Fatalf("just before the lapse: %+v", before)
	}
	if ok, text := n.health(before); !ok || !strings.HasPrefix(text, "LEADER epoch 1 leader 10.0.0.1") {
		t.Fatalf("healthz just before the lapse: %v %q", ok, text)
	}
	after := o.at(until)
	if after.Role != roles.Follower || after.quorum || after.Leader != wire.NoMaster || len(after.votes) != 2 ||
		after.votes["west"] != 0 || after.votes["default"] != 0 {
		t.Fatalf("at the lapse: %+v", after)
	}
	if ok, text := n.health(after); ok || !strings.HasPrefix(text, "FOLLOWER epoch 1") {
		t.Fatalf("healthz at the lapse: %v %q", ok, text)
	}

	// The status on 9421, built from the core as it stood before the
	// lapse and judged at the lapse.
	st := protocol.StatusResp{Role: roles.Leader, Epoch: 1, HoldsQuorum: true, Leader: n.addr(1), Voters: 3, Transition: "x",
		Tallies: []protocol.TallyStatus{{Outcome: "WON"}}, Chunkservers: []protocol.CSStatus{{ID: 1, Voting: true}, {ID: 4}}}
	n.fenceStatus(&st, o.fence, until-1)
	if st.Role != roles.Leader || !st.HoldsQuorum {
		t.Fatalf("status just before the lapse: %+v", st)
	}
	n.fenceStatus(&st, o.fence, until)
	if st.Role != roles.Follower || st.HoldsQuorum || st.Leader.IsValid() || st.Voters != 0 || st.Tallies != nil ||
		st.Transition != "" || st.Chunkservers[0].Voting || st.Sync != roles.Desync {
		t.Fatalf("status at the lapse: %+v", st)
	}

	// The core agrees once it steps.
	core.Step(until, roles.Tick{})
	if core.Role() != roles.Follower {
		t.Fatalf("the core after a Tick at the lapse: %v", core.Role())
	}

	// Gauges built at the lapse: one role at 1, quorum 0, votes 0.
	reg := prometheus.NewRegistry()
	m := obs.NewMasterMetrics(reg)
	m.RoleFrom(func() obs.MasterRole {
		r := o.at(until)
		return obs.MasterRole{Role: r.Role, Epoch: r.Epoch, Sync: r.Sync, QuorumHeld: r.quorum, VotesByLocation: r.votes}
	})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ones, votes := 0, 0
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			switch mf.GetName() {
			case "mfs_master_role":
				if s.GetGauge().GetValue() == 1 {
					ones++
					if s.GetLabel()[0].GetValue() != "FOLLOWER" {
						t.Errorf("role %s at the lapse", s.GetLabel()[0].GetValue())
					}
				}
			case "mfs_master_quorum_held":
				if s.GetGauge().GetValue() != 0 {
					t.Error("quorum held at the lapse")
				}
			case "mfs_master_votes":
				votes++
				if s.GetGauge().GetValue() != 0 {
					t.Errorf("votes %v at the lapse", s.GetGauge().GetValue())
				}
			}
		}
	}
	if ones != 1 || votes != 2 {
		t.Errorf("%d roles at 1, %d vote series", ones, votes)
	}
}
