package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// checkFlags refuses values no master could be asked with, before any is
// asked: a port out of range would otherwise wrap (99999 dials 34463), and
// a timeout of zero or less ends every exchange before it starts.
func checkFlags(c *cli.Context) error {
	if p := c.Int("P"); p < 1 || p > 65535 {
		return fmt.Errorf("-P %d: a port is 1 to 65535 (the masters' client port is 9421 by default)", p)
	}
	for _, f := range []string{"timeout", "wait"} {
		if d := c.Duration(f); d <= 0 {
			return fmt.Errorf("--%s %v: must be above zero (e.g. --%s %v)", f, d, f, map[string]time.Duration{"timeout": time.Second, "wait": waitDefault}[f])
		}
	}
	return nil
}

// extraAdminForms are the forms adminCommands mentions only in passing.
var extraAdminForms = []string{"MR/ip", "WITNESS/test/ip"}

// checkAdminSyntax checks -C<cmd> against the command forms before any
// master is asked, so that a mistyped command says so at once, found
// master or not. What needs the masters' answers (is that chunkserver
// registered? is there a LEADER?) is checked later.
func checkAdminSyntax(cmd string) error {
	parts := strings.Split(cmd, "/")
	var want []string
	var forms []string
	for _, a := range adminCommands {
		forms = append(forms, a.form)
	}
	forms = append(forms, extraAdminForms...)
	for _, form := range forms {
		fp := strings.Split(form, "/")
		if fp[0] != parts[0] {
			continue
		}
		want = append(want, "-C"+form)
		if formMatches(fp[1:], parts[1:]) {
			return nil
		}
	}
	if len(want) == 0 {
		return unknownAdmin(cmd)
	}
	return fmt.Errorf("-C%s: want %s%s", cmd, strings.Join(want, " or "), fieldHints(want))
}

// fieldHints says what the fields of the forms in want are.
func fieldHints(want []string) string {
	var hints []string
	all := strings.Join(want, "/")
	for _, h := range []struct{ field, hint string }{{"/ip", "ip an address"}, {"/port", "port 1 to 65535"}, {"/cidr", "cidr a range as 10.1.0.0/16"}} {
		if strings.Contains(all, h.field) {
			hints = append(hints, h.hint)
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, ", ") + ")"
}

// formMatches reports whether args fill the form's fields: ip, port,
// cidr (two parts: its own slash splits it), a name (old, new) or a word
// that must be given as is.
func formMatches(fields, args []string) bool {
	for _, f := range fields {
		if len(args) == 0 {
			return false
		}
		a := args[0]
		args = args[1:]
		switch f {
		case "ip":
			if _, err := netip.ParseAddr(a); err != nil {
				return false
			}
		case "port":
			if p, err := strconv.ParseUint(a, 10, 16); err != nil || p == 0 {
				return false
			}
		case "cidr":
			if len(args) == 0 {
				return false
			}
			if _, err := netip.ParsePrefix(a + "/" + args[0]); err != nil {
				return false
			}
			args = args[1:]
		case "name", "old", "new":
			if a == "" {
				return false
			}
		default:
			if a != f {
				return false
			}
		}
	}
	return len(args) == 0
}
