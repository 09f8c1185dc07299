package masternode

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage samples the process's resident memory and CPU use for the
// listings. CPU is the share of one core used between two samples at
// least a second apart (the last such figure is kept in between).
type usage struct {
	at  time.Time
	cpu time.Duration
	pct float64
}

func (u *usage) sample() (rss uint64, cpuPct float64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		now := time.Now()
		if u.at.IsZero() {
			u.at, u.cpu = now, cpu
		} else if d := now.Sub(u.at); d >= time.Second {
			u.pct = 100 * float64(cpu-u.cpu) / float64(d)
			u.at, u.cpu = now, cpu
		}
	}
	return residentBytes(), u.pct
}

// residentBytes reads VmRSS from /proc (0 where there is none).
func residentBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fs := strings.Fields(rest)
			if len(fs) >= 1 {
				kb, err := strconv.ParseUint(fs[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
