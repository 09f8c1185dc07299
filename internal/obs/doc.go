// Package obs is the observability surface of mfsmaster and mfschunkserver:
// the logger, the Prometheus metrics and the HTTP endpoint serving them.
//
// Contract:
//   - Logs are JSON lines (or a human console format when writing to a
//     terminal). Every line carries "time" (RFC 3339, UTC, microseconds),
//     "level" and "daemon". Callers use the Field* constants as keys so that
//     the same fact has the same name in both daemons.
//   - Metrics live in a registry the caller creates (NewRegistry) and passes
//     in; nothing touches prometheus.DefaultRegisterer. Gauges are state,
//     pushed as a whole snapshot with Set (the role gauges: see below);
//     counters and the histogram are events. Label sets are bounded: role and sync state by their fixed
//     names, locations by the configured topology (stale ones are deleted),
//     chunkserver masters by MASTER_HOST, refusal port/reason by fixed lists.
//   - Serve exposes GET /metrics, GET /healthz (200 when healthy, 503
//     otherwise, with the health text as body) and GET /livez (200 while
//     the process answers) on a listener the caller owns and stops with
//     (*http.Server).Shutdown.
//   - Whatever says a master is LEADER (mfs_master_role and the gauges
//     beside it, /healthz) is built at the instant of the request, from a
//     source the caller sets (MasterMetrics.RoleFrom, Serve's health), never
//     from a copy kept since some earlier instant: a LEADER frozen past its
//     lease must not say LEADER when it resumes.
//
// All methods are safe for concurrent use.
package obs
