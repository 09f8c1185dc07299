package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
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
// check a restore makes, and only then renamed into place, with
// FILE.sha256 beside it (as sha256sum writes it). No LEADER, a LEADER
// that changes, or another backup underway is retried until --wait ends.
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
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, filepath.Base(file)+".tmp-*")
	if err != nil {
		return fmt.Errorf("--backup %s: %w", file, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	start := time.Now()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	size, sum, err := client.Backup(addr, password, timeout, bw)
	if err != nil {
		return fmt.Errorf("%s: %w", addr.Addr(), err)
	}
	if err := flushSync(bw, tmp); err != nil {
		return fmt.Errorf("--backup %s: writing %s: %w", file, tmp.Name(), err)
	}
	b, err := metadata.ReadBackup(tmp.Name())
	if err != nil {
		return fmt.Errorf("--backup %s: the file received does not read back (nothing was kept): %w", file, err)
	}
	if _, err := os.Lstat(file); err == nil {
		return fmt.Errorf("--backup %s: the file appeared while the backup was taken: refusing to overwrite it", file)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("--backup %s: %w", file, err)
	}
	done = true
	line := fmt.Sprintf("%x  %s\n", sum, filepath.Base(file))
	if err := writeSynced(file+".sha256", line); err != nil {
		return fmt.Errorf("--backup %s: the backup is written, its checksum file is not: %w", file, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("--backup %s: %w", file, err)
	}
	fmt.Fprintf(os.Stdout, "backup of cluster %s at version %d (epoch %d) from the LEADER %s: %d keys, %d client sessions, %d bytes in %v\n"+
		"written to %s (sha256 %x, also in %s.sha256)\n",
		b.Cluster, b.Snap.Pos.Version, b.Snap.Pos.Epoch, addr.Addr(), len(b.Snap.Data), len(b.Snap.Sessions), size,
		time.Since(start).Round(time.Millisecond), file, sum, file)
	return nil
}

func flushSync(bw *bufio.Writer, f *os.File) error {
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// writeSynced writes a small file and fsyncs it.
func writeSynced(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, content); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
