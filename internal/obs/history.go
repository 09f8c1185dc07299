package obs

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

// leaderChangesCollector exports the LEADER changes the election history
// holds, by cause: a count kept in the replicated metadata, so every
// master reports the same one (as of what it has applied) and it goes on
// across failovers and restarts, unlike mfs_master_leader_changes_total,
// which is what one process saw. Every known cause is exported from 0, so
// that increase() sees the first change of each.
type leaderChangesCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	by   map[string]uint64
}

func newLeaderChangesCollector() *leaderChangesCollector {
	return &leaderChangesCollector{
		desc: prometheus.NewDesc("mfs_cluster_leader_changes_total",
			"LEADER changes recorded in the cluster's election history (mfscli -SLH), by why the previous LEADER went: "+
				"lease-lapsed, connection-refused, handover, admin, ... (docs/operations.md). The count is replicated: "+
				"every master reports the cluster's, as of the metadata it has applied.",
			[]string{"why"}, nil),
		by: map[string]uint64{},
	}
}

func (c *leaderChangesCollector) set(by map[string]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.by = by
}

func (c *leaderChangesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *leaderChangesCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, why := range slices.Concat(changelog.Whys, []string{"other"}) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.by[why]), why)
	}
}
