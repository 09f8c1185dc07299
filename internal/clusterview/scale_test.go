package clusterview

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// crowd is three masters' answers, a LEADER and two FOLLOWERs, each
// listing n chunkservers connected to it (the LEADER counting every vote),
// as a large cluster's status API sees them every second.
func crowd(n int) []Answer {
	var answers []Answer
	for m := 1; m <= 3; m++ {
		st := protocol.StatusResp{Addr: fixture.Addr(fmt.Sprintf("127.0.0.%d", 10+m)), Role: roles.Follower, Sync: roles.Synced,
			Epoch: 7, Leader: fixture.Addr("127.0.0.11"), ClusterID: fixture.ClusterID, MetaVersion: 100, Commit: 100,
			Registered: n, Connected: n, Locations: fixture.Locations()}
		if m == 1 {
			st.Role, st.HoldsQuorum, st.Voters = roles.Leader, true, n
		}
		for i := range n {
			id := wire.CSID(i + 1)
			st.Chunkservers = append(st.Chunkservers, protocol.CSStatus{ID: id,
				Addr: netip.AddrFrom4([4]byte{127, byte(1 + i%3), byte(i / 250), byte(1 + i%250)}), Port: 9422,
				Location: fmt.Sprintf("dc%d", 1+i%3), VoterOnly: true, Connected: true, Voting: m == 1,
				Version: "0.3.0", ProtoMin: 2, Proto: 3})
		}
		answers = append(answers, Answer{Addr: fixture.At(st.Addr.String()), St: st})
	}
	return answers
}

// TestCrowdRows: with 3,000 chunkservers each row names every master it
// is connected to and the one counting its vote (the rows are built from
// one index per master, not a search per row).
func TestCrowdRows(t *testing.T) {
	ds := Build(crowd(3000), "mfsmaster", fixture.T0)
	if len(ds.Chunkservers) != 3000 {
		t.Fatalf("%d rows", len(ds.Chunkservers))
	}
	for _, r := range ds.Chunkservers {
		if !r.Connected || len(r.ConnectedTo) != 3 || len(r.VoteWith) != 1 || r.VoteWith[0].IP != fixture.Addr("127.0.0.11") {
			t.Fatalf("row %+v", r)
		}
	}
}

// BenchmarkBuild10k: the dataset of a 10,000-chunkserver cluster, which
// every master's status API builds once a second.
func BenchmarkBuild10k(b *testing.B) {
	answers := crowd(10000)
	b.ResetTimer()
	for range b.N {
		Build(answers, "mfsmaster", fixture.T0)
	}
}
