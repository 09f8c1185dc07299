package cluster

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NewNetns makes a network namespace with its loopback up, for a cluster
// that a test may partition. It needs root and iproute2; the error says
// which is missing.
func NewNetns(name string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("network namespaces need iproute2's ip: %w", err)
	}
	for _, args := range [][]string{
		{"netns", "add", name},
		{"-n", name, "link", "set", "lo", "up"},
		// Move the local table below room for blackhole rules: a rule
		// ahead of it can drop traffic between two loopback addresses.
		{"-n", name, "rule", "add", "pref", "1000", "lookup", "local"},
		{"-n", name, "rule", "del", "pref", "0"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = DeleteNetns(name)
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// DeleteNetns removes a namespace made by NewNetns.
func DeleteNetns(name string) error {
	out, err := exec.Command("ip", "netns", "del", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", name, err, out)
	}
	return nil
}

// Cut drops every packet from one range to another inside the namespace
// (both directions need a call each): a silent partition, like a pulled
// cable. Heal removes it.
func Cut(ns, from, to string, pref int) error {
	out, err := exec.Command("ip", "-n", ns, "rule", "add", "pref", fmt.Sprint(pref), "from", from, "to", to, "blackhole").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip rule add: %v: %s", err, out)
	}
	return nil
}

// Heal removes a Cut by its preference number.
func Heal(ns string, pref int) error {
	out, err := exec.Command("ip", "-n", ns, "rule", "del", "pref", fmt.Sprint(pref)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip rule del: %v: %s", err, out)
	}
	return nil
}

// InNetns runs f on an OS thread that has entered the namespace: sockets f
// opens live there. The thread is never handed back to the scheduler.
func InNetns(name string, f func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with the goroutine, so no
		// other goroutine ever runs in the namespace by accident.
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		f()
		errc <- nil
	}()
	return <-errc
}

// OneWay drops every packet to addr inside the namespace (in true: addr
// cannot receive) or every packet from it (in false: addr cannot send),
// the other direction untouched: an asymmetric cut. The returned heal
// removes the rule. It needs iptables, as Lossy.
func OneWay(ns string, addr netip.Addr, in bool) (heal func() error, err error) {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("a one-way cut needs iptables (apt-get install iptables): %w", err)
	}
	dir := "-s"
	if in {
		dir = "-d"
	}
	rule := func(op string) []string {
		return []string{"netns", "exec", ns, "iptables", "-w", op, "INPUT", dir, addr.String(), "-j", "DROP"}
	}
	if out, err := exec.Command("ip", rule("-A")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("iptables -A: %v: %s", err, out)
	}
	return func() error {
		if out, err := exec.Command("ip", rule("-D")...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables -D: %v: %s", err, out)
		}
		return nil
	}, nil
}

// Lossy drops each packet from or to addr inside the namespace with
// probability p (iptables' statistic match, both directions on the
// loopback: a bad link between addr and everything else, not a cut). The
// returned heal removes the rules. It needs iptables (Debian's package);
// the error says so.
func Lossy(ns string, addr netip.Addr, p float64) (heal func() error, err error) {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("packet loss needs iptables (apt-get install iptables): %w", err)
	}
	if p <= 0 || p >= 1 {
		return nil, fmt.Errorf("loss probability %v: want 0 < p < 1", p)
	}
	rule := func(op, dir string) []string {
		return []string{"netns", "exec", ns, "iptables", "-w", op, "INPUT", dir, addr.String(), "-m", "statistic", "--mode", "random",
			"--probability", strconv.FormatFloat(p, 'f', 4, 64), "-j", "DROP"}
	}
	var added [][]string
	heal = func() error {
		var errs []string
		for _, dir := range added {
			if out, err := exec.Command("ip", rule("-D", dir[0])...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("iptables -D: %v: %s", err, out))
			}
		}
		added = nil
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
	for _, dir := range []string{"-s", "-d"} {
		if out, err := exec.Command("ip", rule("-A", dir)...).CombinedOutput(); err != nil {
			_ = heal()
			return nil, fmt.Errorf("iptables -A: %v: %s", err, out)
		}
		added = append(added, []string{dir})
	}
	return heal, nil
}
