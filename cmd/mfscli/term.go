package main

import "github.com/mattn/go-isatty"

// isTerminal: the output goes to a terminal (a table, coloured), rather
// than to a pipe or a file (plain lines, as MooseFS's mfscli does).
func isTerminal(fd uintptr) bool { return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd) }
