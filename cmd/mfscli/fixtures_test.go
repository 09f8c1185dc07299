package main

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The fixtures are clusters shaped like `make run` (internal/cluster.Local):
// masters on 127.0.0.11-14, chunkservers in dc1-dc3 (127.0.1-3.x), one with
// a disk and one voter-only in each, and the default location empty.

// t0 is the frozen clock of every golden test.
// The fixtures' helpers, by their short names (internal/clusterview/fixture).
var (
	t0         = fixture.T0
	ms         = fixture.Ms
	addr       = fixture.Addr
	at         = fixture.At
	locations  = fixture.Locations
	registryOf = fixture.RegistryOf
	all        = fixture.All
	none       = fixture.None
	ids        = fixture.IDs
	loc        = fixture.Loc
	tally      = fixture.Tally
	master     = fixture.Master
	follower   = fixture.Follower
	change     = fixture.Change
	votes      = fixture.Votes
	won        = fixture.Won
	elected    = fixture.Elected
	everyVote  = fixture.EveryVote
)

const (
	clusterID = fixture.ClusterID
	gib       = fixture.GiB
)

// healthy: a LEADER and two synced FOLLOWERs, every chunkserver connected
// to all three and voting for the LEADER.
func healthy() []clusterview.Answer {
	l := master("127.0.0.11", roles.Leader, 7, 1532)
	l.Leader, l.HoldsQuorum, l.Connected, l.Registered, l.Voters = addr("127.0.0.11"), true, 6, 6, 6
	l.Chunkservers = registryOf(all, all)
	l.Tallies = []protocol.TallyStatus{tally(3, "WON", loc("dc1", 2, 2, 2), loc("dc2", 2, 2, 2), loc("dc3", 2, 2, 2))}
	l.SnapshotVersion, l.ChangelogEntries, l.LeaderChangeUnixMs, l.RSS, l.CPU = 1000, 532, ms(-200*time.Second), 61<<20, 4.2
	f1 := follower("127.0.0.12", 7, 1532, 120*time.Millisecond)
	f2 := follower("127.0.0.13", 7, 1531, -40*time.Millisecond)
	f2.Behind = 1
	return recorded([]clusterview.Answer{{Addr: at("127.0.0.12"), St: f1}, {Addr: at("127.0.0.11"), St: l}, {Addr: at("127.0.0.13"), St: f2}},
		healthyHistory()...)
}

// healthyHistory: 127.0.0.12 was elected when the cluster started; 200 s
// ago it froze, its lease lapsed and 127.0.0.11 was elected; 127.0.0.12
// woke up, saw its quorum gone and stepped down.
func healthyHistory() []protocol.RoleChangeStatus {
	return slices.Concat(
		elected(-2*time.Hour, "127.0.0.12", 6, "", changelog.WhyNoLeader, everyVote()...),
		elected(-200*time.Second, "127.0.0.11", 7, "127.0.0.12", changelog.WhyLeaseLapsed, votes("dc1", 2, 2), votes("dc2", 2, 2), votes("dc3", 1, 2)),
		[]protocol.RoleChangeStatus{change(-199400*time.Millisecond, "127.0.0.12", roles.Leader, roles.Follower, 6, roles.ReasonQuorumLost, "§3.8",
			votes("dc1", 0, 2), votes("dc2", 0, 2), votes("dc3", 0, 2))})
}

// recorded gives every answering master the election history rs.
func recorded(as []clusterview.Answer, rs ...protocol.RoleChangeStatus) []clusterview.Answer {
	for i := range as {
		if as[i].Err == nil {
			fixture.WithHistory(&as[i].St, rs...)
		}
	}
	return as
}

// election: the LEADER 127.0.0.11 is gone (UNREACHABLE); 127.0.0.12 is
// ELECT and carries dc1 only (dc2: one of two reaches it, 127.0.2.2 is
// down; dc3: both reach it but their votes are still promised to the old
// LEADER); 127.0.0.13 connects but does not answer (BUSY); 127.0.0.14 is
// FOLLOWER (DESYNC), 7.5 s since it was last in sync, its clock 1.5 s ahead.
func election() []clusterview.Answer {
	e := master("127.0.0.12", roles.Elect, 8, 1540)
	e.Sync, e.Connected, e.Registered, e.Voters = roles.Desync, 5, 6, 3
	e.Chunkservers = registryOf(ids(1, 2, 3, 5, 6), ids(1, 2, 3))
	e.Tallies = []protocol.TallyStatus{tally(3, "PENDING", loc("dc1", 2, 2, 2), loc("dc2", 2, 1, 1), loc("dc3", 2, 2, 0))}
	e.SnapshotVersion, e.ChangelogEntries, e.LeaderChangeUnixMs, e.Delay = 1000, 540, ms(-12*time.Second), 12*time.Second
	f := master("127.0.0.14", roles.Follower, 7, 1538)
	f.Sync, f.Delay, f.WallUnixMs, f.Connected, f.Registered = roles.Desync, 7500*time.Millisecond, ms(1500*time.Millisecond), 5, 6
	f.Chunkservers = registryOf(ids(1, 2, 3, 5, 6), none)
	f.SnapshotVersion, f.ChangelogEntries, f.LeaderChangeUnixMs = 1000, 538, ms(-11*time.Second)
	as := recorded([]clusterview.Answer{
		{Addr: at("127.0.0.11"), Err: fmt.Errorf("%w: dial tcp 127.0.0.11:9421: connect: connection refused", client.ErrUnreachable)},
		{Addr: at("127.0.0.12"), St: e},
		{Addr: at("127.0.0.13"), Err: fmt.Errorf("%w: read tcp 127.0.0.1:40122->127.0.0.13:9421: i/o timeout", client.ErrBusy)},
		{Addr: at("127.0.0.14"), St: f},
	}, elected(-5*time.Hour, "127.0.0.11", 7, "", changelog.WhyNoLeader, everyVote()...)...)
	as[1].St.HistoryWaiting = 1 // its FOLLOWER -> ELECT: no LEADER has written it yet
	return as
}

// cutOff: dc3 is cut off from every master; the LEADER holds quorum with
// dc1 and dc2 (2 of 3). 127.0.3.2 is in maintenance. 127.0.0.13 is FOLLOWER (DELAYED), 40 versions and
// 1.8 s behind, its clock 2.4 s ahead.
func cutOff() []clusterview.Answer {
	up := ids(1, 2, 3, 4)
	l := master("127.0.0.11", roles.Leader, 9, 2210)
	l.Leader, l.HoldsQuorum, l.Connected, l.Registered, l.Voters = addr("127.0.0.11"), true, 4, 6, 4
	l.Chunkservers = registryOf(up, up)
	l.Chunkservers[5].Maintenance = true // 127.0.3.2 was taken down on purpose (-CM1)
	l.Tallies = []protocol.TallyStatus{tally(3, "WON", loc("dc1", 2, 2, 2), loc("dc2", 2, 2, 2), loc("dc3", 2, 0, 0))}
	l.SnapshotVersion, l.ChangelogEntries, l.LeaderChangeUnixMs, l.RSS, l.CPU = 2000, 210, ms(-26*time.Hour), 75<<20, 7.9
	f1 := follower("127.0.0.12", 9, 2210, 15*time.Millisecond)
	f1.Chunkservers, f1.Connected, f1.LeaderChangeUnixMs = registryOf(up, none), 4, ms(-26*time.Hour)
	f1.SnapshotVersion, f1.ChangelogEntries = 2000, 210
	f2 := follower("127.0.0.13", 9, 2170, 2400*time.Millisecond)
	f2.Sync, f2.Behind, f2.Delay = roles.Delayed, 40, 1800*time.Millisecond
	f2.Chunkservers, f2.Connected, f2.LeaderChangeUnixMs = registryOf(up, none), 4, ms(-26*time.Hour)
	f2.SnapshotVersion, f2.ChangelogEntries = 2000, 170
	// 127.0.0.12 led from the start until its process died 26 h ago.
	return recorded([]clusterview.Answer{{Addr: at("127.0.0.11"), St: l}, {Addr: at("127.0.0.12"), St: f1}, {Addr: at("127.0.0.13"), St: f2}},
		slices.Concat(elected(-50*time.Hour, "127.0.0.12", 8, "", changelog.WhyNoLeader, everyVote()...),
			elected(-26*time.Hour, "127.0.0.11", 9, "127.0.0.12", changelog.WhyRefused, everyVote()...))...)
}

// inFlight: 127.0.1.3 has just registered in dc1; config 4 (seven
// chunkservers) is in the LEADER's log but not in force yet, so it counts
// under config 4 and config 3 and must win both. 127.0.0.13 was started
// with -e and has no metadata yet: FOLLOWER (INIT).
func inFlight() []clusterview.Answer {
	l := master("127.0.0.11", roles.Leader, 7, 1601)
	l.Leader, l.HoldsQuorum, l.Connected, l.Registered, l.Voters = addr("127.0.0.11"), true, 7, 7, 7
	l.ConfigVersion, l.InForce = 4, 3
	l.Chunkservers = append(registryOf(all, all), protocol.CSStatus{ID: 7, Addr: addr("127.0.1.3"), Port: 9422, Location: "dc1",
		Connected: true, Voting: true, Labels: "A", Total: 200 * gib, Used: 0})
	l.Tallies = []protocol.TallyStatus{
		tally(4, "WON", loc("dc1", 3, 3, 3), loc("dc2", 2, 2, 2), loc("dc3", 2, 2, 2)),
		tally(3, "WON", loc("dc1", 2, 2, 2), loc("dc2", 2, 2, 2), loc("dc3", 2, 2, 2)),
	}
	l.SnapshotVersion, l.ChangelogEntries, l.LeaderChangeUnixMs = 1000, 601, ms(-2*time.Hour-5*time.Minute)
	f := follower("127.0.0.12", 7, 1601, 80*time.Millisecond)
	f.ChangelogEntries = 601
	f.ConfigVersion, f.InForce, f.Connected, f.Registered = 4, 3, 7, 7
	f.Chunkservers = append(registryOf(all, none), protocol.CSStatus{ID: 7, Addr: addr("127.0.1.3"), Port: 9422, Location: "dc1", Connected: true})
	i := master("127.0.0.13", roles.Follower, 0, 0)
	i.Sync, i.Commit, i.ConfigVersion, i.InForce, i.Locations, i.Behind = roles.Init, 0, 0, 0, nil, 1601
	i.ClusterID, i.WallUnixMs, i.RSS, i.CPU = "", ms(-300*time.Millisecond), 22<<20, 38.5
	// 127.0.0.11 founded the cluster: no voter had anybody to nominate.
	as := recorded([]clusterview.Answer{{Addr: at("127.0.0.11"), St: l}, {Addr: at("127.0.0.12"), St: f}},
		elected(-2*time.Hour-5*time.Minute, "127.0.0.11", 7, "", changelog.WhySelfNominated, everyVote()...)...)
	return append(as, clusterview.Answer{Addr: at("127.0.0.13"), St: i})
}

// scenarios are the golden tests' clusters, by file name.
var scenarios = []struct {
	name    string
	answers func() []clusterview.Answer
}{
	{"healthy", healthy},
	{"election", election},
	{"cutoff", cutOff},
	{"inflight", inFlight},
	{"leftout", leftOut},
	{"clone", clone},
	{"open", open},
	{"keep", keep},
	{"twosites", twoSites},
	{"orphaned", orphaned},
	{"acklone", ackLone},
}

// keep: mfsmaster.cfg with KEEP_LEADERSHIP = 1 was copied to every master.
// An admin moved leadership from 127.0.0.11 to 127.0.0.12 (-CLU) a minute
// ago: .11 has yielded and .12 leads in epoch 8, placed by the admin; .13
// keeps, and is the one that would take the role back from any LEADER not
// placed by an admin.
func keep() []clusterview.Answer {
	as := recorded(healthy(), append(healthyHistory(),
		change(-60*time.Second, "127.0.0.12", roles.Follower, roles.Usurper, 7, roles.ReasonAdminUsurper, "§3.11"),
		change(-59*time.Second, "127.0.0.11", roles.Leader, roles.Follower, 7, roles.ReasonHandover, "§3.10", everyVote()...),
		change(-58900*time.Millisecond, "127.0.0.12", roles.Usurper, roles.Elect, 8, roles.ReasonNominated, "§3.3"),
		won(-58600*time.Millisecond, "127.0.0.12", 8, "127.0.0.11", changelog.WhyAdmin, everyVote()...))...)
	every := []netip.Addr{addr("127.0.0.11"), addr("127.0.0.12"), addr("127.0.0.13")}
	for i := range as {
		st := &as[i].St
		st.Keep, st.KeepMasters, st.Leader, st.Epoch = true, every, addr("127.0.0.12"), 8
		switch as[i].Addr.Addr() {
		case addr("127.0.0.11"):
			st.Role, st.Yielded, st.HoldsQuorum = roles.Follower, true, false
		case addr("127.0.0.12"):
			st.Role, st.Placed, st.HoldsQuorum = roles.Leader, true, true
		}
	}
	as[0].St.Chunkservers, as[0].St.Tallies, as[0].St.Voters = as[1].St.Chunkservers, as[1].St.Tallies, as[1].St.Voters
	as[1].St.Chunkservers, as[1].St.Tallies, as[1].St.Voters = registryOf(all, none), nil, 0
	return as
}

// twoSites: two data centres, dc1 and dc2, and the default location with
// no chunkserver: an even split of the two elects nobody (no tie-break).
func twoSites() []clusterview.Answer {
	as := healthy()
	two := func(cs []protocol.CSStatus) []protocol.CSStatus { return cs[:4] }
	for i := range as {
		st := &as[i].St
		st.Locations = st.Locations[:3]
		st.Chunkservers, st.Registered = two(st.Chunkservers), 4
		st.Connected = min(st.Connected, 4)
		st.Voters = min(st.Voters, 4)
		if st.Tallies != nil {
			st.Tallies = []protocol.TallyStatus{tally(3, "WON", loc("dc1", 2, 2, 2), loc("dc2", 2, 2, 2))}
		}
	}
	return as
}

// orphaned: the founder 127.0.0.11 of a new cluster was killed before any
// chunkserver registration was in force. 127.0.0.12 synced the genesis
// config (an empty registry, only the founder can win); 127.0.0.13 holds
// no metadata. No chunkserver can elect either: -SLQ says why.
func orphaned() []clusterview.Answer {
	f := master("127.0.0.12", roles.Follower, 1, 3)
	f.Sync, f.Delay, f.ConfigVersion, f.InForce, f.Registered = roles.Desync, 3*time.Second, 2, 1, 1
	f.Locations, f.Connected = locations(), 6
	f.Chunkservers = registryOf(ids(1), none)[:1]
	f.NotEligible = "no chunkserver registration is in force yet: only the founder 127.0.0.11 can be elected"
	i := master("127.0.0.13", roles.Follower, 0, 0)
	i.Sync, i.Commit, i.ConfigVersion, i.InForce, i.Locations, i.Connected = roles.Init, 0, 0, 0, nil, 6
	i.ClusterID, i.WallUnixMs = "", ms(-300*time.Millisecond)
	i.NotEligible = "it holds no metadata yet (started with -e): it must sync from a LEADER first"
	return []clusterview.Answer{
		{Addr: at("127.0.0.11"), Err: fmt.Errorf("%w: dial tcp 127.0.0.11:9421: connect: connection refused", client.ErrUnreachable)},
		{Addr: at("127.0.0.12"), St: f},
		{Addr: at("127.0.0.13"), St: i},
	}
}

// ackLone: the links between the masters were cut 3 minutes ago (mfscli
// still reaches all three). The LEADER hears neither follower, so the ack
// rule falls back to its own disk (review N7): it says it acknowledges on
// 0 of ACK_REPLICAS=1 follower copies, naming both; the followers follow
// nobody and fall behind.
func ackLone() []clusterview.Answer {
	as := healthy()
	for i := range as {
		st := &as[i].St
		switch as[i].Addr.Addr() {
		case addr("127.0.0.11"):
			st.MetaVersion, st.Commit = 1710, 1710
			st.AckKnown, st.AckRequired, st.AckFollowers, st.AckReplicas = true, 1, 2, 0
			st.AckShort, st.AckShortFor, st.AckUnheard = true, 3*time.Minute, []netip.Addr{addr("127.0.0.12"), addr("127.0.0.13")}
		default:
			st.Sync, st.Leader, st.Behind, st.Delay = roles.Desync, netip.Addr{}, 0, 3*time.Minute
		}
	}
	return as
}

// open: the healthy cluster run as make run runs it: no master has
// AUTH_CODE or an mfsexports.cfg, and all but 127.0.0.13 lack
// ADMIN_PASSWORD.
func open() []clusterview.Answer {
	as := healthy()
	for i := range as {
		as[i].St.NoAuthCode, as[i].St.AdminOpen, as[i].St.ExportsOpen = true, as[i].Addr.Addr() != addr("127.0.0.13"), true
	}
	return as
}

// clone: the healthy cluster, where a copy of 127.0.1.1's VM came up at
// 127.0.9.9 with its id: the LEADER refused it three times, a FOLLOWER
// once.
func clone() []clusterview.Answer {
	as := healthy()
	as[1].St.Clones = []protocol.CloneStatus{{ID: 1, Addr: addr("127.0.9.9"), Holder: addr("127.0.1.1"),
		FirstUnixMs: ms(-90 * time.Second), LastUnixMs: ms(-5 * time.Second), Count: 3}}
	as[0].St.Clones = []protocol.CloneStatus{{ID: 1, Addr: addr("127.0.9.9"), Holder: addr("127.0.1.1"),
		FirstUnixMs: ms(-90 * time.Second), LastUnixMs: ms(-90 * time.Second), Count: 1}}
	return as
}

// leftOut: the election above after mfscli -CTR/127.0.2.2/9422 (down): the
// ELECT counts dc2 as its one remaining chunkserver, carries 2 of 3
// locations and is catching up before it leads.
func leftOut() []clusterview.Answer {
	as := election()
	e := &as[1].St
	e.TempRemoved = []wire.CSID{4}
	e.Transition = "ELECT -> LEADER"
	e.Tallies = []protocol.TallyStatus{tally(3, "WON", loc("dc1", 2, 2, 2), loc("dc2", 1, 1, 1), loc("dc3", 2, 2, 0))}
	return as
}
