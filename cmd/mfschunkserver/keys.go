package main

import "github.com/mfs-election/mfs-election/internal/settings"

// spec is every mfschunkserver.cfg key: the example file
// etc/mfschunkserver.cfg, the long flags and docs/operations.md come from it.
var spec = settings.Spec{Daemon: "mfschunkserver", Keys: []settings.Key{
	{Name: "DATA_PATH", Kind: settings.String, Default: "/var/lib/mfs",
		Usage: "Where the chunkserver keeps its identity and vote record (chunkserver.mfs) and its lock file."},
	{Name: "MASTER_HOST", Kind: settings.String, Default: "mfsmaster",
		Usage: "Every master: a DNS name whose A records are all the masters, or a comma-separated list of addresses with optional :port (the chunkserver port). The same masters as the masters' own MASTER_HOST."},
	{Name: "MASTER_PORT", Kind: settings.Int, Default: "9420", Min: "1", Max: "65535", Usage: "The masters' chunkserver port (MooseFS: 9420)."},
	{Name: "BIND_HOST", Kind: settings.String, Default: "",
		Usage: "Address the connections to masters leave from. It decides the chunkserver's location and identity. Empty: the address the kernel picks towards the first master, chosen once at start and used for every master (never a pick per connection)."},
	{Name: "CSSERV_LISTEN_HOST", Kind: settings.String, Default: "*", Usage: "Address of the data port."},
	{Name: "CSSERV_LISTEN_PORT", Kind: settings.Int, Default: "9422", Min: "0", Max: "65535",
		Usage: "The data port (MooseFS: 9422). Address and port are the chunkserver's identity in the registry, as in MooseFS."},
	{Name: "HDD_CONF_FILENAME", Kind: settings.String, Default: "/etc/mfs/mfshdd.cfg",
		Usage: "File listing the disks, one path per line. Empty or absent: a voter-only chunkserver, which votes exactly like the others and stores nothing."},
	{Name: "LABELS", Kind: settings.String, Default: "", Usage: "Labels of this chunkserver: letters A-Z, comma-separated."},
	{Name: "AUTH_CODE", Kind: settings.String, Default: "",
		Usage: "The masters' AUTH_CODE (at least 16 characters), proved by challenge-response; without it a master that requires one hears nothing from this chunkserver. Required unless BIND_HOST and every master are loopback, or INSECURE = 1."},
	{Name: "INSECURE", Kind: settings.Bool, Default: "0",
		Usage: "1: start without AUTH_CODE even though masters or BIND_HOST are off loopback (warned at every start). 0: such a chunkserver refuses to start without AUTH_CODE."},
	{Name: "MASTER_RECONNECTION_DELAY", Kind: settings.Duration, Default: "5", Min: "10ms", Max: "10m",
		Usage: "Longest wait between attempts to reach a master that is down (the first retry after a lost connection is immediate, then back-off doubles up to this)."},
	{Name: "LOG_LEVEL", Kind: settings.String, Default: "info", Usage: "debug, info, warn or error."},
	{Name: "HTTP_LISTEN_HOST", Kind: settings.String, Default: "*", Usage: "Address of the HTTP endpoint (/metrics, /healthz)."},
	{Name: "HTTP_LISTEN_PORT", Kind: settings.Int, Default: "9426", Min: "0", Max: "65535", Usage: "Port of the HTTP endpoint."},
	{Name: "MAX_PROMISE", Kind: settings.Duration, Default: "2s", Min: "10ms", Max: "1m",
		Usage: "The longest promise given to a master; at least every master's VOTE_LEASE. A chunkserver that may still hold a promise when it starts (killed, crashed, power cut) keeps quiet this long; one stopped in order, or that never promised, votes at once. An orderly stop waits at most this long (+0.5s) for its promise to end."},
	{Name: "PROBE_INTERVAL", Kind: settings.Duration, Default: "50ms", Min: "1ms", Max: "10s",
		Usage: "How often a chunkserver without a LEADER asks every master for its role."},
	{Name: "NOMINATE_SLOT", Kind: settings.Duration, Default: "60ms", Min: "1ms", Max: "10s",
		Usage: "Gap between nomination turns: longer than a probe round trip, so the next in turn sees the ELECT its predecessor made."},
	{Name: "TRUST_REFUSED", Kind: settings.Bool, Default: "1",
		Usage: "1: a master's connection closed by its host (FIN or RST) and then a dial to it refused prove its process is gone, so the promise to it is released at once (the kill -9 fast path). Set 0 where a REJECT rule with tcp-reset stands between chunkservers and masters, or a master's address may move to another host while the old process lives."},
}}
