// Package quorum owns the tally: given who is registered in which location
// and what each chunkserver does with its vote, does a master hold quorum,
// could it still get it, or is it out of reach.
//
// The rule (docs/architecture.md §2). Only chunkservers in participating locations
// count; a location participates when it is ON and has at least one
// registered chunkserver. A registered chunkserver that does not vote for
// the master (disconnected, off, with another master) counts against it:
// the denominator is the registry, never the set of reachable chunkservers.
//
//   - Undivided cluster (one participating location): a master has quorum
//     with strictly more than half of the registered chunkservers. Exactly
//     half is not enough.
//   - Divided cluster (two or more participating locations): each location
//     is carried by the master holding strictly more than half of that
//     location's registered chunkservers (a location split exactly in half
//     is carried by nobody). A master has quorum with strictly more than half
//     of the participating locations, or exactly half when the tie is
//     broken for it: by the default location among those it carries, or,
//     when the registry names a witness, by holding the witness lease (the
//     default location then breaks nothing).
//
// The undivided rule is the divided rule with one location (carrying the
// only location means a strict majority of all chunkservers), so one code
// path computes both; Tally.Divided and String still tell them apart.
//
// Contract:
//   - Pure: no I/O, no clock, no goroutines, no randomness; voters are
//     visited in ascending id order so results never depend on map order.
//   - Safety: under one Electorate, at most one master can be Won at a time,
//     because a chunkserver's vote goes to at most one master, so two masters
//     can carry disjoint location sets only, and two disjoint sets cannot
//     both be a strict majority or both be exactly half with the default
//     (or with the witness lease, which one master holds at a time).
//     Two Electorates (a registry change in flight) give no such guarantee
//     on their own: use Joint to require a win under both.
//   - An empty electorate (no counting chunkserver) is Lost with Empty set;
//     bootstrapping a new instance is the role machine's business.
package quorum
