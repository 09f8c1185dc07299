//go:build unix

package masternode

import "syscall"

// raiseFileLimit raises RLIMIT_NOFILE to need where it is lower: the soft
// limit up to the hard one, and the hard one too where the process may
// (root, or CAP_SYS_RESOURCE). It returns the soft limit in force after.
// (Go already raises the soft limit to the hard one at start.)
func raiseFileLimit(need uint64) uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	if l.Cur >= need {
		return l.Cur
	}
	want := syscall.Rlimit{Cur: need, Max: max(l.Max, need)}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		want = syscall.Rlimit{Cur: min(need, l.Max), Max: l.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
			return l.Cur
		}
	}
	return want.Cur
}
