package roles

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Candidate is what a voter (or a rival ELECT) knows of a master when it
// picks whom to nominate.
type Candidate struct {
	ID       wire.MasterID
	Eligible bool // holds metadata
	Usurper  bool
	Keep     bool // KEEP_LEADERSHIP and not yielded
	Yielded  bool
	Last     changelog.Pos
}

// Better reports whether a should be nominated rather than b: a USURPER
// first (an admin asked for it), then a KEEP_LEADERSHIP master that has not
// yielded (the lowest id among several), then one that did not give
// leadership away on purpose, then the newest metadata, then the lower id so
// that every voter breaks ties the same way.
func Better(a, b Candidate) bool {
	if a.Eligible != b.Eligible {
		return a.Eligible
	}
	if a.Usurper != b.Usurper {
		return a.Usurper
	}
	if a.Keep != b.Keep {
		return a.Keep
	}
	if a.Keep && a.ID != b.ID {
		// Masters that keep rank by id alone (keep.go): the one a vote
		// or a step-down picks is the one that would not be reclaimed from.
		return a.ID < b.ID
	}
	if a.Yielded != b.Yielded {
		return !a.Yielded
	}
	if a.Last != b.Last {
		return a.Last.NewerThan(b.Last)
	}
	return a.ID < b.ID
}

// MayNominate is the nomination rule of docs/architecture.md ("Metadata
// safety"): a voter nominates only an eligible master whose log is at least
// as new as the newest commit point the voter knows of. Safety does not rest
// on it (an ELECT must catch up before it may lead); it keeps a voter from
// nominating a master that would first have to catch up.
func MayNominate(c Candidate, knownCommit changelog.Pos) bool {
	if !c.Eligible {
		return false
	}
	return c.Last.Covers(knownCommit)
}
