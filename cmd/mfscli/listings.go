package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
)

// Titles, as MooseFS's mfscli words them; plain lines start with them.
const (
	titleMasters      = "Metadata Servers (masters)"
	titleChunkservers = "Chunkservers"
	titleDisconnected = "Disconnected chunkservers"
	titleClones       = "Refused clones (cloned chunkserver or impostor)"
	titleLocations    = "Locations and quorum"
	titleQuorum       = "Quorum"
	titleSummary      = "Cluster summary"
	titleSecurity     = "Security warning"
	titleHistory      = "Election history"
	titleCauses       = "LEADER changes by cause"
	titleUnrecorded   = "Not in the history"
	titlePlan         = "Quorum plan: single failures"
	titleLoss         = "Quorum plan: chunkservers lost per location"
	titlePlanVerdict  = "Quorum plan verdict"
	titleClosest      = "Quorum plan closest"
	titleFix          = "Quorum plan fix"
	titlePlanNote     = "Quorum plan note"
	titleWitness      = "Witness"
)

// mode is how listings are printed.
type mode uint8

const (
	modeTable mode = iota // a terminal: boxed, aligned, coloured
	modePlain             // title:<TAB>field<TAB>field..., raw numbers
	modeJSON              // one object, MooseFS's shape
)

// listing is one of -SIM, -SCS, -SIG, -SLQ, -SLH, -SQP.
type listing uint8

const (
	listMasters listing = iota
	listChunkservers
	listSummary
	listLocations
	listHistory
	listPlan
)

// order is the order listings are printed in, whatever the flags' order.
var order = []listing{listMasters, listChunkservers, listSummary, listLocations, listHistory, listPlan}

var listingFlag = map[listing]string{listMasters: "-SIM", listChunkservers: "-SCS", listSummary: "-SIG", listLocations: "-SLQ",
	listHistory: "-SLH", listPlan: "-SQP"}

// options is what the flags ask of the listings.
type options struct {
	show    map[listing]bool
	mode    mode
	colour  bool
	sortCol int // -o, 1-based; 0: default order
	reverse bool
	zone    *time.Location // local times are shown in it
}

// parts is the listings o shows, as the masters are asked for them and
// -j prints them.
func (o options) parts() clusterview.Parts {
	return clusterview.Parts{Masters: o.show[listMasters], Chunkservers: o.show[listChunkservers],
		Locations: o.show[listLocations], Summary: o.show[listSummary], History: o.show[listHistory], Plan: o.show[listPlan]}
}

// dataset builds what o shows from the answers: the listings, and the
// quorum plan when -SQP asks for it (it is counted on demand).
func dataset(answers []clusterview.Answer, host string, now time.Time, o options) clusterview.Dataset {
	ds := clusterview.Build(answers, host, now)
	if o.show[listPlan] {
		p := clusterview.PlanOf(answers)
		ds.Plan = &p
	}
	return ds
}

// sortable: the listings -o applies to, with their tables' titles and
// column counts.
func sortable(l listing) (title string, columns int, ok bool) {
	switch l {
	case listMasters:
		return titleMasters, len(masterCols(time.UTC)), true
	case listChunkservers:
		return titleChunkservers, len(csCols()), true
	case listLocations:
		return titleLocations, len(locCols()), true
	case listHistory:
		return titleHistory, len(historyCols(time.UTC)), true
	}
	return "", 0, false
}

// checkSort reports a -o that does not fit a listing to be printed.
func checkSort(o options) error {
	if o.sortCol == 0 {
		return nil
	}
	if o.sortCol < 0 {
		return fmt.Errorf("-o %d: columns are counted from 1", o.sortCol)
	}
	applies := false
	for _, l := range order {
		if !o.show[l] {
			continue
		}
		title, n, ok := sortable(l)
		if !ok {
			continue
		}
		applies = true
		if o.sortCol > n {
			return fmt.Errorf("-o %d: the %q table (%s) has %d columns", o.sortCol, title, listingFlag[l], n)
		}
	}
	if !applies {
		return fmt.Errorf("-o sorts the tables of -SIM, -SCS, -SLQ and -SLH; -SIG is a list of values and -SQP a plan in a fixed order: they have no columns to sort")
	}
	return nil
}

// sortDataset applies -o and -r to every sortable list of ds.
func sortDataset(ds *clusterview.Dataset, o options) {
	if o.show[listMasters] {
		sortRows(ds.Masters, masterCols(o.zone), o.sortCol, o.reverse)
	}
	if o.show[listChunkservers] {
		sortRows(ds.Chunkservers, csCols(), o.sortCol, o.reverse)
	}
	if o.show[listLocations] {
		sortRows(ds.Locations, locCols(), o.sortCol, o.reverse)
	}
	if o.show[listHistory] {
		sortRows(ds.History, historyCols(o.zone), o.sortCol, o.reverse)
	}
}

// writeListings writes the listings of ds that o asks for. errs are the problems
// met on the way (names that did not resolve, masters that did not
// answer): in JSON they go in "errors"; otherwise the caller prints them to
// stderr.
func writeListings(out io.Writer, ds clusterview.Dataset, errs []string, o options, now time.Time) error {
	sortDataset(&ds, o)
	if o.mode == modeJSON {
		return writeJSON(out, ds, errs, o, now)
	}
	first := true
	for _, l := range order {
		if !o.show[l] {
			continue
		}
		if !first && o.mode == modeTable {
			fmt.Fprintln(out)
		}
		first = false
		for i, t := range tablesOf(l, ds, o, now) {
			if o.mode == modeTable {
				if i > 0 {
					fmt.Fprintln(out)
				}
				writeTable(out, t, o.colour)
			} else {
				writePlain(out, t)
			}
		}
		if l == listLocations {
			writeVerdict(out, ds.Quorum, o)
			writeWitness(out, ds.Quorum.Witness, o)
			writeWarnings(out, ds.Warnings, clusterview.SLQAlarms, o)
		}
		if l == listMasters && ds.Security != nil {
			writeSecurity(out, *ds.Security, o)
		}
		if l == listMasters {
			writeWitness(out, ds.Quorum.Witness, o)
		}
		if l == listMasters {
			writeWarnings(out, ds.Warnings, clusterview.SIMAlarms, o)
		}
		if l == listChunkservers {
			writeWarnings(out, ds.Warnings, clusterview.SCSAlarms, o)
		}
		if l == listHistory {
			writeHistoryInfo(out, ds.HistoryInfo, o)
		}
		if l == listPlan && ds.Plan != nil {
			writePlanLines(out, *ds.Plan, o)
		}
	}
	return nil
}

// tablesOf builds the table(s) of one listing.
func tablesOf(l listing, ds clusterview.Dataset, o options, now time.Time) []table {
	switch l {
	case listMasters:
		return []table{tableOf(titleMasters, masterCols(o.zone), ds.Masters)}
	case listChunkservers:
		title := titleChunkservers
		if o.mode == modeTable && ds.View.IP.IsValid() {
			title += fmt.Sprintf(" (registry of %s %s)", ds.View.State, ds.View.IP)
		}
		out := []table{tableOf(title, csCols(), ds.Chunkservers)}
		if gone := disconnected(ds.Chunkservers); len(gone) > 0 {
			out = append(out, tableOf(titleDisconnected, discCols(), gone))
		}
		if len(ds.Clones) > 0 {
			out = append(out, tableOf(titleClones, cloneCols(now), ds.Clones))
		}
		return out
	case listLocations:
		return []table{tableOf(titleLocations, locCols(), ds.Locations)}
	case listHistory:
		title := titleHistory
		if h := ds.HistoryInfo; o.mode == modeTable && h.Source.IP.IsValid() {
			title += fmt.Sprintf(" (held by %s %s: %s)", h.Source.State, h.Source.IP, records(len(ds.History), h.Held))
		}
		return []table{tableOf(title, historyCols(o.zone), ds.History)}
	case listPlan:
		return planTables(ds.Plan, o)
	}
	return []table{summaryTable(ds.Summary, o, now)}
}

func disconnected(rows []clusterview.CSRow) []clusterview.CSRow {
	var out []clusterview.CSRow
	for _, r := range rows {
		if !r.Connected {
			out = append(out, r)
		}
	}
	return out
}

// writeVerdict prints the quorum verdict under the locations: coloured on
// a terminal; in plain mode, "Quorum:<TAB>held<TAB>state<TAB>ip<TAB>text".
func writeVerdict(out io.Writer, q clusterview.QuorumView, o options) {
	if o.mode == modePlain {
		fmt.Fprintf(out, "%s:\t%s\t%s\t%s\t%s\n", titleQuorum, yesNo(q.Held), orDash(q.Master.State), orDash(addrText(q.Master.IP)), q.Verdict)
		return
	}
	t := clusterview.ToneBad
	if q.Held {
		t = clusterview.ToneGood
	}
	fmt.Fprintln(out, paint(q.Verdict, t, o.colour))
}

// writeWitness prints the witness line under -SIM and -SLQ while any
// master reports a witness (one configured, or a store set): green while
// one is configured and nothing keeps a master from it, yellow otherwise.
// In plain mode, "Witness:<TAB>configured<TAB>id<TAB>held by<TAB>
// lease_epoch<TAB>text" ("-": none).
func writeWitness(out io.Writer, w *clusterview.WitnessView, o options) {
	if w == nil {
		return
	}
	if o.mode == modePlain {
		fmt.Fprintf(out, "%s:\t%s\t%s\t%s\t%d\t%s\n", titleWitness, yesNo(w.Configured), orDash(w.ID), orDash(addrText(w.HeldBy)), w.LeaseEpoch, w.Line)
		return
	}
	t := clusterview.ToneWarn
	if w.Configured && len(w.Problems) == 0 {
		t = clusterview.ToneGood
	}
	fmt.Fprintln(out, paint(w.Line, t, o.colour))
}

// writeSecurity prints the alarm under the masters while any of them runs
// unauthenticated: one coloured line on a terminal; in plain mode,
// "Security warning:<TAB>no AUTH_CODE<TAB>no ADMIN_PASSWORD<TAB>no
// mfsexports.cfg<TAB>text", each list of masters comma-separated ("-":
// none).
func writeSecurity(out io.Writer, s clusterview.SecurityView, o options) {
	if o.mode == modePlain {
		list := func(l []netip.Addr) string {
			if len(l) == 0 {
				return "-"
			}
			names := make([]string, len(l))
			for i, a := range l {
				names[i] = a.String()
			}
			return strings.Join(names, ",")
		}
		fmt.Fprintf(out, "%s:\t%s\t%s\t%s\t%s\n", titleSecurity, list(s.NoAuthCode), list(s.AdminOpen), list(s.ExportsOpen), s.Warning)
		return
	}
	fmt.Fprintln(out, paint(s.Warning, clusterview.ToneBad, o.colour))
}

// summaryItem is one line of -SIG: its name, its text on a terminal and
// its raw fields.
type summaryItem struct {
	name      string
	text      cell
	raw       []string
	plainOnly bool // on a terminal it is part of another line
}

func summaryTable(s clusterview.Summary, o options, now time.Time) table {
	t := table{title: titleSummary, heads: []string{"item", "value"}, right: []bool{false, false}}
	for _, it := range summaryItems(s, o.zone, now) {
		if !it.plainOnly {
			t.rows = append(t.rows, []cell{{text: it.name}, it.text})
		}
		t.raw = append(t.raw, append([]string{it.name}, it.raw...))
	}
	return t
}

func summaryItems(s clusterview.Summary, zone *time.Location, now time.Time) []summaryItem {
	leader := summaryItem{name: "leader", text: cell{text: "none", tone: clusterview.ToneBad}, raw: []string{"-"}}
	if s.Leader.IsValid() {
		leader = summaryItem{name: "leader", text: cell{text: s.Leader.String(), tone: clusterview.ToneLeader}, raw: []string{s.Leader.String()}}
	}
	states := stateNames(s.States)
	counts := make([]string, len(states))
	items := []summaryItem{
		leader,
		{name: "epoch", text: cell{text: fmt.Sprint(s.Epoch)}, raw: []string{fmt.Sprint(s.Epoch)}},
		{name: "masters", text: cell{text: fmt.Sprint(s.Masters)}, raw: []string{fmt.Sprint(s.Masters)}},
	}
	for i, st := range states {
		counts[i] = fmt.Sprintf("%s %d", st, s.States[st])
		items = append(items, summaryItem{name: "masters " + st, raw: []string{fmt.Sprint(s.States[st])}, plainOnly: true})
	}
	// On a terminal the counts per state are on the masters line.
	items[2].text.text += " (" + strings.Join(counts, ", ") + ")"
	quorum := cell{text: "not held", tone: clusterview.ToneBad}
	if s.QuorumHeld {
		quorum = cell{text: "held", tone: clusterview.ToneGood}
	}
	items = append(items,
		summaryItem{name: "chunkservers", text: cell{text: fmt.Sprintf("%d registered, %d connected", s.Registered, s.Connected)},
			raw: []string{fmt.Sprint(s.Registered), fmt.Sprint(s.Connected)}},
		summaryItem{name: "locations", text: cell{text: fmt.Sprintf("%d of %d ON", s.LocationsOn, s.Locations)},
			raw: []string{fmt.Sprint(s.LocationsOn), fmt.Sprint(s.Locations)}},
		summaryItem{name: "quorum", text: quorum, raw: []string{yesNo(s.QuorumHeld)}},
		leaderChange(s, zone, now),
	)
	return items
}

func leaderChange(s clusterview.Summary, zone *time.Location, now time.Time) summaryItem {
	it := summaryItem{name: "last leader change", text: cell{text: "not seen since the master started"}, raw: []string{"0", "-"}}
	if s.LeaderChangeMs == 0 {
		return it
	}
	at := time.UnixMilli(s.LeaderChangeMs)
	it.text.text = fmt.Sprintf("%s (%s ago)", at.In(zone).Format("2006-01-02 15:04:05"), ago(now.Sub(at)))
	it.raw = []string{strconv.FormatInt(s.LeaderChangeMs, 10), strconv.FormatFloat(s.LeaderChangeAgo, 'f', 0, 64)}
	return it
}

// ago prints a duration as operators read it: 42s, 3m20s, 5h03m, 2d04h.
func ago(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 0:
		return "in the future: clocks differ"
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 48*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// stateNames orders state words as an operator scans them: who leads,
// who is running for it, who follows, then the troubles.
func stateNames(m map[string]int) []string {
	rank := func(s string) int {
		for i, p := range []string{"LEADER", "DEPUTY", "ELECT", "USURPER", "transition", "FOLLOWER", "DUMMY", "UNREACHABLE", "BUSY"} {
			if strings.HasPrefix(s, p) {
				return i
			}
		}
		return 99
	}
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

func writeJSON(out io.Writer, ds clusterview.Dataset, errs []string, o options, now time.Time) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(clusterview.NewDocument(ds, errs, o.parts(), cliVersion, now))
}

// records counts the records listed, and those held when they are more.
func records(listed, held int) string {
	switch {
	case listed < held:
		return fmt.Sprintf("newest %d of %d records", listed, held)
	case listed == 0:
		return "no records"
	case listed == 1:
		return "1 record"
	}
	return fmt.Sprintf("%d records", listed)
}

// writeHistoryInfo prints, under the history, the LEADER changes ever
// recorded by cause and, while any master's role changes are not all in
// the history, a note naming them. In plain mode: "LEADER changes by
// cause:<TAB>all<TAB>N" then one line a cause counted, and
// "Not in the history:<TAB>ip<TAB>waiting<TAB>lost" a master.
func writeHistoryInfo(out io.Writer, h clusterview.HistoryView, o options) {
	causes := clusterview.Causes(h.LeaderChanges)
	if o.mode == modePlain {
		fmt.Fprintf(out, "%s:\tall\t%d\n", titleCauses, h.LeaderChangesTotal)
		for _, c := range causes {
			fmt.Fprintf(out, "%s:\t%s\t%d\n", titleCauses, c, h.LeaderChanges[c])
		}
		for _, u := range h.Unrecorded {
			fmt.Fprintf(out, "%s:\t%s\t%d\t%d\n", titleUnrecorded, u.IP, u.Waiting, u.Lost)
		}
		return
	}
	line := "none recorded"
	if len(causes) > 0 {
		counts := make([]string, len(causes))
		for i, c := range causes {
			counts[i] = fmt.Sprintf("%s %d", c, h.LeaderChanges[c])
		}
		line = fmt.Sprintf("%s (%d in all)", strings.Join(counts, ", "), h.LeaderChangesTotal)
	}
	fmt.Fprintln(out, titleCauses+": "+line)
	if h.Note != "" {
		fmt.Fprintln(out, paint(h.Note, clusterview.ToneWarn, o.colour))
	}
}
