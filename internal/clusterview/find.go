package clusterview

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Answer is one master's reply to the status request (or why there is
// none).
type Answer struct {
	Addr netip.AddrPort
	St   protocol.StatusResp
	Err  error
}

// HostItems splits -H into the names or addresses it lists: separated by
// commas, spaces or both (MooseFS accepts a space-separated list, the
// daemons' MASTER_HOST a comma-separated one).
func HostItems(spec string) []string {
	return strings.FieldsFunc(spec, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n'
	})
}

// Resolve turns -H into the masters' client addresses: every A/AAAA record
// of every name, without duplicates, sorted. A name that does not resolve
// is reported and the others are still used.
func Resolve(spec string, port uint16) ([]netip.AddrPort, []error) {
	seen := map[netip.AddrPort]bool{}
	var out []netip.AddrPort
	var errs []error
	items := HostItems(spec)
	if len(items) == 0 {
		return nil, []error{fmt.Errorf("-H %q names no master", spec)}
	}
	for _, item := range items {
		list, err := masterhost.Resolve(item, port)
		if err != nil {
			if inner := errors.Unwrap(err); inner != nil {
				err = inner // the lookup's own words; masterhost.Resolve adds MASTER_HOST
			}
			errs = append(errs, fmt.Errorf("-H %s: %w", item, err))
			continue
		}
		for _, m := range list {
			if !seen[m.Addr] {
				seen[m.Addr] = true
				out = append(out, m.Addr)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Compare(out[j]) < 0 })
	return out, errs
}

// AskAll asks every master at once for its status with the newest
// protocol.DefaultHistory records of the election history; each answer
// waits at most timeout. That is what /api/v1/status asks: every page
// open polls it once a second and shows the newest 20 records, so the
// whole history (up to namespace.MaxHistory records, a few hundred KB
// from each master) would be asked for again every second to be dropped.
func AskAll(addrs []netip.AddrPort, timeout time.Duration) []Answer {
	return AskFor(addrs, Parts{}, timeout)
}

// AskFor is AskAll for the listings p: the whole election history when
// p has it (mfscli -SLH lists every record).
func AskFor(addrs []netip.AddrPort, p Parts, timeout time.Duration) []Answer {
	req := protocol.StatusReq{}
	if p.History {
		req.History = namespace.MaxHistory
	}
	out := make([]Answer, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := client.StatusWith(a, req, timeout)
			out[i] = Answer{Addr: a, St: st, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// ReachedAny reports whether at least one master answered.
func ReachedAny(answers []Answer) bool {
	for _, a := range answers {
		if a.Err == nil {
			return true
		}
	}
	return false
}

// StateWord is the state as mfscli prints it: the role (FOLLOWER with its
// sync suffix), "transition A -> B" while a role change is under way,
// "FOLLOWER (REMOVED)" for a master out of the set of masters (it takes
// part in nothing: docs/roles.md §3.15), UNREACHABLE (no connection) or
// BUSY (connected, no answer).
func StateWord(a Answer) string {
	switch {
	case errors.Is(a.Err, client.ErrUnreachable):
		return "UNREACHABLE"
	case a.Err != nil:
		return "BUSY"
	case a.St.Transition != "":
		return "transition " + a.St.Transition
	case a.St.Removed:
		return a.St.Role.String() + " (REMOVED)"
	case a.St.Role == roles.Follower:
		return a.St.Role.String() + a.St.Sync.Suffix()
	}
	return a.St.Role.String()
}

// viewRank orders roles for choosing whose registry and quorum view to
// show, as MooseFS's mfscli does: LEADER or DEPUTY, then ELECT, then
// USURPER, then a FOLLOWER; DUMMY (shutting down) last.
func viewRank(r roles.Role) int {
	switch r {
	case roles.Leader, roles.Deputy:
		return 0
	case roles.Elect:
		return 1
	case roles.Usurper:
		return 2
	case roles.Follower:
		return 3
	}
	return 4
}

// better reports whether a should be preferred to b (both answered): by
// viewRank, then the higher epoch, the higher metadata version, the lower
// address.
func better(a, b Answer) bool {
	if ra, rb := viewRank(a.St.Role), viewRank(b.St.Role); ra != rb {
		return ra < rb
	}
	if a.St.Epoch != b.St.Epoch {
		return a.St.Epoch > b.St.Epoch
	}
	if a.St.MetaVersion != b.St.MetaVersion {
		return a.St.MetaVersion > b.St.MetaVersion
	}
	return a.Addr.Compare(b.Addr) < 0
}

// ChooseView picks the master whose registry and quorum view is shown;
// nil if none answered.
func ChooseView(answers []Answer) *Answer {
	var best *Answer
	for i := range answers {
		a := &answers[i]
		if a.Err == nil && (best == nil || better(*a, *best)) {
			best = a
		}
	}
	return best
}

// FirstWithRole is the answered master in role r with the highest epoch
// (ties: the lower address); nil if none.
func FirstWithRole(answers []Answer, r roles.Role) *Answer {
	var best *Answer
	for i := range answers {
		a := &answers[i]
		if a.Err == nil && a.St.Role == r && (best == nil || better(*a, *best)) {
			best = a
		}
	}
	return best
}

// VoteCounter is the master whose count the quorum listing explains: the
// LEADER, else the ELECT, else a DEPUTY (an ELECT that gave up waiting and
// still counts votes); nil if there is none.
func VoteCounter(answers []Answer) *Answer {
	for _, r := range []roles.Role{roles.Leader, roles.Elect, roles.Deputy} {
		if a := FirstWithRole(answers, r); a != nil {
			return a
		}
	}
	return nil
}
