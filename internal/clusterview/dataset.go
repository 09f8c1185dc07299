package clusterview

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Dataset is everything the listings show, built by build from the
// masters' answers alone. The rows' JSON names follow MooseFS's mfscli -j
// (snake_case, ip, strver, state, metadata_version, csid, ...); -j prints
// the parts asked for (jsonDataset).
type Dataset struct {
	// View is the master whose registry and location map are shown
	// (chooseView); TimeRef the one whose clock the offsets are from
	// (the LEADER, else View).
	View         MasterRef
	TimeRef      netip.Addr
	Masters      []MasterRow
	Chunkservers []CSRow
	Clones       []CloneRow // chunkserver connections refused as clones, by any master
	Locations    []LocRow
	Quorum       QuorumView
	Summary      Summary
	// Security is what the answering masters leave open (nil: nothing).
	Security *SecurityView
	// Warnings are configuration traps (warnings.go).
	Warnings []LayoutWarning
	// History is the election history (-SLH), oldest first, and
	// HistoryInfo whose it is and what the masters report beside it
	// (history.go).
	History     []HistoryRow
	HistoryInfo HistoryView
	// Plan is the quorum plan (-SQP): nil unless asked for, since Build
	// does not count it (PlanOf).
	Plan *Plan
}

// SecurityView is what the masters run without: each list names the
// masters that reported it; Warning is the line -SIM prints.
type SecurityView struct {
	NoAuthCode  []netip.Addr `json:"no_auth_code"` // any host can pose as a master or a chunkserver
	AdminOpen   []netip.Addr `json:"admin_open"`   // admin commands open to anyone who reaches 9421
	ExportsOpen []netip.Addr `json:"exports_open"` // every client may read and change every key
	Warning     string       `json:"warning"`
}

// securityOf gathers what the answering masters leave open.
func securityOf(answers []Answer) *SecurityView {
	var s SecurityView
	answered := 0
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		answered++
		ip := a.Addr.Addr()
		if a.St.NoAuthCode {
			s.NoAuthCode = append(s.NoAuthCode, ip)
		}
		if a.St.AdminOpen {
			s.AdminOpen = append(s.AdminOpen, ip)
		}
		if a.St.ExportsOpen {
			s.ExportsOpen = append(s.ExportsOpen, ip)
		}
	}
	if len(s.NoAuthCode)+len(s.AdminOpen)+len(s.ExportsOpen) == 0 {
		return nil
	}
	for _, l := range []*[]netip.Addr{&s.NoAuthCode, &s.AdminOpen, &s.ExportsOpen} {
		slices.SortFunc(*l, netip.Addr.Compare)
		if *l == nil {
			*l = []netip.Addr{}
		}
	}
	on := func(l []netip.Addr) string {
		if len(l) == answered {
			return "every master"
		}
		names := make([]string, len(l))
		for i, a := range l {
			names[i] = a.String()
		}
		return strings.Join(names, ", ")
	}
	var parts []string
	if len(s.NoAuthCode) > 0 {
		parts = append(parts, "no AUTH_CODE on "+on(s.NoAuthCode)+" (any host that reaches them can pose as a master or a chunkserver)")
	}
	if len(s.AdminOpen) > 0 {
		parts = append(parts, "no ADMIN_PASSWORD on "+on(s.AdminOpen)+" (admin commands are open to anyone who reaches port 9421)")
	}
	if len(s.ExportsOpen) > 0 {
		parts = append(parts, "no mfsexports.cfg on "+on(s.ExportsOpen)+" (every client may read and change every key)")
	}
	s.Warning = "WARNING: unauthenticated cluster: " + strings.Join(parts, "; ")
	return &s
}

// MasterRef names a master and its state word.
type MasterRef struct {
	IP    netip.Addr `json:"ip"`
	State string     `json:"state"`
	Tone  Tone       `json:"-"` // its colour on a terminal
}

// MasterRow is one master of -SIM. Info is nil for a master that did not
// answer (UNREACHABLE, BUSY); Error then says why.
type MasterRow struct {
	IP    netip.Addr `json:"ip"`
	Port  uint16     `json:"port"`
	State string     `json:"state"`
	Error string     `json:"error,omitempty"`
	*MasterInfo
	Tone Tone `json:"-"`
}

// MasterInfo is what an answering master reports, plus the comparisons
// with the others (clock offset, metadata id).
type MasterInfo struct {
	Version       string     `json:"strver"`
	Protocol      string     `json:"protocol"` // the protocol versions it speaks, "2-3" (a version-2 master says none: "2")
	Role          string     `json:"role"`
	RoleID        int        `json:"role_id"` // MooseFS's state id
	Sync          string     `json:"sync"`
	Transition    string     `json:"transition,omitempty"`
	Epoch         uint64     `json:"epoch"`
	Leader        netip.Addr `json:"leader"` // the LEADER it records ("" none)
	LocalTimeMs   int64      `json:"local_time_ms"`
	OffsetMs      int64      `json:"time_offset_ms"`
	OffsetLevel   Level      `json:"time_offset_level"`
	MetaVersion   uint64     `json:"metadata_version"`
	Commit        uint64     `json:"commit_version"`
	Behind        uint64     `json:"versions_behind"`
	Delay         float64    `json:"metadata_delay"` // seconds
	DelayLevel    Level      `json:"metadata_delay_level"`
	MetaID        string     `json:"metadata_id"`
	MetaIDDiffers bool       `json:"metadata_id_differs"` // not the LEADER's (or majority's); a master without one is not flagged
	Connected     int        `json:"chunkservers_connected"`
	Votes         int        `json:"votes_counted"`
	Registered    int        `json:"chunkservers_registered"`
	HoldsQuorum   bool       `json:"holds_quorum"`
	ConfigVersion uint64     `json:"config_version"`
	InForce       uint64     `json:"config_in_force"`
	Snapshot      uint64     `json:"snapshot_version"`
	Changelog     int        `json:"changelog_entries"`
	RSS           uint64     `json:"memory_rss"`
	CPU           float64    `json:"cpu_percent"`
	Keep          bool       `json:"keep_leadership"` // KEEP_LEADERSHIP = 1
	Yielded       bool       `json:"yielded"`         // leadership was moved away from it on purpose
	Placed        bool       `json:"placed_by_admin"` // an admin command put it in its role
	// Witness is its side of the object-store witness (witness.go; absent
	// when it reports none).
	Witness *MasterWitness `json:"witness,omitempty"`
}

// CSRow is one registered chunkserver: its identity from the View
// master's registry, connections and vote from every master that answered.
type CSRow struct {
	ID          wire.CSID    `json:"csid"`
	IP          netip.Addr   `json:"ip"`
	Port        uint16       `json:"port"`
	Location    string       `json:"location"`
	Labels      string       `json:"labels"`
	VoterOnly   bool         `json:"voter_only"`
	Total       uint64       `json:"total_space"`
	Used        uint64       `json:"used_space"`
	Connected   bool         `json:"connected"`
	ConnectedTo []netip.Addr `json:"connected_to"`
	VoteWith    []MasterRef  `json:"vote_counted_by"`
	Maintenance bool         `json:"maintenance"`               // its absence is planned (-CM1)
	LeftOutBy   []netip.Addr `json:"left_out_by"`               // masters counting without it (-CTR)
	Removal     string       `json:"removal_command,omitempty"` // disconnected only
	Version     string       `json:"strver"`                    // its binary ("" while connected to no master)
	Protocol    string       `json:"protocol"`                  // the protocol versions it speaks ("" likewise)
	// Uncertain: its voter record may lack what it acknowledged (a
	// damaged copy, a lost file): it grants no vote until a LEADER
	// restores it. Record: what was found wrong with the record this run,
	// naming the file ("" when nothing was).
	Uncertain bool   `json:"uncertain"`
	Record    string `json:"record,omitempty"`
}

// CloneRow is a chunkserver connection a master refused because its id was
// already connected from another address: a cloned chunkserver (a copied
// VM or data directory) or an impostor.
type CloneRow struct {
	ID        wire.CSID  `json:"csid"`
	IP        netip.Addr `json:"ip"`         // where the refused connection came from
	Holder    netip.Addr `json:"holder_ip"`  // the address that holds the id
	RefusedBy netip.Addr `json:"refused_by"` // the master that refused it
	Count     int        `json:"count"`
	FirstMs   int64      `json:"first_seen_ms"`
	LastMs    int64      `json:"last_seen_ms"`
}

// cloneRows gathers every answering master's refused clones, by id, then
// address, then master.
func cloneRows(answers []Answer) []CloneRow {
	out := []CloneRow{}
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		for _, c := range a.St.Clones {
			out = append(out, CloneRow{ID: c.ID, IP: c.Addr, Holder: c.Holder, RefusedBy: a.Addr.Addr(),
				Count: c.Count, FirstMs: c.FirstUnixMs, LastMs: c.LastUnixMs})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		if a.IP != b.IP {
			return a.IP.Less(b.IP)
		}
		return a.RefusedBy.Less(b.RefusedBy)
	})
	return out
}

// LocRow is one location under one config. Count is nil when no master
// counts votes for itself or the location does not take part.
type LocRow struct {
	Config        uint64         `json:"config"`
	Name          string         `json:"name"`
	Ranges        []netip.Prefix `json:"ranges"` // null: not known (an older config)
	On            bool           `json:"on"`
	Default       bool           `json:"default"`
	Registered    int            `json:"registered"`
	Participating bool           `json:"participating"`
	*LocCount
}

// LocCount is one location's count for the master the quorum view is of.
type LocCount struct {
	Reach    int  `json:"reach"` // vote sessions open to it
	Votes    int  `json:"votes"` // votes it counts now
	Carried  bool `json:"carried"`
	CanCarry bool `json:"can_carry"` // would be carried if every one that reaches it voted
}

// QuorumView is the count of the LEADER (else ELECT, else DEPUTY) and the
// verdict line that explains it.
type QuorumView struct {
	Master        MasterRef  `json:"master"` // ip "" when there is no such master
	Held          bool       `json:"held"`
	Verdict       string     `json:"verdict"`
	ConfigVersion uint64     `json:"config_version"`
	InForce       uint64     `json:"config_in_force"`
	Tallies       []TallyRow `json:"tallies"`
	// Witness is the object-store witness (witness.go; absent when no
	// master reports one).
	Witness *WitnessView `json:"witness,omitempty"`
}

// TallyRow is one count: under the newest config, and while a change is
// in flight under the previous one too (both must be won).
type TallyRow struct {
	Config         uint64 `json:"config"`
	Outcome        string `json:"outcome"`
	Participating  int    `json:"participating"`
	Carried        int    `json:"carried"`
	Needed         int    `json:"needed"`
	DefaultCarried bool   `json:"default_carried"`
}

// Summary is -SIG.
type Summary struct {
	Leader          netip.Addr     `json:"leader"` // "" none
	Epoch           uint64         `json:"epoch"`  // the LEADER's, else the highest reported
	Masters         int            `json:"masters"`
	States          map[string]int `json:"states"`
	Registered      int            `json:"chunkservers_registered"`
	Connected       int            `json:"chunkservers_connected"`
	LocationsOn     int            `json:"locations_on"`
	Locations       int            `json:"locations"`
	QuorumHeld      bool           `json:"quorum_held"`
	LeaderChangeMs  int64          `json:"last_leader_change_ms"`  // 0: unknown
	LeaderChangeAgo float64        `json:"last_leader_change_ago"` // seconds; 0: unknown
}

// Level grades a clock offset or a delay.
type Level uint8

const (
	LevelOK Level = iota
	LevelWarn
	LevelFlag
)

// levelWords are the levels as JSON spells them.
var levelWords = [...]string{"ok", "warn", "flag"}

// MarshalText prints the level in JSON: ok, warn, flag.
func (l Level) MarshalText() ([]byte, error) {
	return []byte(levelWords[l]), nil
}

// UnmarshalText reads what MarshalText wrote, so that a script can decode
// mfscli -j into a Document; another word is an error naming it.
func (l *Level) UnmarshalText(b []byte) error {
	for i, w := range levelWords {
		if string(b) == w {
			*l = Level(i)
			return nil
		}
	}
	return fmt.Errorf("level %q: want ok, warn or flag", b)
}

// Thresholds of MooseFS's mfscli: a master's clock more than 1 s off the
// LEADER's is worth a look, more than 2 s is wrong; metadata more than 1 s
// behind is worth a look, more than 6 s is trouble.
const (
	OffsetWarn = time.Second
	OffsetFlag = 2 * time.Second
	DelayWarn  = time.Second
	DelayFlag  = 6 * time.Second
)

func grade(d, warn, flag time.Duration) Level {
	if d < 0 {
		d = -d
	}
	switch {
	case d > flag:
		return LevelFlag
	case d > warn:
		return LevelWarn
	}
	return LevelOK
}

// Build turns the answers into the dataset. host is -H as given (for the
// removal commands), now the reading used for "ago". Pure.
func Build(answers []Answer, host string, now time.Time) Dataset {
	var ds Dataset
	view := ChooseView(answers)
	leader := FirstWithRole(answers, roles.Leader)
	timeRef := leader
	if timeRef == nil {
		timeRef = view
	}
	if view != nil {
		ds.View = refOf(*view)
	}
	if timeRef != nil {
		ds.TimeRef = timeRef.Addr.Addr()
	}
	ds.Masters = masterRows(answers, timeRef, referenceID(answers, leader, view))
	ds.Chunkservers = csRows(answers, view, host)
	ds.Clones = cloneRows(answers)
	counter := VoteCounter(answers)
	ds.Locations = locRows(view, counter)
	ds.Quorum = quorumOf(answers, counter)
	ds.Quorum.Witness = witnessView(answers)
	ds.Summary = summarize(answers, leader, view, ds, now)
	ds.Security = securityOf(answers)
	ds.Warnings = alarmsOf(answers, ds)
	ds.History, ds.HistoryInfo = historyOf(answers, leader)
	return ds
}

func refOf(a Answer) MasterRef {
	return MasterRef{IP: a.Addr.Addr(), State: StateWord(a), Tone: ToneOf(a)}
}

// referenceID is the metadata id a master should have: the LEADER's, else
// the one most answering masters report (ties: the View master's).
func referenceID(answers []Answer, leader, view *Answer) string {
	if leader != nil {
		return leader.St.ClusterID
	}
	if view == nil {
		return ""
	}
	count := map[string]int{}
	for _, a := range answers {
		if a.Err == nil && a.St.ClusterID != "" { // "": none yet (-e)
			count[a.St.ClusterID]++
		}
	}
	ids := make([]string, 0, len(count))
	for id := range count {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	best := view.St.ClusterID
	for _, id := range ids {
		if count[id] > count[best] {
			best = id
		}
	}
	return best
}

func masterRows(answers []Answer, timeRef *Answer, refID string) []MasterRow {
	rows := make([]MasterRow, 0, len(answers))
	for _, a := range answers {
		r := MasterRow{IP: a.Addr.Addr(), Port: a.Addr.Port(), State: StateWord(a), Tone: ToneOf(a)}
		if a.Err != nil {
			r.Error = a.Err.Error()
			rows = append(rows, r)
			continue
		}
		r.MasterInfo = infoOf(a.St, timeRef, refID)
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].IP.Less(rows[j].IP) })
	return rows
}

// ProtocolText is a range of protocol versions as the listings show it:
// "3", "2-3"; a node that names none is of version 2, which did not.
func ProtocolText(oldest, newest uint16) string {
	if newest == 0 {
		return "2"
	}
	return frame.VersionsText(max(oldest, 1), newest)
}

func infoOf(st protocol.StatusResp, timeRef *Answer, refID string) *MasterInfo {
	in := &MasterInfo{
		Version: st.Version, Protocol: ProtocolText(st.ProtoMin, st.Proto), Role: st.Role.String(), RoleID: int(st.Role), Sync: st.Sync.String(),
		Transition: st.Transition, Epoch: st.Epoch, Leader: st.Leader,
		LocalTimeMs: st.WallUnixMs, MetaVersion: st.MetaVersion, Commit: st.Commit, Behind: st.Behind,
		Delay: st.Delay.Seconds(), DelayLevel: grade(st.Delay, DelayWarn, DelayFlag),
		MetaID: st.ClusterID, MetaIDDiffers: refID != "" && st.ClusterID != "" && st.ClusterID != refID,
		Connected: st.Connected, Votes: st.Voters, Registered: st.Registered, HoldsQuorum: st.HoldsQuorum,
		ConfigVersion: st.ConfigVersion, InForce: st.InForce,
		Snapshot: st.SnapshotVersion, Changelog: st.ChangelogEntries, RSS: st.RSS, CPU: st.CPU,
		Keep: st.Keep, Yielded: st.Yielded, Placed: st.Placed, Witness: masterWitness(st),
	}
	if timeRef != nil {
		in.OffsetMs = st.WallUnixMs - timeRef.St.WallUnixMs
		in.OffsetLevel = grade(time.Duration(in.OffsetMs)*time.Millisecond, OffsetWarn, OffsetFlag)
	}
	return in
}

// csRows lists the View master's registry, each chunkserver with the
// masters it is connected to and the master(s) counting its vote, as every
// answering master reports them.
func csRows(answers []Answer, view *Answer, host string) []CSRow {
	if view == nil {
		return []CSRow{}
	}
	rows := make([]CSRow, 0, len(view.St.Chunkservers))
	// Each master's rows by id, once: a search per chunkserver and master
	// made this O(N²), a third of a 5,000-voter LEADER's processor at rest
	// (its status API builds the dataset every second).
	masters := answersByAddr(answers, view)
	byID := make([]map[wire.CSID]*protocol.CSStatus, len(masters))
	for i, a := range masters {
		byID[i] = make(map[wire.CSID]*protocol.CSStatus, len(a.St.Chunkservers))
		for j := range a.St.Chunkservers {
			if cs := &a.St.Chunkservers[j]; byID[i][cs.ID] == nil {
				byID[i][cs.ID] = cs // the first, as a search would find
			}
		}
	}
	for _, c := range view.St.Chunkservers {
		r := CSRow{ID: c.ID, IP: c.Addr, Port: c.Port, Location: c.Location, VoterOnly: c.VoterOnly,
			Maintenance: c.Maintenance, ConnectedTo: []netip.Addr{}, VoteWith: []MasterRef{}, LeftOutBy: []netip.Addr{}}
		info := c
		for i, a := range masters {
			p, ok := byID[i][c.ID]
			if !ok {
				continue
			}
			seen := *p
			if seen.Connected {
				if !r.Connected {
					info = seen // the first master it is connected to has its latest labels and space
				}
				r.Connected = true
				r.ConnectedTo = append(r.ConnectedTo, a.Addr.Addr())
				r.Uncertain = r.Uncertain || seen.Uncertain
				if r.Record == "" {
					r.Record = seen.Record
				}
			}
			if seen.Voting {
				r.VoteWith = append(r.VoteWith, refOf(a))
			}
			if slices.Contains(a.St.TempRemoved, c.ID) {
				r.LeftOutBy = append(r.LeftOutBy, a.Addr.Addr())
			}
		}
		r.Labels, r.Total, r.Used = info.Labels, info.Total, info.Used
		if r.Connected {
			r.Version, r.Protocol = info.Version, ProtocolText(info.ProtoMin, info.Proto)
		}
		if !r.Connected {
			r.Removal = RemovalCommand(host, c.Addr, c.Port)
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].IP != rows[j].IP {
			return rows[i].IP.Less(rows[j].IP)
		}
		return rows[i].Port < rows[j].Port
	})
	return rows
}

// answersByAddr is the answering masters, the View master first, then by
// address.
func answersByAddr(answers []Answer, view *Answer) []Answer {
	out := []Answer{*view}
	for _, a := range answers {
		if a.Err == nil && a.Addr != view.Addr {
			out = append(out, a)
		}
	}
	sort.SliceStable(out[1:], func(i, j int) bool { return out[1+i].Addr.Compare(out[1+j].Addr) < 0 })
	return out
}

func findCS(list []protocol.CSStatus, id wire.CSID) (protocol.CSStatus, bool) {
	for _, c := range list {
		if c.ID == id {
			return c, true
		}
	}
	return protocol.CSStatus{}, false
}

// RemovalCommand is the ready-to-run command that removes a disconnected
// chunkserver (-CRC), with -H as the operator gave it.
func RemovalCommand(host string, ip netip.Addr, port uint16) string {
	return fmt.Sprintf("mfscli -H %s -CRC/%s/%d", ShellQuote(host), ip, port)
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/[]", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// summarize builds -SIG from the rest of the dataset.
func summarize(answers []Answer, leader, view *Answer, ds Dataset, now time.Time) Summary {
	s := Summary{Masters: len(answers), States: map[string]int{}, QuorumHeld: ds.Quorum.Held}
	for _, a := range answers {
		s.States[StateWord(a)]++
		if a.Err == nil && a.St.Epoch > s.Epoch {
			s.Epoch = a.St.Epoch
		}
	}
	if leader != nil {
		s.Leader, s.Epoch = leader.Addr.Addr(), leader.St.Epoch
	}
	s.Registered = len(ds.Chunkservers)
	for _, c := range ds.Chunkservers {
		if c.Connected {
			s.Connected++
		}
	}
	if view != nil {
		for _, l := range view.St.Locations {
			s.Locations++
			if l.On {
				s.LocationsOn++
			}
		}
		if ms := view.St.LeaderChangeUnixMs; ms > 0 {
			s.LeaderChangeMs = ms
			s.LeaderChangeAgo = now.Sub(time.UnixMilli(ms)).Seconds()
		}
	}
	return s
}
