package nodetest

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Fuzz targets for the decoders of every port: whatever bytes arrive, a
// registry either decodes them or returns an error (never a panic, never a
// hang), and what it decodes encodes back to a frame that decodes to the
// same value again. Each target's corpus is testdata/fuzz/<target>: valid
// frames of every type the registry takes (written by -write-corpus from
// portSeeds), plus anything a fuzzing run found worth keeping.

var writeCorpus = flag.Bool("write-corpus", false, "write the fuzz seeds to testdata/fuzz/<target>/ and exit the targets")

// The election core's messages with most fields set, so that the seeds
// reach the decoders of nested values (entries, configs, location maps,
// addresses, durations).
func coreSeeds() map[wire.Type]wire.Message {
	g := changelog.Genesis(1)
	cfg := g[0].Config
	locs, err := cfg.Locations.MapRange(netip.MustParsePrefix("10.0.2.0/24"), "west")
	if err != nil {
		panic(err)
	}
	cfg.Locations = locs
	cfg.Members = []registry.Chunkserver{{ID: 4, Addr: netip.MustParseAddr("10.0.2.4"), Port: 9422, VoterOnly: true},
		{ID: 5, Addr: netip.MustParseAddr("fd00::5"), Maintenance: true}}
	p := func(v, e uint64) changelog.Pos { return changelog.Pos{Version: v, Epoch: e} }
	entries := append(g, changelog.Entry{Pos: p(2, 5), Kind: changelog.EntryPut, Client: 1, Seq: 2, Key: "a", Value: "x"},
		changelog.Entry{Pos: p(3, 5), Kind: changelog.EntryCAS, Client: 1, Seq: 3, Key: "a", Value: "y", Expect: 2},
		changelog.Entry{Pos: p(4, 5), Kind: changelog.EntryDelete, Client: 1, Seq: 4, Key: "a"})
	ms := []wire.Message{
		roles.Probe{CS: 3, Nonce: 7},
		roles.ProbeReply{From: 1, Incarnation: 2, Nonce: 7, Role: roles.Leader, Epoch: 5, Leader: 1, LeaderFresh: true, Eligible: true,
			Sync: roles.Synced, Last: p(4, 5), Keep: true, WallUnixMs: 1_700_000_000_000},
		roles.VoteHello{CS: 3, Addr: netip.MustParseAddr("10.0.0.1"), Port: 9422, VoterOnly: true, Session: 9, Nominate: true, MaxEpoch: 4},
		roles.VoteBye{CS: 3, Session: 9},
		roles.Heartbeat{From: 1, Incarnation: 2, Session: 9, Seq: 7, Role: roles.Leader, Epoch: 5, Lease: 800 * time.Millisecond,
			RegVersion: 3, InForce: 3, Commit: p(10, 5), Rank: 1, Ranks: 3},
		roles.HeartbeatAck{CS: 3, Session: 9, Seq: 7, OK: true, Granted: 800 * time.Millisecond, MaxEpoch: 5, EpochOwner: 1,
			KnownReg: 3, InForce: 3, Commit: p(10, 5), CommitTag: 5},
		roles.VoteRelease{From: 1, Incarnation: 2, Session: 9, Next: 2},
		roles.Redirect{From: 1, Session: 9, Leader: 2, IDTaken: true},
		roles.PeerStatus{From: 2, Incarnation: 1, Role: roles.Follower, Epoch: 5, MaxEpoch: 5, Last: p(4, 5), Commit: p(4, 5),
			Eligible: true, Sync: roles.Synced, Leader: 1, WallUnixMs: 1_700_000_000_000, Snap: 2},
		roles.Append{From: 1, Epoch: 5, Entries: entries, Commit: p(1, 0), InForce: 1},
		roles.AppendAck{From: 2, Epoch: 5, OK: true, Match: p(4, 5), Last: 4, SnapPos: p(9, 5), SnapNext: 3},
		roles.FetchReq{From: 2, After: 1, SnapPos: p(9, 5), SnapNext: 3},
		roles.FetchResp{From: 1, Base: p(1, 0), Entries: entries[1:], Commit: p(4, 5)},
		roles.SnapshotChunk{From: 1, Epoch: 5, Pos: p(9, 5), Total: 3, Latest: cfg, Previous: cfg,
			Items:    []namespace.KVEntry{{Key: "a", Value: "x", Version: 2}, {Key: "b", Value: "y", Version: 8}},
			Sessions: []namespace.SessionEntry{{Client: 1, Session: namespace.Session{Seq: 4, Version: 4, Failed: true}}},
			Commit:   p(9, 5), InForce: 1},
		roles.ClientWrite{Client: 1, Seq: 5, Key: "k", Value: "v", CAS: true, Expect: 4},
		roles.ClientRead{Client: 1, Seq: 6, Key: "dir/", Prefix: true, After: "dir/a", Limit: 100},
		roles.ClientReply{From: 1, Client: 1, Seq: 6, OK: true, Value: "v", Found: true, Version: 9, Redirect: 2, Err: "e",
			KeyVersion: 8, Conflict: true, Entries: []namespace.KVEntry{{Key: "dir/b", Value: "v", Version: 8}}, More: true, Code: wire.CodeNotLeader},
	}
	out := map[wire.Type]wire.Message{}
	for _, m := range ms {
		out[m.MsgType()] = m
	}
	return out
}

// driverSeeds are the daemons' own messages, likewise.
func driverSeeds() map[wire.Type]wire.Message {
	a := netip.MustParseAddr("10.0.1.4")
	ms := []wire.Message{
		frame.Hello{Proto: frame.ProtocolVersion, Cluster: "5f2c", Kind: frame.KindMaster, ID: 1, Incarnation: 3, Nonce: []byte("0123456789abcdef")},
		protocol.AuthChallenge{Nonce: bytes.Repeat([]byte{7}, 32)},
		protocol.AuthProof{MAC: bytes.Repeat([]byte{9}, 32)},
		protocol.RegisterReq{Addr: a, Port: 9422, VoterOnly: true},
		protocol.RegisterReply{ID: 4, Leader: netip.MustParseAddr("10.0.0.1")},
		protocol.CSInfo{ID: 4, Addr: a, Port: 9422, Labels: "ssd", Total: 1 << 40, Used: 1 << 30, Version: "0.3.0",
			Record: "/var/lib/mfs/chunkserver.mfs: copy 2 of 2 is unreadable", Uncertain: true},
		protocol.TrustRecord{CS: 4},
		protocol.StatusReq{},
		protocol.StatusResp{Addr: a, Version: "0.3.0", Role: roles.Leader, Sync: roles.Synced, Epoch: 5, Leader: a, HoldsQuorum: true,
			MetaVersion: 9, Commit: 9, ClusterID: "5f2c", WallUnixMs: 1_700_000_000_000, Behind: 1, Delay: time.Second,
			Connected: 2, Registered: 3, Voters: 2,
			Chunkservers: []protocol.CSStatus{{ID: 4, Addr: a, Port: 9422, Location: "west", Connected: true, Voting: true, Labels: "ssd", Total: 1, Used: 1, Maintenance: true,
				Record: "copy 1 of 2 is unreadable", Uncertain: true}},
			SnapshotVersion: 8, ChangelogEntries: 1, Transition: "ELECT -> LEADER", RSS: 1 << 20, CPU: 12.5, ConfigVersion: 3, InForce: 3,
			Locations: []protocol.LocStatus{{Name: "west", Ranges: []netip.Prefix{netip.MustParsePrefix("10.0.1.0/24")}, On: true, Default: true}},
			Tallies: []protocol.TallyStatus{{Config: 3, Outcome: "WON", Participating: 1, Carried: 1, Needed: 1,
				Locations: []protocol.LocTally{{Name: "west", Default: true, Registered: 3, Votes: 2, Reach: 2, Carried: true, CanCarry: true}}}},
			LeaderChangeUnixMs: 1_700_000_000_000, TempRemoved: []wire.CSID{6}, NoAuthCode: true, AdminOpen: true, ExportsOpen: true},
		protocol.AdminReq{ID: 1, Kind: roles.AdminChange, Change: registry.Change{Kind: registry.ChangeMapRange, Prefix: netip.MustParsePrefix("10.0.3.0/24"), Name: "east"},
			Proof: []byte("proof"), Target: a},
		protocol.AdminResp{ID: 1, Text: "another registry change is still being put in force", Code: wire.CodeChangePending},
		protocol.ClientAuth{MAC: bytes.Repeat([]byte{5}, 32)},
		protocol.BackupChunk{ID: 1, Offset: 1 << 20, Data: bytes.Repeat([]byte{3}, 64), Last: true, Size: 1<<20 + 64, SHA256: bytes.Repeat([]byte{4}, 32)},
		protocol.BackupAck{ID: 1, Offset: 1 << 20},
	}
	out := map[wire.Type]wire.Message{}
	for _, m := range ms {
		out[m.MsgType()] = m
	}
	return out
}

// portSeeds returns a valid frame of every type r takes; a type without a
// seed fails the test (a message added to a port needs one here).
func portSeeds(tb testing.TB, r *frame.Registry) [][]byte {
	tb.Helper()
	all := coreSeeds()
	for t, m := range driverSeeds() {
		all[t] = m
	}
	var out [][]byte
	for _, t := range r.Types() {
		m, ok := all[t]
		if !ok {
			tb.Fatalf("no fuzz seed for message type %d", t)
		}
		b, err := frame.Encode(m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzRegistry is the body of every port's target.
func FuzzRegistry(f *testing.F, r *frame.Registry) {
	f.Helper()
	seeds := portSeeds(f, r)
	if *writeCorpus {
		saveCorpus(f, seeds)
	}
	for _, b := range seeds {
		m, err := r.Decode(b, frame.DefaultMaxFrame)
		if err != nil {
			f.Fatalf("a seed (type %d) does not decode: %v", binaryType(b), err)
		}
		if again, _ := frame.Encode(node.Deref(m)); !bytes.Equal(again, b) {
			f.Fatalf("a seed (type %d) does not survive the codec whole", binaryType(b))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := r.Decode(b, frame.DefaultMaxFrame)
		if err != nil {
			return
		}
		e1, err := frame.Encode(node.Deref(m))
		if err != nil {
			t.Fatalf("decoded %T %+v but cannot encode it: %v", m, m, err)
		}
		m2, err := r.Decode(e1, frame.DefaultMaxFrame)
		if err != nil {
			t.Fatalf("decoded %T %+v, re-encoded, and that does not decode: %v", m, m, err)
		}
		if reflect.TypeOf(m2) != reflect.TypeOf(m) {
			t.Fatalf("%T re-encoded decodes as %T", m, m2)
		}
		e2, err := frame.Encode(node.Deref(m2))
		if err != nil || !bytes.Equal(e1, e2) {
			t.Fatalf("%T changes on a second round through the codec:\n%+v\n%+v (%v)", m, m, m2, err)
		}
	})
}

func binaryType(b []byte) int {
	if len(b) < frame.HeaderLen {
		return -1
	}
	return int(b[4])<<8 | int(b[5])
}

// saveCorpus writes seeds as the files go test reads a corpus from.
func saveCorpus(tb testing.TB, seeds [][]byte) {
	tb.Helper()
	dir := filepath.Join("testdata", "fuzz", strings.Split(tb.Name(), "/")[0])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, b := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%+q)\n", b)
		name := filepath.Join(dir, fmt.Sprintf("seed-type-%d", binaryType(b)))
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
