package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"time"
)

// LastLogTime scans a JSON-lines log and returns the time of the newest
// line at or after since for which stamp returns ok (zero when none).
func LastLogTime(logPath string, since time.Time, stamp func(line []byte) (time.Time, bool)) time.Time {
	f, err := os.Open(logPath)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	var last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if t, ok := stamp(sc.Bytes()); ok && !t.Before(since) {
			last = t
		}
	}
	return last
}

// BecameLeader returns the time of the newest "-> LEADER" role change in a
// master's log at or after since (zero when none).
func BecameLeader(logPath string, since time.Time) time.Time {
	return roleChangeAt(logPath, since, func(from, to string) bool { return to == "LEADER" })
}

// LeftLeader returns the time of the newest "LEADER ->" role change in a
// master's log at or after since (zero when none): its step-down.
func LeftLeader(logPath string, since time.Time) time.Time {
	return roleChangeAt(logPath, since, func(from, to string) bool { return from == "LEADER" })
}

// roleChangeAt is the time of the newest "role change" line at or after
// since whose roles match.
func roleChangeAt(logPath string, since time.Time, match func(from, to string) bool) time.Time {
	return LastLogTime(logPath, since, func(line []byte) (time.Time, bool) {
		var l struct {
			From string `json:"from"`
			To   string `json:"to"`
			Msg  string `json:"message"`
			Time string `json:"time"`
		}
		if json.Unmarshal(line, &l) != nil || l.Msg != "role change" || !match(l.From, l.To) {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, l.Time)
		return t, err == nil
	})
}

// Term is one master's time as LEADER, read from its log: From its
// "-> LEADER" role change to its "LEADER ->" one (To zero: still LEADER
// when the log was read). A killed LEADER logs no end: read terms only
// over a time without kills.
type Term struct {
	Master   int
	From, To time.Time
}

// LeaderTerms reads the masters' logs (by index) for their terms as
// LEADER that had not ended by since, oldest first.
func LeaderTerms(logs []string, since time.Time) []Term {
	var out []Term
	for i, path := range logs {
		var open *Term
		LastLogTime(path, time.Time{}, func(line []byte) (time.Time, bool) {
			var l struct {
				From string `json:"from"`
				To   string `json:"to"`
				Msg  string `json:"message"`
				Time string `json:"time"`
			}
			if json.Unmarshal(line, &l) != nil || l.Msg != "role change" {
				return time.Time{}, false
			}
			t, err := time.Parse(time.RFC3339Nano, l.Time)
			if err != nil {
				return time.Time{}, false
			}
			switch {
			case l.To == "LEADER":
				open = &Term{Master: i, From: t}
			case l.From == "LEADER" && open != nil:
				open.To = t
				if !t.Before(since) {
					out = append(out, *open)
				}
				open = nil
			}
			return t, true
		})
		if open != nil {
			out = append(out, *open)
		}
	}
	slices.SortFunc(out, func(a, b Term) int { return a.From.Compare(b.From) })
	return out
}

// Leadership is what terms say of the window [from, to]: the terms that
// began in it (LEADER changes), and the longest time in it without a
// LEADER.
func Leadership(terms []Term, from, to time.Time) (began int, longestGap time.Duration) {
	covered := from // the window is accounted for up to here
	for _, t := range terms {
		end := t.To
		if end.IsZero() || end.After(to) {
			end = to
		}
		if t.From.After(from) && !t.From.After(to) {
			began++
		}
		if !end.After(covered) {
			continue
		}
		if t.From.After(covered) {
			start := t.From
			if start.After(to) {
				start = to
			}
			longestGap = max(longestGap, start.Sub(covered))
		}
		covered = end
	}
	if to.After(covered) {
		longestGap = max(longestGap, to.Sub(covered))
	}
	return began, longestGap
}
