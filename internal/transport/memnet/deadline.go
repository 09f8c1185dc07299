package memnet

import (
	"sync"
	"time"
)

// deadline is one read or write deadline of a socket, guarded by the
// socket's mutex. It is an expired flag set by a timer rather than a clock
// reading each waiter compares: a deadline moved while a call waits takes
// effect at once, as net.Conn documents, and a stale timer cannot fire.
type deadline struct {
	timer   *time.Timer
	expired bool
	gen     uint64 // bumped by each set and stop: a timer of an older one does nothing
}

// set installs t (zero: none). A time already past expires at once; a
// later one wakes the waiters on cond when it comes. mu must be held.
func (d *deadline) set(t time.Time, mu *sync.Mutex, cond *sync.Cond) {
	d.stop()
	d.expired = false
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		d.expired = true
		cond.Broadcast()
		return
	}
	gen := d.gen
	d.timer = time.AfterFunc(dur, func() {
		mu.Lock()
		defer mu.Unlock()
		if d.gen == gen {
			d.expired = true
			d.timer = nil
			cond.Broadcast()
		}
	})
}

// stop drops the pending timer, so a closed socket leaves none behind.
func (d *deadline) stop() {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// byteQueue is a FIFO of bytes on one reused array: the live bytes are
// b[off:]. Its length is bounded by its users, and so its array, within a
// factor of two.
type byteQueue struct {
	b   []byte
	off int
}

func (q *byteQueue) len() int { return len(q.b) - q.off }

// push appends p, first sliding the live bytes to the front when the array
// has no room left at its end.
func (q *byteQueue) push(p []byte) {
	if q.off > 0 && len(q.b)+len(p) > cap(q.b) {
		n := copy(q.b, q.b[q.off:])
		q.b, q.off = q.b[:n], 0
	}
	q.b = append(q.b, p...)
}

// pop moves the first len(dst) bytes (at most) into dst.
func (q *byteQueue) pop(dst []byte) int {
	n := copy(dst, q.b[q.off:])
	q.off += n
	if q.off == len(q.b) {
		q.b, q.off = q.b[:0], 0
	}
	return n
}

// truncate keeps the first n live bytes.
func (q *byteQueue) truncate(n int) {
	q.b = q.b[:q.off+n]
	if n == 0 {
		q.b, q.off = q.b[:0], 0
	}
}

// reset drops every byte and the array with them.
func (q *byteQueue) reset() { q.b, q.off = nil, 0 }
