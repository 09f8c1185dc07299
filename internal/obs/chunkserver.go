package obs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// ChunkserverMetrics are the election metrics of one mfschunkserver.
type ChunkserverMetrics struct {
	masters                           []string
	per                               []masterGauges // by masters index
	promiseLeft, maxEpoch, registered prometheus.Gauge
	uncertain                         prometheus.Gauge
	recordDamage                      prometheus.Counter
}

// masterGauges are one master's series, looked up once: Set runs on every
// heartbeat, and a label lookup hashes the address each time.
type masterGauges struct{ vote, promise, conn prometheus.Gauge }

// ChunkserverSnapshot is the chunkserver state exported as gauges.
type ChunkserverSnapshot struct {
	VoteFor     string        // master address voted for, or ""
	Promised    string        // master whose promise binds this chunkserver, or ""
	PromiseLeft time.Duration // time until that promise expires
	MaxEpoch    uint64
	Registered  bool
	Connected   map[string]bool // master -> connection up
	Uncertain   bool            // the voter grants nothing until a LEADER restores its record
}

// NewChunkserverMetrics registers the chunkserver metrics on reg. masters
// (the MASTER_HOST addresses) is the whole label set of the per-master series;
// other addresses given to Set are not exported.
func NewChunkserverMetrics(reg prometheus.Registerer, masters []string) *ChunkserverMetrics {
	f := promauto.With(reg)
	vec := func(name, help string) *prometheus.GaugeVec {
		return f.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"master"})
	}
	g := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	vote := vec("mfs_chunkserver_vote", "1 on the master this chunkserver votes for, 0 on the others.")
	promise := vec("mfs_chunkserver_promise", "1 on the master whose promise currently binds this chunkserver, 0 on the others.")
	conn := vec("mfs_chunkserver_master_connected", "1 if the connection to this master is up, else 0.")
	c := &ChunkserverMetrics{
		masters:     append([]string(nil), masters...),
		promiseLeft: g("mfs_chunkserver_promise_remaining_seconds", "Seconds until the current promise expires (0 when unbound)."),
		maxEpoch:    g("mfs_chunkserver_max_epoch", "Highest election epoch this chunkserver has seen."),
		registered:  g("mfs_chunkserver_registered", "1 if this chunkserver is registered with the LEADER, else 0."),
		uncertain: g("mfs_chunkserver_voter_uncertain", "1 while the voter's record may lack what it acknowledged (a damaged copy, a lost record): "+
			"it grants no vote until a LEADER's heartbeat restores it, else 0."),
		recordDamage: f.NewCounter(prometheus.CounterOpts{Name: "mfs_chunkserver_record_damage_total",
			Help: "Copies of the voter record (chunkserver.mfs) found unreadable at start or changed on the disk since they were written, and records found lost (an empty record for an id that was a member)."}),
	}
	for _, m := range c.masters {
		c.per = append(c.per, masterGauges{vote.WithLabelValues(m), promise.WithLabelValues(m), conn.WithLabelValues(m)})
	}
	c.Set(ChunkserverSnapshot{})
	return c
}

// Set exports the snapshot.
func (c *ChunkserverMetrics) Set(s ChunkserverSnapshot) {
	for i, m := range c.masters {
		g := c.per[i]
		g.vote.Set(b2f(s.VoteFor == m))
		g.promise.Set(b2f(s.Promised == m))
		g.conn.Set(b2f(s.Connected[m]))
	}
	c.promiseLeft.Set(max(s.PromiseLeft, 0).Seconds())
	c.maxEpoch.Set(float64(s.MaxEpoch))
	c.registered.Set(b2f(s.Registered))
	c.uncertain.Set(b2f(s.Uncertain))
}

// RecordDamaged counts a damaged copy of the voter record.
func (c *ChunkserverMetrics) RecordDamaged() { c.recordDamage.Inc() }
