// Package purity holds the test that keeps the election core pure: the
// packages listed in Pure may not reach a clock, the network, the disk,
// goroutines or a global random source (STYLE.md, "The pure core").
package purity

// Pure lists the packages, relative to the module root, that must stay pure.
var Pure = []string{"pkg/wire", "pkg/locations", "pkg/quorum", "pkg/roles"}
