package rolestest

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// The simulator's disk keeps the contract; its "crash" loses nothing that
// Apply returned from, and the store is the disk itself.
func TestMemStore(t *testing.T) {
	TestStore(t, Opener{
		New: func(t *testing.T, genesis []changelog.Entry) roles.Store {
			return roles.NewMemStore(roles.Stored{Entries: genesis})
		},
		Reopen: func(t *testing.T, s roles.Store) roles.Store { return s },
	})
}
