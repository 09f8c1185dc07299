package node

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Host is one configured address of a daemon: the key it comes from and
// its value ("*" or "": every address; an address; a name).
type Host struct{ Key, Value string }

// Exposed lists the hosts that are not loopback-only, as "KEY value": a
// wildcard, an address off loopback, or a name with such an address (a
// name that does not resolve counts as exposed).
func Exposed(hosts []Host) []string {
	var out []string
	for _, h := range hosts {
		if !loopbackOnly(h.Value) {
			out = append(out, h.Key+" "+orStar(h.Value))
		}
	}
	return out
}

func orStar(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func loopbackOnly(host string) bool {
	if host == "" || host == "*" {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, s := range addrs {
		if a, err := netip.ParseAddr(s); err != nil || !a.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// AuthCodeRule is the start rule of issue 10, H3, for daemon (mfsmaster,
// mfschunkserver): a daemon with any host in exposed refuses to start
// without AUTH_CODE unless insecure (INSECURE = 1) is set, which is
// warned about at every start. On loopback alone nothing is said.
func AuthCodeRule(daemon, code string, insecure bool, exposed []string) (warning string, err error) {
	switch {
	case code != "":
		return "", nil
	case insecure:
		return "INSECURE = 1 and no AUTH_CODE: any host that reaches the masters' ports 9419 and 9420 can pose as a master or a chunkserver, vote, register and unseat the LEADER; set AUTH_CODE (the same on every master and chunkserver) and drop INSECURE", nil
	case len(exposed) > 0:
		return "", fmt.Errorf("this %s is reachable from other hosts (%s) and has no AUTH_CODE: any host that reaches the masters could pose as a master or a chunkserver. "+
			"Set AUTH_CODE in the mfsmaster.cfg of every master and the mfschunkserver.cfg of every chunkserver, the same on every master and chunkserver "+
			"(`mfsmaster init` prints a random one), or set INSECURE = 1 to run without it knowingly", daemon, strings.Join(exposed, ", "))
	}
	return "", nil
}
