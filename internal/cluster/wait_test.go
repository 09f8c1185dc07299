package cluster_test

import (
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster/clustertest"
)

// The bounded waits of clustertest (its tests are there), under the
// short names the tests of this package use.

// eventually calls check every poll until it returns nil, for at most
// within, and fails the test with what it waited for and check's last
// error if it never does.
func eventually(t *testing.T, within, poll time.Duration, what string, check func() error) {
	t.Helper()
	clustertest.Eventually(t, within, poll, what, check)
}

// waitUntil is eventually for helpers that hand the failure to their
// caller: nil once check passes, else check's last error.
var waitUntil = clustertest.WaitUntil

// throughout calls check every poll for d and returns its first error:
// for what must hold the whole time, where eventually is for what must
// come about.
var throughout = clustertest.Throughout
