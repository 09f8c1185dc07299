package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
)

// --dry-run: an admin command that changes the registry or the location
// map is computed against the live status (clusterview.DryRunChange,
// DryRunTempRemove) and printed like a listing; no admin request is sent.
// A command the LEADER would refuse is shown refused, not refused here:
// the exit code is 0 once the command is understood.

const (
	titleDryRun      = "Dry run"
	titleDryCount    = "Dry run count"
	titleDryVerdict  = "Dry run verdict"
	titleDryRunNote  = "Dry run note"
	dryRunCommandSet = "-CRC, -CTR, -CM1, -CM0, -CMAP, -CUNMAP, -CREN, -CDEF, -CON, -COFF"
)

// dryRun computes the dry run of -C<cmd> and prints it. errs are the
// masters that did not answer (stderr, or "errors" in JSON).
func dryRun(out io.Writer, answers []clusterview.Answer, errs []string, cmd string, o options) error {
	d, err := dryRunOf(answers, cmd)
	if err != nil {
		return err
	}
	if err := writeDryRun(out, d, errs, o, clock()); err != nil {
		return err
	}
	if o.mode != modeJSON {
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "mfscli:", e)
		}
	}
	return nil
}

// dryRunOf parses -C<cmd> as the command itself would and computes its
// dry run; err is a command that is not understood, or one that changes
// neither the registry nor the map.
func dryRunOf(answers []clusterview.Answer, cmd string) (clusterview.DryRun, error) {
	parts := strings.Split(cmd, "/")
	switch parts[0] {
	case "TR":
		cs, refused, err := tempRemoveCheck(answers, cmd, parts)
		if err != nil {
			return clusterview.DryRun{}, err
		}
		return clusterview.DryRunTempRemove(answers, "-C"+cmd, cs, refused), nil
	case "RC", "M1", "M0", "MAP", "UNMAP", "REN", "DEF", "ON", "OFF":
		c, _, err := registryChange(leaderOf(answers), cmd, parts)
		if err != nil && !errors.Is(err, errNoLeader) {
			return clusterview.DryRun{}, err
		}
		return clusterview.DryRunChange(answers, "-C"+cmd, c), nil
	case "LU", "LC", "LS", "MS", "MR":
		return clusterview.DryRun{}, fmt.Errorf("-C%s changes neither the registry nor the location map: --dry-run goes with %s", cmd, dryRunCommandSet)
	}
	return clusterview.DryRun{}, unknownAdmin(cmd)
}

// writeDryRun prints d: a table of the locations before and after, the
// two counts, the verdict and the notes. Plain mode: "Dry
// run:<TAB>fields" a location, "Dry run count:<TAB>before|after<TAB>config
// <TAB>outcome<TAB>participating<TAB>carried<TAB>needed<TAB>margin<TAB>text",
// "Dry run verdict:<TAB>accepted<TAB>quorum kept<TAB>text", "Dry run
// note:<TAB>text". JSON: the document with "dry_run".
func writeDryRun(out io.Writer, d clusterview.DryRun, errs []string, o options, now time.Time) error {
	if o.mode == modeJSON {
		doc := clusterview.NewDocument(clusterview.Dataset{View: d.Master}, errs, clusterview.Parts{}, cliVersion, now)
		doc.Dataset.DryRun = &d
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	if len(d.Locations) > 0 {
		title := titleDryRun
		if o.mode == modeTable {
			title += fmt.Sprintf(": %s (%s %s; nothing sent)", d.Command, d.Master.State, d.Master.IP)
		}
		t := tableOf(title, dryCols(d.After != nil), d.Locations)
		if o.mode == modeTable {
			writeTable(out, t, o.colour)
		} else {
			writePlain(out, t)
		}
	}
	counts := []struct {
		name string
		c    *clusterview.DryCount
	}{{"before", d.Before}, {"after", d.After}}
	for _, c := range counts {
		switch {
		case o.mode == modePlain && c.c != nil:
			fmt.Fprintf(out, "%s:\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%s\n", titleDryCount, c.name, c.c.Config, c.c.Outcome,
				c.c.Participating, c.c.Carried, c.c.Needed, c.c.Margin, c.c.Text)
		case o.mode == modeTable && c.c != nil:
			fmt.Fprintf(out, "%-7s config %d: %s: %s (margin %s)\n", c.name+":", c.c.Config, c.c.Outcome, c.c.Text, marginText(c.c.Margin))
		}
	}
	if o.mode == modePlain {
		fmt.Fprintf(out, "%s:\t%s\t%s\t%s\n", titleDryVerdict, yesNo(d.Accepted), yesNo(d.Keeps), d.Verdict)
		for _, n := range d.Notes {
			fmt.Fprintf(out, "%s:\t%s\n", titleDryRunNote, n)
		}
		return nil
	}
	tone := clusterview.ToneWarn
	switch {
	case d.Refused != "":
		tone = clusterview.ToneBad
	case d.Keeps:
		tone = clusterview.ToneGood
	}
	fmt.Fprintln(out, paint(d.Verdict, tone, o.colour))
	for _, n := range d.Notes {
		fmt.Fprintln(out, paint("NOTE: "+n, clusterview.ToneWarn, o.colour))
	}
	return nil
}

// dryCols are the columns of a dry run: each location before, then, when
// the count after is computed, after ("-": not in that map; votes and
// carried "-" for a location that takes no part in the count).
func dryCols(after bool) []column[clusterview.DryLocRow] {
	side := func(suffix string, get func(clusterview.DryLocRow) *clusterview.DryLoc) []column[clusterview.DryLocRow] {
		text := func(f func(*clusterview.DryLoc) string) func(clusterview.DryLocRow) string {
			return func(r clusterview.DryLocRow) string {
				if l := get(r); l != nil {
					return f(l)
				}
				return "-"
			}
		}
		counted := func(f func(*clusterview.DryLoc) string) func(clusterview.DryLocRow) string {
			return text(func(l *clusterview.DryLoc) string {
				if !l.Participating {
					return "-"
				}
				return f(l)
			})
		}
		col := func(head string, right bool, f func(clusterview.DryLocRow) string) column[clusterview.DryLocRow] {
			return column[clusterview.DryLocRow]{head: head + suffix, right: right, raw: f,
				cell: func(r clusterview.DryLocRow) cell { return cell{text: f(r)} }}
		}
		carried := col("carried", false, counted(func(l *clusterview.DryLoc) string { return yesNo(l.Carried) }))
		carried.cell = func(r clusterview.DryLocRow) cell {
			switch l := get(r); {
			case l == nil || !l.Participating:
				return cell{text: "-"}
			default:
				return stays(l.Carried)
			}
		}
		return []column[clusterview.DryLocRow]{
			col("state", false, text(func(l *clusterview.DryLoc) string { return onOff(l.On) })),
			col("default", false, text(func(l *clusterview.DryLoc) string { return yesNo(l.Default) })),
			col("registered", true, text(func(l *clusterview.DryLoc) string { return strconv.Itoa(l.Registered) })),
			col("votes", true, counted(func(l *clusterview.DryLoc) string { return strconv.Itoa(l.Votes) })),
			carried,
		}
	}
	cols := []column[clusterview.DryLocRow]{textCol("location", func(r clusterview.DryLocRow) string { return r.Name })}
	cols = append(cols, side("", func(r clusterview.DryLocRow) *clusterview.DryLoc { return r.Before })...)
	if !after {
		return cols
	}
	return append(cols, side(" after", func(r clusterview.DryLocRow) *clusterview.DryLoc { return r.After })...)
}
