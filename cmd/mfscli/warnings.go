package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/mfs-election/mfs-election/internal/clusterview"
)

const titleWarning = "Warning"

// writeWarnings prints the warnings of one listing: coloured lines on a
// terminal; "Warning:<TAB>kind<TAB>text" in plain mode.
func writeWarnings(out io.Writer, ws []clusterview.LayoutWarning, kinds []string, o options) {
	for _, w := range ws {
		if !slices.Contains(kinds, w.Kind) {
			continue
		}
		if o.mode == modePlain {
			fmt.Fprintf(out, "%s:\t%s\t%s\n", titleWarning, w.Kind, w.Text)
			continue
		}
		fmt.Fprintln(out, paint(w.Text, clusterview.ToneWarn, o.colour))
	}
}
