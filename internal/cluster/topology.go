package cluster

import "net/netip"

// Local is the `make run` topology: 3 masters on 127.0.0.11-13, and 6
// chunkservers in 3 locations (one with disks and one voter-only in each)
// connecting from 127.0.1.x, 127.0.2.x and 127.0.3.x. base shifts the second
// octet of every address (0 for make run), so tests and benchmarks can run
// beside a make run cluster.
func Local(dir, bin string, base uint8) Spec {
	a := func(x, y, z uint8) netip.Addr { return netip.AddrFrom4([4]byte{127, x + base, y, z}) }
	s := Spec{Dir: dir, Bin: bin, Locations: map[string]netip.Prefix{}}
	for i := uint8(0); i < 3; i++ {
		s.Masters = append(s.Masters, a(0, 0, 11+i))
	}
	for loc := uint8(1); loc <= 3; loc++ {
		s.Locations["dc"+string('0'+rune(loc))] = netip.PrefixFrom(a(0, loc, 0), 24)
		s.CS = append(s.CS, CS{Addr: a(0, loc, 1)}, CS{Addr: a(0, loc, 2), VoterOnly: true})
	}
	return s
}
