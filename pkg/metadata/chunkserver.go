package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ChunkserverFile is the chunkserver's store, in its DATA_PATH.
const ChunkserverFile = "chunkserver.mfs"

// Identity is what a chunkserver got when it registered: its id, the
// cluster that gave it, and the address it registered with.
type Identity struct {
	CS        wire.CSID
	ClusterID string
	Addr      netip.AddrPort
}

// A chunkserver keeps two small records, its identity and its voter's hard
// state, and writes the second on most heartbeats that carry a new commit
// point: one durable write per commit round, on every chunkserver. A bbolt
// commit is two fdatasyncs (the pages, then the meta page) and three
// writes; in a VM every one of those is dear, and the chunkservers' rounds
// were half the cluster's processor at one client. So chunkserver.mfs is a
// record file: two slots of csSlot bytes, each holding the whole state
// (identity and voter record) with a sequence number and a CRC-32C. A
// write fills the slot that does not hold the newest record, and is made
// durable with one fdatasync; the file's size
// never changes after it is created, so that fdatasync writes no metadata.
// Creation (and the conversion of the older bbolt layout) writes the same
// state into both slots, as records 0 and 1: the first write after it
// overwrites a copy, never the only one.
//
// One unreadable slot is never taken lightly. A write torn by a crash
// looks exactly like a slot that rotted after the voter acted on it (a
// grant, an acknowledged commit point), and in the second case the other
// slot is one record behind what the voter told the masters. So the file
// opens from the good slot but says so (Damage): the daemon logs it at
// error level, counts it, shows it in the listings, and starts the voter
// uncertain (voter.Config.RecordDamaged), which grants nothing until
// a LEADER's heartbeat has restored what it may have lost. Both slots
// unreadable is an error naming the file; nothing is guessed, and the file
// is not modified. Verify reads both slots back from the disk while the
// daemon runs, so that rot is found before a restart depends on it, and
// rewrites them from the state in memory, which is whole.
//
// A chunkserver.mfs in the earlier bbolt layout (schema 1 or 2) is read
// with every check it always had, then replaced by a record file holding
// the same state (written beside it, made durable, renamed over it, the
// directory synced): an older build refuses the new file as "not a bbolt
// file" rather than misreading it.

// csSlot is the size of one slot; the file is two of them.
const csSlot = 4096

// csMagic starts every written slot; an unwritten one is zeros.
var csMagic = [8]byte{'M', 'F', 'S', 'C', 'S', 'R', 'E', 'C'}

// csHeader is magic, sequence number and payload length; the CRC-32C of
// header and payload follows the payload.
const csHeader = 8 + 8 + 4

// csState is what one slot holds.
type csState struct {
	HasIdentity bool
	Identity    Identity
	Voter       roles.VoterHardState
	// Both: written by a build that keeps two copies from the file's
	// creation on. A slot of an earlier build's file may be all zeros
	// (never written); in a file of this build that is damage.
	Both bool `msgpack:",omitempty"`
}

// ChunkserverStore is an open chunkserver.mfs: identity and VoterHardState.
// Its methods are safe for concurrent use.
type ChunkserverStore struct {
	path    string
	commits atomic.Uint64

	mu  sync.Mutex
	f   *os.File // locked (flock) while open
	st  csState
	seq uint64 // of the newest record
	at  int    // the slot holding it: the next write goes to the other
	// img: what each slot holds on the disk, as this process wrote or read
	// it (nil: unknown, it was unreadable at open and is not written yet).
	img [2][]byte
	// damage: what open found unreadable (empty: both slots were whole).
	damage string
}

// OpenChunkserver opens DATA_PATH/chunkserver.mfs, creating it empty when
// absent (a chunkserver that has not registered yet), and converting one in
// the earlier bbolt layout.
func OpenChunkserver(dir string) (*ChunkserverStore, error) {
	path := filepath.Join(dir, ChunkserverFile)
	img, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := createRecordFile(path, csState{}); err != nil {
			return nil, fmt.Errorf("metadata file %s: creating it: %w", path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("metadata file %s: %w", path, err)
	case len(img) == 0:
		return nil, fmt.Errorf("metadata file %s is empty; the file was not modified. %s", path, csLostAdvice)
	case !isRecordFile(img):
		// The earlier bbolt layout, or damage that layout's checks name.
		if err := convertBolt(dir, path); err != nil {
			return nil, err
		}
	}
	return openRecordFile(path)
}

// isRecordFile: either slot starts with the record magic. A bbolt file
// never does: its pages start with their page number (0 and 1 there).
func isRecordFile(img []byte) bool {
	for i := range 2 {
		if len(img) >= i*csSlot+len(csMagic) && bytes.Equal(img[i*csSlot:i*csSlot+len(csMagic)], csMagic[:]) {
			return true
		}
	}
	return false
}

// convertBolt reads a bbolt chunkserver.mfs with every check of its layout
// and replaces it with a record file holding the same state.
func convertBolt(dir, path string) error {
	old, err := open(dir, ChunkserverFile, chunkserverSpec)
	if err != nil {
		return err
	}
	var st csState
	err = old.db.View(func(tx *bolt.Tx) error {
		ok, err := get(tx, keyIdentity, &st.Identity)
		if err != nil {
			return err
		}
		st.HasIdentity = ok
		_, err = get(tx, keyVoter, &st.Voter)
		return err
	})
	old.Close() // its lock is released before the rename replaces it
	if err != nil {
		return fmt.Errorf("metadata file %s: %w (the file was not modified)", path, err)
	}
	if err := createRecordFile(path, st); err != nil {
		return fmt.Errorf("metadata file %s: converting it to a record file: %w (the bbolt file was left as it was)", path, err)
	}
	return nil
}

// chunkserverSpec is the earlier bbolt layout, read once to convert it.
var chunkserverSpec = spec{kind: "chunkserver", daemon: "mfschunkserver", records: func(tx *bolt.Tx, schema uint64) error {
	if _, err := getAs(tx, keyIdentity, &Identity{}, schema); err != nil {
		return err
	}
	_, err := getAs(tx, keyVoter, &roles.VoterHardState{}, schema)
	return err
}}

// csLostAdvice ends every message about a chunkserver.mfs that cannot be
// read at all: what is safe to do, in the terms of the uncertain voter.
const csLostAdvice = "This chunkserver's voter record (its id, the epochs it granted, the commit point it acknowledged) cannot be read. " +
	"Safe: move the file aside (keep it for inspection) and start again: the chunkserver registers again (a LEADER must be up) and, " +
	"if its address is a member's, gets its id back as an uncertain voter that grants no vote until it has heard that LEADER " +
	"(mfscli -SCS shows it). Not safe: copying another chunkserver's file here, or vouching for it with mfscli -CTRUST while " +
	"enough other voters are whole (see \"Lost or damaged chunkserver disk\" in docs/operations.md)"

// createRecordFile writes a record file holding st in both slots (records
// 0 and 1) beside path, makes it durable and renames it over path.
func createRecordFile(path string, st csState) error {
	st.Both = true
	img := make([]byte, 2*csSlot)
	for seq := range uint64(2) {
		if err := encodeSlot(img[seq*csSlot:(seq+1)*csSlot], seq, st); err != nil {
			return err
		}
	}
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(img); err != nil {
		f.Close()
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// openRecordFile opens and locks a record file and reads its newest slot.
func openRecordFile(path string) (*ChunkserverStore, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("metadata file %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("metadata file %s is locked by another process: is another mfschunkserver using this DATA_PATH? (%w)", path, err)
	}
	img := make([]byte, 2*csSlot+1)
	n, err := io.ReadFull(f, img)
	if err != io.ErrUnexpectedEOF || n != 2*csSlot {
		f.Close()
		if err == nil || err == io.ErrUnexpectedEOF || err == io.EOF {
			return nil, fmt.Errorf("metadata file %s is damaged: %d bytes, a record file has %d; the file was not modified. %s", path, n, 2*csSlot, csLostAdvice)
		}
		return nil, fmt.Errorf("metadata file %s: %w", path, err)
	}
	s := &ChunkserverStore{path: path, f: f}
	good, damage, err := readSlots(img[:2*csSlot])
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("metadata file %s is damaged: %v; the file was not modified. %s", path, err, csLostAdvice)
	}
	s.seq, s.st, s.at = good.seq, good.st, good.at
	for i := range 2 {
		if damage == "" || i == good.at {
			s.img[i] = bytes.Clone(img[i*csSlot : (i+1)*csSlot])
		}
	}
	if damage != "" {
		s.damage = fmt.Sprintf("%s: %s", path, damage)
	}
	if !s.st.Both {
		// An earlier build's file, with one copy (the other never
		// written): make the second before anything depends on it.
		s.mu.Lock()
		err := s.write(s.st)
		s.mu.Unlock()
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return s, nil
}

// slot is one decoded slot.
type slot struct {
	at  int // which of the two
	seq uint64
	st  csState
}

// readSlots decodes both slots of img and picks the newest. damage says
// which slot was unreadable and why, when one was; an error, when both
// were. An all-zero second slot beside record 1 or 2 of an earlier build in
// the first is no damage: that build's creation wrote one slot only.
func readSlots(img []byte) (good slot, damage string, err error) {
	var errs [2]error
	var got [2]slot
	for i := range 2 {
		got[i].at = i
		got[i].seq, got[i].st, errs[i] = decodeSlot(img[i*csSlot : (i+1)*csSlot])
	}
	switch {
	case errs[0] != nil && errs[1] != nil:
		return slot{}, "", fmt.Errorf("neither of its two copies is readable (copy 1: %v; copy 2: %v)", errs[0], errs[1])
	case errs[0] == nil && errs[1] == nil:
		if got[1].seq > got[0].seq {
			return got[1], "", nil
		}
		return got[0], "", nil
	}
	ok := 0
	if errs[0] != nil {
		ok = 1
	}
	bad := 1 - ok
	if bad == 1 && got[0].seq <= 2 && !got[0].st.Both && allZero(img[csSlot:2*csSlot]) {
		return got[0], "", nil
	}
	return got[ok], fmt.Sprintf("copy %d of 2 (bytes %d-%d) is unreadable (%v); the voter started from copy %d (record %d), "+
		"which may be one record older than what it acted on: it is uncertain until a LEADER has restored its record",
		bad+1, bad*csSlot, (bad+1)*csSlot-1, errs[bad], ok+1, got[ok].seq), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Damage says what OpenChunkserver found unreadable, naming the file
// (empty: both copies were whole). The voter must then start uncertain.
func (s *ChunkserverStore) Damage() string { return s.damage }

// Verify reads both slots back from the disk (past the page cache) and
// compares them with what this process wrote or read. A slot that differs
// has rotted since (a bad sector, a stray write): both are rewritten from
// the state in memory, which is whole, and the report names the file and
// the slot. Empty: both slots are as written.
func (s *ChunkserverStore) Verify() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return "", nil
	}
	fd := int(s.f.Fd())
	// Drop the cached pages (clean after the fdatasync) so the read is the
	// disk's; a kernel that ignores the advice only makes this weaker.
	_ = unix.Fadvise(fd, 0, 2*csSlot, unix.FADV_DONTNEED)
	img := make([]byte, 2*csSlot)
	if _, err := s.f.ReadAt(img, 0); err != nil {
		return "", fmt.Errorf("metadata file %s: reading it back: %w", s.path, err)
	}
	var bad []string
	for i := range 2 {
		if s.img[i] != nil && !bytes.Equal(img[i*csSlot:(i+1)*csSlot], s.img[i]) {
			_, _, err := decodeSlot(img[i*csSlot : (i+1)*csSlot])
			if err == nil {
				err = errors.New("it reads as another record")
			}
			bad = append(bad, fmt.Sprintf("copy %d of 2 (bytes %d-%d) changed on the disk since it was written (%v)", i+1, i*csSlot, (i+1)*csSlot-1, err))
		}
	}
	if len(bad) == 0 {
		return "", nil
	}
	// Two writes: the slot not holding the newest record, then the other,
	// so that a crash between them leaves one whole copy of this state.
	for range 2 {
		if err := s.write(s.st); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s: %s; both copies were rewritten from the record in memory", s.path, strings.Join(bad, "; ")), nil
}

// lockFile takes an exclusive flock on f, waiting at most lockTimeout.
func lockFile(f *os.File) error {
	deadline := time.Now().Add(lockTimeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EWOULDBLOCK || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// encodeSlot writes st as slot seq into b (csSlot bytes).
func encodeSlot(b []byte, seq uint64, st csState) error {
	body, err := frame.Marshal(st)
	if err != nil {
		return err
	}
	if csHeader+len(body)+4 > len(b) {
		return fmt.Errorf("the chunkserver's state takes %d bytes, a slot holds %d", len(body), len(b)-csHeader-4)
	}
	clear(b)
	copy(b, csMagic[:])
	binary.BigEndian.PutUint64(b[8:], seq)
	binary.BigEndian.PutUint32(b[16:], uint32(len(body)))
	copy(b[csHeader:], body)
	end := csHeader + len(body)
	binary.BigEndian.PutUint32(b[end:], crc32.Checksum(b[:end], castagnoli))
	return nil
}

// decodeSlot reads one slot; an error says why it is not a record.
func decodeSlot(b []byte) (uint64, csState, error) {
	var st csState
	if !bytes.Equal(b[:8], csMagic[:]) {
		return 0, st, errors.New("no record")
	}
	seq, n := binary.BigEndian.Uint64(b[8:]), int(binary.BigEndian.Uint32(b[16:]))
	if n > len(b)-csHeader-4 {
		return 0, st, fmt.Errorf("a length of %d", n)
	}
	end := csHeader + n
	if got, want := crc32.Checksum(b[:end], castagnoli), binary.BigEndian.Uint32(b[end:]); got != want {
		return 0, st, fmt.Errorf("checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	if err := frame.Unmarshal(b[csHeader:end], &st); err != nil {
		return 0, st, fmt.Errorf("the record does not decode: %w", err)
	}
	return seq, st, nil
}

// write makes st durable in the slot that does not hold the newest record
// (one write, one fdatasync), then makes it the one held. Under mu.
func (s *ChunkserverStore) write(st csState) error {
	b := make([]byte, csSlot)
	seq, at := s.seq+1, 1-s.at
	st.Both = true
	if err := encodeSlot(b, seq, st); err != nil {
		return fmt.Errorf("metadata file %s: %w", s.path, err)
	}
	if _, err := s.f.WriteAt(b, int64(at)*csSlot); err != nil {
		return fmt.Errorf("metadata file %s: %w", s.path, err)
	}
	if err := syscall.Fdatasync(int(s.f.Fd())); err != nil {
		return fmt.Errorf("metadata file %s: fdatasync: %w", s.path, err)
	}
	s.seq, s.st, s.at, s.img[at] = seq, st, at, b
	s.commits.Add(1)
	return nil
}

// Identity returns the stored identity; false before registration.
func (s *ChunkserverStore) Identity() (id Identity, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Identity, s.st.HasIdentity
}

// SetIdentity stores the identity from a registration. Another id or
// cluster is refused, so that a chunkserver never silently becomes another
// member (ForgetIdentity clears it deliberately); the address may change.
func (s *ChunkserverStore) SetIdentity(id Identity) error {
	if id.CS == wire.NoCS || id.ClusterID == "" {
		return fmt.Errorf("metadata file %s: an identity needs an id and a cluster id", s.path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.st.Identity; s.st.HasIdentity && (old.CS != id.CS || old.ClusterID != id.ClusterID) {
		return fmt.Errorf("metadata file %s already holds identity %v of cluster %q, refusing %v of %q",
			s.path, old.CS, old.ClusterID, id.CS, id.ClusterID)
	}
	st := s.st
	st.HasIdentity, st.Identity = true, id
	return s.write(st)
}

// ForgetIdentity clears the identity, when the master says the id belongs
// to another chunkserver; the next registration gets a new one. The voter
// record stays.
func (s *ChunkserverStore) ForgetIdentity() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.HasIdentity, st.Identity = false, Identity{}
	return s.write(st)
}

// VoterHard returns the voter's hard state, zero if never written. It was
// checked when the file was opened, so reading it cannot fail later.
func (s *ChunkserverStore) VoterHard() (roles.VoterHardState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Voter, nil
}

// Apply makes a chunkserver's Persists durable (roles.Persister): the
// newest voter record among them, the one that counts, in one write and
// one fdatasync. The master's fields are ignored.
func (s *ChunkserverStore) Apply(ps ...roles.Persist) error {
	last := roles.NewestVoter(ps)
	if last == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Voter = *last
	return s.write(st)
}

// Commits is how many durable writes (one fdatasync each) the store has
// made since it was opened.
func (s *ChunkserverStore) Commits() uint64 { return s.commits.Load() }

// Path is the file's path, for messages.
func (s *ChunkserverStore) Path() string { return s.path }

// Close releases the file and its lock.
func (s *ChunkserverStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
