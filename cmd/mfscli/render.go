package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mfs-election/mfs-election/internal/clusterview"
)

// colours are MooseFS mfscli's 256-colour codes (MOOSEFS-FACTS.md).
var colours = map[clusterview.Tone]int{
	clusterview.ToneDummy: 244, clusterview.ToneLeader: 34, clusterview.ToneElect: 226, clusterview.ToneFollower: 30, clusterview.ToneDesync: 19, clusterview.ToneDeputy: 208,
	clusterview.ToneUnreachable: 196, clusterview.ToneBusy: 55, clusterview.ToneTransition: 244,
	clusterview.ToneGood: 34, clusterview.ToneWarn: 226, clusterview.ToneBad: 196,
}

// cell is one table cell: its text and what colours it. A cell of parts
// (joined) is painted part by part: text is then their concatenation.
type cell struct {
	text  string
	tone  clusterview.Tone
	parts []cell
}

// joined is one cell of parts, each in its own colour.
func joined(parts ...cell) cell {
	c := cell{parts: parts}
	for _, p := range parts {
		c.text += p.text
	}
	return c
}

// painted is the cell's text in its colours.
func (c cell) painted(colour bool) string {
	if len(c.parts) == 0 {
		return paint(c.text, c.tone, colour)
	}
	var b strings.Builder
	for _, p := range c.parts {
		b.WriteString(paint(p.text, p.tone, colour))
	}
	return b.String()
}

// table is one listing ready to print: cells for a terminal, raw fields
// for plain mode.
type table struct {
	title string
	heads []string
	right []bool // right-aligned (numbers)
	rows  [][]cell
	raw   [][]string
}

// paint wraps s in the tone's colour; padding stays outside the escape
// codes so alignment is computed on visible width.
func paint(s string, t clusterview.Tone, on bool) string {
	c, ok := colours[t]
	if !on || !ok {
		return s
	}
	return fmt.Sprintf("\x1b[38;5;%dm%s\x1b[0m", c, s)
}

func width(s string) int { return utf8.RuneCountInString(s) }

// pad aligns a visible text in w columns (align 'l', 'r' or 'c'), painted
// in its tone; the padding stays outside the escape codes, so alignment is
// computed on the visible width.
func pad(c cell, w int, align byte, colour bool) string {
	gap := max(w-width(c.text), 0)
	left := 0
	switch align {
	case 'r':
		left = gap
	case 'c':
		left = gap / 2
	}
	return strings.Repeat(" ", left) + c.painted(colour) + strings.Repeat(" ", gap-left)
}

// widths is each column's visible width; the last grows so the title fits.
func (t table) widths() []int {
	w := make([]int, len(t.heads))
	for i, h := range t.heads {
		w[i] = width(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			w[i] = max(w[i], width(c.text))
		}
	}
	inner := 3*len(w) - 3
	for _, x := range w {
		inner += x
	}
	if extra := width(t.title) - inner; extra > 0 {
		w[len(w)-1] += extra
	}
	return w
}

// writeTable prints t boxed, as MooseFS's mfscli does on a terminal.
func writeTable(out io.Writer, t table, colour bool) {
	w := t.widths()
	rule := "+"
	for _, x := range w {
		rule += strings.Repeat("-", x+2) + "+"
	}
	fmt.Fprintln(out, "+"+strings.Repeat("-", width(rule)-2)+"+")
	fmt.Fprintln(out, "| "+pad(cell{text: t.title}, width(rule)-4, 'c', false)+" |")
	fmt.Fprintln(out, rule)
	line := func(cells []cell, head bool) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			align := byte('l')
			switch {
			case head:
				align = 'c'
			case t.right[i]:
				align = 'r'
			}
			b.WriteString(" " + pad(c, w[i], align, colour) + " |")
		}
		fmt.Fprintln(out, b.String())
	}
	heads := make([]cell, len(t.heads))
	for i, h := range t.heads {
		heads[i] = cell{text: h}
	}
	line(heads, true)
	fmt.Fprintln(out, rule)
	for _, r := range t.rows {
		line(r, false)
	}
	fmt.Fprintln(out, rule)
}

// writePlain prints one line per row: title, then the raw fields, all
// separated by tabs.
func writePlain(out io.Writer, t table) {
	for _, r := range t.raw {
		fmt.Fprintln(out, t.title+":\t"+strings.Join(r, "\t"))
	}
}

// humanBytes prints a byte count in binary units, as MooseFS does.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}
