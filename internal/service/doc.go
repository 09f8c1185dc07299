// Package service holds the MooseFS daemon habits shared by mfsmaster and
// mfschunkserver (Unix only):
//
//   - A lock file in the data directory (e.g. DATA_PATH/.mfsmaster.lock),
//     held with flock for the daemon's life and holding its pid, so that two
//     daemons never share a data directory and "stop"/"reload" find the one
//     that runs. The kernel drops the flock when the process dies, so a stale
//     file never blocks a restart. The lock file is 0600 and never opened
//     through a symbolic link, a hard link or another user's file; the
//     data directory is refused when every user, or another user than the
//     daemon's (root excepted), can write to it, and a warning is printed
//     when its group can (CheckDataDir).
//   - The actions of "mfsmaster [start|stop|restart|reload|test]" (and "init",
//     which mfsmaster handles itself): Stop sends SIGTERM and waits, bounded,
//     for the lock to be free; Reload sends SIGHUP.
//   - Background: start re-executes the binary in the foreground ("-f") in a
//     new session with its output appended to a log file, and waits, bounded,
//     for it to report ready, showing the log's tail if it does not.
package service
