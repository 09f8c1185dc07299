// Package locations owns the location map: CIDR ranges mapped to named
// locations, which location is the default, and which locations are switched
// OFF. It also sorts a set of chunkservers into their locations (Group), which
// is what the quorum tally counts by.
//
// Contract:
//   - Pure: no I/O, no clock, no goroutines, no randomness. Results never
//     depend on map iteration order.
//   - A Map is an immutable value. Every change returns a new Map and leaves
//     the receiver (and every slice it ever handed out) untouched, so a caller
//     may keep the old and the new map side by side while a change is in
//     flight.
//   - A valid Map always has 1..MaxLocations locations, exactly one of them
//     the default, unique valid names, and ranges that never overlap, all
//     normalised (masked; IPv4-mapped IPv6 prefixes stored in their IPv4
//     form). An address covered by no range belongs to the default location.
//   - A change that fails returns the receiver unchanged and an error that
//     names the offending value and unwraps to one of the Err* sentinels, so
//     callers can tell kinds apart with errors.Is.
//   - Location ids are assigned at creation and never change; renames and
//     default moves touch names and marks only.
package locations
