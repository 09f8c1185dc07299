package obs

import (
	"sort"
	"sync"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/prometheus/client_golang/prometheus"
)

// roleCollector builds the gauges that say whether a master is LEADER at
// the instant of each scrape, all from one MasterRole, so that one scrape
// never mixes the role of one instant with the quorum of another.
type roleCollector struct {
	role, sync, votes, epoch, quorum *prometheus.Desc
	witness                          *prometheus.Desc

	mu   sync.Mutex
	src  func() MasterRole // nil: last
	last MasterRole
}

func newRoleCollector() *roleCollector {
	return &roleCollector{
		role: prometheus.NewDesc("mfs_master_role",
			"Current role of this master: 1 on the series of its role (LEADER, ELECT, FOLLOWER, USURPER, DEPUTY, DUMMY), 0 on the others. LEADER only while it holds a quorum at the instant of the scrape.",
			[]string{"role"}, nil),
		sync: prometheus.NewDesc("mfs_master_sync_state",
			"Metadata sync state of this master relative to the LEADER: 1 on the current state (SYNCED, INIT, DESYNC, DELAYED), 0 on the others.",
			[]string{"state"}, nil),
		votes: prometheus.NewDesc("mfs_master_votes",
			"Chunkserver votes this master may count at the instant of the scrape, per location.", []string{"location"}, nil),
		epoch: prometheus.NewDesc("mfs_master_epoch", "Election epoch this master is in.", nil, nil),
		quorum: prometheus.NewDesc("mfs_master_quorum_held",
			"1 if this master holds a quorum of chunkserver votes at the instant of the scrape, else 0.", nil, nil),
		witness: prometheus.NewDesc("mfs_master_witness_lease_held",
			"1 if this master counts the object-store witness's lease at the instant of the scrape (it breaks an even split of the locations for it), else 0.", nil, nil),
		last: MasterRole{Role: roles.Dummy},
	}
}

func (c *roleCollector) set(r MasterRole) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = r
}

func (c *roleCollector) from(src func() MasterRole) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.src = src
}

// Describe implements prometheus.Collector.
func (c *roleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.role, c.sync, c.votes, c.epoch, c.quorum, c.witness} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the source is asked once, at
// the scrape.
func (c *roleCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src, r := c.src, c.last
	c.mu.Unlock()
	if src != nil {
		r = src()
	}
	for _, role := range allRoles {
		ch <- prometheus.MustNewConstMetric(c.role, prometheus.GaugeValue, b2f(role == r.Role), role.String())
	}
	ch <- prometheus.MustNewConstMetric(c.witness, prometheus.GaugeValue, b2f(r.WitnessHeld))
	for _, st := range allSyncStates {
		ch <- prometheus.MustNewConstMetric(c.sync, prometheus.GaugeValue, b2f(st == r.Sync), st.String())
	}
	locs := make([]string, 0, len(r.VotesByLocation))
	for loc := range r.VotesByLocation {
		locs = append(locs, loc)
	}
	sort.Strings(locs)
	for _, loc := range locs {
		ch <- prometheus.MustNewConstMetric(c.votes, prometheus.GaugeValue, float64(r.VotesByLocation[loc]), loc)
	}
	ch <- prometheus.MustNewConstMetric(c.epoch, prometheus.GaugeValue, float64(r.Epoch))
	ch <- prometheus.MustNewConstMetric(c.quorum, prometheus.GaugeValue, b2f(r.QuorumHeld))
}
