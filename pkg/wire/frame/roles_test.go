package frame

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestElectionMessagesRoundTrip: the election core's messages survive the
// codec whole, including a config entry's location map (whose fields are
// unexported: it travels in its own encoding).
func TestElectionMessagesRoundTrip(t *testing.T) {
	g := changelog.Genesis(1)
	west, err := g[0].Config.Locations.MapRange(netip.MustParsePrefix("10.0.2.0/24"), "west")
	if err != nil {
		t.Fatal(err)
	}
	g[0].Config.Locations = west
	g[0].Config.Members = []registry.Chunkserver{{ID: 4, Addr: netip.MustParseAddr("10.0.2.4"), VoterOnly: true}}
	msgs := []wire.Message{
		&roles.VoteHello{CS: 3, Addr: netip.MustParseAddr("10.0.0.1"), Session: 9, Nominate: true, MaxEpoch: 4},
		&roles.Heartbeat{From: 1, Incarnation: 2, Session: 9, Seq: 7, Role: roles.Leader, Epoch: 5, Lease: 800 * time.Millisecond,
			RegVersion: 3, InForce: 3, Commit: changelog.Pos{Version: 10, Epoch: 5}, Rank: 1, Ranks: 3},
		&roles.HeartbeatAck{CS: 3, Session: 9, Seq: 7, OK: true, Granted: 800 * time.Millisecond, MaxEpoch: 5, EpochOwner: 1, Commit: changelog.Pos{Version: 10, Epoch: 5}, CommitTag: 5},
		&roles.Append{From: 1, Epoch: 5, Prev: changelog.Pos{Version: 0}, Entries: append(g, changelog.Entry{Pos: changelog.Pos{Version: 2, Epoch: 5}, Kind: changelog.EntryPut, Client: 1, Seq: 2, Key: "a", Value: "x"}), Commit: changelog.Pos{Version: 1}},
	}
	r := NewRegistry()
	for _, m := range msgs {
		typ := reflect.TypeOf(m).Elem()
		r.Register(m.MsgType(), func() wire.Message { return reflect.New(typ).Interface().(wire.Message) })
	}
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		got, err := r.Decode(b, DefaultMaxFrame)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if a, ok := got.(*roles.Append); ok {
			c := a.Entries[0].Config
			if !c.Locations.Equal(west) || c.Members[0] != g[0].Config.Members[0] {
				t.Fatalf("the config entry lost its registry or locations: %v %+v", c.Locations, c.Members)
			}
			continue
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("%T: got %+v, want %+v", m, got, m)
		}
	}
}

// BenchmarkEncodeHeartbeat: what a LEADER pays per voter and round to
// frame a heartbeat (issue 13: thousands of them a second).
func BenchmarkEncodeHeartbeat(b *testing.B) {
	hb := roles.Heartbeat{From: 1, Incarnation: 2, Session: 9, Seq: 7, Role: roles.Leader, Epoch: 5, Lease: 800 * time.Millisecond,
		RegVersion: 3, InForce: 3, Commit: changelog.Pos{Version: 10, Epoch: 5}, Rank: 1, Ranks: 3}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(hb); err != nil {
			b.Fatal(err)
		}
	}
}
