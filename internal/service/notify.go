package service

import (
	"fmt"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Pinger is a daemon whose loop can prove it runs: Ping returns once the
// loop has taken a no-op input, or an error after timeout. The systemd
// watchdog is fed only on that proof, so that a loop stuck on a disk or in
// a bug gets the daemon restarted, rather than a side goroutine keeping
// it alive.
type Pinger interface {
	Ping(timeout time.Duration) error
}

// notify tells systemd (Type=notify units: NOTIFY_SOCKET set) a state:
// daemon.SdNotifyReady, SdNotifyReloading, SdNotifyStopping, or a STATUS=
// line. Outside systemd, or with start, it does nothing.
func notify(log zerolog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn().Err(err).Str("state", state).Msg("could not notify systemd")
	}
}

// reloading is RELOADING=1 with the CLOCK_MONOTONIC reading systemd asks
// to come with it (sd_notify(3)), so that a reload is matched with its
// READY=1.
func reloading() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return daemon.SdNotifyReloading
	}
	return fmt.Sprintf("%s\nMONOTONIC_USEC=%d", daemon.SdNotifyReloading, ts.Nano()/1000)
}

// watchdog feeds systemd's watchdog (WatchdogSec=) every third of its
// interval while d's loop answers a ping within that third; it ends with
// stop. Without a watchdog, or a daemon that cannot be pinged, it does
// nothing.
func watchdog(d Daemon, log zerolog.Logger, stop <-chan struct{}) {
	every, err := daemon.SdWatchdogEnabled(false)
	p, ok := d.(Pinger)
	if err != nil || every <= 0 || !ok {
		return
	}
	every /= 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := p.Ping(every); err != nil {
				log.Error().Err(err).Dur("within", every).Msg("the loop did not answer the watchdog's ping: systemd is not told it is alive, and restarts the daemon when WatchdogSec passes")
				continue
			}
			notify(log, daemon.SdNotifyWatchdog)
		}
	}
}
