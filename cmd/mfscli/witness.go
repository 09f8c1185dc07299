package main

import (
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// -CWITNESS/on, -CWITNESS/off and -CWITNESS/test (also written with a
// space, -CWITNESS on: rewriteAdmin joins them): the object-store witness
// (docs/mfscli.md, "The witness"; docs/architecture.md §7.4).
//
//	on    the LEADER makes (or finds) the lease object under its
//	      WITNESS_PREFIX and names its witness id in the registry
//	off   the LEADER removes the witness from the registry
//	test  every master that answers (test/ip: that one) runs its
//	      witness store's self-test now and answers with the report

// The witness actions.
const (
	witnessOn   = "on"
	witnessOff  = "off"
	witnessTest = "test"
)

// witnessOnWait and witnessTestWait: how long mfscli waits for the answer
// at least. On makes a few calls on the store, each within its
// WITNESS_CALL_TIMEOUT; a self-test races writers for some seconds and
// is given 30 s by the master.
const (
	witnessOnWait   = 10 * time.Second
	witnessTestWait = 35 * time.Second
)

// parseWitness reads -CWITNESS/<action>[/ip]: the action and, for test,
// the one master named (invalid: every master).
func parseWitness(cmd string, parts []string) (action string, only netip.Addr, err error) {
	usage := fmt.Errorf("-C%s: want -CWITNESS/on, -CWITNESS/off or -CWITNESS/test (-CWITNESS/test/ip for one master)", cmd)
	if len(parts) < 2 || len(parts) > 3 {
		return "", netip.Addr{}, usage
	}
	switch action = parts[1]; {
	case action != witnessOn && action != witnessOff && action != witnessTest:
		return "", netip.Addr{}, usage
	case len(parts) == 3 && action != witnessTest:
		return "", netip.Addr{}, fmt.Errorf("-C%s: -CWITNESS/%s goes to the LEADER and names no master", cmd, action)
	case len(parts) == 3:
		if only, err = netip.ParseAddr(parts[2]); err != nil {
			return "", netip.Addr{}, fmt.Errorf("-C%s: %q is not an address", cmd, parts[2])
		}
	}
	return action, only, nil
}

// witnessCommand carries out -CWITNESS.
func witnessCommand(answers []clusterview.Answer, cmd string, parts []string, port uint16, password string, timeout time.Duration) error {
	action, only, err := parseWitness(cmd, parts)
	if err != nil {
		return err
	}
	if action == witnessTest {
		return witnessSelfTests(answers, only, port, password, max(timeout, witnessTestWait))
	}
	leader := leaderOf(answers)
	if leader == nil {
		return errNoLeader
	}
	req := protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: protocol.AdminWitnessOn}
	if action == witnessOff {
		req.Kind, req.Change = roles.AdminChange, registry.Change{Kind: registry.ChangeWitness}
	}
	r, err := send(leader.Addr, req, password, max(timeout, witnessOnWait))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s: %s\n", leader.Addr.Addr(), r.Text)
	if !r.OK {
		return fmt.Errorf("refused")
	}
	return nil
}

// witnessSelfTests asks each master that answered (or only) to run its
// store's self-test, one after the other, and prints each answer.
func witnessSelfTests(answers []clusterview.Answer, only netip.Addr, port uint16, password string, timeout time.Duration) error {
	var to []netip.AddrPort
	if only.IsValid() {
		to = append(to, netip.AddrPortFrom(only, port))
	} else {
		for _, a := range answers {
			if a.Err == nil {
				to = append(to, a.Addr)
			}
		}
	}
	failed := 0
	for _, t := range to {
		r, err := send(t, protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: protocol.AdminWitnessTest}, password, timeout)
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
		return fmt.Errorf("the self-test did not pass on %d of %d masters", failed, len(to))
	}
	return nil
}
