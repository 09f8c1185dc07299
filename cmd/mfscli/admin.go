package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// MooseFS writes admin commands as one word with slashes, -CRC/ip/port.
// rewriteAdmin turns each into "--admin WORD" before flags are parsed.
var adminArg = regexp.MustCompile(`^-C[A-Z][A-Z0-9]*(/.*)?$`)

// -CWITNESS takes its action as the next word too (-CWITNESS on), joined
// here as -CWITNESS/on.
func rewriteAdmin(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-CWITNESS" && i+1 < len(args) && slices.Contains([]string{witnessOn, witnessOff, witnessTest}, args[i+1]) {
			i++
			a += "/" + args[i]
		}
		if adminArg.MatchString(a) {
			out = append(out, "--admin", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// adminCommands are the admin commands, as -C<form>, with what each does:
// the unknown-command error lists them, and so do the shell completions.
var adminCommands = []struct{ form, what string }{
	{"RC/ip/port", "remove a disconnected chunkserver from the registry"},
	{"TR/ip/port", "no LEADER: count without a chunkserver that is down (temporary removal)"},
	{"M1/ip/port", "maintenance on for a chunkserver"},
	{"M0/ip/port", "maintenance off for a chunkserver"},
	{"MAP/cidr/name", "map an address range to a location"},
	{"UNMAP/cidr", "unmap an address range"},
	{"REN/old/new", "rename a location"},
	{"DEF/name", "move the default mark to a location"},
	{"ON/name", "let a location take part in the quorum count"},
	{"OFF/name", "leave a location out of the quorum count"},
	{"LU/ip", "set USURPER on a master (a planned handover to it)"},
	{"LC/ip", "cancel USURPER on a master"},
	{"LS", "step the LEADER down"},
	{"MS/ip", "shut a master down (through DUMMY)"},
	{"MR", "every master resolves MASTER_HOST again now (-CMR/ip: that master only)"},
	{"TRUST/ip/port", "no LEADER: vouch for an uncertain chunkserver's voter record as it is (see the risk it prints)"},
	{"WITNESS/on", "the LEADER names its object-store witness (WITNESS_* keys) in the registry, making its lease object if needed"},
	{"WITNESS/off", "the LEADER removes the witness from the registry"},
	{"WITNESS/test", "every master runs its witness store's self-test now (-CWITNESS/test/ip: that master)"},
}

// admin carries out one command; the reply names what was done.
//
//	RC/ip/port        remove a disconnected chunkserver from the registry
//	TR/ip/port        no LEADER: every master counts without a chunkserver
//	                  that is down (temporary removal)
//	M1/ip/port        maintenance on for a chunkserver (its absence is planned)
//	M0/ip/port        maintenance off
//	MAP/cidr/name     map an address range to a location (creating it)
//	UNMAP/cidr        unmap a range (its addresses fall to the default location)
//	REN/old/new       rename a location
//	DEF/name          move the default mark to a location
//	ON/name, OFF/name let a location take part in the quorum count, or not
//	LU/ip             set USURPER on the master at ip (a planned handover to it)
//	LC/ip             cancel USURPER on the master at ip
//	LS                step the LEADER down (it hands over to the best synced FOLLOWER)
//	MS/ip             shut the master at ip down (through DUMMY)
//	MR, MR/ip         every master (or the one at ip) resolves MASTER_HOST
//	                  again now: masters added or removed are taken in
//	TRUST/ip/port     no LEADER: an uncertain chunkserver (its voter record
//	                  damaged or lost) votes on its record as it is
//	WITNESS/on|off    the LEADER names the object-store witness in the
//	                  registry, or removes it (witness.go)
//	WITNESS/test      each master runs its witness store's self-test now
func admin(answers []clusterview.Answer, cmd string, port uint16, password string, timeout time.Duration) error {
	parts := strings.Split(cmd, "/")
	leader := leaderOf(answers)
	req := protocol.AdminReq{ID: uint64(time.Now().UnixNano())}
	var to netip.AddrPort
	what := ""
	switch parts[0] {
	case "RC", "M1", "M0", "MAP", "UNMAP", "REN", "DEF", "ON", "OFF":
		if leader == nil {
			return errNoLeader
		}
		c, w, err := registryChange(leader, cmd, parts)
		if err != nil {
			return err
		}
		to, what, req.Kind, req.Change = leader.Addr, w, roles.AdminChange, c
	case "TR":
		return tempRemove(answers, cmd, parts, password, timeout)
	case "MR":
		return resolveAgain(answers, cmd, parts, port, password, timeout)
	case "TRUST":
		return trustRecord(answers, cmd, parts, password, timeout)
	case "WITNESS":
		return witnessCommand(answers, cmd, parts, port, password, timeout)
	case "LU", "LC", "MS":
		if len(parts) != 2 {
			return fmt.Errorf("-C%s: give the master's address (-C%s/ip)", cmd, parts[0])
		}
		a, err := netip.ParseAddr(parts[1])
		if err != nil {
			return fmt.Errorf("-C%s: %q is not an address", cmd, parts[1])
		}
		to = netip.AddrPortFrom(a, port)
		req.Kind = map[string]roles.AdminKind{"LU": roles.AdminSetUsurper, "LC": roles.AdminCancelUsurper, "MS": roles.AdminShutdown}[parts[0]]
	case "LS":
		if leader == nil {
			return errNoLeader
		}
		to, req.Kind = leader.Addr, roles.AdminStepDown
	default:
		return unknownAdmin(cmd)
	}
	r, err := send(to, req, password, timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s: %s%s\n", to.Addr(), what, r.Text)
	if !r.OK {
		return fmt.Errorf("refused")
	}
	return nil
}

//lint:ignore ST1005 MooseFS's own wording, kept as its users know it
var errNoLeader = errors.New(clusterview.NoLeader)

// resolveAgain is -CMR: each master mfscli found (or the one -CMR/ip
// names) resolves MASTER_HOST again and answers with the masters it has
// now. Chunkservers resolve on their own schedule, or on reload.
func resolveAgain(answers []clusterview.Answer, cmd string, parts []string, port uint16, password string, timeout time.Duration) error {
	var to []netip.AddrPort
	switch len(parts) {
	case 1:
		for _, a := range answers {
			to = append(to, a.Addr)
		}
	case 2:
		a, err := netip.ParseAddr(parts[1])
		if err != nil {
			return fmt.Errorf("-C%s: %q is not an address", cmd, parts[1])
		}
		to = append(to, netip.AddrPortFrom(a, port))
	default:
		return fmt.Errorf("-C%s: want -CMR, or -CMR/ip for one master", cmd)
	}
	failed := 0
	for _, t := range to {
		r, err := send(t, protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: roles.AdminResolve}, password, timeout)
		switch {
		case err != nil:
			fmt.Fprintf(os.Stdout, "%s: %v\n", t.Addr(), err)
			failed++
		default:
			fmt.Fprintf(os.Stdout, "%s: %s\n", t.Addr(), r.Text)
			if !r.OK {
				failed++
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d masters did not resolve MASTER_HOST again", failed, len(to))
	}
	return nil
}

// leaderOf is the LEADER among the answers (nil: none answered as one).
func leaderOf(answers []clusterview.Answer) *clusterview.Answer {
	var leader *clusterview.Answer
	for i := range answers {
		if answers[i].Err == nil && answers[i].St.Role == roles.Leader {
			leader = &answers[i]
		}
	}
	return leader
}

func unknownAdmin(cmd string) error {
	forms := make([]string, len(adminCommands))
	for i, a := range adminCommands {
		forms[i] = a.form
	}
	return fmt.Errorf("unknown admin command -C%s (%s)", cmd, strings.Join(forms, ", "))
}

// registryChange is the registry or location change -C<cmd> asks the
// LEADER for and, for a chunkserver's, which one it is (the start of the
// reply line). A chunkserver is found in the LEADER's registry: without
// a LEADER, errNoLeader; a location change needs none to be parsed.
func registryChange(leader *clusterview.Answer, cmd string, parts []string) (registry.Change, string, error) {
	switch parts[0] {
	case "RC", "M1", "M0":
		if leader == nil {
			return registry.Change{}, "", errNoLeader
		}
		cs, err := registered(leader, cmd, parts)
		if err != nil {
			return registry.Change{}, "", err
		}
		what := fmt.Sprintf("chunkserver %s:%d (id %d): ", cs.Addr, cs.Port, cs.ID)
		if parts[0] == "RC" {
			return registry.Change{Kind: registry.ChangeRemove, ID: uint32(cs.ID)}, what, nil
		}
		return registry.Change{Kind: registry.ChangeMaintenance, ID: uint32(cs.ID), On: parts[0] == "M1"}, what, nil
	}
	c, err := locationChange(cmd, parts)
	return c, "", err
}

// send delivers one admin request. A registry change refused because the
// previous one is still being put in force (a heartbeat or two) is asked
// again for a few seconds, so commands can follow each other in a script.
func send(to netip.AddrPort, req protocol.AdminReq, password string, timeout time.Duration) (protocol.AdminResp, error) {
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := client.Admin(to, req, password, timeout+2*time.Second)
		if err != nil {
			return protocol.AdminResp{}, fmt.Errorf("%s: %w", to.Addr(), err)
		}
		if r.OK || req.Kind != roles.AdminChange || r.Code != wire.CodeChangePending || time.Now().After(end) {
			return r, nil
		}
		req.ID++
	}
}

// registered finds the chunkserver -CXX/ip/port names in the LEADER's
// registry.
func registered(leader *clusterview.Answer, cmd string, parts []string) (protocol.CSStatus, error) {
	if len(parts) != 3 {
		return protocol.CSStatus{}, fmt.Errorf("-C%s: give the chunkserver's address and port, as -SCS lists them (-C%s/ip/port)", cmd, parts[0])
	}
	a, err := netip.ParseAddr(parts[1])
	p, perr := strconv.ParseUint(parts[2], 10, 16)
	if err != nil || perr != nil {
		return protocol.CSStatus{}, fmt.Errorf("-C%s: want -C%s/ip/port", cmd, parts[0])
	}
	for _, c := range leader.St.Chunkservers {
		if c.Addr == a && c.Port == uint16(p) {
			return c, nil
		}
	}
	return protocol.CSStatus{}, fmt.Errorf("no registered chunkserver %s:%d", a, p)
}

// locationChange parses the location commands. A range is written as CIDR,
// so its own slash splits it: MAP/10.1.0.0/16/west.
func locationChange(cmd string, parts []string) (registry.Change, error) {
	prefix := func(addr, bits string) (netip.Prefix, error) {
		p, err := netip.ParsePrefix(addr + "/" + bits)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("-C%s: %s/%s is not an address range (CIDR, e.g. 10.1.0.0/16)", cmd, addr, bits)
		}
		return p, nil
	}
	usage := map[string]string{"MAP": "MAP/cidr/name", "UNMAP": "UNMAP/cidr", "REN": "REN/old/new", "DEF": "DEF/name", "ON": "ON/name", "OFF": "OFF/name"}
	want := map[string]int{"MAP": 4, "UNMAP": 3, "REN": 3, "DEF": 2, "ON": 2, "OFF": 2}
	if len(parts) != want[parts[0]] {
		return registry.Change{}, fmt.Errorf("-C%s: want -C%s", cmd, usage[parts[0]])
	}
	switch parts[0] {
	case "MAP":
		p, err := prefix(parts[1], parts[2])
		return registry.Change{Kind: registry.ChangeMapRange, Prefix: p, Name: parts[3]}, err
	case "UNMAP":
		p, err := prefix(parts[1], parts[2])
		return registry.Change{Kind: registry.ChangeUnmapRange, Prefix: p}, err
	case "REN":
		return registry.Change{Kind: registry.ChangeRename, Name: parts[1], NewName: parts[2]}, nil
	case "DEF":
		return registry.Change{Kind: registry.ChangeSetDefault, Name: parts[1]}, nil
	}
	return registry.Change{Kind: registry.ChangeSetOn, Name: parts[1], On: parts[0] == "ON"}, nil
}

// tempRemove sends a temporary removal to every master that answers, so
// that they all count alike; it refuses when a LEADER answers
// (-CRC is the way then) and when any master already leaves out another
// chunkserver of the same location (two masters leaving out two different
// ones of one location could both win: docs/architecture.md).
func tempRemove(answers []clusterview.Answer, cmd string, parts []string, password string, timeout time.Duration) error {
	cs, refused, err := tempRemoveCheck(answers, cmd, parts)
	switch {
	case err != nil:
		return err
	case refused != "":
		return errors.New(refused)
	}
	sent, failed := 0, 0
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		sent++
		req := protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: roles.AdminTempRemove, Change: registry.Change{ID: uint32(cs.ID)}}
		r, err := send(a.Addr, req, password, timeout)
		switch {
		case err != nil:
			failed++
			fmt.Fprintf(os.Stdout, "%s: %v\n", a.Addr.Addr(), err)
		default:
			if !r.OK {
				failed++
			}
			fmt.Fprintf(os.Stdout, "%s: chunkserver %s:%d (id %d): %s\n", a.Addr.Addr(), cs.Addr, cs.Port, cs.ID, r.Text)
		}
	}

	if failed > 0 {
		return fmt.Errorf("refused by %d of %d", failed, sent)
	}
	return nil
}

// tempRemoveCheck finds the chunkserver -CTR names, and whether mfscli
// refuses to send it (refused: a LEADER answers, or a master already
// leaves out another of its location); err is a command that cannot be
// carried out at all.
func tempRemoveCheck(answers []clusterview.Answer, cmd string, parts []string) (protocol.CSStatus, string, error) {
	var view *clusterview.Answer
	for i := range answers {
		a := &answers[i]
		if a.Err != nil {
			continue
		}
		if a.St.Role == roles.Leader {
			return protocol.CSStatus{}, fmt.Sprintf("%s is LEADER: remove a disconnected chunkserver with -CRC/ip/port", a.Addr.Addr()), nil
		}
		if view == nil || len(a.St.Chunkservers) > len(view.St.Chunkservers) {
			view = a
		}
	}
	cs, err := registered(view, cmd, parts)
	if err != nil {
		return cs, "", err
	}
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		for _, id := range a.St.TempRemoved {
			for _, o := range a.St.Chunkservers {
				if o.ID == id && id != cs.ID && o.Location == cs.Location {
					return cs, fmt.Sprintf("%s already counts without %s:%d of location %s; at most one per location", a.Addr.Addr(), o.Addr, o.Port, o.Location), nil
				}
			}
		}
	}
	return cs, "", nil
}
