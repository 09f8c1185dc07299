package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// What a process costs, from /proc (Linux).

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// procSample is one reading of a process's counters.
type procSample struct {
	at           time.Time
	cpu          time.Duration // utime + stime
	rchar, wchar uint64        // /proc/PID/io: bytes through read(2)/write(2) and the like, sockets included
}

func sampleProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name is in parentheses and may hold spaces: the fields
	// that follow start after the last ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// After the name: state(3) ... utime(14) stime(15), counted from 1.
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	s.cpu = time.Duration(ut+st) * clockTick
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(io), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			s.rchar = n
		case "wchar":
			s.wchar = n
		}
	}
	return s, nil
}

// cpuPct is the CPU used between two samples, in percent of one core.
func cpuPct(a, b procSample) float64 {
	return 100 * float64(b.cpu-a.cpu) / float64(b.at.Sub(a.at))
}

// ioRate is bytes read and written per second between two samples.
func ioRate(a, b procSample) float64 {
	return float64(b.rchar-a.rchar+b.wchar-a.wchar) / b.at.Sub(a.at).Seconds()
}

// rssOf is the process's resident memory (VmRSS) in bytes.
func rssOf(pid int) (uint64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseUint(f[0], 10, 64)
				return n << 10, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// metricsPort is a master's HTTP_LISTEN_PORT by default (cluster.Start
// sets HTTP_LISTEN_HOST to the master's address).
const metricsPort = 9425

// scrape reads a master's /metrics: every sample without labels, by name.
func scrape(a netip.Addr) (map[string]float64, error) {
	return scrapeAt(netip.AddrPortFrom(a, metricsPort))
}

// scrapeAt reads the unlabelled samples of the /metrics at ap.
func scrapeAt(ap netip.AddrPort) (map[string]float64, error) {
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + ap.String() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format's samples, each under its
// series as written (name, or name{labels} for a labelled one whose
// labels hold no space).
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out, sc.Err()
}

// machine describes where the bench runs: cores, CPU model, Go version,
// and the load average when it was asked (other work on the machine shows
// in every figure).
func machine() (cores int, model, load string) {
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(raw)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	return nproc(), model, load
}
