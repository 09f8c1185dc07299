// Package masterhost owns MASTER_HOST: the list of masters every node
// and client is configured with, resolved to addresses, and the id each
// master has. An id comes from a master's address alone, so every node
// derives the same ids from its own copy of the list.
package masterhost

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// IDOf is the id every node gives the master at addr. It comes from
// the address alone, so every node derives the same id from its own copy of
// MASTER_HOST, and adding a master to the list renames nobody: an IPv4
// address is its own 32-bit number; an IPv6 one is hashed (a collision is
// refused by Resolve).
func IDOf(addr netip.Addr) wire.MasterID {
	addr = addr.Unmap()
	if addr.Is4() {
		b := addr.As4()
		return wire.MasterID(binary.BigEndian.Uint32(b[:]))
	}
	h := fnv.New32a()
	b := addr.As16()
	h.Write(b[:])
	if id := wire.MasterID(h.Sum32()); id != wire.NoMaster {
		return id
	}
	return 1
}

// Master is one master as MASTER_HOST names it.
type Master struct {
	ID   wire.MasterID
	Addr netip.AddrPort
}

// Resolve turns MASTER_HOST into the masters' addresses: a
// comma-separated list of names or addresses, each with an optional
// ":port" (defaultPort otherwise); every A/AAAA record of a name is a
// master, as with MooseFS's `mfsmaster` DNS name. The result is sorted by
// id; two entries with one address are one master.
func Resolve(spec string, defaultPort uint16) ([]Master, error) {
	return Resolver{}.Resolve(spec, defaultPort)
}

// Resolver resolves MASTER_HOST, again whenever asked: a name may name
// other masters from one resolution to the next (masters added or removed
// while everything runs: docs/operations.md, "Add a master").
type Resolver struct {
	// HostsFile, when set, is a hosts(5)-style file ("ADDRESS NAME..."
	// lines, # comments) read at every resolution and consulted before
	// DNS: a name it lists resolves to every address listed for it there
	// (MASTER_HOSTS_FILE: a master list pushed as a file, and the tests).
	HostsFile string
}

// Resolve is the package's Resolve through r.
func (r Resolver) Resolve(spec string, defaultPort uint16) ([]Master, error) {
	hosts, err := readHosts(r.HostsFile)
	if err != nil {
		return nil, err
	}
	var out []Master
	seen := map[wire.MasterID]netip.Addr{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		host, port := item, defaultPort
		if h, p, err := net.SplitHostPort(item); err == nil {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("MASTER_HOST %q: bad port %q", item, p)
			}
			host, port = h, uint16(n)
		}
		addrs, err := lookup(host, hosts)
		if err != nil {
			return nil, fmt.Errorf("MASTER_HOST %q: %w", item, err)
		}
		for _, a := range addrs {
			id := IDOf(a)
			if prev, dup := seen[id]; dup {
				if prev == a {
					continue
				}
				return nil, fmt.Errorf("MASTER_HOST: addresses %v and %v map to one master id; list IPv4 addresses or different IPv6 ones", prev, a)
			}
			seen[id] = a
			out = append(out, Master{ID: id, Addr: netip.AddrPortFrom(a, port)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("MASTER_HOST %q names no master", spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// readHosts reads a hosts(5)-style file into name -> addresses (nil
// when path is empty).
func readHosts(path string) (map[string][]netip.Addr, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("MASTER_HOSTS_FILE: %w", err)
	}
	hosts := map[string][]netip.Addr{}
	for i, line := range strings.Split(string(raw), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || len(f) < 2 {
			return nil, fmt.Errorf("MASTER_HOSTS_FILE %s line %d: want an address and at least one name: %q", path, i+1, strings.TrimSpace(line))
		}
		for _, name := range f[1:] {
			name = strings.ToLower(name)
			hosts[name] = append(hosts[name], a.Unmap())
		}
	}
	return hosts, nil
}

func lookup(host string, hosts map[string][]netip.Addr) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	if as, ok := hosts[strings.ToLower(host)]; ok {
		return as, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, a := range ips {
		out = append(out, a.Unmap())
	}
	return out, nil
}
