package manpage

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestRender: roff's control characters in the text cannot start a
// request, a backslash stays a backslash, and options are listed with
// their dashes, value and default, hidden ones left out.
func TestRender(t *testing.T) {
	p := Page{Name: "mfstest", Section: 8, Summary: "a test", Version: "1.0", Synopsis: []string{"mfstest [-c CFG]"},
		Sections: []Section{{Heading: "Description", Paras: []string{".starts with a dot", `C:\path`}},
			{Heading: "Options", Items: Options([]cli.Flag{
				&cli.StringFlag{Name: "c", Usage: "config file", Value: "/etc/x.cfg"},
				&cli.BoolFlag{Name: "SIM", Usage: "list the masters"},
				&cli.DurationFlag{Name: "timeout", Usage: "how long"},
				&cli.BoolFlag{Name: "man", Hidden: true},
			})}}}
	var b strings.Builder
	if err := p.Render(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{".TH MFSTEST 8 ", ".SH NAME\nmfstest \\- a test\n", "\\&.starts with a dot", `C:\epath`,
		".B \\-c VALUE\nconfig file (default: /etc/x.cfg)", ".B \\-SIM\nlist the masters", ".B \\-\\-timeout VALUE"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "man") && strings.Contains(out, ".B \\-\\-man") {
		t.Errorf("a hidden flag is listed:\n%s", out)
	}
}
