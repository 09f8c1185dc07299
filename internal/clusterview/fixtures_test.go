package clusterview

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/client"
)

// The tests of this package build their answers with
// internal/clusterview/fixture, as mfscli's golden tests do.

var errUnreachable = fmt.Errorf("%w: connection refused", client.ErrUnreachable)
