package main

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// set is a set of masters at the given addresses (MATOML port 9419).
func set(addrs ...string) []masterhost.Master {
	var out []masterhost.Master
	for _, a := range addrs {
		ip := netip.MustParseAddr(a)
		out = append(out, masterhost.Master{ID: masterhost.IDOf(ip), Addr: netip.AddrPortFrom(ip, 9419)})
	}
	return out
}

// TestStatusOrigins (review N4): GET /api/v1/status carries
// Access-Control-Allow-Origin only for the page of a master of the current
// set (at this master's HTTP port, by address or by a name MASTER_HOST
// lists), this master's own page, and the origins HTTP_ALLOW_ORIGIN
// names; never for another page, and always with Vary: Origin.
func TestStatusOrigins(t *testing.T) {
	masters := set("10.0.0.1", "10.0.0.2", "fd00::3")
	for _, c := range []struct {
		name, allowCfg, origin, host string
		want                         string // the header expected, "" none
	}{
		{name: "another master's page", origin: "http://10.0.0.2:9425", want: "http://10.0.0.2:9425"},
		{name: "another master's page over https", origin: "https://10.0.0.2:9425", want: "https://10.0.0.2:9425"},
		{name: "an IPv6 master's page", origin: "http://[fd00::3]:9425", want: "http://[fd00::3]:9425"},
		{name: "a master's page by a name MASTER_HOST lists", origin: "http://MFSMaster:9425", want: "http://MFSMaster:9425"},
		{name: "this master's own address, out of the set", origin: "http://10.0.0.9:9425", want: "http://10.0.0.9:9425"},
		{name: "the same origin as the request", origin: "http://mfs.example.net:9425", host: "mfs.example.net:9425", want: "http://mfs.example.net:9425"},
		{name: "a web site", origin: "http://evil.example"},
		{name: "a web site on the HTTP port", origin: "http://evil.example:9425"},
		{name: "a master's address on another port", origin: "http://10.0.0.2:8080"},
		{name: "an address out of the set", origin: "http://10.0.0.4:9425"},
		{name: "a sandboxed page", origin: "null"},
		{name: "no Origin (mfscli, curl, same origin)", origin: ""},
		{name: "a name MASTER_HOST does not list", origin: "http://mfsmaster.evil.example:9425"},
		{name: "a page HTTP_ALLOW_ORIGIN names", allowCfg: "https://grafana.example.com, http://10.9.9.9:3000", origin: "https://Grafana.example.com", want: "https://Grafana.example.com"},
		{name: "its explicit default port", allowCfg: "https://grafana.example.com", origin: "https://grafana.example.com:443", want: "https://grafana.example.com:443"},
		{name: "another scheme than HTTP_ALLOW_ORIGIN's", allowCfg: "https://grafana.example.com", origin: "http://grafana.example.com"},
		{name: "a web site beside HTTP_ALLOW_ORIGIN", allowCfg: "https://grafana.example.com", origin: "http://evil.example"},
		{name: "HTTP_ALLOW_ORIGIN = *", allowCfg: "*", origin: "http://evil.example", want: "*"},
	} {
		t.Run(c.name, func(t *testing.T) {
			all, extra, err := parseOrigins(c.allowCfg)
			if err != nil {
				t.Fatal(err)
			}
			rule := &originRule{httpPort: 9425, own: []netip.Addr{netip.MustParseAddr("10.0.0.9")},
				host: func() string { return "10.0.0.1, mfsmaster:9419" }, all: all, extra: extra}
			api := newStatusAPI(func() []masterhost.Master { return masters }, 9421, "mfsmaster", time.Second, rule)
			api.cur, api.wanted = &statusRound{at: time.Now()}, time.Now() // served from the cache: no master is asked
			req := httptest.NewRequest(http.MethodGet, "/api/v1/status", nil)
			req.Host = "10.0.0.1:9425"
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != c.want {
				t.Errorf("Origin %q: Access-Control-Allow-Origin %q, want %q", c.origin, got, c.want)
			}
			if got := w.Header().Get("Vary"); got != "Origin" {
				t.Errorf("Vary %q, want Origin", got)
			}
		})
	}
}

// TestParseOrigins: HTTP_ALLOW_ORIGIN takes * and scheme://host[:port]
// origins; every bad entry is named in one error.
func TestParseOrigins(t *testing.T) {
	all, extra, err := parseOrigins(" https://a.example , http://[fd00::1]:8080,*,")
	if err != nil || !all || !extra["https://a.example:443"] || !extra["http://[fd00::1]:8080"] || len(extra) != 2 {
		t.Fatalf("parseOrigins: all %v extra %v err %v", all, extra, err)
	}
	if all, extra, err := parseOrigins(""); err != nil || all || len(extra) != 0 {
		t.Fatalf("empty: all %v extra %v err %v", all, extra, err)
	}
	_, _, err = parseOrigins("https://ok.example, ftp://x.example, http://a.example/path, grafana.example.com, http://a.example:99999, null")
	if err == nil {
		t.Fatal("bad origins accepted")
	}
	for _, bad := range []string{`"ftp://x.example"`, `"http://a.example/path"`, `"grafana.example.com"`, `"http://a.example:99999"`, `"null"`} {
		if !strings.Contains(err.Error(), bad) {
			t.Errorf("error %q does not name %s", err, bad)
		}
	}
	if strings.Contains(err.Error(), "ok.example") {
		t.Errorf("error %q names a good origin", err)
	}
}
