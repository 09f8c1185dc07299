package metadata

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	bolt "go.etcd.io/bbolt"
)

// Backups. A backup is a snapshot file like snapshot.mfs (magic, schema,
// header naming the cluster and position, records, CRC-32C), taken from a
// running cluster's LEADER at a confirmed commit point (mfscli --backup)
// and kept away from the masters. It is only ever read back by `mfsmaster
// init --from-backup`, which makes a NEW cluster of it (Restore): a backup
// never becomes the history of the cluster it was taken from
// (docs/architecture.md §12.1).

// Backup is what a backup file holds.
type Backup struct {
	Cluster string // the metadata id of the cluster it was taken from
	Snap    *namespace.Snapshot
	Bytes   int64 // the file's size
}

// WriteBackup writes snap, a snapshot of cluster, to w in the snapshot
// file format and returns the bytes written. ctx stops it between records.
func WriteBackup(ctx context.Context, w io.Writer, cluster string, snap *namespace.Snapshot) (int64, error) {
	if cluster == "" || snap == nil || snap.Latest == nil {
		return 0, errors.New("backup: a snapshot with a cluster id and a config is needed")
	}
	return writeSnapshot(ctx, w, cluster, snap)
}

// ReadBackup reads and checks the backup file at path with every check a
// master's snapshot.mfs gets (magic, schema, checksum, each record), of
// whichever cluster it names. The file is only read.
func ReadBackup(path string) (Backup, error) {
	f, err := os.Open(path)
	if err != nil {
		return Backup{}, fmt.Errorf("backup file %s: %w", path, err)
	}
	defer f.Close()
	snap, cluster, err := decodeSnapshot(f)
	if err == nil && cluster == "" {
		err = errors.New("its header names no cluster")
	}
	if err != nil {
		return Backup{}, fmt.Errorf("backup file %s is unusable: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return Backup{}, fmt.Errorf("backup file %s: %w", path, err)
	}
	return Backup{Cluster: cluster, Snap: snap, Bytes: fi.Size()}, nil
}

// Restore makes this store, which must hold no metadata, the founder of a
// new cluster clusterID whose history begins with snap (`mfsmaster init
// --from-backup`): snap becomes snapshot.mfs and the changelog's base, as
// after a snapshot install, so the master starts committed up to
// snap.Pos. The caller makes snap's config the founder's bootstrap config
// and its position an epoch-0 one (namespace.Snapshot.Refound). The
// snapshot is durable before metadata.mfs names the cluster; an
// interrupted restore leaves a DATA_PATH that refuses to start or be
// restored into, with a message, until it is emptied.
func (s *MasterStore) Restore(clusterID string, snap *namespace.Snapshot) error {
	if clusterID == "" || snap == nil || snap.Latest == nil {
		return fmt.Errorf("metadata file %s: a restore needs a cluster id and a snapshot with a config", s.path)
	}
	if _, err := os.Lstat(s.snapPath); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("snapshot file %s exists: DATA_PATH holds metadata, refusing to restore into it (empty DATA_PATH first)", s.snapPath)
	}
	empty := func(tx *bolt.Tx) error {
		old, err := clusterIDOf(tx)
		if err != nil {
			return err
		}
		if end := lastKey(tx); old != "" || end > 0 || tx.Bucket(bucketMeta).Get(keyBase) != nil || tx.Bucket(bucketMeta).Get(keyHard) != nil {
			return fmt.Errorf("metadata file %s already holds metadata (cluster id %q): refusing to restore into it (empty DATA_PATH first)", s.path, old)
		}
		return nil
	}
	if err := s.db.View(empty); err != nil {
		return err
	}
	if _, err := s.saveSnapshot(context.Background(), clusterID, snap); err != nil {
		return err
	}
	base := changelog.LogBase{Pos: snap.Pos, Latest: snap.Latest, Previous: snap.Previous}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := empty(tx); err != nil {
			return err
		}
		if err := putBytes(tx, keyCluster, []byte(clusterID)); err != nil {
			return err
		}
		return put(tx, keyBase, &base)
	})
}

// SaveBackupFile writes the backup fill produces to path, and its SHA-256
// to path+".sha256" as sha256sum writes it, without ever replacing a file:
// the bytes go to a temporary file beside path, fsynced and read back
// whole with ReadBackup, and only then take path's name (a hard link,
// which fails if path exists meanwhile), with the directory fsynced. When
// a step fails nothing is left behind, and the error names the step.
func SaveBackupFile(path string, fill func(w io.Writer) error) (Backup, []byte, error) {
	if _, err := os.Lstat(path); err == nil {
		return Backup{}, nil, fmt.Errorf("backup file %s exists: refusing to overwrite it (give a new name, or move it aside)", path)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return Backup{}, nil, fmt.Errorf("backup file %s: %w", path, err)
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, h), 1<<20)
	if err := fill(bw); err != nil {
		return Backup{}, nil, err
	}
	err = bw.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return Backup{}, nil, fmt.Errorf("backup file %s: writing %s: %w", path, tmp.Name(), err)
	}
	b, err := ReadBackup(tmp.Name())
	if err != nil {
		return Backup{}, nil, fmt.Errorf("the backup received does not read back, nothing was kept: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return Backup{}, nil, fmt.Errorf("backup file %s: %w", path, err)
	}
	sum := h.Sum(nil)
	if err := writeSynced(path+".sha256", fmt.Sprintf("%x  %s\n", sum, filepath.Base(path))); err != nil {
		return b, sum, fmt.Errorf("backup file %s is written, its checksum file is not: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return b, sum, fmt.Errorf("backup file %s: %w", path, err)
	}
	return b, sum, nil
}

// writeSynced writes a small file, replacing one there, and fsyncs it.
func writeSynced(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
