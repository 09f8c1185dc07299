package master

import "testing"

// Ready operations leave in their order; a change waits for the ack rule,
// a read also for a round sent after it arrived (unless reads go by the
// lease), and a read still waiting asks for one.
func TestPendingTakeReady(t *testing.T) {
	var c clientOps
	c.add(pendingOp{client: 1, seq: 1, ver: 5})                    // a change at 5
	c.add(pendingOp{client: 2, seq: 1, ver: 4, read: true, hb: 7}) // a read, index 4, heartbeat 7 out
	c.add(pendingOp{client: 3, seq: 1, ver: 9})                    // a change at 9
	ready, waiting := c.takeReady(6, 7, false)
	if len(ready) != 1 || ready[0].client != 1 || !waiting {
		t.Fatalf("acked 6, confirmed 7: ready %+v, waiting %v", ready, waiting)
	}
	ready, waiting = c.takeReady(6, 8, false)
	if len(ready) != 1 || ready[0].client != 2 || waiting {
		t.Fatalf("acked 6, confirmed 8: ready %+v, waiting %v", ready, waiting)
	}
	if len(c.pending) != 1 || c.pending[0].client != 3 {
		t.Fatalf("left %+v", c.pending)
	}
	c.add(pendingOp{client: 4, seq: 1, ver: 4, read: true, hb: 20})
	if ready, waiting = c.takeReady(6, 0, true); len(ready) != 1 || ready[0].client != 4 || waiting {
		t.Fatalf("lease reads: ready %+v, waiting %v", ready, waiting)
	}
}

// One read round at a time: asked once, taken by the next broadcast, and
// over once a quorum acknowledged it.
func TestPendingReadRound(t *testing.T) {
	var c clientOps
	if c.askRound(true) {
		t.Fatal("a round asked for while reads go by the lease")
	}
	if !c.askRound(false) || c.askRound(false) {
		t.Fatal("a second round asked for before the first left")
	}
	c.roundSent(12)
	if c.readHB != 12 || c.readRound || c.askRound(false) {
		t.Fatalf("after the round left: readHB %d, readRound %v", c.readHB, c.readRound)
	}
	if c.roundConfirmed(11) || c.readHB != 12 {
		t.Fatal("a round confirmed below its heartbeat")
	}
	if !c.roundConfirmed(12) || c.readHB != 0 || !c.askRound(false) {
		t.Fatal("the confirmed round did not end")
	}
}

// The bound on waiting operations; 0 bounds nothing.
func TestPendingFull(t *testing.T) {
	var c clientOps
	if c.full(0) || c.full(1) {
		t.Fatal("an empty queue is full")
	}
	c.add(pendingOp{})
	if !c.full(1) || c.full(2) || c.full(0) {
		t.Fatal("full disagrees with the bound")
	}
}
