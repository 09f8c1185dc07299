package wire

import "strconv"

// MasterID names one mfsmaster within a cluster. 0 means "none".
type MasterID uint32

// CSID is the id a chunkserver receives when it registers. 0 means "none"
// (not registered yet).
type CSID uint32

// LocationID names one location of the location map. 0 means "none".
type LocationID uint8

// NoMaster, NoCS and NoLocation are the reserved zero ids.
const (
	NoMaster   MasterID   = 0
	NoCS       CSID       = 0
	NoLocation LocationID = 0
)

// String prints small ids as M<n> and ids of 2^24 and above, which the
// daemons derive from IPv4 addresses, as that address.
func (m MasterID) String() string {
	if m == NoMaster {
		return "-"
	}
	if m >= 1<<24 {
		return strconv.Itoa(int(m>>24)) + "." + strconv.Itoa(int(m>>16&0xff)) + "." + strconv.Itoa(int(m>>8&0xff)) + "." + strconv.Itoa(int(m&0xff))
	}
	return "M" + strconv.FormatUint(uint64(m), 10)
}

func (c CSID) String() string {
	if c == NoCS {
		return "-"
	}
	return "CS" + strconv.FormatUint(uint64(c), 10)
}

func (l LocationID) String() string {
	if l == NoLocation {
		return "-"
	}
	return "L" + strconv.FormatUint(uint64(l), 10)
}
