package main

import (
	"io"
	"strings"

	"github.com/mfs-election/mfs-election/internal/manpage"
	"github.com/mfs-election/mfs-election/internal/release"
)

// listingDocs says what each listing shows, for the man page.
var listingDocs = []manpage.Item{
	{Tag: "-SIM", Text: "The masters: role, epoch, metadata version and delay, votes, the LEADER's quorum (the default listing)."},
	{Tag: "-SCS", Text: "The chunkservers, then the disconnected ones with their removal commands."},
	{Tag: "-SIG", Text: "A summary of the cluster."},
	{Tag: "-SLQ", Text: "The locations and the quorum verdict."},
	{Tag: "-SLH", Text: "The election history: every role change of every master, and the LEADER changes by cause."},
	{Tag: "-SQP", Text: "The quorum plan: which single failures keep a LEADER, and the closest failure."},
}

// writeMan writes mfscli(1), from its own flags, admin commands and
// namespace commands.
func writeMan(w io.Writer) error {
	app := newApp()
	var admin []manpage.Item
	for _, a := range adminCommands {
		admin = append(admin, manpage.Item{Tag: "-C" + a.form, Text: a.what})
	}
	var kv []manpage.Item
	for _, v := range []string{"get", "set", "cas", "delete", "list"} {
		kv = append(kv, manpage.Item{Tag: kvUsage[v]})
	}
	return manpage.Page{
		Name: "mfscli", Section: 1, Summary: app.Usage, Version: release.Version,
		Synopsis: strings.Split(app.UsageText, "\n"),
		Sections: []manpage.Section{
			{Heading: "Description", Paras: []string{
				"mfscli asks every master -H names for its status and prints the listings, as MooseFS's mfscli does: a table on a terminal, plain title:<TAB>fields lines otherwise (-p), or one JSON object (-j). " +
					"It exits 1 when no master answered. Admin commands (-C...) go to the master they concern, most to the LEADER; namespace commands read and change keys through the LEADER.",
			}},
			{Heading: "Listings", Items: listingDocs},
			{Heading: "Options", Items: manpage.Options(app.Flags)},
			{Heading: "Admin commands", Paras: []string{"With ADMIN_PASSWORD set on the masters, each needs -a (or MFSCLI_PASSWORD). --dry-run prints what a registry or location change would do to the quorum and sends nothing."}, Items: admin},
			{Heading: "Namespace commands", Items: kv},
			{Heading: "See also", Paras: []string{"mfsmaster(8), mfschunkserver(8), and docs/mfscli.md in /usr/share/doc/mfs-election."}},
		},
	}.Render(w)
}
