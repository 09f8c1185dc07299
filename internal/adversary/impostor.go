package adversary

import (
	"context"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Impostor connects to a master's chunkserver port (9420) with the hello
// id of a registered chunkserver, from its own address, answers the
// AUTH_CODE challenge (with the code when it holds it: the proof binds the
// attacker's own address, so the code alone must not make it that
// chunkserver) and acknowledges every heartbeat it receives like a
// faithful voter that keeps no promise (review C1, E2).
type Impostor struct {
	Target
	// ID is the claimed chunkserver id.
	ID wire.CSID
	// Redial is how many times to connect again after the master closes
	// the connection (the reconnect fight of C1 without a partition).
	Redial int
	// RedialDelay is the pause before each reconnection (0: 20 ms).
	RedialDelay time.Duration
	// VoteHello, when set, opens a vote session of the impostor's own
	// (Port, Session) before acking; E2 needs none, since the real
	// chunkserver's session already exists in the master.
	VoteHello bool
	Port      uint16
	// Refuse answers heartbeats with OK=false and MaxEpoch instead: a
	// forged refusal that claims a newer epoch (review H2 through C1).
	Refuse   bool
	MaxEpoch uint64
}

// ImpostorResult counts what the impostor saw.
type ImpostorResult struct {
	Connects   int // connections that passed the hello exchange
	Challenged int // of which the master asked for AUTH_CODE
	Closed     int // connections the master ended (refused or evicted)
	Heartbeats int // heartbeats received: each is a vote session the master routes to it
	Acks       int // acknowledgements sent
	Redirects  int // Redirect answers (IDTaken counted apart)
	IDTaken    int
	Other      int // any other frame
	// FirstHeartbeat is when the first heartbeat arrived (zero: never).
	FirstHeartbeat time.Time
}

// Run plays the impostor until ctx ends (or the master closes it Redial+1
// times). An error means it never reached the master.
func (im Impostor) Run(ctx context.Context) (ImpostorResult, error) {
	var r ImpostorResult
	delay := im.RedialDelay
	if delay <= 0 {
		delay = 20 * time.Millisecond
	}
	var firstErr error
	for attempt := 0; attempt <= im.Redial && ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return r, nil
			case <-time.After(delay):
			}
		}
		c, challenged, err := OpenCS(ctx, im.Target, im.ID)
		if err != nil {
			if firstErr == nil && r.Connects == 0 {
				firstErr = err
			}
			continue
		}
		r.Connects++
		if challenged {
			r.Challenged++
		}
		if im.VoteHello {
			_ = c.Send(roles.VoteHello{CS: im.ID, Port: im.Port, VoterOnly: true,
				Session: uint64(time.Now().UnixNano()), MaxEpoch: im.MaxEpoch})
		}
		closed := im.serve(ctx, c, &r)
		c.Close()
		if closed {
			r.Closed++
		}
	}
	if r.Connects == 0 {
		return r, firstErr
	}
	return r, nil
}

// serve answers heartbeats on c until ctx ends (false) or the master
// closes c (true).
func (im Impostor) serve(ctx context.Context, c *Conn, r *ImpostorResult) bool {
	for ctx.Err() == nil {
		m, err := c.Recv(100 * time.Millisecond)
		if err != nil {
			if Closed(err) {
				return true
			}
			continue
		}
		switch v := m.(type) {
		case roles.Heartbeat:
			r.Heartbeats++
			if r.FirstHeartbeat.IsZero() {
				r.FirstHeartbeat = time.Now()
			}
			if err := c.Send(im.ack(v)); err == nil {
				r.Acks++
			}
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
	return false
}

func (im Impostor) ack(h roles.Heartbeat) roles.HeartbeatAck {
	if im.Refuse {
		return roles.HeartbeatAck{CS: im.ID, Session: h.Session, Seq: h.Seq, OK: false, Reason: "epoch",
			MaxEpoch: im.MaxEpoch, EpochOwner: h.From}
	}
	return Ack(im.ID, h)
}

// Ack is what a faithful voter answers to h: the promise granted in full,
// the epoch and commit knowledge echoed back.
func Ack(id wire.CSID, h roles.Heartbeat) roles.HeartbeatAck {
	return roles.HeartbeatAck{CS: id, Session: h.Session, Seq: h.Seq, OK: true, Granted: h.Lease,
		MaxEpoch: h.Epoch, EpochOwner: h.From, KnownReg: h.RegVersion, InForce: h.InForce,
		Commit: h.Commit, CommitTag: h.Epoch}
}
