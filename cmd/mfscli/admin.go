package main

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// MooseFS writes admin commands as one word with slashes, -CRC/ip/port.
// rewriteAdmin turns each into "--admin WORD" before flags are parsed.
var adminArg = regexp.MustCompile(`^-C[A-Z]+(/.*)?$`)

func rewriteAdmin(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if adminArg.MatchString(a) {
			out = append(out, "--admin", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// admin carries out one command; the reply names what was done.
//
//	RC/ip/port   remove a disconnected chunkserver from the registry
//	LU/ip        set USURPER on the master at ip (a planned handover to it)
//	LC/ip        cancel USURPER on the master at ip
//	LS           step the LEADER down (it hands over to the best synced FOLLOWER)
//	MS/ip        shut the master at ip down (through DUMMY)
func admin(answers []answer, cmd string, port uint16, timeout time.Duration) error {
	parts := strings.Split(cmd, "/")
	var leader *answer
	for i := range answers {
		if answers[i].err == nil && answers[i].st.Role == roles.Leader {
			leader = &answers[i]
		}
	}
	at := func(i int) (netip.AddrPort, error) {
		if len(parts) <= i {
			return netip.AddrPort{}, fmt.Errorf("-C%s: a master's address is missing (-C%s/ip)", cmd, parts[0])
		}
		a, err := netip.ParseAddr(parts[i])
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("-C%s: %q is not an address", cmd, parts[i])
		}
		return netip.AddrPortFrom(a, port), nil
	}
	noLeader := fmt.Errorf("Can't perform any operation because there is no leading master")
	var to netip.AddrPort
	what := ""
	req := node.AdminReq{ID: uint64(time.Now().UnixNano())}
	switch parts[0] {
	case "RC":
		if leader == nil {
			return noLeader
		}
		if len(parts) != 3 {
			return fmt.Errorf("-CRC/ip/port: give the chunkserver's address and port, as -SCS lists them")
		}
		a, err := netip.ParseAddr(parts[1])
		p, perr := strconv.ParseUint(parts[2], 10, 16)
		if err != nil || perr != nil {
			return fmt.Errorf("-C%s: want -CRC/ip/port", cmd)
		}
		id := uint32(0)
		for _, c := range leader.st.Chunkservers {
			if c.Addr == a && c.Port == uint16(p) {
				id = uint32(c.ID)
			}
		}
		if id == 0 {
			return fmt.Errorf("no registered chunkserver %s:%d", a, p)
		}
		to, what = leader.addr, fmt.Sprintf("chunkserver %s:%d (id %d): ", a, p, id)
		req.Kind, req.Change = roles.AdminChange, roles.Change{Kind: roles.ChangeRemove, ID: id}
	case "LU", "LC", "MS":
		a, err := at(1)
		if err != nil {
			return err
		}
		to = a
		req.Kind = map[string]roles.AdminKind{"LU": roles.AdminSetUsurper, "LC": roles.AdminCancelUsurper, "MS": roles.AdminShutdown}[parts[0]]
	case "LS":
		if leader == nil {
			return noLeader
		}
		to, req.Kind = leader.addr, roles.AdminStepDown
	default:
		return fmt.Errorf("unknown admin command -C%s (RC/ip/port, LU/ip, LC/ip, LS, MS/ip)", cmd)
	}
	m, err := node.Query(to, req, timeout+2*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %w", to.Addr(), err)
	}
	r, ok := m.(node.AdminResp)
	if !ok {
		return fmt.Errorf("%s answered %T", to.Addr(), m)
	}
	fmt.Fprintf(os.Stdout, "%s: %s%s\n", to.Addr(), what, r.Text)
	if !r.OK {
		return fmt.Errorf("refused")
	}
	return nil
}
