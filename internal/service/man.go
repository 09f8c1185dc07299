package service

import (
	"fmt"
	"io"
	"strings"

	"github.com/mfs-election/mfs-election/internal/manpage"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/urfave/cli/v2"
)

// actionDocs says what each action does, for the man page.
var actionDocs = map[Action]string{
	ActionStart:   "Start in the background (the default action), logging to DATA_PATH/NAME.log; -f keeps it in the foreground, logging to stderr (the systemd units do).",
	ActionStop:    "Stop the running daemon in order (SIGTERM) and wait for it. Needs only DATA_PATH, to find the lock: a mistake elsewhere in the config does not prevent it.",
	ActionRestart: "Stop, then start.",
	ActionReload:  "Re-read the config (SIGHUP): the keys a reload applies at once change, the others are named in the log until a restart; a start-mode log file is opened again (log rotation).",
	ActionTest:    "Say whether the daemon runs, and its pid.",
	ActionInit:    "Make the metadata of a new cluster, for its first master (prints a new AUTH_CODE when none is set); with --from-backup FILE, found it on a backup taken with mfscli --backup (docs/operations.md, Backups and disaster recovery).",
	ActionRepair:  "Offline repair of the stored metadata (docs/operations.md, A registry no LEADER can be elected under).",
}

// daemonPage is the daemon's page, section 8, from its command line.
func (d Command[T]) daemonPage(own []cli.Flag) manpage.Page {
	var acts []manpage.Item
	for _, a := range actions {
		if d.Refuse != nil && d.Refuse(a) != nil {
			continue
		}
		acts = append(acts, manpage.Item{Tag: string(a), Text: strings.ReplaceAll(actionDocs[a], "NAME", d.Name)})
	}
	return manpage.Page{
		Name: d.Name, Section: 8, Summary: d.Usage, Version: release.Version,
		Synopsis: []string{d.UsageText},
		Sections: []manpage.Section{
			{Heading: "Description", Paras: []string{d.Usage + ". " + d.About}},
			{Heading: "Actions", Items: acts},
			{Heading: "Options", Paras: []string{fmt.Sprintf("Every key of %s.cfg(5) is also a flag, --key-name VALUE (DATA_PATH: --data-path), which wins over the file.", d.Name)},
				Items: manpage.Options(own)},
			{Heading: "Files", Items: []manpage.Item{
				{Tag: d.DefaultCfg, Text: fmt.Sprintf("The config file (-c), %s.cfg(5).", d.Name)},
				{Tag: "DATA_PATH/." + d.Name + ".lock", Text: "The lock: one daemon per DATA_PATH; it holds the pid."},
				{Tag: "DATA_PATH/" + d.Name + ".log", Text: "The log of a daemon started in the background."},
			}},
			{Heading: "See also", Paras: []string{fmt.Sprintf("%s.cfg(5), mfscli(1), and the documentation in /usr/share/doc/mfs-election (operations.md).", d.Name)}},
		},
	}
}

// cfgPage is the config file's page, section 5, from the key table.
func (d Command[T]) cfgPage() manpage.Page {
	var keys []manpage.Item
	for _, k := range d.Spec.Docs() {
		def := k.Default
		if def == "" {
			def = "empty"
		}
		tag := k.Name + " (default " + def
		if k.Range != "" {
			tag += "; " + k.Range
		}
		if k.Live {
			tag += "; a reload applies it"
		}
		keys = append(keys, manpage.Item{Tag: tag + ")", Text: k.Usage})
	}
	return manpage.Page{
		Name: d.Name + ".cfg", Section: 5, Summary: "configuration of " + d.Name, Version: release.Version,
		Sections: []manpage.Section{
			{Heading: "Description", Paras: []string{
				fmt.Sprintf("%s reads %s (or the file -c names): one KEY = VALUE per line, # starts a comment, blank lines are ignored, as in MooseFS.", d.Name, d.DefaultCfg),
				"A key that is not below, a key set twice, or a value out of its range stops the daemon at start with every problem named by file:line; a reload with such a file changes nothing. A switch is 0 or 1; a duration is written as 800ms, 5s or 2m, or as a bare number of seconds. A secret (AUTH_CODE, *PASSWORD) may not contain #.",
			}},
			{Heading: "Keys", Items: keys},
			{Heading: "See also", Paras: []string{fmt.Sprintf("%s(8), mfscli(1).", d.Name)}},
		},
	}
}

// writeMan writes the page asked for by --man or --man-cfg.
func (d Command[T]) writeMan(c *cli.Context, w io.Writer, own []cli.Flag) (asked bool, err error) {
	switch {
	case c.Bool("man"):
		return true, d.daemonPage(own).Render(w)
	case c.Bool("man-cfg"):
		return true, d.cfgPage().Render(w)
	}
	return false, nil
}
