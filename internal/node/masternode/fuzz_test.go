package masternode

import (
	"testing"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/protocol"
)

// One target per registry of a master's ports and links (go test -fuzz
// takes one at a time); the harness and the seeds: fuzzRegistry.

func FuzzMatomlIn(f *testing.F) { nodetest.FuzzRegistry(f, matomlIn) }
func FuzzMltomaIn(f *testing.F) { nodetest.FuzzRegistry(f, mltomaIn) }
func FuzzMatocsIn(f *testing.F) { nodetest.FuzzRegistry(f, matocsIn) }
func FuzzMatoclIn(f *testing.F) { nodetest.FuzzRegistry(f, matoclIn) }
func FuzzCltomaIn(f *testing.F) { nodetest.FuzzRegistry(f, protocol.ClientIn()) }
