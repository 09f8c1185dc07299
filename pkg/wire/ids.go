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

func (m MasterID) String() string {
	if m == NoMaster {
		return "-"
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
