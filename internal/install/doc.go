// Package install holds the test of `make install`: the files it puts
// where, the operator's configs it leaves alone, and its systemd units as
// systemd-analyze reads them. It has no code of its own.
package install
