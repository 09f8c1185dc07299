package node

import "testing"

// FuzzCstomaIn: what a chunkserver reads from a master (the harness and
// the seeds: fuzzRegistry).
func FuzzCstomaIn(f *testing.F) { fuzzRegistry(f, cstomaIn) }
