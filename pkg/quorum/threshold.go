package quorum

import (
	"cmp"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Threshold is the largest x for which the voters whose value is at least x
// win a tally: what a count over thousands of voters asks without tallying
// again and again. With value a vote's expiry it says until when a master
// holds quorum (it wins at t while t < x); with value what each voter
// knows of the commit point, the newest version a quorum knows. value
// reports a voter's value, or false when the voter is not with the master
// at all; it is called once per counting chunkserver. ok is false when the
// voters with a value do not win even all together (always, for an empty
// electorate).
//
// Why one pass is enough: a location is carried at x when more than half of
// its members have a value of at least x, that is when x is at most its
// (half+1)-th largest value, its carry point. A larger x never carries more
// locations, and a tally with more locations carried is never worse, so the
// answer is the largest carry point at which the locations carried there
// win. TestThreshold checks it against Tally for random electorates.
func Threshold[T cmp.Ordered](e Electorate, value func(wire.CSID) (T, bool)) (x T, ok bool) {
	var none T
	return ThresholdWitness(e, value, none, false)
}

// ThresholdWitness is Threshold with the witness's value too (w, when has):
// with a witness configured, the locations carried at a point that are
// exactly half win there only up to w. So the answer is the larger of the
// strict-majority point and the smaller of the half point and w.
func ThresholdWitness[T cmp.Ordered](e Electorate, value func(wire.CSID) (T, bool), w T, has bool) (x T, ok bool) {
	vals := make([][]T, len(e.places))
	for i, v := range e.voters {
		if val, has := value(v.ID); has {
			vals[e.at[i]] = append(vals[e.at[i]], val)
		}
	}
	type carry struct {
		at  T
		def bool
	}
	var points []carry
	for i, p := range e.places {
		need := p.n/2 + 1
		if len(vals[i]) < need {
			continue // never carried
		}
		slices.SortFunc(vals[i], func(a, b T) int { return cmp.Compare(b, a) })
		points = append(points, carry{at: vals[i][need-1], def: p.def})
	}
	slices.SortFunc(points, func(a, b carry) int { return cmp.Compare(b.at, a.at) })
	carried, withDefault := 0, false
	for i, p := range points {
		carried++
		withDefault = withDefault || (p.def && !e.witness)
		if i+1 < len(points) && points[i+1].at == p.at {
			continue // carried together: decide once all of them are in
		}
		if wins(carried, len(e.places), withDefault) {
			if ok {
				return max(x, p.at), true
			}
			return p.at, true
		}
		if e.witness && has && !ok && wins(carried, len(e.places), true) {
			// Exactly half here: with the witness up to w. Larger points
			// came first, so this is the best half point; go on for a
			// strict majority further down.
			x, ok = min(p.at, w), true
		}
	}
	return x, ok
}
