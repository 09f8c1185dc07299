package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	locs "github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The voter swarm (internal/cluster/swarm, built as mfsswarm): one process
// running many real chunkserver drivers, each voter leaving from its own
// loopback address. Voter i is in address range l = i % L, the k-th voter
// of that range (k = i / L) at 127.(B+l).(k/250).(k%250+1): up to 64,000
// voters a range, and the masters' --location map is SwarmLocations.

// MaxSwarmLocations bounds L, the swarm's address ranges. The masters tell
// at most locations.MaxLocations apart, the default location among them:
// SwarmLocations names the first 7 ranges, and the rest fall in the
// default location.
const MaxSwarmLocations = 16

// SwarmLocations is the location map of a swarm at base B with L address
// ranges: dc1 .. dcL (named like Local's) over 127.(B+l).0.0/16, at most 7
// of them (locations.MaxLocations with the default): with L = 8 the 8th
// range is the default location, and so are any after it.
func SwarmLocations(base uint8, locations int) map[string]netip.Prefix {
	out := map[string]netip.Prefix{}
	for l := 0; l < min(locations, locs.MaxLocations-1); l++ {
		out["dc"+strconv.Itoa(l+1)] = netip.PrefixFrom(netip.AddrFrom4([4]byte{127, base + uint8(l), 0, 0}), 16)
	}
	return out
}

// SwarmAddr is the source address of voter i of a swarm at base B with L
// locations.
func SwarmAddr(base uint8, locations, i int) netip.Addr {
	l, k := i%locations, i/locations
	return netip.AddrFrom4([4]byte{127, base + uint8(l), uint8(k / 250), uint8(k%250 + 1)})
}

// SwarmMembers is the registry of a swarm of n voters whose identities
// were handed out before it started (mfsswarm -cluster): voter i holds id
// i+1 at SwarmAddr(base, L, i) and the port given, voter-only. Give it to
// the masters as Spec.Members.
func SwarmMembers(base uint8, locations, n int, port uint16) []registry.Chunkserver {
	out := make([]registry.Chunkserver, n)
	for i := range out {
		out[i] = registry.Chunkserver{ID: wire.CSID(i + 1), Addr: SwarmAddr(base, locations, i), Port: port, VoterOnly: true}
	}
	return out
}

// CheckSwarm reports what is wrong with a swarm of n voters in L locations
// at base B (nil when nothing is).
func CheckSwarm(base uint8, locations, n int) error {
	var bad []string
	if locations < 1 || locations > MaxSwarmLocations {
		bad = append(bad, fmt.Sprintf("locations %d: 1 to %d", locations, MaxSwarmLocations))
	}
	if n < 1 || (locations >= 1 && n > locations*250*256) {
		bad = append(bad, fmt.Sprintf("voters %d: 1 to 64000 a location", n))
	}
	if int(base)+locations > 256 || base == 0 {
		bad = append(bad, fmt.Sprintf("base %d: 1 to %d with %d locations (127.B.0.0/16 .. 127.(B+L-1).0.0/16)", base, 256-locations, locations))
	}
	if len(bad) > 0 {
		return fmt.Errorf("swarm: %s", strings.Join(bad, "; "))
	}
	return nil
}

// SwarmFileSlack is the descriptors an mfsswarm process keeps for itself
// beyond its voters' links.
const SwarmFileSlack = 1024

// SwarmFiles is the RLIMIT_NOFILE an mfsswarm process of n voters and
// masters masters raises itself to: a descriptor a link, one more a
// voter, and the slack.
func SwarmFiles(n, masters int) int { return n*(masters+1) + SwarmFileSlack }

// SwarmPerProcess is how many voters of masters masters one mfsswarm
// process started from this one can hold within the hard RLIMIT_NOFILE it
// inherits (a process without CAP_SYS_RESOURCE cannot raise it).
func SwarmPerProcess(masters int) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max > 1<<30 {
		return 1 << 20
	}
	return max((int(lim.Max)-SwarmFileSlack)/(masters+1), 1)
}

// SwarmStatus is what mfsswarm's status endpoint answers (JSON).
type SwarmStatus struct {
	Voters     int `json:"voters"`     // -n
	Started    int `json:"started"`    // voters whose driver runs
	Registered int `json:"registered"` // voters with an id (their voter runs)
	Connected  int `json:"connected"`  // voters with every master's link up
	// Masters, in MASTER_HOST order (sorted by id, as masterhost.Resolve
	// gives them).
	Masters []SwarmMaster `json:"masters"`
}

// Add sums two processes' statuses of one swarm.
func (s SwarmStatus) Add(o SwarmStatus) SwarmStatus {
	s.Voters += o.Voters
	s.Started += o.Started
	s.Registered += o.Registered
	s.Connected += o.Connected
	if len(s.Masters) == 0 {
		s.Masters = append([]SwarmMaster(nil), o.Masters...)
		return s
	}
	for i := range s.Masters {
		if i < len(o.Masters) {
			s.Masters[i].LinksUp += o.Masters[i].LinksUp
			s.Masters[i].Votes += o.Masters[i].Votes
			s.Masters[i].Promises += o.Masters[i].Promises
		}
	}
	return s
}

// SwarmMaster is one master as the swarm sees it.
type SwarmMaster struct {
	Addr     string `json:"addr"`     // its chunkserver port
	LinksUp  int    `json:"links_up"` // voters connected to it
	Votes    int    `json:"votes"`    // voters whose vote is for it
	Promises int    `json:"promises"` // voters whose standing promise binds them to it
}

// AllUp reports that every voter of the swarm runs with every link up.
func (s SwarmStatus) AllUp() bool {
	return s.Voters > 0 && s.Started == s.Voters && s.Connected == s.Voters
}

// SwarmSpec is one mfsswarm process.
type SwarmSpec struct {
	Dir       string // its log goes there
	Bin       string // holds mfsswarm
	Masters   []netip.Addr
	First     int // the index of its first voter (-first)
	Voters    int
	Locations int
	Base      uint8
	Status    netip.AddrPort // the status endpoint
	AuthCode  string
	// ClusterID, when set, starts every voter registered in that cluster
	// (-cluster: the masters hold SwarmMembers(Base, Locations, Voters,
	// 9422) as Spec.Members).
	ClusterID string
	Args      []string // more flags
}

// Swarm is a running mfsswarm.
type Swarm struct {
	*Proc
	Spec SwarmSpec
	hc   *http.Client
}

// StartSwarm starts an mfsswarm process; it does not wait for the voters.
func StartSwarm(s SwarmSpec) (*Swarm, error) {
	if err := CheckSwarm(s.Base, s.Locations, s.First+s.Voters); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	var ms []string
	for _, a := range s.Masters {
		ms = append(ms, netip.AddrPortFrom(a, 9420).String())
	}
	args := []string{"-masters", strings.Join(ms, ","), "-first", strconv.Itoa(s.First), "-n", strconv.Itoa(s.Voters), "-locations", strconv.Itoa(s.Locations),
		"-base", strconv.Itoa(int(s.Base)), "-status", s.Status.String()}
	if s.AuthCode != "" {
		args = append(args, "-auth", s.AuthCode)
	}
	if s.ClusterID != "" {
		args = append(args, "-cluster", s.ClusterID)
	}
	args = append(args, s.Args...)
	name := "swarm"
	if s.First > 0 {
		name = fmt.Sprintf("swarm-%d", s.First)
	}
	p := &Proc{Name: name, Addr: s.Status.Addr(), Log: filepath.Join(s.Dir, name+".log"), bin: filepath.Join(s.Bin, "mfsswarm"), args: args}
	if err := p.Start(); err != nil {
		return nil, err
	}
	// Generous: a swarm busy with thousands of voters schedules its status
	// handler late.
	return &Swarm{Proc: p, Spec: s, hc: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Status asks the swarm's status endpoint.
func (w *Swarm) Status() (SwarmStatus, error) {
	var st SwarmStatus
	resp, err := w.hc.Get("http://" + w.Spec.Status.String() + "/")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("swarm status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// WaitSwarm polls the swarm's status every poll until ok holds of it, for
// at most within; it returns the last status seen.
func (w *Swarm) WaitSwarm(within, poll time.Duration, what string, ok func(SwarmStatus) bool) (SwarmStatus, error) {
	return Swarms{w}.WaitSwarm(within, poll, what, ok)
}

// Swarms are the processes of one swarm (each holding the voters its
// RLIMIT_NOFILE allows: SwarmPerProcess).
type Swarms []*Swarm

// StartSwarms starts s's voters in processes of at most per voters each,
// the j-th with its status endpoint on s.Status's port + j.
func StartSwarms(s SwarmSpec, per int) (Swarms, error) {
	var out Swarms
	for first := 0; first < s.Voters; first += per {
		one := s
		one.First, one.Voters = s.First+first, min(per, s.Voters-first)
		one.Status = netip.AddrPortFrom(s.Status.Addr(), s.Status.Port()+uint16(len(out)))
		w, err := StartSwarm(one)
		if err != nil {
			out.Term(5 * time.Second)
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Status sums every process's status.
func (ws Swarms) Status() (SwarmStatus, error) {
	var sum SwarmStatus
	for _, w := range ws {
		st, err := w.Status()
		if err != nil {
			return sum, fmt.Errorf("%s: %w", w.Name, err)
		}
		sum = sum.Add(st)
	}
	return sum, nil
}

// Signal sends sig to every process.
func (ws Swarms) Signal(sig syscall.Signal) error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Signal(sig))
	}
	return errors.Join(errs...)
}

// Term stops every process in order (SIGTERM), at once, killing after d.
func (ws Swarms) Term(d time.Duration) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.Term(d) }()
	}
	wg.Wait()
}

// Running reports whether every process runs.
func (ws Swarms) Running() bool {
	for _, w := range ws {
		if !w.Running() {
			return false
		}
	}
	return len(ws) > 0
}

// Pids are the processes' ids.
func (ws Swarms) Pids() []int {
	var out []int
	for _, w := range ws {
		out = append(out, w.Pid())
	}
	return out
}

// WaitSwarm polls the swarm's status every poll until ok holds of it, for
// at most within; it returns the last status seen.
func (ws Swarms) WaitSwarm(within, poll time.Duration, what string, ok func(SwarmStatus) bool) (SwarmStatus, error) {
	end := time.Now().Add(within)
	var st, seen SwarmStatus // the last status asked, the last one answered
	var err error
	for {
		st, err = ws.Status()
		if err == nil && ok(st) {
			return st, nil
		}
		if err == nil {
			seen = st
		}
		if !ws.Running() {
			return st, fmt.Errorf("a swarm process exited while waiting for %s (see %s)", what, ws[0].Spec.Dir)
		}
		if time.Now().After(end) {
			if err == nil {
				err = fmt.Errorf("last status %+v", st)
			} else if seen.Voters > 0 {
				err = fmt.Errorf("%w (the last status answered: %+v)", err, seen)
			}
			return seen, fmt.Errorf("swarm: %s not within %v: %w", what, within, err)
		}
		time.Sleep(poll)
	}
}
