package roles

import (
	"net/netip"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// What a sender claims is replaced by what its connection proves, and a
// message of the wrong direction is no input.
func TestStamp(t *testing.T) {
	addr := netip.MustParseAddr("10.0.1.7")
	if ev, ok := FromVoter(HeartbeatAck{CS: 99, Addr: netip.MustParseAddr("10.9.9.9"), Seq: 4}, 7, addr); !ok ||
		ev.(HeartbeatAck).CS != 7 || ev.(HeartbeatAck).Addr != addr || ev.(HeartbeatAck).Seq != 4 {
		t.Fatalf("a chunkserver's ack stamped %+v, %v", ev, ok)
	}
	if ev, ok := FromVoter(VoteHello{CS: 99}, 7, addr); !ok || ev.(VoteHello).CS != 7 || ev.(VoteHello).Addr != addr {
		t.Fatalf("a hello stamped %+v", ev)
	}
	if _, ok := FromVoter(Heartbeat{}, 7, addr); ok {
		t.Fatal("a heartbeat from a chunkserver's connection was taken as an input")
	}
	if ev, ok := FromPeerMaster(Append{From: 9, Epoch: 3}, 2); !ok || ev.(Append).From != 2 || ev.(Append).Epoch != 3 {
		t.Fatalf("an append stamped %+v", ev)
	}
	if _, ok := FromPeerMaster(VoteHello{}, 2); ok {
		t.Fatal("a vote hello from a master's connection was taken as an input")
	}
	if ev, ok := FromMaster(Heartbeat{From: 9, Seq: 5}, wire.MasterID(3)); !ok || ev.(Heartbeat).From != 3 || ev.(Heartbeat).Seq != 5 {
		t.Fatalf("a heartbeat stamped %+v", ev)
	}
	if _, ok := FromMaster(AppendAck{}, 3); ok {
		t.Fatal("an append ack from a master was taken as a voter's input")
	}
}
