package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// fakeMaster records the passwords and MASTER_HOSTs a reload puts in force.
type fakeMaster struct{ set, hosts []string }

func (f *fakeMaster) SetMasterHost(spec string) { f.hosts = append(f.hosts, spec) }

func (f *fakeMaster) SetAdminPassword(pw string) error {
	f.set = append(f.set, pw)
	return nil
}

// TestApplyLive (issue 12): the keys a reload applies are LOG_LEVEL,
// ADMIN_PASSWORD and MASTER_HOST (docs/operations.md shows the same), and
// applyLive puts the first two in force, or neither when one is bad; an
// emptied password is warned about; MASTER_HOST is handed to the master
// (which resolves it again) once the others were taken.
func TestApplyLive(t *testing.T) {
	if got := spec.Live(); !reflect.DeepEqual(got, []string{"MASTER_HOST", "ADMIN_PASSWORD", "LOG_LEVEL"}) {
		t.Fatalf("live keys %v: applyLive must put each in force", got)
	}
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	var log bytes.Buffer
	next := defaults()

	f := &fakeMaster{}
	next.LogLevel, next.Node.AdminPassword = "loud", "a-new-admin-password"
	if err := applyLive(f, zerolog.New(&log), next); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") || len(f.set) != 0 {
		t.Errorf("a bad LOG_LEVEL: %v; passwords set %q", err, f.set)
	}
	next.LogLevel, next.Node.AdminPassword = "error", "short"
	if err := applyLive(f, zerolog.New(&log), next); err == nil || !strings.Contains(err.Error(), "ADMIN_PASSWORD") || zerolog.GlobalLevel() != zerolog.InfoLevel {
		t.Errorf("a short ADMIN_PASSWORD: %v; level %v", err, zerolog.GlobalLevel())
	}
	next.Node.AdminPassword = "a-new-admin-password"
	if err := applyLive(f, zerolog.New(&log), next); err != nil || !reflect.DeepEqual(f.set, []string{"a-new-admin-password"}) || zerolog.GlobalLevel() != zerolog.ErrorLevel {
		t.Errorf("good values: %v; passwords set %q, level %v", err, f.set, zerolog.GlobalLevel())
	}
	if strings.Contains(log.String(), "no ADMIN_PASSWORD") {
		t.Errorf("warned with a password set:\n%s", log.String())
	}
	if !reflect.DeepEqual(f.hosts, []string{"mfsmaster"}) {
		t.Errorf("MASTER_HOST handed over %q, want once, after the good values", f.hosts)
	}
	next.LogLevel, next.Node.AdminPassword = "info", ""
	if err := applyLive(f, zerolog.New(&log), next); err != nil || f.set[len(f.set)-1] != "" || !strings.Contains(log.String(), "no ADMIN_PASSWORD") {
		t.Errorf("an emptied password: %v; passwords set %q; log:\n%s", err, f.set, log.String())
	}
}
