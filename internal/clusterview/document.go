package clusterview

import (
	"net/netip"
	"time"
)

// Parts says which listings a Document carries: mfscli's -SIM, -SCS,
// -SLQ, -SIG, -SLH and -SQP.
type Parts struct{ Masters, Chunkservers, Locations, Summary, History, Plan bool }

// AllParts is every listing the masters' /api/v1/status serves: all but
// the quorum plan, which is counted on demand (PlanOf).
var AllParts = Parts{Masters: true, Chunkservers: true, Locations: true, Summary: true, History: true}

// Document is mfscli -j's object, MooseFS's shape: the listings asked for
// under "dataset", the problems (names that did not resolve, masters that
// did not answer) under "errors", always present. A master's
// /api/v1/status serves the same object with every part.
type Document struct {
	Version   string       `json:"version"`
	Timestamp int64        `json:"timestamp"`
	Dataset   DocumentData `json:"dataset"`
	Errors    []string     `json:"errors"`
	// CacheAge: how long ago this document was built, when it is served
	// from a cache (a master's /api/v1/status; absent from mfscli -j,
	// built at once).
	CacheAge *float64 `json:"cache_age_seconds,omitempty"`
}

// DocumentData is a Dataset's parts as they are printed: a part not asked
// for is absent.
type DocumentData struct {
	View         *MasterRef      `json:"view,omitempty"` // absent when no master answered
	TimeRef      string          `json:"time_reference,omitempty"`
	Masters      *[]MasterRow    `json:"masters,omitempty"`
	Chunkservers *[]CSRow        `json:"chunkservers,omitempty"`
	Clones       []CloneRow      `json:"refused_clones,omitempty"`
	Locations    *[]LocRow       `json:"locations,omitempty"`
	Quorum       *QuorumView     `json:"quorum,omitempty"`
	Summary      *Summary        `json:"summary,omitempty"`
	Security     *SecurityView   `json:"security,omitempty"`         // with the masters, while any is unauthenticated
	Warnings     []LayoutWarning `json:"warnings,omitempty"`         // with the masters or the locations
	History      *[]HistoryRow   `json:"election_history,omitempty"` // oldest first
	HistoryInfo  *HistoryView    `json:"election_history_info,omitempty"`
	Plan         *Plan           `json:"quorum_plan,omitempty"` // -SQP
	DryRun       *DryRun         `json:"dry_run,omitempty"`     // an admin command's --dry-run
}

// NewDocument puts the parts p of ds into a Document; version is the
// writer's own (mfscli's or the master's), now the time it was built.
func NewDocument(ds Dataset, errs []string, p Parts, version string, now time.Time) Document {
	d := Document{Version: version, Timestamp: now.Unix(), Errors: append([]string{}, errs...)}
	if ds.View.IP.IsValid() {
		d.Dataset.View = &ds.View
	}
	if p.Masters {
		d.Dataset.Masters, d.Dataset.TimeRef, d.Dataset.Security = &ds.Masters, addrText(ds.TimeRef), ds.Security
	}
	if p.Chunkservers {
		d.Dataset.Chunkservers, d.Dataset.Clones = &ds.Chunkservers, ds.Clones
	}
	if p.Locations {
		d.Dataset.Locations, d.Dataset.Quorum = &ds.Locations, &ds.Quorum
	}
	if p.Summary {
		d.Dataset.Summary = &ds.Summary
	}
	if p.History {
		d.Dataset.History, d.Dataset.HistoryInfo = &ds.History, &ds.HistoryInfo
	}
	if p.Plan {
		d.Dataset.Plan = ds.Plan
	}
	if p.Masters || p.Locations {
		d.Dataset.Warnings = ds.Warnings
	}
	return d
}

func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// AnswerErrors is one line for each master that did not answer.
func AnswerErrors(answers []Answer) []string {
	var errs []string
	for _, a := range answers {
		if a.Err != nil {
			errs = append(errs, a.Addr.String()+": "+a.Err.Error())
		}
	}
	return errs
}
