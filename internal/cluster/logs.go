package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// BecameLeader returns the time of the newest "-> LEADER" role change in a
// master's log at or after since (zero when none).
func BecameLeader(logPath string, since time.Time) time.Time {
	f, err := os.Open(logPath)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	var last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			To   string `json:"to"`
			Msg  string `json:"message"`
			Time string `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Msg != "role change" || l.To != "LEADER" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, l.Time)
		if err == nil && !t.Before(since) {
			last = t
		}
	}
	return last
}
