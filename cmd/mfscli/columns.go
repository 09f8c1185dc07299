package main

import (
	"cmp"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// column is one column of a listing over rows of type T: its cell on a
// terminal, its raw field in plain mode, and its order for -o.
type column[T any] struct {
	head  string
	right bool
	cell  func(T) cell
	raw   func(T) string
	cmp   func(a, b T) int
}

// tableOf renders rows through cols.
func tableOf[T any](title string, cols []column[T], rows []T) table {
	t := table{title: title}
	for _, c := range cols {
		t.heads = append(t.heads, c.head)
		t.right = append(t.right, c.right)
	}
	for _, r := range rows {
		cells, raw := make([]cell, len(cols)), make([]string, len(cols))
		for i, c := range cols {
			cells[i], raw[i] = c.cell(r), c.raw(r)
		}
		t.rows, t.raw = append(t.rows, cells), append(t.raw, raw)
	}
	return t
}

// sortRows orders rows by column o (1-based; 0 keeps the default order),
// reversed with reverse. The caller has checked o against len(cols).
func sortRows[T any](rows []T, cols []column[T], o int, reverse bool) {
	if o > 0 {
		by := cols[o-1].cmp
		sortStable(rows, by)
	}
	if reverse {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
}

func sortStable[T any](rows []T, by func(a, b T) int) {
	// Insertion sort keeps equal rows in their default order; listings
	// are short.
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && by(rows[j-1], rows[j]) > 0; j-- {
			rows[j-1], rows[j] = rows[j], rows[j-1]
		}
	}
}

// Column builders.

func textCol[T any](head string, get func(T) string) column[T] {
	return column[T]{head: head, cell: func(r T) cell { return cell{text: orDash(get(r))} },
		raw: func(r T) string { return orDash(get(r)) }, cmp: func(a, b T) int { return strings.Compare(get(a), get(b)) }}
}

func numCol[T any, N int | int64 | uint16 | uint32 | uint64](head string, get func(T) N) column[T] {
	return column[T]{head: head, right: true,
		cell: func(r T) cell { return cell{text: fmt.Sprint(get(r))} },
		raw:  func(r T) string { return fmt.Sprint(get(r)) },
		cmp:  func(a, b T) int { return cmp.Compare(get(a), get(b)) }}
}

func addrCol[T any](head string, get func(T) netip.Addr) column[T] {
	return column[T]{head: head, cell: func(r T) cell { return cell{text: orDash(addrText(get(r)))} },
		raw: func(r T) string { return orDash(addrText(get(r))) }, cmp: func(a, b T) int { return get(a).Compare(get(b)) }}
}

func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// masterCols are -SIM's columns. A master that did not answer shows its
// address and state and "-" elsewhere, and sorts first.
func masterCols(zone *time.Location) []column[clusterview.MasterRow] {
	return []column[clusterview.MasterRow]{
		addrCol("ip", func(r clusterview.MasterRow) netip.Addr { return r.IP }),
		infoText("version", false, func(in *clusterview.MasterInfo) string { return in.Version }),
		{head: "state", cell: func(r clusterview.MasterRow) cell { return cell{text: r.State, tone: r.Tone} },
			raw: func(r clusterview.MasterRow) string { return r.State }, cmp: func(a, b clusterview.MasterRow) int { return strings.Compare(a.State, b.State) }},
		infoNum("epoch", func(in *clusterview.MasterInfo) uint64 { return in.Epoch }, nil),
		infoCol("local time", false,
			func(in *clusterview.MasterInfo) cell {
				return cell{text: time.UnixMilli(in.LocalTimeMs).In(zone).Format("15:04:05.000"), tone: clusterview.LevelTone(in.OffsetLevel)}
			},
			func(in *clusterview.MasterInfo) string { return strconv.FormatInt(in.LocalTimeMs, 10) },
			func(in *clusterview.MasterInfo) float64 { return float64(in.LocalTimeMs) }),
		infoCol("offset", true,
			func(in *clusterview.MasterInfo) cell {
				return cell{text: fmt.Sprintf("%+.3f s", float64(in.OffsetMs)/1000), tone: clusterview.LevelTone(in.OffsetLevel)}
			},
			func(in *clusterview.MasterInfo) string { return strconv.FormatInt(in.OffsetMs, 10) },
			func(in *clusterview.MasterInfo) float64 { return float64(in.OffsetMs) }),
		infoNum("metadata version", func(in *clusterview.MasterInfo) uint64 { return in.MetaVersion }, nil),
		infoNum("behind", func(in *clusterview.MasterInfo) uint64 { return in.Behind }, nil),
		infoCol("delay", true,
			func(in *clusterview.MasterInfo) cell {
				return cell{text: fmt.Sprintf("%.1f s", in.Delay), tone: clusterview.LevelTone(in.DelayLevel)}
			},
			func(in *clusterview.MasterInfo) string { return strconv.FormatFloat(in.Delay, 'f', 3, 64) },
			func(in *clusterview.MasterInfo) float64 { return in.Delay }),
		infoCol("metadata id", false,
			func(in *clusterview.MasterInfo) cell {
				if in.MetaIDDiffers {
					return cell{text: in.MetaID, tone: clusterview.ToneBad}
				}
				return cell{text: orDash(in.MetaID)}
			},
			func(in *clusterview.MasterInfo) string { return orDash(in.MetaID) }, nil),
		infoNum("cs connected", func(in *clusterview.MasterInfo) int { return in.Connected }, nil),
		infoNum("votes", func(in *clusterview.MasterInfo) int { return in.Votes }, nil),
		infoText("quorum", false, func(in *clusterview.MasterInfo) string { return yesNo(in.HoldsQuorum) }),
		infoText("keep", false, func(in *clusterview.MasterInfo) string { return yesNo(in.Keep) }),
		infoText("yielded", false, func(in *clusterview.MasterInfo) string { return yesNo(in.Yielded) }),
		infoNum("snapshot", func(in *clusterview.MasterInfo) uint64 { return in.Snapshot },
			func(in *clusterview.MasterInfo) string { return zeroDash(in.Snapshot) }),
		infoNum("changelog", func(in *clusterview.MasterInfo) int { return in.Changelog }, nil),
		infoCol("RAM", true,
			func(in *clusterview.MasterInfo) cell { return cell{text: bytesOrDash(in.RSS)} },
			func(in *clusterview.MasterInfo) string { return strconv.FormatUint(in.RSS, 10) },
			func(in *clusterview.MasterInfo) float64 { return float64(in.RSS) }),
		infoCol("CPU", true,
			func(in *clusterview.MasterInfo) cell { return cell{text: fmt.Sprintf("%.1f%%", in.CPU)} },
			func(in *clusterview.MasterInfo) string { return strconv.FormatFloat(in.CPU, 'f', 1, 64) },
			func(in *clusterview.MasterInfo) float64 { return in.CPU }),
		// Last, so that -o numbers of the columns before it stay as they were.
		infoText("protocol", false, func(in *clusterview.MasterInfo) string { return in.Protocol }),
	}
}

func zeroDash(v uint64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatUint(v, 10)
}

func bytesOrDash(n uint64) string {
	if n == 0 {
		return "-"
	}
	return humanBytes(n)
}

// infoCol is a column of what an answering master reports; key nil sorts
// by the raw text.
func infoCol(head string, right bool, text func(*clusterview.MasterInfo) cell, raw func(*clusterview.MasterInfo) string, key func(*clusterview.MasterInfo) float64) column[clusterview.MasterRow] {
	c := column[clusterview.MasterRow]{head: head, right: right,
		cell: func(r clusterview.MasterRow) cell {
			if r.MasterInfo == nil {
				return cell{text: "-"}
			}
			return text(r.MasterInfo)
		},
		raw: func(r clusterview.MasterRow) string {
			if r.MasterInfo == nil {
				return "-"
			}
			return raw(r.MasterInfo)
		},
	}
	c.cmp = func(a, b clusterview.MasterRow) int {
		switch {
		case a.MasterInfo == nil || b.MasterInfo == nil:
			return boolCmp(a.MasterInfo != nil, b.MasterInfo != nil)
		case key != nil:
			return cmp.Compare(key(a.MasterInfo), key(b.MasterInfo))
		}
		return strings.Compare(raw(a.MasterInfo), raw(b.MasterInfo))
	}
	return c
}

func infoText(head string, right bool, get func(*clusterview.MasterInfo) string) column[clusterview.MasterRow] {
	return infoCol(head, right, func(in *clusterview.MasterInfo) cell { return cell{text: get(in)} }, get, nil)
}

// infoNum is a numeric column; text, when given, replaces the number on a
// terminal.
func infoNum[N int | uint64](head string, get func(*clusterview.MasterInfo) N, text func(*clusterview.MasterInfo) string) column[clusterview.MasterRow] {
	raw := func(in *clusterview.MasterInfo) string { return fmt.Sprint(get(in)) }
	shown := raw
	if text != nil {
		shown = text
	}
	c := infoCol(head, true, func(in *clusterview.MasterInfo) cell { return cell{text: shown(in)} }, raw, nil)
	c.cmp = func(a, b clusterview.MasterRow) int {
		if a.MasterInfo == nil || b.MasterInfo == nil {
			return boolCmp(a.MasterInfo != nil, b.MasterInfo != nil)
		}
		return cmp.Compare(get(a.MasterInfo), get(b.MasterInfo))
	}
	return c
}

// csCols are -SCS's columns. (A maintenance column will join them when the
// masters report it.)
func csCols() []column[clusterview.CSRow] {
	space := func(head string, get func(clusterview.CSRow) uint64) column[clusterview.CSRow] {
		c := numCol(head, get)
		c.cell = func(r clusterview.CSRow) cell {
			if r.VoterOnly {
				return cell{text: "-"}
			}
			return cell{text: humanBytes(get(r))}
		}
		return c
	}
	return []column[clusterview.CSRow]{
		addrCol("ip", func(r clusterview.CSRow) netip.Addr { return r.IP }),
		numCol("port", func(r clusterview.CSRow) uint16 { return r.Port }),
		numCol("id", func(r clusterview.CSRow) uint32 { return uint32(r.ID) }),
		textCol("location", func(r clusterview.CSRow) string { return r.Location }),
		textCol("labels", func(r clusterview.CSRow) string { return r.Labels }),
		textCol("voter only", func(r clusterview.CSRow) string { return yesNo(r.VoterOnly) }),
		space("used", func(r clusterview.CSRow) uint64 { return r.Used }),
		space("total", func(r clusterview.CSRow) uint64 { return r.Total }),
		textCol("maintenance", func(r clusterview.CSRow) string { return onOff(r.Maintenance) }),
		textCol("left out by", func(r clusterview.CSRow) string { return joinAddrs(r.LeftOutBy) }),
		textCol("connected to", func(r clusterview.CSRow) string { return joinAddrs(r.ConnectedTo) }),
		textCol("vote counted by", func(r clusterview.CSRow) string { return joinRefs(r.VoteWith, false) }),
		{head: "counter state", cell: func(r clusterview.CSRow) cell {
			if len(r.VoteWith) == 0 {
				return cell{text: "-"}
			}
			return cell{text: joinRefs(r.VoteWith, true), tone: r.VoteWith[0].Tone}
		}, raw: func(r clusterview.CSRow) string { return orDash(joinRefs(r.VoteWith, true)) },
			cmp: func(a, b clusterview.CSRow) int {
				return strings.Compare(joinRefs(a.VoteWith, true), joinRefs(b.VoteWith, true))
			}},
		textCol("version", func(r clusterview.CSRow) string { return orDash(r.Version) }),
		textCol("protocol", func(r clusterview.CSRow) string { return orDash(r.Protocol) }),
		textCol("voter record", voterRecordWord),
	}
}

// voterRecordWord: UNCERTAIN while the voter grants no vote until a LEADER
// restores its record, damaged once it was restored (the alarm says what
// and where), ok, or - while it is connected to no master.
func voterRecordWord(r clusterview.CSRow) string {
	switch {
	case r.Uncertain:
		return "UNCERTAIN"
	case r.Record != "":
		return "damaged"
	case !r.Connected:
		return "-"
	}
	return "ok"
}

func joinAddrs(list []netip.Addr) string {
	s := make([]string, len(list))
	for i, a := range list {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// joinRefs lists masters' addresses, or their states with states.
func joinRefs(list []clusterview.MasterRef, states bool) string {
	s := make([]string, len(list))
	for i, m := range list {
		s[i] = m.IP.String()
		if states {
			s[i] = m.State
		}
	}
	return strings.Join(s, ",")
}

// discCols are the columns of the disconnected chunkservers' block.
func discCols() []column[clusterview.CSRow] {
	return []column[clusterview.CSRow]{
		addrCol("ip", func(r clusterview.CSRow) netip.Addr { return r.IP }),
		numCol("port", func(r clusterview.CSRow) uint16 { return r.Port }),
		numCol("id", func(r clusterview.CSRow) uint32 { return uint32(r.ID) }),
		textCol("location", func(r clusterview.CSRow) string { return r.Location }),
		textCol("maintenance", func(r clusterview.CSRow) string { return onOff(r.Maintenance) }),
		textCol("remove it with", func(r clusterview.CSRow) string { return r.Removal }),
	}
}

// cloneCols are the columns of -SCS's refused clones: who tried, which id,
// who holds it, which master refused it, how often and how long ago.
func cloneCols(now time.Time) []column[clusterview.CloneRow] {
	return []column[clusterview.CloneRow]{
		addrCol("ip", func(r clusterview.CloneRow) netip.Addr { return r.IP }),
		numCol("id", func(r clusterview.CloneRow) uint32 { return uint32(r.ID) }),
		addrCol("id held by", func(r clusterview.CloneRow) netip.Addr { return r.Holder }),
		addrCol("refused by", func(r clusterview.CloneRow) netip.Addr { return r.RefusedBy }),
		numCol("times", func(r clusterview.CloneRow) int { return r.Count }),
		textCol("last seen", func(r clusterview.CloneRow) string {
			return now.Sub(time.UnixMilli(r.LastMs)).Round(time.Second).String() + " ago"
		}),
	}
}

// locCols are -SLQ's columns. Reach, votes and carried are "-" for a
// location that takes no part in the count, or when no master counts.
func locCols() []column[clusterview.LocRow] {
	count := func(head string, get func(*clusterview.LocCount) int) column[clusterview.LocRow] {
		c := column[clusterview.LocRow]{head: head, right: true}
		text := func(r clusterview.LocRow) string {
			if r.LocCount == nil {
				return "-"
			}
			return strconv.Itoa(get(r.LocCount))
		}
		c.cell = func(r clusterview.LocRow) cell { return cell{text: text(r)} }
		c.raw = text
		c.cmp = func(a, b clusterview.LocRow) int {
			if a.LocCount == nil || b.LocCount == nil {
				return boolCmp(a.LocCount != nil, b.LocCount != nil)
			}
			return cmp.Compare(get(a.LocCount), get(b.LocCount))
		}
		return c
	}
	return []column[clusterview.LocRow]{
		numCol("config", func(r clusterview.LocRow) uint64 { return r.Config }),
		textCol("location", func(r clusterview.LocRow) string { return r.Name }),
		textCol("ranges", rangesText),
		{head: "state", cell: func(r clusterview.LocRow) cell {
			if r.On {
				return cell{text: "ON"}
			}
			return cell{text: "OFF", tone: clusterview.ToneDummy}
		}, raw: func(r clusterview.LocRow) string { return onOff(r.On) }, cmp: func(a, b clusterview.LocRow) int { return boolCmp(a.On, b.On) }},
		textCol("default", func(r clusterview.LocRow) string { return yesNo(r.Default) }),
		numCol("registered", func(r clusterview.LocRow) int { return r.Registered }),
		count("reach", func(c *clusterview.LocCount) int { return c.Reach }),
		count("votes", func(c *clusterview.LocCount) int { return c.Votes }),
		{head: "carried", cell: func(r clusterview.LocRow) cell {
			switch {
			case r.LocCount == nil:
				return cell{text: "-"}
			case r.Carried:
				return cell{text: "yes", tone: clusterview.ToneGood}
			}
			return cell{text: "no", tone: clusterview.ToneBad}
		}, raw: carriedText, cmp: func(a, b clusterview.LocRow) int { return strings.Compare(carriedText(a), carriedText(b)) }},
	}
}

func rangesText(r clusterview.LocRow) string {
	if r.Ranges == nil {
		return "?" // an older config's ranges are not reported
	}
	s := make([]string, len(r.Ranges))
	for i, p := range r.Ranges {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func onOff(on bool) string {
	if on {
		return "ON"
	}
	return "OFF"
}

func carriedText(r clusterview.LocRow) string {
	if r.LocCount == nil {
		return "-"
	}
	return yesNo(r.Carried)
}

// historyCols are -SLH's columns. The deposed master and why it went are
// "-" except in a new LEADER's record; time is "-" when the master's clock
// was not known yet.
func historyCols(zone *time.Location) []column[clusterview.HistoryRow] {
	return []column[clusterview.HistoryRow]{
		{head: "time", cell: func(r clusterview.HistoryRow) cell { return cell{text: recordTime(r.TimeMs, zone)} },
			raw: func(r clusterview.HistoryRow) string { return strconv.FormatInt(r.TimeMs, 10) },
			cmp: func(a, b clusterview.HistoryRow) int { return cmp.Compare(a.TimeMs, b.TimeMs) }},
		masterIDCol("master", func(r clusterview.HistoryRow) (netip.Addr, wire.MasterID) { return r.IP, r.MasterID }),
		{head: "change", cell: func(r clusterview.HistoryRow) cell {
			return joined(cell{text: r.From, tone: r.FromTone}, cell{text: " -> "}, cell{text: r.To, tone: r.ToTone})
		}, raw: changeText, cmp: func(a, b clusterview.HistoryRow) int { return strings.Compare(changeText(a), changeText(b)) }},
		numCol("epoch", func(r clusterview.HistoryRow) uint64 { return r.Epoch }),
		textCol("reason", clusterview.HistoryRow.ReasonText),
		textCol("votes", votesText),
		masterIDCol("deposed", func(r clusterview.HistoryRow) (netip.Addr, wire.MasterID) { return r.Deposed, r.DeposedID }),
		textCol("why", func(r clusterview.HistoryRow) string { return r.Why }),
	}
}

// recordTime is a record's time as the listings show times: local, to
// the millisecond (a master's role changes come fractions of a second
// apart); "-" when not known.
func recordTime(ms int64, zone *time.Location) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).In(zone).Format("2006-01-02 15:04:05.000")
}

func changeText(r clusterview.HistoryRow) string { return r.From + " -> " + r.To }

// votesText is a record's tally: "dc1 2/2 dc2 1/2" (votes/voters per
// location), then the witness's part where it mattered ("+ witness
// lease_epoch 7", "+ no witness lease").
func votesText(r clusterview.HistoryRow) string {
	s := make([]string, len(r.Votes), len(r.Votes)+1)
	for i, v := range r.Votes {
		s[i] = fmt.Sprintf("%s %d/%d", v.Location, v.Votes, v.Voters)
	}
	if w := r.WitnessVotes(); w != "" {
		s = append(s, w)
	}
	return strings.Join(s, " ")
}

// masterIDCol is a master named by a record: its address, or its id when
// the answering master did not know its address ("-": none).
func masterIDCol[T any](head string, get func(T) (netip.Addr, wire.MasterID)) column[T] {
	text := func(r T) string {
		a, id := get(r)
		switch {
		case a.IsValid():
			return a.String()
		case id != wire.NoMaster:
			return fmt.Sprintf("id %d", id)
		}
		return "-"
	}
	return column[T]{head: head, cell: func(r T) cell { return cell{text: text(r)} }, raw: text,
		cmp: func(a, b T) int {
			aa, ai := get(a)
			ba, bi := get(b)
			return cmp.Or(aa.Compare(ba), cmp.Compare(ai, bi))
		}}
}
