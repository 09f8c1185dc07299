package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"syscall"
	"time"
)

// verifyPages checks the page structure of the bbolt file at path by plain
// reads, before bbolt maps it. bbolt trusts what its pages say: a damaged
// page id, overflow count or element offset sends it outside the file (a
// fault), into a loop (a branch that leads back to itself: a cursor that
// never returns), or into an allocation sized by a damaged count (bbolt's
// consistency check inserted one map entry per claimed overflow page, 4
// billion of them, in TestDamagedStore). None of that is recoverable, so it
// is refused here: the pages the newest valid meta page reaches (the bucket
// tree, inline buckets and the freelist) lie inside the file and below the
// high-water mark, say who they are, are of the right type, hold their
// elements within their bounds, are reached once, and the tree is at most
// maxTreeDepth deep. Key order, free pages that are also in use and pages
// nothing reaches are left to bbolt's Check, which can then run safely.
//
// The layout is bbolt's on-disk format (go.etcd.io/bbolt/internal/common:
// page, meta, branch and leaf elements), in the machine's byte order as
// bbolt writes it.
//
// It reads under a shared flock, as a read-only bbolt open does, so that
// it never judges a file a live daemon is writing: errLocked then. A file
// without a valid meta page is errNotBolt.
func verifyPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() // drops the flock
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			break
		} else if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		} else if time.Since(start) > lockTimeout {
			return errLocked
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	v := &pageVerifier{f: f, size: fi.Size(), seen: map[uint64]bool{}}
	m, err := v.meta()
	if err != nil {
		return fmt.Errorf("%w: %v", errNotBolt, err)
	}
	v.pageSize, v.hwm = int64(m.pageSize), m.hwm
	if v.hwm < 2 || v.hwm > uint64(v.size/v.pageSize) {
		return fmt.Errorf("the meta page (txid %d) counts %d pages, the file holds %d", m.txid, v.hwm, v.size/v.pageSize)
	}
	if m.freelist != noFreelist {
		if err := v.freelist(m.freelist); err != nil {
			return err
		}
	}
	return v.branchOrLeaf(m.root, 0)
}

// bbolt's format.
const (
	pageHeaderSize = 16 // id uint64, flags uint16, count uint16, overflow uint32
	elementSize    = 16 // branch: pos, ksize uint32, pgid uint64; leaf: flags, pos, ksize, vsize uint32
	bucketHeader   = 16 // a bucket's value: root pgid uint64, sequence uint64; an inline page follows when root is 0

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagFreelist = 0x10
	leafBucket   = 0x01 // a leaf element that is a bucket

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)

	// maxTreeDepth bounds the bucket tree: bbolt's trees are a handful
	// of levels deep (4 KiB pages, nested buckets, inline pages).
	maxTreeDepth = 32
)

var ne = binary.NativeEndian

var (
	errLocked  = errors.New("locked by another process")
	errNotBolt = errors.New("not a bbolt file")
)

type boltMeta struct {
	pageSize                       uint32
	root, freelist, hwm, txid, sum uint64
}

type pageVerifier struct {
	f        *os.File
	size     int64
	pageSize int64
	hwm      uint64
	seen     map[uint64]bool
	// oneBad: meta found exactly one of the two meta pages not valid
	// (which, and why); bbolt then opens at the other.
	oneBad string
}

// metaWarning says that one of the meta pages of the bbolt file at path is
// not valid, so that bbolt opened it at the other, an older commit: a
// commit torn in its meta page, or rot, which no error reports. Empty when
// both are valid, or when the file cannot be read here.
func metaWarning(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	v := &pageVerifier{f: f, size: fi.Size()}
	m, err := v.meta()
	if err != nil || v.oneBad == "" {
		return ""
	}
	return fmt.Sprintf("metadata file %s: its %s: bbolt opened it at the other, transaction %d; a commit the damaged page recorded, if newer, is not in it "+
		"(a torn last write or a failing disk: check the disk, and compare with the LEADER)", path, v.oneBad, m.txid)
}

// meta reads both meta pages and returns the valid one with the higher
// transaction id, as bbolt picks it.
func (v *pageVerifier) meta() (boltMeta, error) {
	read := func(off int64) (boltMeta, error) {
		b := make([]byte, pageHeaderSize+64)
		if _, err := v.f.ReadAt(b, off); err != nil {
			return boltMeta{}, err
		}
		m := b[pageHeaderSize:] // the page header is not checked: bbolt does not
		h := fnv.New64a()
		h.Write(m[:56])
		got := boltMeta{pageSize: ne.Uint32(m[8:]), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]),
			hwm: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:]), sum: ne.Uint64(m[56:])}
		switch {
		case ne.Uint32(m[0:]) != boltMagic || ne.Uint32(m[4:]) != boltVersion:
			return boltMeta{}, errors.New("no bbolt magic or version")
		case got.sum != h.Sum64():
			return boltMeta{}, errors.New("meta checksum mismatch")
		case got.pageSize < 512 || got.pageSize > 1<<20 || got.pageSize&(got.pageSize-1) != 0:
			return boltMeta{}, fmt.Errorf("page size %d", got.pageSize)
		}
		return got, nil
	}
	m0, err0 := read(0)
	var m1 boltMeta
	err1 := errors.New("not found")
	if err0 == nil {
		m1, err1 = read(int64(m0.pageSize))
	} else {
		// Where bbolt looks for the second when the first is damaged.
		for i := 0; i <= 14 && err1 != nil; i++ {
			if off := int64(1024) << i; off < v.size {
				if m1, err1 = read(off); err1 == nil && int64(m1.pageSize) != off {
					err1 = errors.New("not found")
				}
			}
		}
	}
	switch {
	case err0 != nil && err1 != nil:
		return boltMeta{}, fmt.Errorf("no valid meta page (%v; %v)", err0, err1)
	case err0 != nil:
		v.oneBad = fmt.Sprintf("first meta page is not valid (%v)", err0)
	case err1 != nil:
		v.oneBad = fmt.Sprintf("second meta page is not valid (%v)", err1)
	}
	switch {
	case err1 != nil || (err0 == nil && m0.txid >= m1.txid):
		return m0, nil
	}
	return m1, nil
}

// page reads page id with its overflow pages, checking its header.
func (v *pageVerifier) page(id uint64, want uint16) ([]byte, error) {
	if id < 2 || id >= v.hwm {
		return nil, fmt.Errorf("page %d is outside the file's pages 2..%d", id, v.hwm-1)
	}
	var h [pageHeaderSize]byte
	if _, err := v.f.ReadAt(h[:], int64(id)*v.pageSize); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	over, fl := uint64(ne.Uint32(h[12:])), ne.Uint16(h[8:])
	switch {
	case ne.Uint64(h[0:]) != id:
		return nil, fmt.Errorf("page %d says it is page %d", id, ne.Uint64(h[0:]))
	case fl&want == 0 || fl&(fl-1) != 0: // exactly one type, one of those wanted
		return nil, fmt.Errorf("page %d has flags %#x where %#x was expected", id, fl, want)
	case id+over >= v.hwm:
		return nil, fmt.Errorf("page %d claims %d overflow pages, past the file's %d", id, over, v.hwm)
	}
	for p := id; p <= id+over; p++ {
		if v.seen[p] {
			return nil, fmt.Errorf("page %d is reached twice", p)
		}
		v.seen[p] = true
	}
	b := make([]byte, (over+1)*uint64(v.pageSize))
	if _, err := v.f.ReadAt(b, int64(id)*v.pageSize); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return b, nil
}

func (v *pageVerifier) freelist(id uint64) error {
	b, err := v.page(id, flagFreelist)
	if err != nil {
		return fmt.Errorf("freelist: %w", err)
	}
	first, count := uint64(0), uint64(ne.Uint16(b[10:]))
	if count == 0xFFFF {
		first, count = 1, ne.Uint64(b[pageHeaderSize:])
	}
	if count > uint64(len(b)) || pageHeaderSize+(first+count)*8 > uint64(len(b)) {
		return fmt.Errorf("freelist page %d claims %d free pages, more than it holds", id, count)
	}
	for i := range count {
		if p := ne.Uint64(b[pageHeaderSize+(first+i)*8:]); p < 2 || p >= v.hwm {
			return fmt.Errorf("freelist page %d lists page %d, outside the file's pages 2..%d", id, p, v.hwm-1)
		}
	}
	return nil
}

// branchOrLeaf checks the tree under page id.
func (v *pageVerifier) branchOrLeaf(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("the tree is deeper than %d levels at page %d", maxTreeDepth, id)
	}
	b, err := v.page(id, flagBranch|flagLeaf)
	if err != nil {
		return err
	}
	return v.elements(b, id, depth)
}

// elements checks the elements of the page (or inline page) in b.
func (v *pageVerifier) elements(b []byte, id uint64, depth int) error {
	flags, count := ne.Uint16(b[8:]), int(ne.Uint16(b[10:]))
	if pageHeaderSize+count*elementSize > len(b) {
		return fmt.Errorf("page %d claims %d elements, more than it holds", id, count)
	}
	if flags == flagBranch && count == 0 {
		return fmt.Errorf("branch page %d is empty", id)
	}
	for i := range count {
		at := pageHeaderSize + i*elementSize
		e := b[at : at+elementSize]
		if flags == flagBranch {
			end := uint64(at) + uint64(ne.Uint32(e[0:])) + uint64(ne.Uint32(e[4:]))
			if end > uint64(len(b)) {
				return fmt.Errorf("page %d element %d: its key lies past the page", id, i)
			}
			if err := v.branchOrLeaf(ne.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		kAt := uint64(at) + uint64(ne.Uint32(e[4:]))
		vAt := kAt + uint64(ne.Uint32(e[8:]))
		end := vAt + uint64(ne.Uint32(e[12:]))
		if end > uint64(len(b)) {
			return fmt.Errorf("page %d element %d: its key or value lies past the page", id, i)
		}
		if ne.Uint32(e[0:])&leafBucket == 0 {
			continue
		}
		val := b[vAt:end]
		if len(val) < bucketHeader {
			return fmt.Errorf("page %d element %d: a bucket of %d bytes", id, i, len(val))
		}
		if root := ne.Uint64(val); root != 0 {
			if err := v.branchOrLeaf(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := val[bucketHeader:]
		if len(inline) < pageHeaderSize || ne.Uint16(inline[8:]) != flagLeaf {
			return fmt.Errorf("page %d element %d: an inline bucket that is not a leaf page", id, i)
		}
		if depth+1 > maxTreeDepth {
			return fmt.Errorf("the tree is deeper than %d levels at page %d", maxTreeDepth, id)
		}
		if err := v.elements(inline, id, depth+1); err != nil {
			return err
		}
	}
	return nil
}
