package node

import (
	"net"
	"strconv"
)

// ListenAddr joins a MooseFS host key ("*" or empty: every address) and
// port into what net.Listen takes.
func ListenAddr(host string, port int) string {
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
