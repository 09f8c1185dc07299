package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLeaderTerms: terms read from logs, and the window's changes and its
// longest time without a LEADER.
func TestLeaderTerms(t *testing.T) {
	dir := t.TempDir()
	at := func(s float64) time.Time {
		return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second))).UTC()
	}
	line := func(s float64, from, to string) string {
		return `{"level":"info","from":"` + from + `","to":"` + to + `","time":"` + at(s).Format(time.RFC3339Nano) + `","message":"role change"}` + "\n"
	}
	logs := []string{filepath.Join(dir, "m1.log"), filepath.Join(dir, "m2.log")}
	write := func(path string, lines ...string) {
		var b []byte
		for _, l := range lines {
			b = append(b, l...)
		}
		b = append(b, "not json\n"...)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// m1 leads 1..5 and 9..; m2 leads 5.5..8.
	write(logs[0], line(0.5, "FOLLOWER", "ELECT"), line(1, "ELECT", "LEADER"), line(5, "LEADER", "FOLLOWER"), line(9, "ELECT", "LEADER"))
	write(logs[1], line(5.5, "ELECT", "LEADER"), line(8, "LEADER", "FOLLOWER"))
	terms := LeaderTerms(logs, at(2))
	if len(terms) != 3 || terms[0].Master != 0 || terms[1].Master != 1 || !terms[2].To.IsZero() {
		t.Fatalf("terms %+v", terms)
	}
	began, gap := Leadership(terms, at(2), at(12))
	if began != 2 || gap != time.Second {
		t.Errorf("window 2..12: %d began, longest gap %v; want 2 and 1s", began, gap)
	}
	if began, gap := Leadership(terms, at(2), at(4)); began != 0 || gap != 0 {
		t.Errorf("window 2..4: %d began, longest gap %v; want 0 and 0", began, gap)
	}
	if began, gap := Leadership(terms[:2], at(2), at(12)); began != 1 || gap != 4*time.Second {
		t.Errorf("window 2..12 without the last term: %d began, longest gap %v; want 1 and 4s", began, gap)
	}
}
