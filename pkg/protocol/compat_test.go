package protocol

import (
	"bytes"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// The replies as they were before refusal codes, field for field.
type adminRespV0 struct {
	ID   uint64
	OK   bool
	Text string
}

func (adminRespV0) MsgType() wire.Type { return wire.TypeAdminResp }

type clientReplyV0 struct {
	From       wire.MasterID
	Client     changelog.ClientID
	Seq        uint64
	OK         bool
	Value      string
	Found      bool
	Version    uint64
	Redirect   wire.MasterID
	Stale      bool
	Err        string
	KeyVersion uint64              `msgpack:",omitempty"`
	Conflict   bool                `msgpack:",omitempty"`
	Entries    []namespace.KVEntry `msgpack:",omitempty"`
	More       bool                `msgpack:",omitempty"`
}

func (clientReplyV0) MsgType() wire.Type { return wire.TypeClientReply }

// TestCodesCompatible: a reply without a code is byte for byte what a
// build from before codes sends, and a reply with one decodes in such a
// build (the code skipped) and from it (the code zero).
func TestCodesCompatible(t *testing.T) {
	pairs := []struct {
		now, before wire.Message
		coded       wire.Message
	}{
		{AdminResp{ID: 3, OK: true, Text: "done"}, adminRespV0{ID: 3, OK: true, Text: "done"},
			AdminResp{ID: 3, Text: "pending", Code: wire.CodeChangePending}},
		{roles.ClientReply{From: 1, Client: 2, Seq: 3, Err: "x", Redirect: 4, More: true}, clientReplyV0{From: 1, Client: 2, Seq: 3, Err: "x", Redirect: 4, More: true},
			roles.ClientReply{Seq: 3, Err: "x", Code: wire.CodeNotLeader}},
	}
	for _, p := range pairs {
		a, err := frame.Encode(p.now)
		if err != nil {
			t.Fatal(err)
		}
		b, err := frame.Encode(p.before)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%T without a code encodes otherwise than before codes:\n%x\n%x", p.now, a, b)
		}
		coded, err := frame.Encode(p.coded)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := frame.RegistryOf(p.before).Decode(coded, frame.DefaultMaxFrame); err != nil {
			t.Errorf("a build from before codes cannot read %T with one: %v", p.coded, err)
		}
		if _, err := frame.RegistryOf(p.now).Decode(b, frame.DefaultMaxFrame); err != nil {
			t.Errorf("%T from a build before codes does not decode: %v", p.now, err)
		}
	}
}
