package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/mfs-election/mfs-election/internal/clusterview"
)

// -SQP, the quorum plan (clusterview.PlanOf): two tables, the single
// failures and the chunkservers each location may lose, then the
// verdict, the closest failure, the fix and any note.

// planTables are -SQP's tables; none when there is no LEADER to plan for
// (the verdict line says so).
func planTables(p *clusterview.Plan, o options) []table {
	if p == nil || !p.Leader.IP.IsValid() {
		return nil
	}
	title, loss := titlePlan, titleLoss
	if o.mode == modeTable {
		title += fmt.Sprintf(" (LEADER %s, config %d)", p.Leader.IP, p.Config)
	}
	return []table{tableOf(title, failureCols(), p.Failures), tableOf(loss, lossCols(), p.Locations)}
}

// stays is "yes" (good) or "no" (bad).
func stays(ok bool) cell {
	if ok {
		return cell{text: "yes", tone: clusterview.ToneGood}
	}
	return cell{text: "no", tone: clusterview.ToneBad}
}

// marginText is a margin, "-" when nothing keeps a LEADER.
func marginText(m int) string {
	if m < 0 {
		return "-"
	}
	return strconv.Itoa(m)
}

// failureCols are the columns of the single failures; the closest one
// is marked in its own column.
func failureCols() []column[clusterview.FailureRow] {
	return []column[clusterview.FailureRow]{
		textCol("failure", func(r clusterview.FailureRow) string { return r.Label() + " lost" }),
		{head: "LEADER stays", cell: func(r clusterview.FailureRow) cell { return stays(r.Keeps) },
			raw: func(r clusterview.FailureRow) string { return yesNo(r.Keeps) }},
		{head: "margin", right: true, cell: func(r clusterview.FailureRow) cell { return cell{text: marginText(r.Margin)} },
			raw: func(r clusterview.FailureRow) string { return strconv.Itoa(r.Margin) }},
		{head: "closest", cell: func(r clusterview.FailureRow) cell {
			if r.Closest {
				return cell{text: "<-", tone: clusterview.ToneWarn}
			}
			return cell{}
		}, raw: func(r clusterview.FailureRow) string { return yesNo(r.Closest) }},
		textCol("why", func(r clusterview.FailureRow) string { return r.Why }),
	}
}

// lossCols are the columns of the chunkservers each location may lose.
func lossCols() []column[clusterview.LossRow] {
	return []column[clusterview.LossRow]{
		textCol("location", func(r clusterview.LossRow) string { return r.Name }),
		textCol("state", func(r clusterview.LossRow) string { return onOff(r.On) }),
		textCol("default", func(r clusterview.LossRow) string { return yesNo(r.Default) }),
		numCol("registered", func(r clusterview.LossRow) int { return r.Registered }),
		numCol("votes", func(r clusterview.LossRow) int { return r.Votes }),
		{head: "may lose", right: true, cell: func(r clusterview.LossRow) cell {
			switch {
			case r.Registered == 0:
				return cell{text: "-"}
			case r.All:
				return cell{text: fmt.Sprintf("all %d", r.SafeLoss)}
			}
			return cell{text: strconv.Itoa(r.SafeLoss), tone: clusterview.ToneWarn}
		}, raw: func(r clusterview.LossRow) string { return strconv.Itoa(r.SafeLoss) }},
		textCol("one more", func(r clusterview.LossRow) string { return r.Then }),
	}
}

// writePlanLines prints, under the tables, the verdict, the closest
// failure, the fix and the notes. In plain mode: "Quorum plan
// verdict:<TAB>held<TAB>margin<TAB>text", "Quorum plan
// closest:<TAB>text", "Quorum plan fix:<TAB>fix<TAB>note" ("-": none),
// "Quorum plan note:<TAB>text".
func writePlanLines(out io.Writer, p clusterview.Plan, o options) {
	if o.mode == modePlain {
		fmt.Fprintf(out, "%s:\t%s\t%d\t%s\n", titlePlanVerdict, yesNo(p.Held), p.Margin, p.Verdict)
		if p.Closest != "" {
			fmt.Fprintf(out, "%s:\t%s\n", titleClosest, p.Closest)
		}
		if p.FixNote != "" {
			fmt.Fprintf(out, "%s:\t%s\t%s\n", titleFix, orDash(p.Fix), p.FixNote)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(out, "%s:\t%s\n", titlePlanNote, n)
		}
		return
	}
	tone := clusterview.ToneBad
	if p.Held {
		tone = clusterview.ToneGood
	}
	fmt.Fprintln(out, paint(p.Verdict, tone, o.colour))
	if p.Closest != "" {
		fmt.Fprintln(out, "Closest to losing the quorum: "+p.Closest)
	}
	switch {
	case p.Fix != "":
		fmt.Fprintln(out, paint("Fix: "+p.Fix+": "+p.FixNote, clusterview.ToneWarn, o.colour))
	case p.FixNote != "":
		fmt.Fprintln(out, "Fix: "+p.FixNote)
	}
	for _, n := range p.Notes {
		fmt.Fprintln(out, paint("NOTE: "+n, clusterview.ToneWarn, o.colour))
	}
}
