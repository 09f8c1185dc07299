package metadata

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/rolestest"
)

// The bbolt store keeps the roles.Store contract, reopened from its files
// after every step (the crash points inside one install, between the
// snapshot file and the log's transaction, are TestCrashDuringInstall's).
func TestStoreConformance(t *testing.T) {
	dirs := map[roles.Store]string{}
	rolestest.TestStore(t, rolestest.Opener{
		New: func(t *testing.T, genesis []changelog.Entry) roles.Store {
			dir := t.TempDir()
			s := openMaster(t, dir)
			t.Cleanup(func() { _ = s.Close() })
			must(t, s.Init("conformance", genesis))
			dirs[s] = dir
			return s
		},
		Reopen: func(t *testing.T, s roles.Store) roles.Store {
			dir := dirs[s]
			must(t, s.(*MasterStore).Close())
			n := openMaster(t, dir)
			t.Cleanup(func() { _ = n.Close() })
			dirs[n] = dir
			return n
		},
	})
}
