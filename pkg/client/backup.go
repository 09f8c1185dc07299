package client

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// BackupRefused is a master's refusal of a backup (not the LEADER, a
// backup already underway, not allowed): Resp says why.
type BackupRefused struct{ Resp protocol.AdminResp }

func (e *BackupRefused) Error() string { return e.Resp.Text }

// Backup asks the master at addr, the LEADER, for a backup of the
// metadata (protocol.AdminBackup, proved with password as Admin does) and
// writes the file to w as it arrives, acknowledging each chunk once w took
// it. Every chunk must continue the one before; the last one's size and
// SHA-256 must be those of what was written. timeout bounds the
// handshake and each wait for a chunk. It returns the file's size and
// SHA-256. A refusal is a *BackupRefused; a connection that fails, an
// error wrapping ErrUnreachable or ErrBusy.
func Backup(addr netip.AddrPort, password string, timeout time.Duration, w io.Writer) (size uint64, sum []byte, err error) {
	nc, theirs, err := dial(addr, frame.KindAdmin, "", time.Now().Add(timeout), netip.Addr{}, nil)
	if err != nil {
		return 0, nil, err
	}
	defer nc.Close()
	req := protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: protocol.AdminBackup, Target: addr.Addr()}
	if password != "" {
		req.Proof = protocol.AdminProof(password, theirs.Nonce, theirs.Cluster, req)
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	if err := frame.WriteFrame(nc, req); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	h := sha256.New()
	for {
		_ = nc.SetDeadline(time.Now().Add(timeout))
		m, err := replies.ReadFrame(nc, frame.DefaultMaxFrame)
		if err != nil {
			return size, nil, fmt.Errorf("%w: %s: after %d bytes of the backup: %w", ErrBusy, addr, size, err)
		}
		var c *protocol.BackupChunk
		switch r := m.(type) {
		case *protocol.AdminResp:
			if r.ID == req.ID && !r.OK {
				return size, nil, &BackupRefused{Resp: *r}
			}
			return size, nil, fmt.Errorf("%w: %s answered %q to a backup", ErrBusy, addr, r.Text)
		case *protocol.BackupChunk:
			c = r
		default:
			return size, nil, fmt.Errorf("%w: %s answered %T to a backup", ErrBusy, addr, m)
		}
		switch {
		case c.ID != req.ID:
			return size, nil, fmt.Errorf("%s sent a chunk of backup %d, not of %d", addr, c.ID, req.ID)
		case c.Offset != size:
			return size, nil, fmt.Errorf("%s sent a chunk at byte %d, after %d bytes", addr, c.Offset, size)
		case len(c.Data) > protocol.BackupChunkBytes:
			return size, nil, fmt.Errorf("%s sent a chunk of %d bytes, more than %d", addr, len(c.Data), protocol.BackupChunkBytes)
		}
		if _, err := w.Write(c.Data); err != nil {
			return size, nil, err
		}
		h.Write(c.Data)
		size += uint64(len(c.Data))
		if c.Last {
			got := h.Sum(nil)
			if c.Size != size || !bytes.Equal(c.SHA256, got) {
				return size, nil, fmt.Errorf("%s: the backup received (%d bytes, sha256 %x) is not the one sent (%d bytes, sha256 %x)", addr, size, got, c.Size, c.SHA256)
			}
			return size, got, nil
		}
		if err := frame.WriteFrame(nc, protocol.BackupAck{ID: req.ID, Offset: size}); err != nil {
			return size, nil, fmt.Errorf("%w: %w", ErrBusy, err)
		}
	}
}
