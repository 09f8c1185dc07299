package main

import (
	"reflect"
	"testing"

	"github.com/rs/zerolog"
)

// hostsSet records the MASTER_HOSTs a reload hands over.
type hostsSet []string

func (h *hostsSet) SetMasterHost(spec string) { *h = append(*h, spec) }

// TestApplyLive (issue 12): the keys a reload applies are MASTER_HOST and
// LOG_LEVEL (docs/operations.md shows the same), and applyLive puts them
// in force; a bad level is refused, and nothing else is taken then.
func TestApplyLive(t *testing.T) {
	if got := spec.Live(); !reflect.DeepEqual(got, []string{"MASTER_HOST", "LOG_LEVEL"}) {
		t.Fatalf("live keys %v: applyLive must put each in force", got)
	}
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	var hosts hostsSet
	next := defaults()
	next.LogLevel, next.MasterHost = "warn", "10.0.0.1,10.0.0.2"
	if err := applyLive(&hosts, next); err != nil || zerolog.GlobalLevel() != zerolog.WarnLevel || !reflect.DeepEqual([]string(hosts), []string{"10.0.0.1,10.0.0.2"}) {
		t.Errorf("LOG_LEVEL = warn: %v, level %v, MASTER_HOST %q", err, zerolog.GlobalLevel(), hosts)
	}
	next.LogLevel = "loud"
	if err := applyLive(&hosts, next); err == nil || zerolog.GlobalLevel() != zerolog.WarnLevel || len(hosts) != 1 {
		t.Errorf("LOG_LEVEL = loud: %v, level %v, MASTER_HOST %q", err, zerolog.GlobalLevel(), hosts)
	}
}
