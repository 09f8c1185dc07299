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
	// ended: the peer closed or reset it before the handshake was over.
	refuseReasons = []string{"garbage", "oversized", "unknown_type", "cluster", "protocol", "kind", "auth", "identity",
		"stranger", "clone", "limit", "idle", "slow", "auth_rate", "ended"}
	// authScopes: what a block of failed proofs covers (AuthBlocks).
	authScopes = []string{"address", "prefix", "all"}
)

// MasterMetrics are the metrics of one mfsmaster.
type MasterMetrics struct {
	roleGauges                                *roleCollector
	leaderChangesBy                           *leaderChangesCollector
	registered, connected, version, delay     prometheus.Gauge
	snapVersion, changelog                    prometheus.Gauge
	leaderChanges, snapInstalls, snapFailures prometheus.Counter
	regRefused                                prometheus.Counter
	busy                                      prometheus.Counter
	stage                                     *prometheus.HistogramVec
	rtt, snapWrite, round                     prometheus.Histogram
	roundVoters                               prometheus.Gauge
	ackShort, ackReplicas                     prometheus.Gauge
	storeObjects, storeBytes, storeOldest     prometheus.Gauge
	acksOnStore, storeBehind, ackWaiting      prometheus.Gauge
	ignored, refused, authBlocks              *prometheus.CounterVec
	witnessCalls                              *prometheus.CounterVec
	witnessTook                               prometheus.Histogram
	backups                                   *prometheus.CounterVec
	backupLast, backupBytes                   prometheus.Gauge
	mu                                        sync.Mutex
}

// backupResults are the results mfs_master_backups_total counts: sent
// (the whole file), failed (cut short: the connection, a stall, a stop),
// refused (not LEADER, one underway, not allowed, not confirmed in time).
var backupResults = []string{"sent", "failed", "refused"}

// MasterRole is what the gauges say about whether this master is LEADER:
// its role, epoch and sync state, whether it holds a quorum, and the votes
// it counts per location.
type MasterRole struct {
	Role            roles.Role
	Epoch           uint64
	Sync            roles.SyncState
	QuorumHeld      bool
	VotesByLocation map[string]int // location name -> votes this master counts now
	// WitnessHeld: this master counts the witness's lease now.
	WitnessHeld bool
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
	// LeaderChanges: the LEADER changes the applied election history
	// counts, by cause.
	LeaderChanges map[string]uint64
	// AckShort: this LEADER's newest acknowledgement rests on fewer
	// follower copies than ACK_REPLICAS; AckReplicas: on how many it rests
	// (roles.Durability; both 0 on a master that is not LEADER).
	AckShort    bool
	AckReplicas int
	// The witness's store as a stand-in replica (roles.StoreLogStatus):
	// what its head names as this master last saw it, and on the LEADER
	// whether its newest acknowledgement rests on it, how long the store
	// has been behind and how long changes have waited for a copy.
	StoreObjects int
	StoreBytes   int64
	StoreOldest  time.Duration
	AcksOnStore  bool
	StoreBehind  time.Duration
	AckWaiting   time.Duration
}

// NewMasterMetrics creates the master metrics and registers them on reg.
func NewMasterMetrics(reg prometheus.Registerer) *MasterMetrics {
	f := promauto.With(reg)
	g := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &MasterMetrics{
		roleGauges:      newRoleCollector(),
		leaderChangesBy: newLeaderChangesCollector(),
		registered:      g("mfs_master_chunkservers_registered", "Chunkservers known to this master's registry."),
		connected:       g("mfs_master_chunkservers_connected", "Chunkservers with an open connection to this master."),
		version:         g("mfs_master_metadata_version", "Metadata version this master has applied."),
		delay:           g("mfs_master_follower_delay_seconds", "How far this master's metadata lags behind the LEADER, in seconds (0 on the LEADER)."),
		snapVersion:     g("mfs_master_snapshot_version", "Metadata version of this master's durable snapshot (snapshot.mfs); 0 when it has none."),
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
		stage: f.NewHistogramVec(prometheus.HistogramOpts{Name: "mfs_master_change_stage_seconds",
			Help:    "On the LEADER, each acknowledged client change by stage of the ack rule: leader_write (stepped -> durable here), replication (-> a follower holds it), commit_send (-> the heartbeat telling the chunkservers left), voter_round (-> the reply), total.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 17)}, []string{"stage"}),
		busy: f.NewCounter(prometheus.CounterOpts{Name: "mfs_master_client_busy_total",
			Help: "Client operations refused with BUSY: MAX_PENDING operations were waiting for their acknowledgement."}),
		leaderChanges: f.NewCounter(prometheus.CounterOpts{Name: "mfs_master_leader_changes_total",
			Help: "Times this master saw the LEADER change, including becoming or ceasing to be LEADER itself."}),
		rtt: f.NewHistogram(prometheus.HistogramOpts{Name: "mfs_master_heartbeat_rtt_seconds",
			Help:    "Round-trip time of master-to-master heartbeats, in seconds.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14)}), // 100µs .. 0.82s
		round: f.NewHistogram(prometheus.HistogramOpts{Name: "mfs_master_heartbeat_round_seconds",
			Help: "How long one heartbeat round to the chunkservers takes on a master that takes votes: the step that starts it, " +
				"its heartbeats encoded and queued to every connection, and the rest of that batch. It grows with the voters; " +
				"against HEARTBEAT_INTERVAL it shows how much of the interval the votes cost.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14)}), // 50µs .. 0.41s
		roundVoters: g("mfs_master_heartbeat_round_voters", "Vote sessions the last heartbeat round went to."),
		ackShort: g("mfs_master_ack_replicas_short",
			"1 while this LEADER's newest acknowledged change rests on fewer other masters than ACK_REPLICAS (none heard within PEER_TIMEOUT, or fewer than ACK_REPLICAS in MASTER_HOST): a loss of its disk then loses acknowledged changes; 0 otherwise, and on a master that is not LEADER."),
		ackReplicas: g("mfs_master_ack_replicas",
			"On the LEADER, the other masters known to hold its newest acknowledged change durably (the ack rule asks for ACK_REPLICAS of them); 0 on a master that is not LEADER."),
		storeObjects: g("mfs_master_store_log_objects",
			"Change objects the witness's store log names (docs/architecture.md §7.5), as this master last read or wrote its head: the changes acknowledged while fewer than ACK_REPLICAS follower masters were present. Bounded by WITNESS_LOG_OBJECTS."),
		storeBytes: g("mfs_master_store_log_bytes", "Bytes of those objects; bounded by WITNESS_LOG_BYTES."),
		storeOldest: g("mfs_master_store_log_oldest_seconds",
			"How long the store log has named objects, as far as this master has seen; the store_behind alarm fires past WITNESS_LOG_AGE."),
		acksOnStore: g("mfs_master_acks_on_store",
			"1 while this LEADER's newest acknowledged change rests on the witness's store in place of missing follower masters; 0 otherwise, and on a master that is not LEADER."),
		storeBehind: g("mfs_master_store_log_behind_seconds",
			"On the LEADER, how long the store has stood in for missing follower masters without holding its newest changes (calls failing or slow, or a bound reached); 0 when it holds them."),
		ackWaiting: g("mfs_master_ack_waiting_seconds",
			"On the LEADER, how long changes have waited for a copy: fewer than ACK_REPLICAS follower masters present, no store holding them, ACK_ALONE = 0. 0 when nothing waits."),
		ignored: f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_ignored_total",
			Help: "Election messages this master ignored, by reason."}, []string{"reason"}),
		refused: f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_connections_refused_total",
			Help: "Connections this master closed, by listening port and reason."}, []string{"port", "reason"}),
		authBlocks: f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_auth_blocks_total",
			Help: "Times failed proofs (AUTH_CODE, ADMIN_PASSWORD, export passwords) got sources refused a proof for a while, by scope: " +
				"address (too many from one address), prefix (from the addresses of one /24 or /64: all of them refused but the masters and registered chunkservers), " +
				"all (from all sources: every source refused but the masters and registered chunkservers). The refusals themselves count in mfs_master_connections_refused_total{reason=\"auth_rate\"}."},
			[]string{"scope"}),
	}
	m.witnessCalls = f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_witness_requests_total",
		Help: "Calls this master made on the witness's store, by operation (get, create, swap) and result (ok, absent, conflict: not ours now, ambiguous: a timeout or 5xx, the write may have landed, refused: credentials, bucket, no conditional writes, or a store that failed its self-test)."},
		[]string{"op", "result"})
	m.witnessTook = f.NewHistogram(prometheus.HistogramOpts{Name: "mfs_master_witness_request_seconds",
		Help:    "Time of one call on the witness's store that reached it, in seconds.",
		Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14)}) // 1ms .. 8s
	m.backups = f.NewCounterVec(prometheus.CounterOpts{Name: "mfs_master_backups_total",
		Help: "Backups (mfscli --backup) this master was asked for, by result: sent, failed (cut short), refused (not LEADER, one underway, not allowed, commit point not confirmed)."},
		[]string{"result"})
	m.backupLast = g("mfs_master_backup_last_success_timestamp_seconds",
		"When this master last sent a whole backup, in Unix seconds (0: none since it started). Alert on the newest over every master: a failover or a restart moves backups to another master.")
	m.backupBytes = g("mfs_master_backup_last_bytes", "The size of the last backup this master sent whole, in bytes.")
	for _, r := range backupResults {
		m.backups.WithLabelValues(r)
	}
	reg.MustRegister(m.roleGauges, m.leaderChangesBy)
	for _, p := range refusePorts {
		for _, r := range refuseReasons {
			m.refused.WithLabelValues(p, r)
		}
	}
	for _, s := range authScopes {
		m.authBlocks.WithLabelValues(s)
	}
	// Every series at 0 from the start: an alert on a rise must see it.
	for _, op := range []string{"get", "create", "swap"} {
		for _, r := range []string{"ok", "absent", "conflict", "ambiguous", "refused"} {
			m.witnessCalls.WithLabelValues(op, r)
		}
	}
	return m
}

// Set exports the snapshot. The role gauges take their part of it only
// while no RoleFrom source is set. Locations absent from it lose their
// series.
func (m *MasterMetrics) Set(s MasterSnapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roleGauges.set(MasterRole{Role: s.Role, Epoch: s.Epoch, Sync: s.Sync, QuorumHeld: s.QuorumHeld, VotesByLocation: s.VotesByLocation})
	m.registered.Set(float64(s.Registered))
	m.connected.Set(float64(s.Connected))
	m.version.Set(float64(s.MetadataVersion))
	m.delay.Set(s.FollowerDelay.Seconds())
	m.snapVersion.Set(float64(s.SnapshotVersion))
	m.changelog.Set(float64(s.ChangelogEntries))
	m.leaderChangesBy.set(s.LeaderChanges)
	m.ackShort.Set(b2f(s.AckShort))
	m.ackReplicas.Set(float64(s.AckReplicas))
	m.storeObjects.Set(float64(s.StoreObjects))
	m.storeBytes.Set(float64(s.StoreBytes))
	m.storeOldest.Set(s.StoreOldest.Seconds())
	m.acksOnStore.Set(b2f(s.AcksOnStore))
	m.storeBehind.Set(s.StoreBehind.Seconds())
	m.ackWaiting.Set(s.AckWaiting.Seconds())
}

// RoleFrom makes every scrape build mfs_master_role, _epoch,
// _sync_state, _quorum_held and _votes from src, called once per scrape
// (all five from one answer), instead of from the last Set. src must judge
// its answer at the instant it is called: a copy of the state taken
// earlier may say LEADER for a master whose quorum has since lapsed (one
// frozen, say), which is what src is there to prevent.
func (m *MasterMetrics) RoleFrom(src func() MasterRole) { m.roleGauges.from(src) }

// WitnessCall counts one call on the witness's store and its time (took 0:
// it never reached the store).
func (m *MasterMetrics) WitnessCall(op, result string, took time.Duration) {
	m.witnessCalls.WithLabelValues(op, result).Inc()
	if took > 0 {
		m.witnessTook.Observe(took.Seconds())
	}
}

// Backup counts one backup by result (backupResults); a sent one of size
// bytes also sets the time of the last success.
func (m *MasterMetrics) Backup(result string, size int64, at time.Time) {
	m.backups.WithLabelValues(result).Inc()
	if result == "sent" {
		m.backupLast.Set(float64(at.UnixNano()) / 1e9)
		m.backupBytes.Set(float64(size))
	}
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

// ChangeStage observes one acknowledged change's time in one stage of the
// ack rule (node/stages.go).
func (m *MasterMetrics) ChangeStage(stage string, d time.Duration) {
	m.stage.WithLabelValues(stage).Observe(d.Seconds())
}

// Busy counts a client operation refused with BUSY (MAX_PENDING).
func (m *MasterMetrics) Busy() { m.busy.Inc() }

// LeaderChange counts one change of LEADER seen by this master.
func (m *MasterMetrics) LeaderChange() { m.leaderChanges.Inc() }

// HeartbeatRound observes one heartbeat round to the chunkservers: how
// long it took and how many vote sessions it went to.
func (m *MasterMetrics) HeartbeatRound(d time.Duration, voters int) {
	m.round.Observe(d.Seconds())
	m.roundVoters.Set(float64(voters))
}

// HeartbeatRTT observes one heartbeat round trip.
func (m *MasterMetrics) HeartbeatRTT(d time.Duration) { m.rtt.Observe(d.Seconds()) }

// Ignored counts one ignored election message; reason must come from a small fixed set.
func (m *MasterMetrics) Ignored(reason string) { m.ignored.WithLabelValues(reason).Inc() }

// InitIgnored exports mfs_master_ignored_total{reason} at 0 for each of
// reasons (the machine's, master.IgnoreReasons), so that a rate over it
// has a series before the first input is ignored.
func (m *MasterMetrics) InitIgnored(reasons []string) {
	for _, r := range reasons {
		m.ignored.WithLabelValues(r)
	}
}

// ConnRefused counts one refused connection on port (matoml, matocs, matocl)
// for reason (one of refuseReasons).
func (m *MasterMetrics) ConnRefused(port, reason string) {
	m.refused.WithLabelValues(port, reason).Inc()
}

// AuthBlocks counts n blocks of failed proofs begun for scope (one of
// authScopes).
func (m *MasterMetrics) AuthBlocks(scope string, n int) {
	m.authBlocks.WithLabelValues(scope).Add(float64(n))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
