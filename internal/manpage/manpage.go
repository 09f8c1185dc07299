// Package manpage writes man pages (roff, the man(7) macros) from the
// definitions the binaries run on: a command's urfave/cli flags and a
// daemon's key table (settings). `make install` asks each binary for its
// pages (--man, --man-cfg), so a page cannot say other than the binary it
// came with.
package manpage

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// Page is one man page.
type Page struct {
	Name    string // mfsmaster, mfsmaster.cfg
	Section int    // 1, 5, 8
	Summary string // the NAME line after the dash
	Version string
	// Synopsis lines, as typed.
	Synopsis []string
	Sections []Section
}

// Section is a heading with paragraphs, then tagged items (an option, a
// key: a tag and its text).
type Section struct {
	Heading string
	Paras   []string
	Items   []Item
}

// Item is a tagged paragraph.
type Item struct{ Tag, Text string }

// Render writes p as roff.
func (p Page) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %d \"\" \"mfs-election %s\" \"mfs-election\"\n", strings.ToUpper(p.Name), p.Section, escape(p.Version))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", escape(p.Name), escape(p.Summary))
	if len(p.Synopsis) > 0 {
		b.WriteString(".SH SYNOPSIS\n.nf\n")
		for _, l := range p.Synopsis {
			b.WriteString(escape(l) + "\n")
		}
		b.WriteString(".fi\n")
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, ".SH %s\n", escape(strings.ToUpper(s.Heading)))
		for i, para := range s.Paras {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			b.WriteString(escape(para) + "\n")
		}
		for _, it := range s.Items {
			fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", escape(it.Tag), escape(it.Text))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escape makes text safe as roff: a backslash doubled, and a line that
// would start with a control character (. or ') guarded.
func escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// Options lists a command's flags as items: each flag's names (one dash
// for a one-letter or MooseFS-style name, two for the rest, as the
// command takes them), its value's name, and its usage with its default.
func Options(flags []cli.Flag) []Item {
	var out []Item
	for _, f := range flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		var names []string
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 || n == strings.ToUpper(n) {
				dash = "-"
			}
			names = append(names, dash+n)
		}
		tag := strings.Join(names, ", ")
		if df.TakesValue() {
			tag += " VALUE"
		}
		text := df.GetUsage()
		d := strings.Trim(df.GetDefaultText(), `"`)
		if d == "" && df.TakesValue() {
			d = strings.Trim(df.GetValue(), `"`)
		}
		if d != "" && d != "false" {
			text += " (default: " + d + ")"
		}
		out = append(out, Item{Tag: tag, Text: text})
	}
	return out
}
