package node

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/protocol"
)

// One target per registry of a master's ports and links (go test -fuzz
// takes one at a time); the harness and the seeds: fuzzRegistry.

func FuzzMatomlIn(f *testing.F) { fuzzRegistry(f, matomlIn) }
func FuzzMltomaIn(f *testing.F) { fuzzRegistry(f, mltomaIn) }
func FuzzMatocsIn(f *testing.F) { fuzzRegistry(f, matocsIn) }
func FuzzMatoclIn(f *testing.F) { fuzzRegistry(f, matoclIn) }
func FuzzCltomaIn(f *testing.F) { fuzzRegistry(f, protocol.ClientIn()) }
