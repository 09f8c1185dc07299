package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/urfave/cli/v2"
)

// backupWaitExtra is added to --timeout for each wait of a backup: the
// LEADER confirms its commit point and copies the namespace before the
// first chunk, which takes longer than a status answer.
const backupWaitExtra = 10 * time.Second

// backupCmd is --backup FILE: a backup of the metadata from the LEADER,
// at a commit point it confirmed (every change acknowledged before the
// command started is in it), written to FILE. FILE must not exist: it is
// written under a temporary name beside it, fsynced, read back with every
// check a restore makes, and only then given its name, with FILE.sha256
// beside it (metadata.SaveBackupFile). No LEADER, a LEADER that changes,
// or another backup underway is retried until --wait ends.
func backupCmd(c *cli.Context, file string) error {
	if _, err := os.Lstat(file); err == nil {
		return fmt.Errorf("--backup %s: the file exists: refusing to overwrite it (give a new name, or move it aside)", file)
	}
	timeout := c.Duration("timeout") + backupWaitExtra
	end := time.Now().Add(c.Duration("wait"))
	for {
		answers, errs := find(c, clusterview.Parts{})
		var err error
		if leader := leaderOf(answers); leader == nil {
			err = errNoLeader
			if !clusterview.ReachedAny(answers) {
				err = noMaster(c, answers, errs)
			}
		} else if err = backupFrom(leader.Addr, file, c.String("a"), timeout); err == nil || !backupRetry(err) {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("--backup: no backup within --wait %v: %w", c.Duration("wait"), err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// backupRetry: err may pass if the backup is asked again (no LEADER yet,
// the LEADER changed or went away, another backup underway).
func backupRetry(err error) bool {
	var r *client.BackupRefused
	if errors.As(err, &r) {
		return r.Resp.Code == wire.CodeNotLeader || r.Resp.Code == wire.CodeBusy
	}
	return errors.Is(err, client.ErrBusy) || errors.Is(err, client.ErrUnreachable)
}

// backupFrom takes one backup from the master at addr into file.
func backupFrom(addr netip.AddrPort, file, password string, timeout time.Duration) error {
	start := time.Now()
	var size uint64
	b, sum, err := metadata.SaveBackupFile(file, func(w io.Writer) (err error) {
		size, _, err = client.Backup(addr, password, timeout, w)
		if err != nil {
			err = fmt.Errorf("%s: %w", addr.Addr(), err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("--backup: %w", err)
	}
	fmt.Fprintf(os.Stdout, "backup of cluster %s at version %d (epoch %d) from the LEADER %s: %d keys, %d client sessions, %d bytes in %v\n"+
		"written to %s (sha256 %x, also in %s.sha256)\n",
		b.Cluster, b.Snap.Pos.Version, b.Snap.Pos.Epoch, addr.Addr(), len(b.Snap.Data), len(b.Snap.Sessions), size,
		time.Since(start).Round(time.Millisecond), file, sum, file)
	return nil
}
