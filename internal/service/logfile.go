package service

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// logFileEnv names, for a daemon started in the background by start, the
// log file its stdout and stderr were opened on: on SIGHUP (reload) it
// opens the path again and puts the new file under both, so that a log
// moved aside by logrotate (or by hand) is let go and a new one begun, as
// MooseFS's and most daemons' logs are rotated: `postrotate ... reload`.
const logFileEnv = "MFS_LOG_FILE"

// ReopenLog opens the log file named by MFS_LOG_FILE again, as start
// opened it (append, 0600, never through a symbolic link), and puts it
// under stdout and stderr. It does nothing for a daemon run in the
// foreground (no MFS_LOG_FILE: its output goes where its parent said,
// the journal under systemd). reopened is false then.
func ReopenLog() (reopened bool, path string, err error) {
	path = os.Getenv(logFileEnv)
	if path == "" {
		return false, "", nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return false, path, fmt.Errorf("log file %s: reopening it: %w (logging goes on to the file open before)", path, err)
	}
	defer f.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup2(int(f.Fd()), fd); err != nil {
			return false, path, fmt.Errorf("log file %s: reopening it: %w", path, err)
		}
	}
	return true, path, nil
}
