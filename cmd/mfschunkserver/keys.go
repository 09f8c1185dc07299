package main

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/csnode"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
)

// config is what mfschunkserver.cfg and the flags set: the driver's
// options (the voter's voter.Config among them) and what only this
// command uses. Each field is set by the one key bound to it in keys.
type config struct {
	Node       csnode.ChunkserverOptions
	DataPath   string
	MasterHost string
	MasterPort int
	BindHost   string
	// The data port (CSSERV) and the HTTP endpoint.
	CSServ, HTTP listen
	Pprof        string // PPROF_LISTEN: "" = off
	HDDConf      string
	Insecure     bool
	LogLevel     string
	LogFormat    string
}

// listen is a *_LISTEN_HOST and *_LISTEN_PORT pair.
type listen struct {
	Host string
	Port int
}

// addr is the pair as net.Listen takes it ("*" = every address).
func (l listen) addr() string { return node.ListenAddr(l.Host, l.Port) }

// defaults is the config before any file or flag: the voter's
// voter.DefaultConfig and this command's own. Why each value is what
// it is, is in its key's Usage.
func defaults() config {
	return config{
		Node: csnode.ChunkserverOptions{
			// The id, address, port and masters are the driver's to fill in.
			Voter:           voter.DefaultConfig(0, netip.Addr{}, nil),
			ReconnectDelay:  5 * time.Second,
			TrustRefused:    true,
			Datagrams:       true,
			ResolveInterval: 30 * time.Second, // as the masters' (mfsmaster.cfg)
			RecordVerify:    5 * time.Minute,
		},
		DataPath:   "/var/lib/mfs",
		MasterHost: "mfsmaster",
		MasterPort: 9420,
		CSServ:     listen{"*", 9422},
		HDDConf:    "/etc/mfs/mfshdd.cfg",
		HTTP:       listen{"*", 9426},
		LogLevel:   "info",
		LogFormat:  "auto",
	}
}

// spec is every mfschunkserver.cfg key: the example file
// etc/mfschunkserver.cfg, the long flags, --help and docs/operations.md
// come from it.
var spec = settings.Spec[config]{Daemon: "mfschunkserver", Defaults: defaults, Keys: keys, Rules: rules}

// keys binds each mfschunkserver.cfg key to its field of c. A key's default
// is that field's value in defaults; the range of a voter field is the
// voter's own (voter.Config.Ranges, which Validate checks too); the
// Usage says what the key does and why its default, once. Live marks the
// keys a reload applies at once (applyLive).
func keys(c *config) []settings.Key {
	voter := &c.Node.Voter
	r := voter.Ranges()
	return []settings.Key{
		settings.Field("DATA_PATH", &c.DataPath,
			"Where the chunkserver keeps its identity and vote record (chunkserver.mfs) and its lock file."),
		settings.Field("MASTER_HOST", &c.MasterHost,
			"Every master: a DNS name whose A records are all the masters, or a comma-separated list of addresses with optional :port (the chunkserver port). The same masters as the masters' own MASTER_HOST. Resolved again every MASTER_RESOLVE_INTERVAL and on reload, where a new value takes effect too: masters added or removed are taken in without a restart.").Live(),
		settings.Ranged("MASTER_RESOLVE_INTERVAL", &c.Node.ResolveInterval, 0, 24*time.Hour,
			"How often MASTER_HOST is resolved again (also on SIGHUP: mfschunkserver reload). 0: only then. A resolution that fails keeps the masters as they were."),
		settings.Field("MASTER_HOSTS_FILE", &c.Node.HostsFile,
			"A hosts(5)-style file (ADDRESS NAME... lines) read at every resolution of MASTER_HOST and consulted before DNS. Empty: DNS and /etc/hosts as the system resolves them."),
		settings.Ranged("MASTER_PORT", &c.MasterPort, 1, 65535, "The masters' chunkserver port (MooseFS: 9420)."),
		settings.Field("BIND_HOST", &c.BindHost,
			"Address the connections to masters leave from. It decides the chunkserver's location and identity. Empty: the address the kernel picks towards the first master, chosen once at start and used for every master (never a pick per connection)."),
		settings.Field("CSSERV_LISTEN_HOST", &c.CSServ.Host, "Address of the data port."),
		settings.Ranged("CSSERV_LISTEN_PORT", &c.CSServ.Port, 0, 65535,
			"The data port (MooseFS: 9422). Address and port are the chunkserver's identity in the registry, as in MooseFS."),
		settings.Field("HDD_CONF_FILENAME", &c.HDDConf,
			"File listing the disks, one path per line. Empty or absent: a voter-only chunkserver, which votes exactly like the others and stores nothing."),
		settings.Field("LABELS", &c.Node.Labels, "Labels of this chunkserver: letters A-Z, comma-separated."),
		settings.Field("AUTH_CODE", &c.Node.AuthCode,
			"The masters' AUTH_CODE (at least 16 characters), proved by challenge-response; without it a master that requires one hears nothing from this chunkserver. Required unless BIND_HOST and every master are loopback, or INSECURE = 1."),
		settings.Field("INSECURE", &c.Insecure,
			"1: start without AUTH_CODE even though masters or BIND_HOST are off loopback (warned at every start). 0: such a chunkserver refuses to start without AUTH_CODE."),
		settings.Ranged("MASTER_RECONNECTION_DELAY", &c.Node.ReconnectDelay, 10*time.Millisecond, 10*time.Minute,
			"Longest wait between attempts to reach a master that is down (the first retry after a lost connection is immediate, then back-off doubles up to this)."),
		settings.Ranged("RECORD_VERIFY_INTERVAL", &c.Node.RecordVerify, 0, 24*time.Hour,
			"How often the voter record (DATA_PATH/chunkserver.mfs, 8 KiB) is read back from the disk, past the page cache, and compared with what was written: rot or a stray write is found, logged, counted and shown while the record in memory is still whole, and both copies are rewritten from it; a restart then never depends on a damaged copy. 0 = never (damage is then found only at the next start)."),
		settings.Field("LOG_LEVEL", &c.LogLevel, "debug, info, warn or error.").Live(),
		settings.Field("LOG_FORMAT", &c.LogFormat, "auto: readable lines on a terminal, JSON lines otherwise (a file, a pipe, the journal); json or console to choose."),
		settings.Field("HTTP_LISTEN_HOST", &c.HTTP.Host, "Address of the HTTP endpoint (/metrics, /healthz)."),
		settings.Ranged("HTTP_LISTEN_PORT", &c.HTTP.Port, 0, 65535, "Port of the HTTP endpoint."),
		settings.Field("PPROF_LISTEN", &c.Pprof,
			"Address (loopback HOST:PORT, e.g. 127.0.0.1:6060) where Go's profiles are served (go tool pprof http://ADDR/debug/pprof/profile): to find where this daemon's processor goes. Loopback only (reach it through ssh -L); a CPU profile costs a few percent while it runs. Empty: off."),
		settings.Ranged("MAX_PROMISE", &voter.MaxPromise, r.MaxPromise.Min, r.MaxPromise.Max,
			"The longest promise given to a master; at least every master's VOTE_LEASE (a master asking more gets only this much, and counts only what it got), hence VOTE_LEASE's range. A chunkserver that may still hold a promise when it starts (killed, crashed, power cut) keeps quiet this long; one stopped in order, or that never promised, votes at once. An orderly stop waits at most this long (+0.5s) for its promise to end."),
		settings.Ranged("PROBE_INTERVAL", &voter.ProbeInterval, r.ProbeInterval.Min, r.ProbeInterval.Max,
			"How often a chunkserver without a LEADER asks every master for its role: several probes per nomination slot keep its view fresh."),
		settings.Ranged("PROBE_VOTERS", &voter.ProbeVoters, r.ProbeVoters.Min, r.ProbeVoters.Max,
			"In a registry of more chunkservers than this, each probes that many times less often (1,000: every second; 10,000: every 10 s; at most 400 times), so that thousands looking for a LEADER at once do not swamp the masters; a master that becomes ELECT or LEADER tells every connected chunkserver at once, unasked, a connection that comes up is probed at once, and a chunkserver probes just before its nomination turn. 0 = never slower."),
		settings.Ranged("NOMINATE_SLOT", &voter.NominateSlot, r.NominateSlot.Min, r.NominateSlot.Max,
			"Gap between nomination turns: longer than a probe round trip, so the next in turn sees the ELECT its predecessor made."),
		settings.Field("HEARTBEAT_UDP", &c.Node.Datagrams,
			"1: each vote session opens a UDP path beside its connection, from the CSSERV_LISTEN_PORT/udp (another port when that one is taken), and heartbeats and their acknowledgements travel both ways, authenticated with a key drawn for the session; whichever copy arrives first counts. Under packet loss a TCP stream waits behind each lost segment for 200 ms or more, longer than a lease renews; a datagram is lost alone. 0: TCP alone. Let the masters' MATOCS_LISTEN_PORT/udp (9420) through to them and their datagrams back."),
		settings.Field("TRUST_REFUSED", &c.Node.TrustRefused,
			"1: a master's connection closed by its host (FIN or RST) and then a dial to it refused prove its process is gone, so the promise to it is released at once (the kill -9 fast path). Set 0 where a REJECT rule with tcp-reset stands between chunkservers and masters, or a master's address may move to another host while the old process lives."),
	}
}

// rules are the rules between (or on) keys that a value alone cannot
// check: reported with the keys' values and lines.
func rules(c *config) []settings.Rule {
	if why := obs.LogFormatRule(c.LogFormat); why != "" {
		return []settings.Rule{{Keys: []string{"LOG_FORMAT"}, Text: why}}
	}
	return nil
}
