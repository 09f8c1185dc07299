package master

import "github.com/mfs-election/mfs-election/pkg/changelog"

// The pending client operations: a LEADER's changes waiting for the ack
// rule and its reads waiting for their read index and, unless reads go
// by the lease (LEASE_READS), for a heartbeat round sent after they
// arrived. Invariant: at most one read round is out at a time (readHB),
// and the reads that arrive meanwhile wait for the next one.

// clientOps are the client operations waiting for their answer.
type clientOps struct {
	pending []pendingOp
	// readHB: the heartbeat round that will confirm the reads that arrived
	// before it (0: none asked for); readRound: the next broadcast is one.
	readHB    uint64
	readRound bool
}

// pendingOp is one operation waiting for its answer.
type pendingOp struct {
	client changelog.ClientID
	seq    uint64
	ver    uint64 // write: the entry; read: the read index
	hb     uint64 // read: the newest heartbeat sent before it arrived
	key    string
	read   bool
	prefix bool   // a list: keys under the prefix key,
	after  string // after this one,
	limit  int    // at most this many
}

// full: max operations wait already (0: no bound).
func (c *clientOps) full(max int) bool { return max > 0 && len(c.pending) >= max }

// add queues an operation for its answer.
func (c *clientOps) add(op pendingOp) { c.pending = append(c.pending, op) }

// askRound: a read wants a round; true when the next broadcast is to be
// one (none is out or asked for yet, and reads do not go by the lease).
func (c *clientOps) askRound(leaseReads bool) bool {
	if leaseReads || c.readHB != 0 || c.readRound {
		return false
	}
	c.readRound = true
	return true
}

// roundSent: the broadcast of sequence number seq left; if a read round
// was asked for, it is this one.
func (c *clientOps) roundSent(seq uint64) {
	if c.readRound {
		c.readHB, c.readRound = seq, false
	}
}

// roundConfirmed: a quorum acknowledged heartbeats up to confirmed. It
// reports whether that completes the read round out (which ends it).
func (c *clientOps) roundConfirmed(confirmed uint64) bool {
	if confirmed >= c.readHB {
		c.readHB = 0
		return true
	}
	return false
}

// takeReady removes and returns, in their order, the operations that may
// be answered: those at or below acked, reads also confirmed by a round
// sent after they arrived (below confirmed) unless reads go by the lease.
// waitingRead: a read still waits for a round.
func (c *clientOps) takeReady(acked, confirmed uint64, leaseReads bool) (ready []pendingOp, waitingRead bool) {
	keep := c.pending[:0]
	for _, op := range c.pending {
		switch {
		case op.read && !leaseReads && op.hb >= confirmed:
			keep = append(keep, op)
			waitingRead = true
		case op.ver > acked:
			keep = append(keep, op)
		default:
			ready = append(ready, op)
		}
	}
	c.pending = keep
	return ready, waitingRead
}
