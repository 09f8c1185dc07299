package main

import (
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/masternode"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
)

// config is what mfsmaster.cfg and the flags set: the driver's options
// (the election core's master.Config among them) and what only this command
// uses. Each field is set by the one key bound to it in keys.
type config struct {
	Node       masternode.MasterOptions
	DataPath   string
	MasterHost string
	BindHost   string
	// The listeners: masters (MATOML), chunkservers (MATOCS), clients
	// (MATOCL) and the HTTP endpoint.
	ML, CS, CL, HTTP listen
	Pprof            string // PPROF_LISTEN: "" = off
	HTTPAllowOrigin  string // HTTP_ALLOW_ORIGIN: "" = the masters' own pages only
	Insecure         bool
	LogLevel         string
	LogFormat        string
	// Witness: where the witness's store is (witness.go); the lease's
	// timing is the core's, Node.Core.Witness.
	Witness witnessKeys
}

// listen is a *_LISTEN_HOST and *_LISTEN_PORT pair.
type listen struct {
	Host string
	Port int
}

// addr is the pair as net.Listen takes it ("*" = every address).
func (l listen) addr() string { return node.ListenAddr(l.Host, l.Port) }

// defaults is the config before any file or flag: the core's
// master.DefaultConfig and this command's own. Why each value is what it
// is, is in its key's Usage.
func defaults() config {
	return config{
		Node: masternode.MasterOptions{
			Core:            master.DefaultConfig(0, nil), // ID and Masters come from MASTER_HOST
			ExportsFile:     "/etc/mfs/mfsexports.cfg",
			ResolveInterval: 30 * time.Second,
			Datagrams:       true,
		},
		DataPath:   "/var/lib/mfs",
		MasterHost: "mfsmaster",
		// ResolveInterval: a DNS change reaches every node within half a
		// minute, for a few lookups a minute per node.
		ML:        listen{"*", 9419},
		CS:        listen{"*", 9420},
		CL:        listen{"*", 9421},
		HTTP:      listen{"*", 9425},
		LogLevel:  "info",
		LogFormat: "auto",
		Witness:   witnessDefaults(),
	}
}

// spec is every mfsmaster.cfg key: the example file etc/mfsmaster.cfg, the
// long flags, --help and docs/operations.md are all made from it.
var spec = settings.Spec[config]{Daemon: "mfsmaster", Defaults: defaults, Keys: keys, Rules: rules}

// coreKeys maps the core's config fields to their keys ("VoteLease" ->
// "VOTE_LEASE"), from the key table itself, so the two cannot drift.
var coreKeys = sync.OnceValue(func() map[string]string {
	bind, err := settings.Spec[config]{Daemon: "mfsmaster", Defaults: defaults, Keys: keys}.Bindings()
	if err != nil {
		panic(err) // a key table that binds a key twice: TestBindings catches it
	}
	out := map[string]string{}
	for key, field := range bind {
		if f, ok := strings.CutPrefix(field, "Node.Core."); ok {
			out[f] = key
		}
	}
	return out
})

// rules are the core's rules between fields (master.Config.Problems),
// with the mfsmaster.cfg keys of those fields: a broken one is reported
// at start and reload naming the keys, their values and their lines,
// rather than the core's field names when the driver starts.
func rules(c *config) []settings.Rule {
	var out []settings.Rule
	if why := obs.LogFormatRule(c.LogFormat); why != "" {
		out = append(out, settings.Rule{Keys: []string{"LOG_FORMAT"}, Text: why})
	}
	for _, p := range c.Node.Core.Problems() {
		r := settings.Rule{Text: p.Text}
		for _, f := range p.Fields {
			if k, ok := coreKeys()[f]; ok {
				r.Keys = append(r.Keys, k)
			}
		}
		out = append(out, r)
	}
	return out
}

// keys binds each mfsmaster.cfg key to its field of c. A key's default is
// that field's value in defaults; the range of a core field is the core's
// own (master.Config.Ranges, which Validate checks too); the Usage says
// what the key does and why its default, once. Live marks the keys a
// reload applies at once (applyLive).
func keys(c *config) []settings.Key {
	core := &c.Node.Core
	r := core.Ranges()
	return append([]settings.Key{
		settings.Field("DATA_PATH", &c.DataPath,
			"Where the metadata (metadata.mfs: changelog and state; snapshot.mfs: the newest snapshot), the lock file and the log of a background start live."),
		settings.Field("MASTER_HOST", &c.MasterHost,
			"Every master of the cluster: a DNS name whose A records are all the masters, or a comma-separated list of addresses, each with an optional :port (the MATOML port). Identical on every master and chunkserver. Resolved again every MASTER_RESOLVE_INTERVAL and on reload, where a new value takes effect too: masters are added and removed without a restart (docs/operations.md, \"Add a master\").").Live(),
		settings.Ranged("MASTER_RESOLVE_INTERVAL", &c.Node.ResolveInterval, 0, 24*time.Hour,
			"How often MASTER_HOST is resolved again, so that masters added to or removed from the name (or the hosts file) are taken in without a restart; also on SIGHUP (mfsmaster reload) and mfscli -CMR. 0: only then. A resolution that fails keeps the set as it was."),
		settings.Field("MASTER_HOSTS_FILE", &c.Node.HostsFile,
			"A hosts(5)-style file (ADDRESS NAME... lines) read at every resolution of MASTER_HOST and consulted before DNS: a way to keep the master list in a file pushed to every host. Empty: DNS and /etc/hosts as the system resolves them."),
		settings.Field("BIND_HOST", &c.BindHost,
			"Address this master's outgoing connections leave from. Empty: MATOML_LISTEN_HOST when that is one address, else this master's address in MASTER_HOST."),
		settings.Field("MATOML_LISTEN_HOST", &c.ML.Host, "Address for other masters to connect to (* = all)."),
		settings.Ranged("MATOML_LISTEN_PORT", &c.ML.Port, 0, 65535, "Port for other masters (MooseFS: 9419)."),
		settings.Field("MATOCS_LISTEN_HOST", &c.CS.Host, "Address for chunkservers (their votes) to connect to."),
		settings.Ranged("MATOCS_LISTEN_PORT", &c.CS.Port, 0, 65535, "Port for chunkservers (MooseFS: 9420)."),
		settings.Field("MATOCL_LISTEN_HOST", &c.CL.Host, "Address for clients and mfscli."),
		settings.Ranged("MATOCL_LISTEN_PORT", &c.CL.Port, 0, 65535, "Port for clients and mfscli (MooseFS: 9421)."),
		settings.Field("HTTP_LISTEN_HOST", &c.HTTP.Host, "Address of the HTTP endpoint (/metrics, /healthz)."),
		settings.Ranged("HTTP_LISTEN_PORT", &c.HTTP.Port, 0, 65535, "Port of the HTTP endpoint (MooseFS GUI port: 9425)."),
		settings.Field("HTTP_ALLOW_ORIGIN", &c.HTTPAllowOrigin,
			"Web pages of other origins that may read /api/v1/status through their visitor's browser (CORS), besides the masters' own: origins (scheme://host[:port], http or https, e.g. https://grafana.example.com), comma-separated, or * for any page. Empty: only the page of a master of the cluster (http or https://ADDRESS:HTTP_LISTEN_PORT for an address of the current set of masters or a name MASTER_HOST lists), which asks the other masters when its own is down. The document lists every master, chunkserver and location and what is left open, so * lets any web site a person inside the network visits read it. mfscli and scripts are not browsers: this does not concern them."),
		settings.Field("PPROF_LISTEN", &c.Pprof,
			"Address (loopback HOST:PORT, e.g. 127.0.0.1:6060) where Go's profiles are served (go tool pprof http://ADDR/debug/pprof/profile): to find where this daemon's processor goes. Loopback only (reach it through ssh -L); a CPU profile costs a few percent while it runs. Empty: off."),
		settings.Field("AUTH_CODE", &c.Node.AuthCode,
			"The cluster's secret, the same on every master and chunkserver (at least 16 characters; mfsmaster init prints a random one). Masters prove it to each other on 9419 and chunkservers to the masters on 9420 (challenge-response; the code never crosses the wire): without it nothing a peer sends there is heard. Required unless every address of this master and of MASTER_HOST is loopback, or INSECURE = 1."),
		settings.Field("ADMIN_PASSWORD", &c.Node.AdminPassword,
			"When set (at least 16 characters), mfscli admin commands (-C...) are refused unless mfscli proves it knows this password (-a or MFSCLI_PASSWORD; challenge-response, never sent in clear). Listings stay open. Empty: admin commands are open to anyone who reaches 9421 (warned at every start).").Live(),
		settings.Field("EXPORTS_FILENAME", &c.Node.ExportsFile,
			"Which clients may read and change which keys on 9421 (MooseFS's mfsexports.cfg: ADDRESS PATH OPTIONS lines; docs/operations.md, Client access). The file is re-read on reload. A missing file: every client may read and change every key."),
		settings.Field("INSECURE", &c.Insecure,
			"1: start without AUTH_CODE even though this master is reachable from other hosts (warned at every start). 0: such a master refuses to start without AUTH_CODE."),
		settings.Ranged("DEPUTY_ELECTION_TIME", &core.DeputyElectionTime, r.DeputyElectionTime.Min, r.DeputyElectionTime.Max,
			"An ELECT that cannot gather quorum this long becomes DEPUTY and serves reads. 0 = never (MooseFS's default)."),
		settings.Field("KEEP_LEADERSHIP", &core.KeepLeadership,
			"1: this master takes the LEADER role back whenever it is a synced FOLLOWER, unless leadership was moved away on purpose. Set it on one master; on several, only the lowest address that has not yielded reclaims (see \"Moving leadership\")."),
		settings.Field("LEASE_READS", &core.LeaseReads,
			"1: the LEADER answers reads on its vote leases alone, about a round trip sooner. Safe only where this machine's monotonic clock counts every moment the master is stopped: not in a VM that may be paused or suspended. 0 (the default): each read waits for a quorum to acknowledge a heartbeat sent after it arrived, linearizable even after a pause the clock did not see."),
		settings.Field("LOG_LEVEL", &c.LogLevel, "debug, info, warn or error.").Live(),
		settings.Field("LOG_FORMAT", &c.LogFormat, "auto: readable lines on a terminal, JSON lines otherwise (a file, a pipe, the journal); json or console to choose."),
		settings.Ranged("VOTE_LEASE", &core.VoteLease, r.VoteLease.Min, r.VoteLease.Max,
			"The promise a chunkserver makes on each heartbeat. A frozen LEADER is replaced about one lease after its last heartbeat, lease - interval/2 after it froze: the default keeps that near 0.45 s while a 200 ms stall (up to 350 ms of silence at the default interval) still deposes nobody. Past HEARTBEAT_VOTERS sessions the lease asked grows with the interval. Must not exceed the chunkservers' MAX_PROMISE."),
		settings.Ranged("HEARTBEAT_INTERVAL", &core.HeartbeatInterval, r.HeartbeatInterval.Min, r.HeartbeatInterval.Max,
			"How often a master that takes votes renews them: more than three renewals per lease, so that a 200 ms stall just before a renewal still leaves 150 ms of the lease in hand. Each renewal is a message each way for every chunkserver, and an idle chunkserver's processor goes mostly on them: at 100 ms it spent a third of a percent of a core, at 150 ms a fifth (docs/benchmarks.md)."),
		settings.Field("HEARTBEAT_UDP", &c.Node.Datagrams,
			"1: every heartbeat also goes out as a UDP datagram from MATOCS_LISTEN_PORT/udp, and acknowledgements are taken there, authenticated with a key each vote session opens on TCP; whichever copy arrives first counts. Under packet loss a TCP stream waits behind each lost segment for 200 ms or more, longer than a lease renews, so a LEADER on a lossy link was deposed though alive; a datagram is lost alone (docs/architecture.md, \"Loss is not death\"). 0: TCP alone. Open MATOCS_LISTEN_PORT/udp to the chunkservers."),
		settings.Ranged("HEARTBEAT_VOTERS", &core.HeartbeatVoters, r.HeartbeatVoters.Min, r.HeartbeatVoters.Max,
			"The vote sessions one HEARTBEAT_INTERVAL serves. With more, the interval grows in proportion (1,000 sessions: 200 ms at the defaults; at most HEARTBEAT_INTERVAL + 2 x VOTE_LEASE, 1.15 s from 5,750 on) and VOTE_LEASE by 1.5 times what the interval gained (575 ms; 2 s), so that a round costs the LEADER the same per second at any size and the silence a lease bears grows with the time a round takes; a frozen LEADER is then replaced about lease - interval/2 after it froze. 0 = never grow."),
		settings.Ranged("MAX_PENDING", &core.MaxPending, r.MaxPending.Min, r.MaxPending.Max,
			"The most client operations (changes and reads) the LEADER holds waiting for their acknowledgement. One more is answered BUSY at once, not applied, and pkg/client asks the same master again after a jittered back-off; so the LEADER's memory stays bounded whatever the number of clients (each waiting change holds its key and value until it is applied: at most 4,096 x 256 KiB at the default, far less with the usual small values). The default is four operations for each of 1,024 clients waiting at once. 0 = no bound."),
		settings.Ranged("MAX_CLOCK_DRIFT", &core.MaxClockDrift, r.MaxClockDrift.Min, r.MaxClockDrift.Max,
			"Bound on how far any clock's rate may stray from true time (0.01 = 1%, ten times a poor crystal). Leases are shortened by it; nothing measures it."),
		settings.Ranged("LEASE_MARGIN", &core.LeaseMargin, r.LeaseMargin.Min, r.LeaseMargin.Max,
			"Given up at the end of every counted lease, for the gap between reading the clock and acting on it."),
		settings.Ranged("PEER_INTERVAL", &core.PeerInterval, r.PeerInterval.Min, r.PeerInterval.Max,
			"Status and changelog pushes between masters: followers learn of new changes within one."),
		settings.Ranged("PEER_TIMEOUT", &core.PeerTimeout, r.PeerTimeout.Min, r.PeerTimeout.Max,
			"A master not heard from this long is treated as gone for sync state and redirects (never for safety). At least two PEER_INTERVALs; the default is five missed pushes."),
		settings.Ranged("SELF_NOMINATE_AFTER", &core.SelfNominateAfter, r.SelfNominateAfter.Min, r.SelfNominateAfter.Max,
			"A master nominates itself when no chunkserver has nominated anybody this long: the fallback for an instance with no chunkserver to nominate. Where voters exist they choose (docs/roles.md §6.3), and 5s leaves them room after a whole cluster restarts: voters that crashed keep quiet for MAX_PROMISE (2s), and the turns of a few dozen take about 2s more at 60ms a slot. The wait shows only at a new cluster's first election."),
		settings.Ranged("ELECT_TIMEOUT", &core.ElectTimeout, r.ElectTimeout.Min, r.ElectTimeout.Max,
			"An ELECT that has held no vote this long goes back to FOLLOWER so the next nomination turn can pick another. At least VOTE_LEASE; the default is longer than a lease plus a full nomination rotation, so a live ELECT is never abandoned while voters are still arriving."),
		settings.Ranged("HANDOVER_TIMEOUT", &core.HandoverTimeout, r.HandoverTimeout.Min, r.HandoverTimeout.Max,
			"How long a LEADER pauses writes for a USURPER (or a step-down target) to catch up before it resumes. A synced USURPER needs one push; the default bounds the pause if it never catches up."),
		settings.Ranged("SNAPSHOT_CHANGES", &core.SnapshotEvery, r.SnapshotEvery.Min, r.SnapshotEvery.Max,
			"After this many applied changes the master writes its namespace to DATA_PATH/snapshot.mfs, in the background, and may then trim the changelog below it (MooseFS saves metadata by time: METADATA_SAVE_FREQ). A snapshot costs a copy of the namespace: the default keeps that a small share of the work, and a restart replays at most this many entries. 0 = never: no snapshot, the changelog is never trimmed."),
		settings.Ranged("CHANGELOG_RETAIN", &core.LogRetain, r.LogRetain.Min, r.LogRetain.Max,
			"At most this many changelog entries are kept below the snapshot for a master that is down or far behind (MooseFS keeps BACK_LOGS changelog files); entries every master has a snapshot past are trimmed sooner. A master further behind is sent the LEADER's snapshot instead of entries; with the default, one restarted after a few minutes of heavy writing still catches up from entries."),
		settings.Ranged("ACK_REPLICAS", &core.AckReplicas, r.AckReplicas.Min, r.AckReplicas.Max,
			"How many other eligible masters must hold a change durably before it is acknowledged. With a witness, its store stands in for the missing ones while fewer are present (docs/operations.md, \"One site lost: what is durable where\"); without one a change waits for them, unless ACK_ALONE is 1. A MASTER_HOST that names fewer other masters needs all of them (none: a one-master cluster, which acknowledges on its own disk unless a witness is configured). The default, one, keeps every acknowledged change through the loss of the LEADER's disk."),
		settings.Field("ACK_ALONE", &core.AckAlone,
			"1: when neither ACK_REPLICAS other masters nor the witness's store hold a change, acknowledge it with the masters heard within PEER_TIMEOUT, on this master's disk alone if none: writes go on, and a loss of this disk then loses acknowledged changes (the ack_durability alarm says so while it lasts). 0 (the default): such a change waits until a follower master or the store holds it; writes stall while the other masters are all gone and no witness is set, and nothing acknowledged ever rests on one disk."),
	}, witnessKeyTable(c)...)
}

// witnessKeyTable is the WITNESS_* keys (docs/operations.md, the witness;
// docs/architecture.md §7.4). None is changed by a reload: restart to
// change them. The lease's bounds are the ones witness.Config.Validate and
// master.Config.Validate check.
func witnessKeyTable(c *config) []settings.Key {
	w := &c.Node.Core.Witness
	return []settings.Key{
		settings.Field("WITNESS_ENDPOINT", &c.Witness.Endpoint,
			"URL of the S3-compatible object store that holds the witness (http:// or https://, e.g. http://10.0.3.5:7070): one lease object whose holder breaks an even split of the locations, so that with two sites the one that takes the lease may lead alone. Put the store at a third site, reachable from every master, and set the same store on every master; then name it in the registry with mfscli -CWITNESS/on. The master uses the store only once it passed its self-test (at start, and every 30 s while it fails: logged, and shown by mfscli). Empty: no store on this master; where the registry names a witness it then wins only with a strict majority of the locations. Restart to change any WITNESS_* key."),
		settings.Field("WITNESS_BUCKET", &c.Witness.Bucket,
			"The bucket that holds the lease object; required with WITNESS_ENDPOINT. It must exist: a missing one is no start error, the self-test reports it."),
		settings.Field("WITNESS_PREFIX", &c.Witness.Prefix,
			"The folder of the lease object (PREFIX/lease.json) and of the self-test's probes in the bucket. One prefix per cluster: the lease object names its cluster, and mfscli -CWITNESS/on refuses another cluster's, so clusters that share a bucket need a prefix each (mfs/cluster1, mfs/cluster2). Empty: the bucket's root."),
		settings.Field("WITNESS_REGION", &c.Witness.Region,
			"The region requests are signed for (SigV4). AWS S3 wants the bucket's region; most other S3-compatible stores (versitygw, MinIO, Ceph) take any and default to us-east-1."),
		settings.Field("WITNESS_CREDENTIALS", &c.Witness.Credentials,
			"A file holding the store's access key and secret key, separated by a space or a newline (lines starting with # are skipped), readable by this daemon's user only: a file its group or other users may read or write is refused (chmod 600), since whoever holds the keys can write the lease object. Empty: the daemon's environment, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. The secret is never printed or logged."),
		settings.Ranged("WITNESS_LEASE", &w.Lease.Lease, time.Second, 10*time.Minute,
			"How long a master watches another's held lease record unchanged before it takes it: the longest a crashed holder keeps anyone from breaking a tie (a record its holder set free is taken at once). The holder counts the lease for this x (1-MAX_CLOCK_DRIFT)/(1+MAX_CLOCK_DRIFT) less 50 ms from when it sent the write that took it, so no two masters ever count it at once, whatever their clocks read. 10 s leaves several renewals and call timeouts inside one lease and is short next to a site's failover."),
		settings.Ranged("WITNESS_RENEW", &w.Lease.RenewEvery, 10*time.Millisecond, 10*time.Minute,
			"While it needs the lease, the holder writes its record again this long after its last write. With two WITNESS_CALL_TIMEOUTs it must stay below the lease counted from a write (checked at start): a quarter of the lease lets a renewal fail and the next still land in time. A healthy cluster never calls the store: the lease is needed only while a strict majority of the locations is out of reach."),
		settings.Ranged("WITNESS_CALL_TIMEOUT", &w.Lease.CallTimeout, 10*time.Millisecond, time.Minute,
			"Deadline of each call on the store (a read or a conditional write), with no retry inside it; one not answered within twice this is taken as ambiguous (it may have landed) and read back. Well below the lease: WITNESS_RENEW + 2 x this must stay below the lease counted from a write. A conditional write of a small object takes milliseconds on a LAN and tens of milliseconds on a public cloud."),
		settings.Ranged("WITNESS_DELAY", &w.Delay, 0, time.Minute,
			"An ELECT that carries exactly half of the locations waits this long for more votes before it asks for the witness's lease: in a healthy election the other half's votes come within it and the store is not called. Two heartbeat intervals at the defaults."),
		settings.Field("WITNESS_LOG", &w.Log,
			"1 (the default): while fewer than ACK_REPLICAS other masters are present, the witness's store holds the changes they lack before they are acknowledged, and a master that lost them takes them back from it (docs/operations.md, \"One site lost: what is durable where\"). 0: the witness only breaks ties; such changes wait, or with ACK_ALONE rest on this master's disk alone."),
		settings.Ranged("WITNESS_LOG_OBJECTS", &w.LogObjects, 0, 4096,
			"The most change objects the witness's store log may hold (one per group commit while fewer than ACK_REPLICAS followers are present; the newest small ones are merged as they come). At half of it the LEADER writes its snapshot to the store and restarts the log there, deleting the older objects; at the bound the store stands in for no more changes until that is done or the followers are back: they wait (or, with ACK_ALONE, rest on this disk). 0: the format's own bound, 4096."),
		settings.Ranged("WITNESS_LOG_BYTES", &w.LogBytes, 0, uint64(1)<<40,
			"The most bytes the witness's store log may hold, its snapshot included, with the same effects at half and at the bound as WITNESS_LOG_OBJECTS (the changes' objects count for the half). The default, 1 GiB, holds about a million small changes; it must exceed the namespace's snapshot (snapshot.mfs) by a good margin, or the store cannot stand in once the log restarts at a snapshot. 0: no bound."),
		settings.Ranged("WITNESS_LOG_AGE", &w.LogAge, 0, 365*24*time.Hour,
			"How old the oldest object of the witness's store log may grow before the store_behind alarm says that acknowledged changes have rested on the store that long: bring the follower masters back. Nothing is refused at this bound: refusing would stop writes and make nothing more durable. 0: never."),
	}
}
