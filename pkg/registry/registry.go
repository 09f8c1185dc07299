package registry

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Chunkserver is one registered member of the registry.
type Chunkserver struct {
	ID        wire.CSID
	Addr      netip.Addr
	Port      uint16 `msgpack:",omitempty"` // CSSERV port: ip:port is the identity an operator sees
	VoterOnly bool
	// Maintenance: the operator expects it to go away for a while (MooseFS's
	// maintenance mode). It still counts towards quorum like any member;
	// the listings say its absence is planned.
	Maintenance bool `msgpack:",omitempty"`
}

// Is reports whether a vote session opened from addr:port comes from this
// member. An id handed out by a LEADER that died before registering it can
// be handed out again; the address tells the two holders apart.
func (c Chunkserver) Is(addr netip.Addr, port uint16) bool { return c.Addr == addr && c.Port == port }

// ClusterConfig is the registry and location map as of one config version.
// It is the quorum's denominator (docs/architecture.md §2).
type ClusterConfig struct {
	Version uint64 // rises by one with every registry or location change
	Founder wire.MasterID
	// Bootstrap is true from `mfsmaster init` until the first chunkserver
	// registers; while it holds (and the registry is empty) the founder alone
	// wins every tally. It never becomes true again.
	Bootstrap bool
	Members   []Chunkserver // sorted by ID
	Locations locations.Map
	// TopID is the highest chunkserver id ever registered under this
	// config's history (removed members included), so that a LEADER never
	// hands a newcomer the id of a removed chunkserver: a promise made
	// under that id may still stand, and the newcomer, having never
	// promised, votes at once (docs/architecture.md §3, Restart). 0 in
	// configs written before it was kept: the members' highest id then.
	TopID wire.CSID `msgpack:",omitempty"`
	// Witness names the object-store witness whose lease breaks an even
	// split of the locations ("" = none: the default location breaks it).
	// It is the id written in the lease object, never an address: every
	// master must agree on which store it is, and a store reached by two
	// names is still one witness (docs/architecture.md §7.4).
	Witness string `msgpack:",omitempty"`
}

// Electorate is who counts under this config.
func (c *ClusterConfig) Electorate() quorum.Electorate {
	ms := make([]locations.Member, len(c.Members))
	for i, m := range c.Members {
		ms[i] = locations.Member{ID: m.ID, Addr: m.Addr}
	}
	return quorum.NewElectorate(c.Locations, ms).WithWitness(c.Witness != "")
}

// Member returns the registered chunkserver with this id.
func (c *ClusterConfig) Member(id wire.CSID) (Chunkserver, bool) {
	i, ok := slices.BinarySearchFunc(c.Members, id, func(m Chunkserver, id wire.CSID) int {
		switch {
		case m.ID < id:
			return -1
		case m.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return Chunkserver{}, false
	}
	return c.Members[i], true
}

// Rank is the chunkserver's place in the sorted registry, for nomination
// turns, and the number of places.
func (c *ClusterConfig) Rank(id wire.CSID) (rank, of int, ok bool) {
	i, found := slices.BinarySearchFunc(c.Members, id, func(m Chunkserver, id wire.CSID) int { return cmp.Compare(m.ID, id) })
	if !found {
		return 0, len(c.Members), false
	}
	return i, len(c.Members), true
}

// Clone returns a deep copy that a change may edit.
func (c *ClusterConfig) Clone() *ClusterConfig {
	n := *c
	n.Members = slices.Clone(c.Members)
	return &n
}

// ChangeKind names one registry or location-map change.
type ChangeKind uint8

// Registry and location changes (docs/architecture.md §5).
const (
	ChangeRegister ChangeKind = 1 + iota
	ChangeRemove
	ChangeMapRange
	ChangeUnmapRange
	ChangeRename
	ChangeSetDefault
	ChangeSetOn
	ChangeMaintenance
	// ChangeWitness sets the witness (Name: its id) or removes it ("").
	ChangeWitness
)

// MaxWitnessID bounds a witness id.
const MaxWitnessID = 64

// Change is one registry or location change, made by the LEADER as a
// config entry. Only one is in flight at a time (docs/architecture.md).
type Change struct {
	Kind    ChangeKind
	CS      Chunkserver  // Register
	ID      uint32       // Remove, Maintenance: the chunkserver id
	Prefix  netip.Prefix // MapRange, UnmapRange
	Name    string       // the location
	NewName string       // Rename
	On      bool         // SetOn, Maintenance
}

func (c Change) String() string {
	switch c.Kind {
	case ChangeRegister:
		return fmt.Sprintf("register %v %v", c.CS.ID, c.CS.Addr)
	case ChangeRemove:
		return fmt.Sprintf("remove CS%d", c.ID)
	case ChangeMapRange:
		return fmt.Sprintf("map %v %s", c.Prefix, c.Name)
	case ChangeUnmapRange:
		return fmt.Sprintf("unmap %v", c.Prefix)
	case ChangeRename:
		return fmt.Sprintf("rename %s %s", c.Name, c.NewName)
	case ChangeSetDefault:
		return fmt.Sprintf("default %s", c.Name)
	case ChangeSetOn:
		return fmt.Sprintf("location %s on=%v", c.Name, c.On)
	case ChangeMaintenance:
		return fmt.Sprintf("maintenance CS%d on=%v", c.ID, c.On)
	case ChangeWitness:
		if c.Name == "" {
			return "witness off"
		}
		return fmt.Sprintf("witness %s", c.Name)
	}
	return "change?"
}

// Apply returns the config that results from c, one version up. It never
// edits cur.
func (c Change) Apply(cur *ClusterConfig) (*ClusterConfig, error) {
	n := cur.Clone()
	n.Version++
	var err error
	switch c.Kind {
	case ChangeRegister:
		if _, ok := cur.Member(c.CS.ID); ok {
			return nil, fmt.Errorf("chunkserver %v is already registered", c.CS.ID)
		}
		if c.CS.ID == 0 || !c.CS.Addr.IsValid() {
			return nil, fmt.Errorf("registration needs an id and an address, got %v %v", c.CS.ID, c.CS.Addr)
		}
		n.Members = append(n.Members, c.CS)
		n.Bootstrap = false
		slices.SortFunc(n.Members, func(a, b Chunkserver) int { return cmp.Compare(a.ID, b.ID) })
		// Members are sorted: the last has the highest id (a config
		// written before TopID was kept starts from it).
		n.TopID = max(cur.TopID, n.Members[len(n.Members)-1].ID)
	case ChangeRemove:
		i := slices.IndexFunc(n.Members, func(m Chunkserver) bool { return uint32(m.ID) == c.ID })
		if i < 0 {
			return nil, fmt.Errorf("chunkserver CS%d is not registered", c.ID)
		}
		if len(n.Members) == 1 {
			return nil, fmt.Errorf("chunkserver CS%d is the last registered one; removing it would leave no quorum", c.ID)
		}
		n.Members = slices.Delete(n.Members, i, i+1)
	case ChangeMapRange:
		n.Locations, err = cur.Locations.MapRange(c.Prefix, c.Name)
	case ChangeUnmapRange:
		n.Locations, err = cur.Locations.UnmapRange(c.Prefix)
	case ChangeRename:
		n.Locations, err = cur.Locations.Rename(c.Name, c.NewName)
	case ChangeSetDefault:
		n.Locations, err = cur.Locations.SetDefault(c.Name)
	case ChangeSetOn:
		n.Locations, err = cur.Locations.SetOn(c.Name, c.On)
	case ChangeMaintenance:
		i := slices.IndexFunc(n.Members, func(m Chunkserver) bool { return uint32(m.ID) == c.ID })
		if i < 0 {
			return nil, fmt.Errorf("chunkserver CS%d is not registered", c.ID)
		}
		if n.Members[i].Maintenance == c.On {
			return nil, fmt.Errorf("chunkserver CS%d is already %s maintenance", c.ID, map[bool]string{true: "in", false: "out of"}[c.On])
		}
		n.Members[i].Maintenance = c.On
	case ChangeWitness:
		switch {
		case len(c.Name) > MaxWitnessID || strings.ContainsFunc(c.Name, func(r rune) bool { return r <= ' ' || r > '~' }):
			return nil, fmt.Errorf("witness id %q: want up to %d printable characters", c.Name, MaxWitnessID)
		case c.Name == cur.Witness && c.Name == "":
			return nil, fmt.Errorf("no witness is configured")
		case c.Name == cur.Witness:
			return nil, fmt.Errorf("witness %s is already configured", c.Name)
		case c.Name != "" && cur.Witness != "":
			// Two witnesses under one joint count would need both leases
			// at once; off, then on, keeps every count under one.
			return nil, fmt.Errorf("witness %s is configured; turn it off before configuring %s", cur.Witness, c.Name)
		}
		n.Witness = c.Name
	default:
		return nil, fmt.Errorf("unknown change kind %d", c.Kind)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}
