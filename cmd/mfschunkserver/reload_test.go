package main

import (
	"reflect"
	"testing"

	"github.com/rs/zerolog"
)

// TestApplyLive (issue 12): the one key a reload applies is LOG_LEVEL
// (docs/operations.md shows the same), and applyLive puts it in force; a
// bad level is refused.
func TestApplyLive(t *testing.T) {
	if got := spec.Live(); !reflect.DeepEqual(got, []string{"LOG_LEVEL"}) {
		t.Fatalf("live keys %v: applyLive must put each in force", got)
	}
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	next := defaults()
	next.LogLevel = "warn"
	if err := applyLive(next); err != nil || zerolog.GlobalLevel() != zerolog.WarnLevel {
		t.Errorf("LOG_LEVEL = warn: %v, level %v", err, zerolog.GlobalLevel())
	}
	next.LogLevel = "loud"
	if err := applyLive(next); err == nil || zerolog.GlobalLevel() != zerolog.WarnLevel {
		t.Errorf("LOG_LEVEL = loud: %v, level %v", err, zerolog.GlobalLevel())
	}
}
