package obs

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Datagrams counts the heartbeat datagrams a daemon received
// (internal/node/datagram.go) by what became of them. Safe for concurrent
// use; a nil *Datagrams counts nothing.
type Datagrams struct{ first, second, refused prometheus.Counter }

// NewDatagrams registers mfs_<daemon>_heartbeat_datagrams_total on reg
// (nil: counts nothing), every result exported from the start.
func NewDatagrams(reg prometheus.Registerer, daemon string) *Datagrams {
	if reg == nil {
		return nil
	}
	v := promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
		Name: "mfs_" + daemon + "_heartbeat_datagrams_total",
		Help: "Heartbeat datagrams received (the UDP path beside each vote session's TCP connection), by result: " +
			"first (it arrived before its copy on TCP and was taken: what the datagram path saved under loss), " +
			"second (its TCP copy came first: dropped), refused (not for a session open now, or it did not authenticate or decode).",
	}, []string{"result"})
	return &Datagrams{v.WithLabelValues("first"), v.WithLabelValues("second"), v.WithLabelValues("refused")}
}

// First counts a datagram taken before its TCP copy.
func (d *Datagrams) First() {
	if d != nil {
		d.first.Inc()
	}
}

// Second counts a datagram whose TCP copy was taken first.
func (d *Datagrams) Second() {
	if d != nil {
		d.second.Inc()
	}
}

// Refused counts a datagram that was not taken.
func (d *Datagrams) Refused() {
	if d != nil {
		d.refused.Inc()
	}
}
