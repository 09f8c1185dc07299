package clusterview

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The answers the tests of this package build: a copy of the small
// helpers of cmd/mfscli's fixtures (whose scenarios feed its golden
// listings), which a test of this package cannot import.

var t0 = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)

const (
	clusterID = "5A1F0C3E9B7D2468"
	gib       = 1 << 30
)

func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func at(s string) netip.AddrPort { return netip.AddrPortFrom(addr(s), 9421) }

func locations() []protocol.LocStatus {
	p := func(s string) []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix(s)} }
	return []protocol.LocStatus{
		{Name: "default", On: true, Default: true},
		{Name: "dc1", Ranges: p("127.0.1.0/24"), On: true},
		{Name: "dc2", Ranges: p("127.0.2.0/24"), On: true},
		{Name: "dc3", Ranges: p("127.0.3.0/24"), On: true},
	}
}

// registry is the six chunkservers; connected and voting say which of them
// have a connection to, and a vote counted by, the master whose view it is.
func registryOf(connected, voting func(wire.CSID) bool) []protocol.CSStatus {
	var out []protocol.CSStatus
	labels := []string{"A", "B", "C"}
	for loc := 1; loc <= 3; loc++ {
		for k := 1; k <= 2; k++ {
			id := wire.CSID(2*(loc-1) + k)
			c := protocol.CSStatus{ID: id, Addr: addr(fmt.Sprintf("127.0.%d.%d", loc, k)), Port: 9422,
				Location: fmt.Sprintf("dc%d", loc), VoterOnly: k == 2,
				Connected: connected(id), Voting: voting(id)}
			if k == 1 {
				c.Labels, c.Total, c.Used = labels[loc-1], 100*gib, uint64(loc)*12*gib+512<<20
			}
			out = append(out, c)
		}
	}
	return out
}

func all(wire.CSID) bool  { return true }
func none(wire.CSID) bool { return false }

func ids(list ...wire.CSID) func(wire.CSID) bool {
	return func(id wire.CSID) bool {
		for _, x := range list {
			if x == id {
				return true
			}
		}
		return false
	}
}

// loc is one location of a count: registered, reach, votes.
func loc(name string, reg, reach, votes int) protocol.LocTally {
	return protocol.LocTally{Name: name, Registered: reg, Reach: reach, Votes: votes,
		Carried: 2*votes > reg, CanCarry: 2*reach > reg}
}

// tally counts the locations: carried, and the outcome of the quorum rule
// (none of the fixtures' counts has the default location taking part).
func tally(config uint64, outcome string, locs ...protocol.LocTally) protocol.TallyStatus {
	t := protocol.TallyStatus{Config: config, Outcome: outcome, Participating: len(locs), Locations: locs}
	for _, l := range locs {
		if l.Carried {
			t.Carried++
		}
	}
	t.Needed = t.Participating/2 + 1
	return t
}

func master(ip string, role roles.Role, epoch, version uint64) protocol.StatusResp {
	return protocol.StatusResp{Addr: addr(ip), Version: "0.3.0", Role: role, Sync: roles.Synced, Epoch: epoch,
		MetaVersion: version, Commit: version, ClusterID: clusterID, WallUnixMs: ms(0),
		ConfigVersion: 3, InForce: 3, Locations: locations(), RSS: 48 << 20, CPU: 1.5}
}

func follower(ip string, epoch, version uint64, offset time.Duration) protocol.StatusResp {
	f := master(ip, roles.Follower, epoch, version)
	f.Leader, f.Connected, f.Registered, f.WallUnixMs = addr("127.0.0.11"), 6, 6, ms(offset)
	f.Chunkservers = registryOf(all, none)
	f.SnapshotVersion, f.ChangelogEntries, f.LeaderChangeUnixMs = 1000, 532, ms(-199*time.Second)
	return f
}

var errUnreachable = fmt.Errorf("%w: connection refused", client.ErrUnreachable)
