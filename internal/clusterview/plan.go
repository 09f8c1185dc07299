package clusterview

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Plan is mfscli -SQP: for the LEADER's registry and the votes it counts
// now, which single failures keep a LEADER and which do not, how many
// chunkservers of each location may be lost, the failure that comes
// closest to losing the quorum and the one change that helps most.
// Every decision is pkg/quorum's, on the config rebuilt from the
// LEADER's answer (live.go). Built on demand (PlanOf), not by Build:
// trying the fixes counts the registry a few hundred times.
type Plan struct {
	Leader MasterRef `json:"leader"` // ip "" when no LEADER holds a quorum: then Verdict says why, the lists are empty
	Config uint64    `json:"config"`
	Held   bool      `json:"quorum_held"`
	// Margin: how many more chunkservers could be lost today, whichever
	// they are, with the quorum still held (-1: not held).
	Margin    int          `json:"margin"`
	Verdict   string       `json:"verdict"`
	Failures  []FailureRow `json:"failures"`
	Locations []LossRow    `json:"locations"`
	Closest   string       `json:"closest"` // the failure closest to losing the quorum ("" none)
	Fix       string       `json:"fix"`     // the change that helps most ("" none needed or none found: FixNote says which)
	FixNote   string       `json:"fix_note"`
	Notes     []string     `json:"notes"` // why the plan may be off (a change in flight, a count that differs)
}

// FailureRow is one single failure: a whole location lost (its
// chunkservers, or the link to it), or a master lost.
type FailureRow struct {
	Kind    string `json:"kind"` // FailLocation or FailMaster
	Name    string `json:"name"` // the location's name, the master's address
	Default bool   `json:"default,omitempty"`
	State   string `json:"state,omitempty"` // a master's state word
	Keeps   bool   `json:"keeps_leader"`
	// Margin: after it, how many more chunkservers could be lost,
	// whichever they are, with a LEADER keeping quorum (-1: none keeps).
	Margin  int    `json:"margin"`
	Why     string `json:"why"`
	Closest bool   `json:"closest"`
}

// The kinds of FailureRow.
const (
	FailLocation = "location"
	FailMaster   = "master"
)

// Label is the failure as the listings name it: "location dc1",
// "location default (the default)", "master 127.0.0.11 (LEADER)".
func (f FailureRow) Label() string {
	switch {
	case f.Kind == FailLocation && f.Default:
		return "location " + f.Name + " (the default)"
	case f.Kind == FailMaster:
		return "master " + f.Name + " (" + f.State + ")"
	}
	return f.Kind + " " + f.Name
}

// LossRow is one location of the map: how many of its chunkservers may
// be lost, whichever they are, with the LEADER keeping its quorum.
type LossRow struct {
	Name       string `json:"name"`
	On         bool   `json:"on"`
	Default    bool   `json:"default"`
	Registered int    `json:"registered"`
	Votes      int    `json:"votes"` // for the LEADER
	SafeLoss   int    `json:"safe_loss"`
	All        bool   `json:"all_safe"` // every one of them may be lost
	Then       string `json:"then"`     // what one more than SafeLoss does ("" when All)
}

// peer is another master as the planner sees it: whether it could take
// over from the LEADER, and which chunkservers reach it.
type peer struct {
	addr      netip.Addr
	state     string
	answered  bool
	candidate bool   // answered, eligible, holds metadata, a synced FOLLOWER or USURPER
	why       string // why it is not a candidate
	reach     map[wire.CSID]bool
}

// scene is what a plan counts: the LEADER's config and votes and the
// other masters. The fixes are tried as changed scenes.
type scene struct {
	cfg    *registry.ClusterConfig
	votes  map[wire.CSID]bool
	reach  map[wire.CSID]bool // chunkservers connected to the LEADER
	leader netip.Addr
	peers  []peer // every other master asked, by address
	// lease: the masters that can break a tie with the witness's lease,
	// leaseWhy why the others cannot (both empty unless cfg names a
	// witness; canLease).
	lease    map[netip.Addr]bool
	leaseWhy map[netip.Addr]string
}

// PlanOf plans for the answers' LEADER.
func PlanOf(answers []Answer) Plan {
	p := Plan{Margin: -1, Failures: []FailureRow{}, Locations: []LossRow{}, Notes: []string{}}
	leader := FirstWithRole(answers, roles.Leader)
	if leader == nil || !leader.St.HoldsQuorum {
		p.Verdict = "no LEADER holds a quorum now: there is nothing to keep; -SLQ says what is missing"
		return p
	}
	p.Leader = refOf(*leader)
	lv, err := liveOf(leader.St)
	if err != nil {
		p.Verdict = fmt.Sprintf("no plan: the registry of LEADER %s cannot be rebuilt: %v", leader.Addr.Addr(), err)
		return p
	}
	p.Config = lv.cfg.Version
	s := sceneOf(lv, answers, leader)
	today := s.today()
	if n := lv.inFlight(); n != "" {
		p.Notes = append(p.Notes, n)
	}
	if n := lv.mismatch(today); n != "" {
		p.Notes = append(p.Notes, n+": the plan may be off; ask again in a moment")
	}
	p.Held = today.Outcome == quorum.Won
	p.Margin, _ = marginOf(today)
	p.Verdict = s.verdict(today)
	p.Failures, p.Locations = s.failures(today)
	if !p.Held {
		return p // the rebuilt count is not won: the notes say why
	}
	closest := closestOf(p.Failures)
	if closest >= 0 {
		p.Failures[closest].Closest = true
		f := p.Failures[closest]
		p.Closest = f.Label() + " lost"
		if f.Keeps {
			p.Closest += fmt.Sprintf(": a LEADER stays, with a margin of %d", f.Margin)
		} else {
			p.Closest += ": no LEADER"
		}
	}
	p.Fix, p.FixNote = s.fix(p.Failures)
	return p
}

func sceneOf(lv live, answers []Answer, leader *Answer) scene {
	s := scene{cfg: lv.cfg, votes: lv.votes, reach: connected(leader.St.Chunkservers), leader: leader.Addr.Addr(),
		lease: map[netip.Addr]bool{}, leaseWhy: map[netip.Addr]string{}}
	if lv.cfg.Witness != "" {
		for _, a := range answers {
			if a.Err != nil {
				continue
			}
			s.lease[a.Addr.Addr()] = canLease(a)
			_, s.leaseWhy[a.Addr.Addr()] = leaseable(a.St.Witness)
		}
	}
	for _, a := range answers {
		if a.Addr == leader.Addr {
			continue
		}
		pe := peer{addr: a.Addr.Addr(), state: StateWord(a), answered: a.Err == nil}
		switch {
		case a.Err != nil:
			pe.why = "does not answer"
		case a.St.NotEligible != "":
			pe.why = "not eligible: " + a.St.NotEligible
		case a.St.Role != roles.Follower && a.St.Role != roles.Usurper:
			pe.why = "it is " + a.St.Role.String()
		case a.St.Sync != roles.Synced:
			pe.why = "not synced"
		default:
			pe.candidate, pe.reach = true, connected(a.St.Chunkservers)
		}
		s.peers = append(s.peers, pe)
	}
	slices.SortFunc(s.peers, func(a, b peer) int { return a.addr.Compare(b.addr) })
	return s
}

func connected(list []protocol.CSStatus) map[wire.CSID]bool {
	out := map[wire.CSID]bool{}
	for _, c := range list {
		if c.Connected {
			out[c.ID] = true
		}
	}
	return out
}

func (s scene) today() quorum.Tally {
	return s.count(s.leader, func(id wire.CSID) bool { return s.votes[id] })
}

// without is the LEADER's count with the chunkservers of loc lost.
func (s scene) without(loc wire.LocationID) quorum.Tally {
	return s.count(s.leader, func(id wire.CSID) bool { return s.votes[id] && s.locOf(id) != loc })
}

// count is the count of the master at who with votes: with the witness's
// lease on its side when the registry names one and it can take it.
func (s scene) count(who netip.Addr, votes func(wire.CSID) bool) quorum.Tally {
	return tallyLease(s.cfg, votes, s.lease[who])
}

// noLease says, for a count of the master at who that carries exactly
// half of the locations under a witness it cannot take, why ("" when
// that is not what stops it).
func (s scene) noLease(who netip.Addr, t quorum.Tally) string {
	if !t.Witness || t.WitnessHeld || t.Participating == 0 || 2*t.Carried != t.Participating {
		return ""
	}
	why := s.leaseWhy[who]
	if why == "" {
		why = "it does not answer"
	}
	return "; the witness cannot break the tie for it: " + why
}

func (s scene) locOf(id wire.CSID) wire.LocationID {
	m, _ := s.cfg.Member(id)
	return s.cfg.Locations.Locate(m.Addr)
}

// verdict is the plan's first line: today's count and the cheapest loss
// that would end it.
func (s scene) verdict(t quorum.Tally) string {
	who := "LEADER " + s.leader.String()
	if t.Outcome != quorum.Won {
		return fmt.Sprintf("%s holds a quorum, but mfscli's count of its registry is %s (%s): no plan", who, t.Outcome, countText(s.cfg, t))
	}
	margin, weakest := marginOf(t)
	parts := make([]string, len(weakest))
	for i, id := range weakest {
		for _, l := range t.Locations {
			if l.Loc == id {
				parts[i] = fmt.Sprintf("%d in %s", l.Spare()+1, locName(s.cfg, id))
			}
		}
	}
	return fmt.Sprintf("quorum held by %s (%s); margin %d: the cheapest loss that ends it is %d chunkserver(s), %s",
		who, countText(s.cfg, t), margin, margin+1, strings.Join(parts, " and "))
}

// failures lists every location lost, then every master lost, and how
// many chunkservers of each location may be lost.
func (s scene) failures(today quorum.Tally) ([]FailureRow, []LossRow) {
	todayMargin, _ := marginOf(today)
	var fs []FailureRow
	var ls []LossRow
	count := map[wire.LocationID]*quorum.LocationTally{}
	for i := range today.Locations {
		count[today.Locations[i].Loc] = &today.Locations[i]
	}
	def := s.cfg.Locations.Default()
	for _, l := range s.cfg.Locations.Locations() {
		f := FailureRow{Kind: FailLocation, Name: l.Name, Default: l.ID == def, Keeps: true, Margin: todayMargin}
		lr := LossRow{Name: l.Name, On: !l.Off, Default: l.ID == def}
		for _, m := range s.cfg.Members {
			if s.cfg.Locations.Locate(m.Addr) == l.ID {
				lr.Registered++
				if s.votes[m.ID] {
					lr.Votes++
				}
			}
		}
		lt := count[l.ID]
		switch {
		case l.Off:
			f.Why = "it is OFF: its chunkservers take no part in the count"
		case lr.Registered == 0:
			f.Why = "no chunkserver is registered there: no vote is lost"
		case !lt.Carried:
			f.Why = fmt.Sprintf("it is not carried now (%d of %d vote for the LEADER): nothing more is lost", lt.For, lt.Registered)
		default:
			after := s.without(l.ID)
			f.Keeps = after.Outcome == quorum.Won
			f.Margin, _ = marginOf(after)
			f.Why = countText(s.cfg, after) + s.noLease(s.leader, after)
		}
		lr.SafeLoss, lr.All = lr.Registered, f.Keeps
		if !f.Keeps {
			lr.SafeLoss = lt.Spare()
			lr.Then = "no LEADER: " + f.Why
		}
		fs, ls = append(fs, f), append(ls, lr)
	}
	return append(fs, s.masterFailures(todayMargin)...), ls
}

// masterFailures: a master other than the LEADER holds no vote, so
// losing it costs none (but it may be the one that would take over);
// losing the LEADER means an election, which an eligible, synced master
// wins with a quorum of the chunkservers that reach it.
func (s scene) masterFailures(todayMargin int) []FailureRow {
	all := append([]peer{{addr: s.leader, state: roles.Leader.String(), answered: true}}, s.peers...)
	slices.SortFunc(all, func(a, b peer) int { return a.addr.Compare(b.addr) })
	var fs []FailureRow
	for _, pe := range all {
		f := FailureRow{Kind: FailMaster, Name: pe.addr.String(), State: pe.state, Keeps: true, Margin: todayMargin}
		switch {
		case pe.addr == s.leader:
			f.Keeps, f.Margin, f.Why = s.election(nil)
		case !pe.answered:
			f.Why = "it does not answer now: nothing more is lost"
		default:
			f.Why = "it holds no vote; " + s.takeover(pe.addr)
		}
		fs = append(fs, f)
	}
	return fs
}

// election is the LEADER lost: the best candidate's count, each
// chunkserver that reaches it voting for it. extra, when set, is a
// master added by a fix.
func (s scene) election(extra *peer) (keeps bool, margin int, why string) {
	peers := s.peers
	if extra != nil {
		peers = append(slices.Clone(peers), *extra)
	}
	best, bestMargin := -1, -1
	var tallies []quorum.Tally
	var not []string
	for i, pe := range peers {
		var t quorum.Tally
		if pe.candidate {
			t = s.count(pe.addr, func(id wire.CSID) bool { return pe.reach[id] })
			if m, _ := marginOf(t); t.Outcome == quorum.Won && m > bestMargin {
				best, bestMargin = i, m
			}
		} else {
			not = append(not, fmt.Sprintf("%s %s (%s)", pe.addr, pe.state, pe.why))
		}
		tallies = append(tallies, t)
	}
	if best >= 0 {
		pe := peers[best]
		return true, bestMargin, fmt.Sprintf("an election: %s (%s) would win, reached by %d of %d chunkservers: %s",
			pe.addr, pe.state, reached(s.cfg, pe.reach), len(s.cfg.Members), countText(s.cfg, tallies[best]))
	}
	var lose []string
	for i, pe := range peers {
		if pe.candidate {
			lose = append(lose, fmt.Sprintf("%s (%s) would not win, reached by %d of %d chunkservers: %s",
				pe.addr, pe.state, reached(s.cfg, pe.reach), len(s.cfg.Members), countText(s.cfg, tallies[i])+s.noLease(pe.addr, tallies[i])))
		}
	}
	if len(lose) > 0 {
		return false, -1, "no LEADER after the election: " + strings.Join(append(lose, not...), "; ")
	}
	if len(not) == 0 {
		return false, -1, "no other master: no LEADER until it is back"
	}
	return false, -1, "no other master can take over: " + strings.Join(not, "; ")
}

func reached(cfg *registry.ClusterConfig, reach map[wire.CSID]bool) int {
	n := 0
	for _, m := range cfg.Members {
		if reach[m.ID] {
			n++
		}
	}
	return n
}

// takeover says who could take over from the LEADER once master gone is
// lost too.
func (s scene) takeover(gone netip.Addr) string {
	var left []string
	wasOne := false
	for _, pe := range s.peers {
		switch {
		case pe.candidate && pe.addr == gone:
			wasOne = true
		case pe.candidate:
			left = append(left, pe.addr.String())
		}
	}
	switch {
	case len(left) > 0:
		return "left to take over from the LEADER: " + strings.Join(left, ", ")
	case wasOne:
		return "but it is the only master that could take over from the LEADER"
	}
	return "no master could take over from the LEADER, with it or without"
}

// closestOf is the failure closest to losing the quorum: the first that
// loses it, else the first with the smallest margin; -1 when none counts
// anything.
func closestOf(fs []FailureRow) int {
	best := -1
	for i, f := range fs {
		if best < 0 || f.Margin < fs[best].Margin {
			best = i
		}
	}
	return best
}

// score ranks a scene's failures: fewer that lose the LEADER, then a
// larger smallest margin, then a larger margin today.
type score struct{ losing, closest, today int }

func (a score) better(b score) bool {
	switch {
	case a.losing != b.losing:
		return a.losing < b.losing
	case a.closest != b.closest:
		return a.closest > b.closest
	}
	return a.today > b.today
}

func scoreOf(fs []FailureRow, today quorum.Tally) score {
	sc := score{closest: -1}
	for i, f := range fs {
		if !f.Keeps {
			sc.losing++
		}
		if i == 0 || f.Margin < sc.closest {
			sc.closest = f.Margin
		}
	}
	sc.today, _ = marginOf(today)
	return sc
}

// candidate is one change a fix may suggest, and the scene it leads to.
type candidate struct {
	text  string
	scene scene
	extra *peer // a master made ready to take over
}

// fix tries the single changes an operator can make, counted as changed
// scenes, and returns the first of the best that does better than today:
// bring back the chunkservers of a location that do not vote (nothing to
// buy), switch an OFF location ON, move the default mark, one more
// voter-only chunkserver in a location, a master ready to take over.
// note says why there is no fix.
func (s scene) fix(fs []FailureRow) (fix, note string) {
	now := scoreOf(fs, s.today())
	var best *candidate
	bestScore := now
	for _, c := range s.candidates() {
		cfs, _ := c.scene.failures(c.scene.today())
		if c.extra != nil {
			for i := range cfs {
				if cfs[i].Kind == FailMaster && cfs[i].Name == s.leader.String() {
					cfs[i].Keeps, cfs[i].Margin, _ = c.scene.election(c.extra)
				}
			}
		}
		if sc := scoreOf(cfs, c.scene.today()); sc.better(bestScore) {
			best, bestScore = &c, sc
		}
	}
	const none = "no single change tried (bringing chunkservers back, -CON, -CDEF, a voter-only chunkserver in a location or in a new one, a master ready to take over)"
	still := ""
	if bestScore.losing > 0 {
		still = fmt.Sprintf("; %d single failure(s) would still leave no LEADER: %s prevents that", bestScore.losing, none)
	}
	switch {
	case best != nil && bestScore.losing == 0 && now.losing > 0:
		return best.text, fmt.Sprintf("then every single failure keeps a LEADER, the closest with a margin of %d", bestScore.closest)
	case best != nil && bestScore.losing < now.losing:
		return best.text, fmt.Sprintf("then %d single failure(s) instead of %d leave no LEADER%s", bestScore.losing, now.losing, still)
	case best != nil && bestScore.closest > now.closest:
		return best.text, fmt.Sprintf("then the closest failure keeps a LEADER with a margin of %d instead of %d", bestScore.closest, now.closest)
	case best != nil:
		return best.text, fmt.Sprintf("then the margin today is %d instead of %d%s", bestScore.today, now.today, still)
	case now.losing == 0:
		return "", "none needed: every single failure keeps a LEADER, and no single change tried raises the closest margin"
	}
	return "", none + " keeps a LEADER through every single failure: add chunkservers to more than one location"
}

func (s scene) candidates() []candidate {
	var out []candidate
	locs := s.cfg.Locations.Locations()
	def := s.cfg.Locations.Default()
	for _, l := range locs {
		var back []wire.CSID
		registered := 0
		for _, m := range s.cfg.Members {
			if s.cfg.Locations.Locate(m.Addr) == l.ID {
				registered++
				if !s.votes[m.ID] {
					back = append(back, m.ID)
				}
			}
		}
		if l.Off || len(back) == 0 {
			continue
		}
		c := s.clone()
		for _, id := range back {
			c.vote(id)
		}
		out = append(out, candidate{text: fmt.Sprintf("bring back the %d chunkserver(s) of %s that do not vote for the LEADER (%d of %d vote)",
			len(back), l.Name, registered-len(back), registered), scene: c})
	}
	for _, l := range locs {
		if !l.Off {
			continue
		}
		c := s.clone()
		if m, err := c.cfg.Locations.SetOn(l.Name, true); err == nil {
			c.cfg.Locations = m
			out = append(out, candidate{text: fmt.Sprintf("switch location %s ON (-CON/%s)", l.Name, l.Name), scene: c})
		}
	}
	for _, l := range locs {
		if l.ID == def {
			continue
		}
		c := s.clone()
		if m, err := c.cfg.Locations.SetDefault(l.Name); err == nil {
			c.cfg.Locations = m
			out = append(out, candidate{text: fmt.Sprintf("move the default mark to %s (-CDEF/%s)", l.Name, l.Name), scene: c})
		}
	}
	for _, l := range locs {
		addr, ok := addrIn(s.cfg.Locations, l)
		if l.Off || !ok {
			continue
		}
		c := s.clone()
		c.addVoter(addr)
		where := ""
		if l.ID == def && len(rangesOf(s.cfg.Locations, l.ID)) == 0 {
			where = " (any address outside the mapped ranges)"
		}
		out = append(out, candidate{text: fmt.Sprintf("add a voter-only chunkserver in location %s%s", l.Name, where), scene: c})
	}
	if c, ok := s.newLocation(); ok {
		out = append(out, c)
	}
	if spare, text := s.spareMaster(); text != "" {
		out = append(out, candidate{text: text, scene: s, extra: &spare})
	}
	return out
}

// newLocation is a new location with one voter-only chunkserver (a
// witness at a third site is the classic fix of two), mapped to a range
// of the documentation addresses that stands in for the operator's own.
func (s scene) newLocation() (candidate, bool) {
	name := "witness"
	for i := 2; ; i++ {
		if _, taken := s.cfg.Locations.Lookup(name); !taken {
			break
		}
		name = fmt.Sprintf("witness%d", i)
	}
	p := netip.MustParsePrefix("198.51.100.0/24")
	c := s.clone()
	m, err := c.cfg.Locations.MapRange(p, name)
	if err != nil {
		return candidate{}, false // a ninth location, or the range is in use
	}
	c.cfg.Locations = m
	c.addVoter(p.Addr().Next())
	return candidate{text: fmt.Sprintf("add a location with a voter-only chunkserver in it (a witness site: -CMAP/cidr/%s for its range, then the chunkserver)", name), scene: c}, true
}

// spareMaster is a master ready to take over, reached by every
// chunkserver that reaches the LEADER, and how to get one.
func (s scene) spareMaster() (peer, string) {
	for _, pe := range s.peers {
		if pe.candidate {
			continue
		}
		text := ""
		switch {
		case !pe.answered:
			text = fmt.Sprintf("bring master %s back (%s) and let it sync", pe.addr, pe.state)
		case pe.why == "not synced":
			text = fmt.Sprintf("let master %s catch up with the LEADER (it is %s)", pe.addr, pe.state)
		}
		if text != "" {
			return peer{addr: pe.addr, state: roles.Follower.String(), answered: true, candidate: true, reach: s.reach}, text
		}
	}
	return peer{addr: netip.IPv6Unspecified(), state: roles.Follower.String(), answered: true, candidate: true, reach: s.reach},
		"add a master (docs/operations.md, Adding a master)"
}

// clone copies what a candidate changes.
func (s scene) clone() scene {
	c := s
	c.cfg = s.cfg.Clone()
	c.votes, c.reach = cloneSet(s.votes), cloneSet(s.reach)
	c.peers = slices.Clone(s.peers)
	for i := range c.peers {
		c.peers[i].reach = cloneSet(s.peers[i].reach)
	}
	return c
}

// vote makes a chunkserver vote for the LEADER and reach every master
// that could take over.
func (s scene) vote(id wire.CSID) {
	s.votes[id], s.reach[id] = true, true
	for _, pe := range s.peers {
		if pe.candidate {
			pe.reach[id] = true
		}
	}
}

// addVoter registers a voter-only chunkserver at addr, voting for the
// LEADER.
func (s *scene) addVoter(addr netip.Addr) {
	id := wire.CSID(1)
	for _, m := range s.cfg.Members {
		id = max(id, m.ID+1)
	}
	s.cfg.Members = append(s.cfg.Members, registry.Chunkserver{ID: id, Addr: addr, VoterOnly: true})
	s.vote(id)
}

func cloneSet(m map[wire.CSID]bool) map[wire.CSID]bool {
	out := make(map[wire.CSID]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func rangesOf(m locations.Map, id wire.LocationID) []netip.Prefix {
	var out []netip.Prefix
	for _, r := range m.Ranges() {
		if r.Loc == id {
			out = append(out, r.Prefix)
		}
	}
	return out
}

// addrIn finds an address the map puts in location l, for a chunkserver
// a fix adds: the first address of one of its ranges, or for the default
// location one no range holds.
func addrIn(m locations.Map, l locations.Location) (netip.Addr, bool) {
	tries := []netip.Addr{}
	for _, p := range rangesOf(m, l.ID) {
		tries = append(tries, p.Addr())
	}
	tries = append(tries, netip.MustParseAddr("255.255.255.254"), netip.MustParseAddr("fdff:ffff:ffff:ffff::1"))
	for _, a := range tries {
		if m.Locate(a) == l.ID {
			return a, true
		}
	}
	return netip.Addr{}, false
}
