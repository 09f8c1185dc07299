package obs

import (
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	allRoles      = []roles.Role{roles.Leader, roles.Elect, roles.Follower, roles.Usurper, roles.Deputy, roles.Dummy}
	allSyncStates = []roles.SyncState{roles.Synced, roles.Init, roles.Desync, roles.Delayed}
	refusePorts   = []string{"matoml", "matocs", "matocl"}
	// clone: a chunkserver id already connected from another address;
	// limit: too many connections (per port or per source); idle: nothing
	// heard for too long; slow: a frame not completed in time, or replies
	// not read; auth_rate: too many failed proofs from the source lately.
	refuseReasons = []string{"garbage", "oversized", "unknown_type", "cluster", "protocol", "kind", "auth", "identity",
		"clone", "limit", "idle", "slow", "auth_rate"}
)

// MasterMetrics are the metrics of one mfsmaster.
type MasterMetrics struct {
	role, sync, votes                                    *prometheus.GaugeVec
	epoch, quorum, registered, connected, version, delay prometheus.Gauge
	snapVersion, changelog                               prometheus.Gauge
	leaderChanges, snapInstalls, snapFailures            prometheus.Counter
	regRefused                                           prometheus.Counter
	rtt, snapWrite                                       prometheus.Histogram
	ignored, refused                                     *prometheus.CounterVec
	mu                                                   sync.Mutex
	locs                                                 map[string]bool
}

// MasterSnapshot is the master state exported as gauges.
type MasterSnapshot struct {
	Role             roles.Role
	Epoch            uint64
	QuorumHeld       bool
	VotesByLocation  map[string]int // location name -> votes this master counts now
	Registered       int            // chunkservers in the registry
	Connected        int            // chunkservers with an open connection to this master
	MetadataVersion  uint64
	FollowerDelay    time.Duration // how far behind the LEADER (0 on the LEADER)
	Sync             roles.SyncState
	SnapshotVersion  uint64 // of the durable snapshot (0: none)
	ChangelogEntries int    // held after the log base
}

// NewMasterMetrics creates the master metrics and registers them on reg.
func NewMasterMetrics(reg prometheus.Registerer) *MasterMetrics {
	f := promauto.With(reg)
	g := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &MasterMetrics{
		role: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mfs_master_role",
			Help: "Current role of this master: 1 on the series of its role (LEADER, ELECT, FOLLOWER, USURPER, DEPUTY, DUMMY), 0 on the others."}, []string{"role"}),
		sync: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mfs_master_sync_state",
			Help: "Metadata sync state of this master relative to the LEADER: 1 on the current state (SYNCED, INIT, DESYNC, DELAYED), 0 on the others."}, []string{"state"}),
		votes: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mfs_master_votes",
			Help: "Chunkserver votes this master currently counts, per location."}, []string{"location"}),
		epoch:       g("mfs_master_epoch", "Election epoch this master is in."),
		quorum:      g("mfs_master_quorum_held", "1 if this master currently holds a quorum of chunkserver votes, else 0."),
		registered:  g("mfs_master_chunkservers_registered", "Chunkservers known to this master's registry."),
		connected:   g("mfs_master_chunkservers_connected", "Chunkservers with an open connection to this master."),
		version:     g("mfs_master_metadata_version", "Metadata version this master has applied."),
		delay:       g("mfs_master_follower_delay_seconds", "How far this master's metadata lags behind the LEADER, in seconds (0 on the LEADER)."),
		snapVersion: g("mfs_master_snapshot_version", "Metadata version of this master's durable snapshot (snapshot.mfs); 0 when it has none."),
		changelog: g("mfs_master_changelog_entries",
			"Changelog entries this master holds after its log base (older ones were trimmed: they are in the snapshot)."),
		snapWrite: f.NewHistogram(prometheus.HistogramOpts{Name: "mfs_master_snapshot_write_seconds",
			Help:    "Time to write one snapshot of this master's own making to snapshot.mfs, in the background, in seconds.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 4, 10)}), // 1ms .. 262s
		snapInstalls: f.NewCounter(prometheus.CounterOpts{Name: "mfs_master_snapshots_installed_total",
			Help: "Snapshots this master received from another master and installed (it was behind the trimmed changelog, or started with -e)."}),
		snapFailures: f.NewCounter(prometheus.CounterOpts{Name: "mfs_master_snapshot_failures_total",
			Help: "Background snapshot writes that failed (the master goes on, keeps the changelog and retries with back-off)."}),
		regRefused: f.NewCounter(prometheus.CounterOpts{Name: "mfs_master_registrations_refused_total",
			Help: "Chunkserver registration requests refused because their source address asked for too many new ids lately."}),
		leaderChanges: f.NewCounter(prometheus.CounterOpts{Name: "mfs_master_leader_changes_total",
			Help: "Times this master saw the LEADER change, including becoming or ceasing to be LEADER itself."}),
		rtt: f.NewHistogram(prometheus.HistogramOpts{Name: "mfs_master_heartbeat_rtt_seconds",
			Help:    "Round-trip time of master-to-master heartbeats, in seconds.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14)}), // 100µs .. 0.82s
		ignored: f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_ignored_total",
			Help: "Election messages this master ignored, by reason."}, []string{"reason"}),
		refused: f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_connections_refused_total",
			Help: "Connections this master closed, by listening port and reason."}, []string{"port", "reason"}),
		locs: map[string]bool{},
	}
	for _, r := range allRoles {
		m.role.WithLabelValues(r.String())
	}
	for _, s := range allSyncStates {
		m.sync.WithLabelValues(s.String())
	}
	for _, p := range refusePorts {
		for _, r := range refuseReasons {
			m.refused.WithLabelValues(p, r)
		}
	}
	return m
}

// Set exports the snapshot. Locations absent from it lose their series.
func (m *MasterMetrics) Set(s MasterSnapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range allRoles {
		m.role.WithLabelValues(r.String()).Set(b2f(r == s.Role))
	}
	for _, st := range allSyncStates {
		m.sync.WithLabelValues(st.String()).Set(b2f(st == s.Sync))
	}
	for loc := range m.locs {
		if _, ok := s.VotesByLocation[loc]; !ok {
			m.votes.DeleteLabelValues(loc)
			delete(m.locs, loc)
		}
	}
	for loc, v := range s.VotesByLocation {
		m.votes.WithLabelValues(loc).Set(float64(v))
		m.locs[loc] = true
	}
	m.epoch.Set(float64(s.Epoch))
	m.quorum.Set(b2f(s.QuorumHeld))
	m.registered.Set(float64(s.Registered))
	m.connected.Set(float64(s.Connected))
	m.version.Set(float64(s.MetadataVersion))
	m.delay.Set(s.FollowerDelay.Seconds())
	m.snapVersion.Set(float64(s.SnapshotVersion))
	m.changelog.Set(float64(s.ChangelogEntries))
}

// SnapshotInstalled counts one snapshot received from another master.
func (m *MasterMetrics) SnapshotInstalled() { m.snapInstalls.Inc() }

// SnapshotWritten observes one background snapshot write.
func (m *MasterMetrics) SnapshotWritten(d time.Duration) { m.snapWrite.Observe(d.Seconds()) }

// SnapshotFailed counts one failed background snapshot write.
func (m *MasterMetrics) SnapshotFailed() { m.snapFailures.Inc() }

// RegistrationRefused counts one registration request refused by the
// per-source limit.
func (m *MasterMetrics) RegistrationRefused() { m.regRefused.Inc() }

// LeaderChange counts one change of LEADER seen by this master.
func (m *MasterMetrics) LeaderChange() { m.leaderChanges.Inc() }

// HeartbeatRTT observes one heartbeat round trip.
func (m *MasterMetrics) HeartbeatRTT(d time.Duration) { m.rtt.Observe(d.Seconds()) }

// Ignored counts one ignored election message; reason must come from a small fixed set.
func (m *MasterMetrics) Ignored(reason string) { m.ignored.WithLabelValues(reason).Inc() }

// ConnRefused counts one refused connection on port (matoml, matocs, matocl)
// for reason (one of refuseReasons).
func (m *MasterMetrics) ConnRefused(port, reason string) {
	m.refused.WithLabelValues(port, reason).Inc()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
