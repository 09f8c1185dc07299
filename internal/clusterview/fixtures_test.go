package clusterview

import (
	"fmt"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// The fixtures' helpers, by their short names (internal/clusterview/fixture).
var (
	t0         = fixture.T0
	ms         = fixture.Ms
	addr       = fixture.Addr
	at         = fixture.At
	locations  = fixture.Locations
	registryOf = fixture.RegistryOf
	all        = fixture.All
	none       = fixture.None
	ids        = fixture.IDs
	loc        = fixture.Loc
	tally      = fixture.Tally
	master     = fixture.Master
	follower   = fixture.Follower
)

const (
	clusterID = fixture.ClusterID
	gib       = fixture.GiB
)

var errUnreachable = fmt.Errorf("%w: connection refused", client.ErrUnreachable)
