package adversary

import (
	"context"
	"math"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Forger speaks to a master's peer port (9419) as another master: it binds
// that master's address (Target.Bind), says hello with its id
// (masterhost.IDOf) and sends crafted messages (review M6, E5, T3). Port
// 9419 checks only that the source address matches the hello id, so today
// any local process on a master host gets through.
type Forger struct {
	Target
	// From is the hello id (0: masterhost.IDOf(Bind)).
	From wire.MasterID
	// Wait is how long to listen after the last message for the master
	// to close the connection (0: 500 ms).
	Wait time.Duration
}

// Forged is one crafted message and what it is meant to break.
type Forged struct {
	Name string
	Msg  wire.Message
	// WellFormed: a master holding the code may send this very message
	// (a PeerStatus of a newer LEADER); only a forger without the code
	// must be kept from it.
	WellFormed bool
}

// ForgeResult is what one connection of the forger saw.
type ForgeResult struct {
	// Challenged: the master sent an AuthChallenge after its hello (the
	// fix for M6). Proved: the forger answered it with AuthCode.
	Challenged, Proved bool
	Sent               int  // messages written
	Closed             bool // the master ended the connection
	Replies            []wire.Message
}

// Send opens one connection and sends msgs on it.
func (f Forger) Send(ctx context.Context, msgs ...wire.Message) (ForgeResult, error) {
	var r ForgeResult
	from := f.From
	if from == wire.NoMaster {
		from = masterhost.IDOf(f.Bind)
	}
	nc, err := f.dial(ctx)
	if err != nil {
		return r, err // nothing listens, or no route: not a refusal
	}
	c, err := handshake(nc, f.timeout(), frame.Hello{Kind: frame.KindMaster, ID: uint32(from), Cluster: f.Cluster})
	if err != nil {
		// Connected, then closed before (or instead of) a hello: refused.
		r.Closed = true
		return r, nil
	}
	defer c.Close()
	// A master that authenticates its peers asks first (the fix for M6);
	// on 5e6e761 nothing comes.
	if m, err := c.Recv(200 * time.Millisecond); err == nil {
		if ch, ok := m.(protocol.AuthChallenge); ok {
			r.Challenged = true
			mac := []byte(nil)
			if f.AuthCode != "" && len(ch.Nonce) > 0 {
				mac = MasterProof(f.AuthCode, ch.Nonce, c.Peer.Cluster, c.Local().Addr())
			}
			if err := c.Send(protocol.AuthProof{MAC: mac}); err != nil {
				r.Closed = true
				return r, nil
			}
			r.Proved = mac != nil
		} else {
			r.Replies = append(r.Replies, m)
		}
	} else if Closed(err) {
		r.Closed = true
		return r, nil
	}
	for _, m := range msgs {
		if c.Send(m) != nil {
			r.Closed = true
			return r, nil
		}
		r.Sent++
	}
	wait := f.Wait
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	end := time.Now().Add(wait)
	for time.Now().Before(end) && ctx.Err() == nil {
		m, err := c.Recv(time.Until(end))
		if err != nil {
			r.Closed = Closed(err)
			break
		}
		r.Replies = append(r.Replies, m)
	}
	return r, nil
}

// Crafted returns the hostile peer messages for a master whose log ends at
// last, in epoch epoch, as if sent by from: each alone must neither panic a
// daemon nor reach its core unchecked.
func Crafted(from wire.MasterID, epoch uint64, last changelog.Pos) []Forged {
	e := epoch + 1
	next := last.Version + 1
	return []Forged{
		// E5: an entry whose epoch goes down ("invariant log-contiguous").
		{Name: "append-epoch-0", Msg: roles.Append{From: from, Epoch: e, Prev: last, Commit: last,
			Entries: []changelog.Entry{{Pos: changelog.Pos{Version: next, Epoch: 0}, Kind: changelog.EntryNoop}}}},
		// T3: a config entry without a config (nil dereference).
		{Name: "append-nil-config", Msg: roles.Append{From: from, Epoch: e, Prev: last, Commit: last, InForce: next,
			Entries: []changelog.Entry{{Pos: changelog.Pos{Version: next, Epoch: e}, Kind: changelog.EntryConfig}}}},
		// T3: epochs out of order inside one Append.
		{Name: "append-epochs-down", Msg: roles.Append{From: from, Epoch: e, Prev: last, Commit: last,
			Entries: []changelog.Entry{{Pos: changelog.Pos{Version: next, Epoch: e + 6}, Kind: changelog.EntryNoop},
				{Pos: changelog.Pos{Version: next + 1, Epoch: 1}, Kind: changelog.EntryNoop}}}},
		// Versions with a gap and going back.
		{Name: "append-gap", Msg: roles.Append{From: from, Epoch: e, Prev: last, Commit: last,
			Entries: []changelog.Entry{{Pos: changelog.Pos{Version: next + 5, Epoch: e}, Kind: changelog.EntryNoop},
				{Pos: changelog.Pos{Version: next, Epoch: e}, Kind: changelog.EntryNoop}}}},
		// A commit point far past anything held, at the top of the range.
		{Name: "append-commit-top", Msg: roles.Append{From: from, Epoch: e, Prev: last, Commit: changelog.Pos{Version: math.MaxUint64, Epoch: e},
			InForce: math.MaxUint64}},
		// An epoch at the top: newEpoch wraps after it.
		{Name: "append-epoch-top", Msg: roles.Append{From: from, Epoch: EpochTop, Prev: last, Commit: last}},
		// A snapshot that claims more records than exist.
		{Name: "snapshot-total-top", Msg: roles.SnapshotChunk{From: from, Epoch: e, Pos: changelog.Pos{Version: math.MaxUint64 - 1, Epoch: e},
			Total: math.MaxUint64, Latest: &registry.ClusterConfig{Version: math.MaxUint64},
			Items: []namespace.KVEntry{{Key: "forged", Value: "x", Version: math.MaxUint64}}}},
		// A complete (zero-record) snapshot at the top of the version
		// range with an empty config: installed, the next append wraps.
		{Name: "snapshot-empty-top", Msg: roles.SnapshotChunk{From: from, Epoch: e, Pos: changelog.Pos{Version: math.MaxUint64, Epoch: e},
			Latest: &registry.ClusterConfig{Version: math.MaxUint64}, Commit: changelog.Pos{Version: math.MaxUint64, Epoch: e}}},
		// An ELECT's catch-up answer with a decreasing epoch.
		{Name: "fetch-epoch-0", Msg: roles.FetchResp{From: from, Base: last, Commit: last,
			Entries: []changelog.Entry{{Pos: changelog.Pos{Version: next, Epoch: 0}, Kind: changelog.EntryNoop}}}},
		// A peer claiming to lead a newer epoch: unseats a LEADER today.
		{Name: "status-leader-next-epoch", Msg: roles.PeerStatus{From: from, Role: roles.Leader, Epoch: e, MaxEpoch: e,
			Last: last, Commit: last, Eligible: true, Sync: roles.Synced, Leader: from}, WellFormed: true},
	}
}
