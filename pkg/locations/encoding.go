package locations

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// A Map travels (in changelog entries on the wire, and on disk) in a small
// line-based text form, so that every codec can carry it without seeing its
// unexported fields:
//
//	locations v1
//	default <id>
//	next <id>
//	loc <id> on|off <name>
//	range <prefix> <id>
//
// Decoding rebuilds the map through Restore, so a damaged or hostile
// encoding is refused with the reason instead of yielding a broken Map.

const encodingHeader = "locations v1"

// MarshalBinary encodes the map (encoding.BinaryMarshaler).
func (m Map) MarshalBinary() ([]byte, error) {
	s := m.Snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\ndefault %d\nnext %d\n", encodingHeader, s.Default, s.Next)
	for _, l := range s.Locations {
		state := "on"
		if l.Off {
			state = "off"
		}
		fmt.Fprintf(&b, "loc %d %s %s\n", l.ID, state, l.Name)
	}
	for _, r := range s.Ranges {
		fmt.Fprintf(&b, "range %s %d\n", r.Prefix, r.Loc)
	}
	return []byte(b.String()), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote (encoding.BinaryUnmarshaler).
// On error the receiver is left as it was.
func (m *Map) UnmarshalBinary(data []byte) error {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 0 || lines[0] != encodingHeader {
		return errorf(ErrInvalidMap, "invalid location map encoding: first line %q, want %q", firstLine(lines), encodingHeader)
	}
	var s Snapshot
	for i, line := range lines[1:] {
		f := strings.SplitN(line, " ", 4)
		bad := func(why string) error {
			return errorf(ErrInvalidMap, "invalid location map encoding, line %d %q: %s", i+2, line, why)
		}
		id := func(s string) (wire.LocationID, error) {
			n, err := strconv.ParseUint(s, 10, 8)
			return wire.LocationID(n), err
		}
		switch {
		case f[0] == "default" && len(f) == 2:
			v, err := id(f[1])
			if err != nil {
				return bad("not a location id")
			}
			s.Default = v
		case f[0] == "next" && len(f) == 2:
			v, err := id(f[1])
			if err != nil {
				return bad("not a location id")
			}
			s.Next = v
		case f[0] == "loc" && len(f) == 4 && (f[2] == "on" || f[2] == "off"):
			v, err := id(f[1])
			if err != nil {
				return bad("not a location id")
			}
			s.Locations = append(s.Locations, Location{ID: v, Name: f[3], Off: f[2] == "off"})
		case f[0] == "range" && len(f) == 3:
			p, err := netip.ParsePrefix(f[1])
			if err != nil {
				return bad("not a CIDR prefix")
			}
			v, err := id(f[2])
			if err != nil {
				return bad("not a location id")
			}
			s.Ranges = append(s.Ranges, Range{Prefix: p, Loc: v})
		default:
			return bad("unknown line")
		}
	}
	restored, err := Restore(s)
	if err != nil {
		return err
	}
	*m = restored
	return nil
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}
