package node

import (
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/rs/zerolog"
)

// MASTER_HOST as both daemons resolve it while they run
// (docs/architecture.md §5.3): again every MASTER_RESOLVE_INTERVAL, and
// whenever asked (SIGHUP, mfscli -CMR on a master).

// HostSpec is MASTER_HOST as a node resolves it: the value now (a reload
// may change it) and the asks to resolve it at once, read by ResolveLoop.
type HostSpec struct {
	spec atomic.Pointer[string]
	now  chan struct{}
}

// NewHostSpec is spec in force, with no resolution asked for.
func NewHostSpec(spec string) *HostSpec {
	h := &HostSpec{now: make(chan struct{}, 1)}
	h.spec.Store(&spec)
	return h
}

// Get is the value in force.
func (h *HostSpec) Get() string { return *h.spec.Load() }

// Set puts a new value in force and asks for it to be resolved.
func (h *HostSpec) Set(spec string) {
	h.spec.Store(&spec)
	h.Ask()
}

// Ask asks for a resolution now; it does not wait.
func (h *HostSpec) Ask() {
	select {
	case h.now <- struct{}{}:
	default: // one is asked for already
	}
}

// ResolveLoop resolves host every `every` (0: only when asked) and
// whenever asked, and hands each list to deliver until done closes or
// deliver says stop. A resolution that fails keeps the set as it is
// (logged): a DNS outage must not empty the cluster.
func ResolveLoop(log zerolog.Logger, host *HostSpec, hostsFile string, port uint16, every time.Duration,
	done <-chan struct{}, deliver func([]masterhost.Master) bool) {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	r := masterhost.Resolver{HostsFile: hostsFile}
	for {
		select {
		case <-done:
			return
		case <-tick:
		case <-host.now:
		}
		list, err := r.Resolve(host.Get(), port)
		if err != nil {
			log.Error().Err(err).Msg("MASTER_HOST not resolved: the set of masters stays as it was")
			continue
		}
		if !deliver(list) {
			return
		}
	}
}
