package protocol

import (
	"reflect"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// every message type of the tree: the hello, the election core's and the
// daemons' own.
var every = []wire.Message{
	frame.Hello{},
	roles.Probe{}, roles.ProbeReply{}, roles.VoteHello{}, roles.VoteBye{}, roles.Heartbeat{}, roles.HeartbeatAck{},
	roles.VoteRelease{}, roles.Redirect{},
	roles.PeerStatus{}, roles.Append{}, roles.AppendAck{}, roles.FetchReq{}, roles.FetchResp{}, roles.SnapshotChunk{},
	roles.ClientWrite{}, roles.ClientRead{}, roles.ClientReply{},
	AuthChallenge{}, AuthProof{}, RegisterReq{}, RegisterReply{}, CSInfo{}, StatusReq{}, StatusResp{},
	AdminReq{}, AdminResp{}, ClientAuth{}, TrustRecord{}, BackupChunk{}, BackupAck{},
}

// TestTypeTable: every number of pkg/wire's table is carried by exactly
// one message, and the table names it as its Go type is named; every
// message's number is in the table.
func TestTypeTable(t *testing.T) {
	carried := map[wire.Type]string{}
	for _, m := range every {
		name := reflect.TypeOf(m).Name()
		typ := m.MsgType()
		if prev, dup := carried[typ]; dup {
			t.Errorf("%s and %s both carry type %d", prev, name, typ)
		}
		carried[typ] = name
		if typ.String() != name {
			t.Errorf("%s carries type %d, which the table names %s", name, typ, typ)
		}
	}
	for _, typ := range wire.Types() {
		if _, ok := carried[typ]; !ok {
			t.Errorf("no message carries type %d (%s)", typ, typ)
		}
	}
}

// TestClientIn: a client reads exactly the answers of the client port,
// and the hello before them.
func TestClientIn(t *testing.T) {
	got := ClientIn().Types()
	want := []wire.Type{wire.TypeHello, wire.TypeClientReply, wire.TypeStatusResp, wire.TypeAdminResp, wire.TypeBackupChunk}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("a client reads %v, want %v", got, want)
	}
}
