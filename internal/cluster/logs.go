package cluster

import (
	"bufio"
	"encoding/json"
	"os"
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
