package locations

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestEncodingRoundTrip(t *testing.T) {
	m := New()
	var err error
	for _, step := range []func(Map) (Map, error){
		func(m Map) (Map, error) { return m.MapRange(netip.MustParsePrefix("10.0.2.0/24"), "west") },
		func(m Map) (Map, error) { return m.MapRange(netip.MustParsePrefix("2001:db8::/48"), "east") },
		func(m Map) (Map, error) { return m.SetOn("east", false) },
		func(m Map) (Map, error) { return m.SetDefault("west") },
		func(m Map) (Map, error) { return m.Rename("default", "site-a") },
	} {
		if m, err = step(m); err != nil {
			t.Fatal(err)
		}
	}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Map
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !got.Equal(m) {
		t.Fatalf("round trip changed the map:\n%v\n%v", m, got)
	}
	var zero Map
	zb, _ := zero.MarshalBinary()
	if err := got.UnmarshalBinary(zb); err != nil || !got.Equal(New()) {
		t.Fatalf("the zero map did not round-trip as New(): %v %v", got, err)
	}
}

func TestEncodingRefusals(t *testing.T) {
	for _, c := range []struct{ name, in, text string }{
		{"empty", "", "first line"},
		{"other version", "locations v9\n", "first line"},
		{"unknown line", "locations v1\nbogus 1\n", "unknown line"},
		{"bad prefix", "locations v1\ndefault 1\nnext 2\nloc 1 on default\nrange 10.0.0.0/99 1\n", "not a CIDR prefix"},
		{"range of a missing location", "locations v1\ndefault 1\nnext 3\nloc 1 on default\nrange 10.0.0.0/8 2\n", "invalid location map"},
		{"no default", "locations v1\ndefault 5\nnext 2\nloc 1 on default\n", "default"},
	} {
		m := New()
		before := m
		err := m.UnmarshalBinary([]byte(c.in))
		if !errors.Is(err, ErrInvalidMap) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v, want an invalid-map error naming %q", c.name, err, c.text)
		}
		if !m.Equal(before) {
			t.Errorf("%s: a failed decode changed the map", c.name)
		}
	}
}
