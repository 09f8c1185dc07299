// Command mfscli shows and steers the masters. This first version lists the
// masters (-SIM) and chunkservers (-SCS) and carries the admin commands the
// daemons take (see admin.go); the full MooseFS listings and output modes
// come with the mfscli issue.
package main

import (
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/urfave/cli/v2"
)

func main() {
	app := &cli.App{
		Name:  "mfscli",
		Usage: "MooseFS-style listings and admin commands",
		UsageText: "mfscli [-H HOST] [-P PORT] -SIM|-SCS|-CRC/ip/port|-CLU/ip|-CLC/ip|-CLS|-CMS/ip\n" +
			"   mfscli [-H HOST] get KEY | set KEY VALUE | cas KEY VALUE VERSION | delete KEY | list [PREFIX]",
		Version: node.Version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "H", Value: "mfsmaster", Usage: "masters: a DNS name or a comma-separated address list"},
			&cli.IntFlag{Name: "P", Value: 9421, Usage: "the masters' client port"},
			&cli.BoolFlag{Name: "SIM", Usage: "list the masters"},
			&cli.BoolFlag{Name: "SCS", Usage: "list the chunkservers"},
			&cli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "how long to wait for each master"},
			&cli.StringFlag{Name: "admin", Hidden: true},
			&cli.DurationFlag{Name: "wait", Value: waitDefault, Usage: "get/set/cas/delete/list: how long to keep trying to reach a LEADER"},
		},
		HideHelpCommand: true,
		Action:          run,
	}
	if err := app.Run(rewriteAdmin(os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "mfscli:", err)
		os.Exit(1)
	}
}

type answer struct {
	addr netip.AddrPort
	st   node.StatusResp
	err  error
}

func ask(c *cli.Context) ([]answer, error) {
	list, err := node.ResolveMasters(c.String("H"), uint16(c.Int("P")))
	if err != nil {
		return nil, err
	}
	out := make([]answer, len(list))
	var wg sync.WaitGroup
	for i, m := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := node.Status(m.Addr, c.Duration("timeout"))
			out[i] = answer{m.Addr, st, err}
		}()
	}
	wg.Wait()
	return out, nil
}

func run(c *cli.Context) error {
	if args := c.Args().Slice(); len(args) > 0 {
		if _, ok := kvUsage[args[0]]; ok {
			return namespace(c, args[0], args[1:])
		}
		return cli.Exit(fmt.Sprintf("unknown command %q (get, set, cas, delete, list; or -SIM, -SCS, -C...)", args[0]), exitError)
	}
	answers, err := ask(c)
	if err != nil {
		return err
	}
	reached := 0
	for _, a := range answers {
		if a.err == nil {
			reached++
		}
	}
	if reached == 0 {
		listMasters(answers)
		return fmt.Errorf("no master reachable")
	}
	switch {
	case c.String("admin") != "":
		return admin(answers, c.String("admin"), uint16(c.Int("P")), c.Duration("timeout"))
	case c.Bool("SCS"):
		listCS(answers)
	default:
		listMasters(answers)
	}
	return nil
}

func state(a answer) string {
	switch {
	case a.err != nil && strings.HasPrefix(a.err.Error(), "unreachable"):
		return "UNREACHABLE"
	case a.err != nil:
		return "BUSY"
	case a.st.Role == roles.Follower:
		return a.st.Role.String() + a.st.Sync.Suffix()
	}
	return a.st.Role.String()
}

func listMasters(answers []answer) {
	var leaderMs int64
	for _, a := range answers {
		if a.err == nil && a.st.Role == roles.Leader {
			leaderMs = a.st.WallUnixMs
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ip\tversion\tstate\tepoch\tlocal time\toffset\tmetadata version\tbehind\tdelay\tmetadata id\tchunkservers\tquorum\tsnapshot\tchangelog")
	for _, a := range answers {
		if a.err != nil {
			fmt.Fprintf(w, "%s\t-\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n", a.addr.Addr(), state(a))
			continue
		}
		off := "-"
		if leaderMs != 0 {
			off = fmt.Sprintf("%+.3fs", float64(a.st.WallUnixMs-leaderMs)/1000)
		}
		q := "no"
		if a.st.HoldsQuorum {
			q = "yes"
		}
		snap := "-"
		if a.st.SnapshotVersion > 0 {
			snap = fmt.Sprint(a.st.SnapshotVersion)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%.1f s\t%s\t%d/%d\t%s\t%s\t%d\n", a.addr.Addr(), a.st.Version, state(a), a.st.Epoch,
			time.UnixMilli(a.st.WallUnixMs).Format("15:04:05.000"), off, a.st.MetaVersion, a.st.Behind, a.st.Delay.Seconds(),
			a.st.ClusterID, a.st.Voters, a.st.Registered, q, snap, a.st.ChangelogEntries)
	}
	w.Flush()
}

func listCS(answers []answer) {
	var best *answer
	for i := range answers {
		a := &answers[i]
		if a.err == nil && (best == nil || a.st.Role == roles.Leader) {
			best = a
		}
	}
	if best == nil {
		return
	}
	cs := best.st.Chunkservers
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "chunkservers as %s (%s) sees them\n", best.addr.Addr(), state(*best))
	fmt.Fprintln(w, "ip\tport\tid\tlocation\tlabels\tspace\tconnected\tvote")
	for _, c := range cs {
		space := "voter only"
		if !c.VoterOnly {
			space = fmt.Sprintf("%d/%d", c.Used, c.Total)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%v\t%v\n", c.Addr, c.Port, c.ID, c.Location, c.Labels, space, c.Connected, c.Voting)
	}
	w.Flush()
}
