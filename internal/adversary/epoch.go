package adversary

import (
	"context"
	"math"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Epochs a bomb carries: the two at the top of uint64 (newEpoch wraps to 0
// after them, review H2 and T2) and one far above anything seen but nowhere
// near the top.
const (
	EpochTop     = math.MaxUint64     // 2^64-1
	EpochNearTop = math.MaxUint64 - 1 // 2^64-2: the next LEADER takes 2^64-1, the one after wraps
	EpochLeap    = uint64(1) << 40    // added to the current epoch
)

// UnregisteredID is a chunkserver id no test cluster gives out.
const UnregisteredID wire.CSID = 999999

// EpochBomb sends one VoteHello claiming MaxEpoch on a chunkserver
// connection with hello id ID (an unregistered id, or a registered one from
// the wrong address) and listens for Wait (review H2, E3). With Nominate it
// also asks the master to stand for election.
type EpochBomb struct {
	Target
	ID       wire.CSID
	Port     uint16
	MaxEpoch uint64
	Nominate bool
	Wait     time.Duration // 0: 300 ms
}

// EpochBombResult is what came back.
type EpochBombResult struct {
	Challenged bool
	Sent       bool // the VoteHello was written
	Closed     bool // the master ended the connection within Wait
	Heartbeats int
	Redirects  int
	IDTaken    int
	Other      int
}

// Run sends the bomb. An error means it never reached the master.
func (b EpochBomb) Run(ctx context.Context) (EpochBombResult, error) {
	var r EpochBombResult
	c, challenged, err := OpenCS(ctx, b.Target, b.ID)
	if err != nil {
		return r, err
	}
	defer c.Close()
	r.Challenged = challenged
	err = c.Send(roles.VoteHello{CS: b.ID, Port: b.Port, VoterOnly: true, Session: uint64(time.Now().UnixNano()),
		Nominate: b.Nominate, MaxEpoch: b.MaxEpoch})
	r.Sent = err == nil
	wait := b.Wait
	if wait <= 0 {
		wait = 300 * time.Millisecond
	}
	end := time.Now().Add(wait)
	for time.Now().Before(end) && ctx.Err() == nil {
		m, err := c.Recv(time.Until(end))
		if err != nil {
			r.Closed = Closed(err)
			break
		}
		switch v := m.(type) {
		case roles.Heartbeat:
			r.Heartbeats++
			// Refuse it with the bomb: a voter's refusal is what unseats a
			// LEADER, so a forged one must not.
			_ = c.Send(roles.HeartbeatAck{CS: b.ID, Session: v.Session, Seq: v.Seq, OK: false, Reason: "epoch",
				MaxEpoch: b.MaxEpoch, EpochOwner: v.From})
		case roles.Redirect:
			if v.IDTaken {
				r.IDTaken++
			} else {
				r.Redirects++
			}
		default:
			r.Other++
		}
	}
	return r, nil
}
