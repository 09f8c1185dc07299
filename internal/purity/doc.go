// Package purity holds the tests that keep the layers apart: the election
// core pure (the packages listed in Pure may not reach a clock, the
// network, the disk, goroutines or a global random source; STYLE.md, "The
// pure core"), the public packages a leaf (none imports an internal
// one, and pkg/client links none of the daemons' libraries), the two
// machines apart (TestMachinesApart), and the two daemons' drivers apart
// (TestDriversApart: mfschunkserver reaches no master code, mfsmaster no
// voter code, and their shared base, internal/node, neither machine).
package purity

// Pure lists the packages, relative to the module root, that must stay pure.
var Pure = []string{"pkg/wire", "pkg/locations", "pkg/quorum", "pkg/registry", "pkg/changelog", "pkg/namespace", "pkg/witness", "pkg/roles", "pkg/roles/master", "pkg/roles/voter"}
