// Command mfscli shows and steers the masters: the MooseFS listings
// (-SIM masters, -SCS chunkservers, -SIG summary, -SLQ locations and
// quorum, -SLH election history, -SQP quorum plan; see listings.go), the
// admin commands and their dry runs (admin.go, dryrun.go) and the
// namespace commands (kv.go). docs/mfscli.md describes them.
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// Frozen by the golden tests.
var (
	cliVersion = release.Version
	clock      = time.Now
)

func main() {
	if err := newApp().Run(rewriteAdmin(os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "mfscli:", err)
		os.Exit(1)
	}
}

// newApp is mfscli's command line.
func newApp() *cli.App {
	return &cli.App{
		Name:  "mfscli",
		Usage: "MooseFS-style listings and admin commands",
		UsageText: "mfscli [-H HOST] [-P PORT] [-SIM] [-SCS] [-SIG] [-SLQ] [-SLH] [-SQP] [-p|-j] [-o N] [-r]\n" +
			"   mfscli [-H HOST] [-P PORT] -CRC/ip/port | -CLU/ip | -CLC/ip | -CLS | -CMS/ip | ... (docs/mfscli.md)\n" +
			"   mfscli [-H HOST] [-P PORT] -CRC/ip/port | -CTR/ip/port | -CMAP/cidr/name | -COFF/name | ... --dry-run [-p|-j]\n" +
			"   mfscli [-H HOST] [--mfspassword PASS] get KEY | set KEY VALUE | cas KEY VALUE VERSION | delete KEY | list [PREFIX]\n" +
			"   mfscli [-H HOST] [-a PASS] --backup FILE",
		Version: release.Version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "H", Value: "mfsmaster", Usage: "masters: DNS names (every A/AAAA record) or addresses, separated by commas or spaces", Category: "Finding the masters"},
			&cli.IntFlag{Name: "P", Value: 9421, Usage: "the masters' client port", Category: "Finding the masters"},
			&cli.BoolFlag{Name: "SIM", Usage: "list the masters (the default listing)", Category: "Listings"},
			&cli.BoolFlag{Name: "SCS", Usage: "list the chunkservers, then the disconnected ones with their removal commands", Category: "Listings"},
			&cli.BoolFlag{Name: "SIG", Usage: "cluster summary", Category: "Listings"},
			&cli.BoolFlag{Name: "SLQ", Usage: "locations and the quorum verdict", Category: "Listings"},
			&cli.BoolFlag{Name: "SLH", Usage: "the election history: every role change of every master, oldest first as in a log (-r: newest first), then the LEADER changes by cause", Category: "Listings"},
			&cli.BoolFlag{Name: "SQP", Usage: "the quorum plan: which single failures (a location, a master) keep a LEADER, how many chunkservers each location may lose, the closest failure and the fix", Category: "Listings"},
			&cli.BoolFlag{Name: "dry-run", Usage: "with an admin command that changes the registry or the location map: print the counts before and after and whether the LEADER would keep its quorum; send nothing", Category: "Admin commands (-C...)"},
			&cli.BoolFlag{Name: "p", Usage: "plain lines (title:<TAB>fields), raw numbers; the default when stdout is not a terminal", Category: "Output"},
			&cli.BoolFlag{Name: "j", Usage: "one JSON object", Category: "Output"},
			&cli.IntFlag{Name: "o", Usage: "sort tables by column `N` (counted from 1)", Category: "Output"},
			&cli.BoolFlag{Name: "r", Usage: "reverse the order", Category: "Output"},
			&cli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "how long to wait for each master", Category: "Finding the masters"},
			&cli.StringFlag{Name: "admin", Hidden: true},
			&cli.StringFlag{Name: "a", EnvVars: []string{"MFSCLI_PASSWORD"}, Usage: "admin commands: the masters' ADMIN_PASSWORD (or MFSCLI_PASSWORD); proved, never sent", Category: "Admin commands (-C...)"},
			&cli.DurationFlag{Name: "wait", Value: waitDefault, Usage: "get/set/cas/delete/list and --backup: how long to keep trying to reach a LEADER", Category: "Namespace commands (get, set, cas, delete, list)"},
			&cli.StringFlag{Name: "backup", Usage: "save a backup of the metadata from the LEADER to `FILE` (it must not exist), at a commit point the LEADER confirmed; FILE.sha256 beside it. mfsmaster init --from-backup founds a new cluster on it (docs/operations.md, Backups and disaster recovery)", Category: "Backups"},
			&cli.StringFlag{Name: "completion", Usage: "print the completion script for `SHELL` (bash or zsh) and exit", Category: "Other"},
			&cli.BoolFlag{Name: "man", Hidden: true, Usage: "print the man page, mfscli(1), and exit"},
			&cli.StringFlag{Name: "mfspassword", EnvVars: []string{"MFSPASSWORD"}, Usage: "get/set/cas/delete/list: the password of the masters' mfsexports.cfg line for this host (or MFSPASSWORD; as mfsmount -o mfspassword); proved, never sent", Category: "Namespace commands (get, set, cas, delete, list)"},
		},
		HideHelpCommand: true,
		Action:          run,
	}
}

func run(c *cli.Context) error {
	if sh := c.String("completion"); sh != "" {
		return writeCompletion(os.Stdout, sh)
	}
	if c.Bool("man") {
		return writeMan(os.Stdout)
	}
	if err := checkFlags(c); err != nil {
		return err
	}
	if c.Bool("dry-run") && c.String("admin") == "" {
		return fmt.Errorf("--dry-run goes with an admin command that changes the registry or the location map (%s)", dryRunCommandSet)
	}
	if file := c.String("backup"); file != "" {
		if set := listingFlagsSet(c); len(set) > 0 || c.String("admin") != "" || c.NArg() > 0 {
			return fmt.Errorf("--backup takes no listing, admin command or namespace command with it")
		}
		return backupCmd(c, file)
	}
	if args := c.Args().Slice(); len(args) > 0 {
		if _, ok := kvUsage[args[0]]; !ok {
			return cli.Exit(fmt.Sprintf("unknown command %q (get, set, cas, delete, list; or -SIM, -SCS, -SIG, -SLQ, -SLH, -SQP, -C...)", args[0]), exitError)
		}
		if set := listingFlagsSet(c); len(set) > 0 {
			return cli.Exit(fmt.Sprintf("%s: the namespace commands take no listing flags (%s)", args[0], strings.Join(set, " ")), exitError)
		}
		return namespaceCmd(c, args[0], args[1:])
	}
	if cmd := c.String("admin"); cmd != "" {
		set := listingFlagsSet(c)
		if c.Bool("dry-run") {
			// A dry run prints like a listing: -p and -j choose how.
			set = slices.DeleteFunc(set, func(f string) bool { return f == "-p" || f == "-j" })
		}
		if len(set) > 0 {
			return fmt.Errorf("-C%s is an admin command: it cannot be combined with %s", cmd, strings.Join(set, " "))
		}
		if err := checkAdminSyntax(cmd); err != nil {
			return err
		}
		answers, errs := find(c, clusterview.Parts{})
		if !clusterview.ReachedAny(answers) {
			return noMaster(c, answers, errs)
		}
		if c.Bool("dry-run") {
			o, err := listingOptions(c)
			if err != nil {
				return err
			}
			return dryRun(os.Stdout, answers, errs, cmd, o)
		}
		return admin(answers, cmd, uint16(c.Int("P")), c.String("a"), c.Duration("timeout"))
	}
	o, err := listingOptions(c)
	if err != nil {
		return err
	}
	return listings(c, o)
}

// listingFlagsSet names the listing flags given on the command line.
func listingFlagsSet(c *cli.Context) []string {
	var set []string
	for _, f := range []string{"SIM", "SCS", "SIG", "SLQ", "SLH", "SQP", "p", "j", "o", "r"} {
		if c.IsSet(f) {
			set = append(set, "-"+f)
		}
	}
	return set
}

// listingOptions reads the listing flags and checks they go together.
func listingOptions(c *cli.Context) (options, error) {
	o := options{show: map[listing]bool{}, sortCol: c.Int("o"), reverse: c.Bool("r"), zone: time.Local}
	for l, f := range listingFlag {
		o.show[l] = c.Bool(f[1:])
	}
	if !slices.ContainsFunc(order, func(l listing) bool { return o.show[l] }) {
		o.show[listMasters] = true
	}
	tty := isTerminal(os.Stdout.Fd())
	switch {
	case c.Bool("j") && c.Bool("p"):
		return o, fmt.Errorf("-j and -p are two output modes: give one")
	case c.Bool("j"):
		o.mode = modeJSON
	case c.Bool("p") || !tty:
		o.mode = modePlain
	default:
		o.mode, o.colour = modeTable, os.Getenv("NO_COLOR") == ""
	}
	return o, checkSort(o)
}

// find resolves -H and asks every master for the listings p; errs are the
// names that did not resolve and the masters that did not answer.
func find(c *cli.Context, p clusterview.Parts) ([]clusterview.Answer, []string) {
	addrs, rerrs := clusterview.Resolve(c.String("H"), uint16(c.Int("P")))
	var errs []string
	for _, e := range rerrs {
		errs = append(errs, e.Error())
	}
	answers := clusterview.AskFor(addrs, p, c.Duration("timeout"))
	return answers, append(errs, clusterview.AnswerErrors(answers)...)
}

func noMaster(c *cli.Context, answers []clusterview.Answer, errs []string) error {
	if len(answers) == 0 {
		return fmt.Errorf("no master to ask: %s", strings.Join(errs, "; "))
	}
	hint := ""
	if slices.ContainsFunc(answers, func(a clusterview.Answer) bool { return errors.Is(a.Err, client.ErrBusy) }) {
		// Connected, and no hello came back: a master's client port
		// always answers one at once, however loaded.
		hint = fmt.Sprintf(" (connected, but no master's hello came back within --timeout: is -P %d the masters' client port, 9421 by default? their HTTP port, 9425, does not speak this protocol)", c.Int("P"))
	}
	return fmt.Errorf("no master reachable: %s%s", strings.Join(errs, "; "), hint)
}

// listings prints what o asks for. It fails (exit 1) only when no master
// answered; the listings are printed even then.
func listings(c *cli.Context, o options) error {
	answers, errs := find(c, o.parts())
	now := clock()
	ds := dataset(answers, c.String("H"), now, o)
	if err := writeListings(os.Stdout, ds, errs, o, now); err != nil {
		return err
	}
	if !clusterview.ReachedAny(answers) {
		return noMaster(c, answers, errs)
	}
	if o.mode != modeJSON {
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "mfscli:", e)
		}
	}
	return nil
}
