package clusterview

import (
	"slices"
	"testing"
)

// TestEveryAlarmIsListed: each alarm kind is printed by some mfscli
// listing (-SIM, -SLQ or -SCS); one missing from all three reached only
// the JSON and the page, never an operator at a terminal.
func TestEveryAlarmIsListed(t *testing.T) {
	for _, k := range AlarmKinds {
		if !slices.Contains(SIMAlarms, k) && !slices.Contains(SLQAlarms, k) && !slices.Contains(SCSAlarms, k) {
			t.Errorf("alarm %q is in no listing's set (SIMAlarms, SLQAlarms, SCSAlarms)", k)
		}
	}
}
