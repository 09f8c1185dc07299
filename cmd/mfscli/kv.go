package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/urfave/cli/v2"
)

// Exit codes of the namespace commands, for scripts.
const (
	exitOK       = 0
	exitError    = 1 // bad usage or an unexpected answer
	exitNotFound = 2 // get: no such key
	exitConflict = 3 // cas: the key is at another version
	exitNoLeader = 4 // no master would serve the request in time
	exitUnknown  = 5 // a change whose outcome is unknown (retry it)
)

var kvUsage = map[string]string{
	"get":    "get KEY",
	"set":    "set KEY VALUE",
	"cas":    "cas KEY VALUE VERSION   (VERSION 0: only if KEY is absent)",
	"delete": "delete KEY",
	"list":   "list [PREFIX]",
}

// namespaceCmd runs get/set/cas/delete/list through pkg/client.
func namespaceCmd(c *cli.Context, verb string, args []string) error {
	want := map[string]int{"get": 1, "set": 2, "cas": 3, "delete": 1, "list": -1}[verb]
	if (want >= 0 && len(args) != want) || (want < 0 && len(args) > 1) {
		return cli.Exit("usage: mfscli [-H HOST] "+kvUsage[verb], exitError)
	}
	cl, err := client.New(client.Config{MasterHost: c.String("H"), Port: uint16(c.Int("P")), Attempt: c.Duration("timeout"),
		Password: c.String("mfspassword")})
	if err != nil {
		return cli.Exit(err.Error(), exitError)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration("wait"))
	defer cancel()
	out := os.Stdout
	switch verb {
	case "get":
		v, ver, found, err := cl.GetVersion(ctx, args[0])
		if err != nil {
			return fail(err)
		}
		if !found {
			return cli.Exit(fmt.Sprintf("%s: no such key", args[0]), exitNotFound)
		}
		fmt.Fprintf(out, "%s\t%d\n", v, ver)
	case "set":
		ver, err := cl.Put(ctx, args[0], args[1])
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "%d\n", ver)
	case "cas":
		expect, perr := strconv.ParseUint(args[2], 10, 64)
		if perr != nil {
			return cli.Exit(fmt.Sprintf("cas: VERSION %q is not a number", args[2]), exitError)
		}
		ver, err := cl.CAS(ctx, args[0], args[1], expect)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "%d\n", ver)
	case "delete":
		ver, err := cl.Delete(ctx, args[0])
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "%d\n", ver)
	case "list":
		prefix := ""
		if len(args) == 1 {
			prefix = args[0]
		}
		// Page by page, each printed as it arrives: a long listing holds
		// one page in memory, and what was printed before an error stays.
		err := cl.ListEach(ctx, prefix, func(page []namespace.KVEntry) error {
			for _, e := range page {
				if _, err := fmt.Fprintf(out, "%s\t%s\t%d\n", e.Key, e.Value, e.Version); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fail(err)
		}
	}
	return nil
}

func fail(err error) error {
	switch {
	case errors.Is(err, client.ErrConflict):
		return cli.Exit(err.Error(), exitConflict)
	case errors.Is(err, client.ErrUnknown):
		return cli.Exit(err.Error(), exitUnknown)
	case errors.Is(err, client.ErrNoLeader):
		return cli.Exit("Can't perform any operation because there is no leading master: "+err.Error(), exitNoLeader)
	}
	return cli.Exit(err.Error(), exitError)
}

// waitDefault: how long a namespace command keeps trying to find a LEADER.
const waitDefault = 10 * time.Second
