package sim

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// client is a simulated client session: one operation at a time, retried
// with the same sequence number (so a retried change applies once) until a
// LEADER answers it.
type client struct {
	idx      int
	target   int
	nmasters int
	seq      uint64
	op       *clientOp
}

type clientOp struct {
	write   bool
	key     string
	val     string
	seq     uint64
	call    int64
	attempt int
}

const clientTimeout = int64(400 * time.Millisecond)

func newClient(i, nmasters int) *client {
	return &client{idx: i, target: i % nmasters, nmasters: nmasters}
}

func (c *client) ref() ref { return ref{kClient, c.idx} }

func (c *client) schedule(w *world, at int64) {
	w.push(&event{at: at, kind: evClient, fn: func() { c.begin(w) }})
}

func (c *client) begin(w *world) {
	if c.op != nil {
		return
	}
	c.seq++
	op := &clientOp{seq: c.seq, call: w.now, write: w.rng.Intn(10) < 6, key: []string{"a", "b", "c"}[w.rng.Intn(3)]}
	if op.write {
		op.val = fmt.Sprintf("c%d.%d", c.idx+1, c.seq)
	}
	c.op = op
	c.transmit(w)
}

func (c *client) transmit(w *world) {
	op := c.op
	var msg roles.Event
	id := changelog.ClientID(c.idx + 1)
	if op.write {
		msg = roles.ClientWrite{Client: id, Seq: op.seq, Key: op.key, Value: op.val}
	} else {
		msg = roles.ClientRead{Client: id, Seq: op.seq, Key: op.key}
	}
	w.send(c.ref(), ref{kMaster, c.target}, msg, 0)
	seq, attempt := op.seq, op.attempt
	w.push(&event{at: w.now + clientTimeout, kind: evClient, fn: func() { c.timeout(w, seq, attempt) }})
}

func (c *client) retry(w *world, target int, backoff int64) {
	c.target = target
	c.op.attempt++
	attempt := c.op.attempt
	w.push(&event{at: w.now + backoff, kind: evClient, fn: func() {
		if c.op != nil && c.op.attempt == attempt {
			c.transmit(w)
		}
	}})
}

func (c *client) timeout(w *world, seq uint64, attempt int) {
	if c.op == nil || c.op.seq != seq || c.op.attempt != attempt {
		return
	}
	c.retry(w, (c.target+1)%c.nmasters, 0)
}

// disconnected: the master it was talking to closed client sessions.
func (c *client) disconnected(w *world, m wire.MasterID) {
	if c.op != nil && c.target == int(m)-1 {
		c.retry(w, (c.target+1)%c.nmasters, int64(5*time.Millisecond))
	}
}

func (c *client) onReply(w *world, ev any) {
	r, ok := ev.(roles.ClientReply)
	if !ok || c.op == nil || r.Seq != c.op.seq {
		return
	}
	op := c.op
	if !r.OK || r.Stale {
		next := (c.target + 1) % c.nmasters
		if r.Redirect != wire.NoMaster {
			next = int(r.Redirect) - 1
		}
		c.retry(w, next, int64(5*time.Millisecond)+w.rng.Int63n(int64(20*time.Millisecond)))
		return
	}
	w.chk.completed(w, c.idx, op, r)
	c.op = nil
	c.schedule(w, w.now+int64(time.Millisecond)+w.rng.Int63n(int64(30*time.Millisecond)))
}
