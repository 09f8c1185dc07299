package csnode

import (
	"testing"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
)

// FuzzCstomaIn: what a chunkserver reads from a master (the harness and
// the seeds: fuzzRegistry).
func FuzzCstomaIn(f *testing.F) { nodetest.FuzzRegistry(f, cstomaIn) }
