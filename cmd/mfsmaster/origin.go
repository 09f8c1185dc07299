package main

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// originRule says which web pages may read /api/v1/status through their
// visitor's browser (CORS: Access-Control-Allow-Origin). The document is
// an inventory of the cluster and of what is left open (review N4), so a
// page of any origin may not: only the page of a master of the current
// set, which asks the others when its own master is down, and the
// origins HTTP_ALLOW_ORIGIN names. mfscli and scripts are no browsers and
// read it whatever this says.
type originRule struct {
	// httpPort is this master's HTTP_LISTEN_PORT. A master's page asks
	// the other masters on the port it was itself loaded from
	// (internal/webui), so a page of a master has this port too.
	httpPort uint16
	// own: this master's addresses besides those in the set (its
	// MASTER_HOST address, an HTTP_LISTEN_HOST address): its own page is
	// allowed even while it is out of its set.
	own []netip.Addr
	// host is MASTER_HOST now: a page opened through a name it lists
	// (http://mfsmaster:9425/) is a master's page.
	host func() string
	// all: HTTP_ALLOW_ORIGIN holds "*"; extra: its origins, canonical.
	all   bool
	extra map[string]bool
}

// parseOrigins reads HTTP_ALLOW_ORIGIN: "*" or origins
// (scheme://host[:port], http or https), comma-separated. It reports
// every bad entry at once.
func parseOrigins(s string) (all bool, extra map[string]bool, err error) {
	extra = map[string]bool{}
	var bad []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case item == "*":
			all = true
		default:
			o, ok := canonOrigin(item)
			if !ok {
				bad = append(bad, fmt.Sprintf("%q", item))
				continue
			}
			extra[o.canon] = true
		}
	}
	if len(bad) > 0 {
		return false, nil, fmt.Errorf("HTTP_ALLOW_ORIGIN: %s: want * or origins like https://grafana.example.com:3000 (http or https, a host, an optional port, nothing after it), comma-separated",
			strings.Join(bad, ", "))
	}
	return all, extra, nil
}

// origin is a parsed Origin: scheme, host (a name lower-cased, or an
// address without brackets) and port (the scheme's default when absent).
type origin struct {
	scheme, host string
	port         uint16
	canon        string // scheme://host:port, the form compared
}

// canonOrigin parses an origin as a browser sends it (RFC 6454:
// scheme://host[:port], nothing after); false for anything else,
// "null" included.
func canonOrigin(s string) (origin, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return origin{}, false
	}
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname())}
	switch o.scheme {
	case "http":
		o.port = 80
	case "https":
		o.port = 443
	default:
		return origin{}, false
	}
	if o.host == "" {
		return origin{}, false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return origin{}, false
		}
		o.port = uint16(n)
	}
	o.canon = o.scheme + "://" + net.JoinHostPort(o.host, strconv.Itoa(int(o.port)))
	return o, true
}

// allow says whether a page of origin (the request's Origin header) may
// read the answer to a request that named requestHost (its Host header),
// with masters the set now.
func (r *originRule) allow(originHeader, requestHost string, masters []masterhost.Master) bool {
	if originHeader == "" {
		return false // not a cross-origin request from a browser: nothing to allow
	}
	if r.all {
		return true
	}
	o, ok := canonOrigin(originHeader)
	if !ok {
		return false
	}
	if r.extra[o.canon] {
		return true
	}
	// The page asking is the one this master served (same origin: a
	// browser needs no header for it, and this one does no harm).
	if same, ok := canonOrigin(o.scheme + "://" + requestHost); ok && same.canon == o.canon {
		return true
	}
	if o.port != r.httpPort {
		return false
	}
	if a, err := netip.ParseAddr(o.host); err == nil {
		a = a.WithZone("").Unmap()
		for _, m := range masters {
			if m.Addr.Addr().Unmap() == a {
				return true
			}
		}
		for _, own := range r.own {
			if own.Unmap() == a {
				return true
			}
		}
		return false
	}
	return r.host != nil && hostNames(r.host())[o.host]
}

// hostNames is the names (not addresses) MASTER_HOST lists, lower-cased,
// without their ports.
func hostNames(spec string) map[string]bool {
	out := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if h, _, err := net.SplitHostPort(item); err == nil {
			item = h
		}
		if item == "" {
			continue
		}
		if _, err := netip.ParseAddr(item); err == nil {
			continue // an address: the set holds it already
		}
		out[strings.ToLower(item)] = true
	}
	return out
}
