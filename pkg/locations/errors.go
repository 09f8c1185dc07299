package locations

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is. The errors returned by Map's methods carry a full
// message naming the offending values and unwrap to one of these.
var (
	// ErrInvalidName: a location name outside 1..MaxNameLen chars of [A-Za-z0-9_.-].
	ErrInvalidName = errors.New("invalid location name")
	// ErrInvalidPrefix: a prefix that is not a valid CIDR range.
	ErrInvalidPrefix = errors.New("invalid range")
	// ErrOverlap: a new range would overlap one already mapped.
	ErrOverlap = errors.New("overlapping range")
	// ErrLimit: creating a location would exceed MaxLocations.
	ErrLimit = errors.New("too many locations")
	// ErrUnknownLocation: no location has the given name.
	ErrUnknownLocation = errors.New("unknown location")
	// ErrNameTaken: another location already has the given name.
	ErrNameTaken = errors.New("location name taken")
	// ErrNotMapped: the exact range given is not mapped.
	ErrNotMapped = errors.New("range not mapped")
	// ErrIsDefault: the default location cannot be removed.
	ErrIsDefault = errors.New("location is the default")
	// ErrHasRanges: a location that still has ranges cannot be removed.
	ErrHasRanges = errors.New("location has ranges")
	// ErrInvalidMap: a Snapshot that does not describe a valid Map.
	ErrInvalidMap = errors.New("invalid location map")
)

// kindError keeps the message exactly as written (no "sentinel: " prefix)
// while still unwrapping to its sentinel.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}
