//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package main

// isTerminal: without termios, output is treated as not a terminal (plain
// lines, no colours).
func isTerminal(uintptr) bool { return false }
