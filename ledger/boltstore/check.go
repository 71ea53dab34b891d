package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// What Open and Check read of bbolt's file format themselves, because
// bbolt trusts it: a meta page (one of the first two pages) is a 16-byte
// page header, then magic, version, page size, flags (4 bytes each), the
// root bucket (page, sequence), the free list's page, the high-water page
// number, the transaction id and an FNV-64a checksum of what comes before
// it (8 bytes each), in the machine's byte order (little-endian here).
const (
	pageHeaderSize = 16
	boltMagic      = 0xED0CDAED
	metaChecksumAt = 56
	metaSize       = 64
)

// meta is what the checks read of a meta page.
type meta struct {
	valid    bool // its magic and checksum are right
	magic    bool // it has bbolt's magic number
	pageSize int
	pgid     uint64 // pages below this one are in use
	txid     uint64
}

func readMeta(page []byte) meta {
	if len(page) < pageHeaderSize+metaSize {
		return meta{}
	}
	m := page[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(m[:metaChecksumAt])
	return meta{
		magic:    binary.LittleEndian.Uint32(m) == boltMagic,
		valid:    binary.LittleEndian.Uint32(m) == boltMagic && h.Sum64() == binary.LittleEndian.Uint64(m[metaChecksumAt:]),
		pageSize: int(binary.LittleEndian.Uint32(m[8:])),
		pgid:     binary.LittleEndian.Uint64(m[40:]),
		txid:     binary.LittleEndian.Uint64(m[48:]),
	}
}

// checkFile checks a file before bbolt opens it: fresh says there is no
// bank yet and create allows one to be made. It refuses a file that is
// not a bbolt database (ledger.ErrNotInitialized) and one whose meta pages
// or length say it is damaged (ledger.ErrCorrupt), which bbolt would open
// by falling back to an older state, or fault on.
func checkFile(path string, create bool) (fresh bool, err error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && create:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("%w: %s does not exist (create a bank with `ingot init`)", ledger.ErrNotInitialized, path)
	case err != nil:
		return false, err
	case info.IsDir():
		return false, fmt.Errorf("%w: %s is a directory, not a bank file", ledger.ErrNotInitialized, path)
	case info.Size() == 0 && create:
		return true, nil
	case info.Size() == 0:
		return false, fmt.Errorf("%w: %s is empty", ledger.ErrNotInitialized, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	problems, err := checkMetas(f, info.Size(), path)
	if err != nil {
		return false, err
	}
	if len(problems) > 0 {
		return false, fmt.Errorf("%w: %s; `ingot backup` copies are what to restore from", ledger.ErrCorrupt, problems[0])
	}
	return false, nil
}

// checkMetas reads both meta pages of the file f of size bytes and lists
// what is wrong with them and with the file's length. It fails with
// ledger.ErrNotInitialized if neither is a bbolt meta page.
func checkMetas(f io.ReaderAt, size int64, path string) ([]string, error) {
	first := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(first, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	m0 := readMeta(first)
	// The second meta page is one page in: take the page size the first
	// says, or, if it is damaged, find the second at the sizes bbolt uses.
	var m1 meta
	for size := 4096; size <= 65536; size *= 2 {
		if m0.valid && size != m0.pageSize {
			continue
		}
		page := make([]byte, pageHeaderSize+metaSize)
		if _, err := f.ReadAt(page, int64(size)); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if m1 = readMeta(page); m1.magic {
			break
		}
	}
	if !m0.magic && !m1.magic {
		return nil, fmt.Errorf("%w: %s is not a bbolt database, so not an ingot bank", ledger.ErrNotInitialized, path)
	}
	var problems []string
	for i, m := range []meta{m0, m1} {
		if !m.valid {
			problems = append(problems, fmt.Sprintf("meta page %d of %s is damaged (its checksum does not match): bbolt would fall back to the other meta page's older state and lose what was committed after it", i, path))
		}
	}
	newest := m0
	if !m0.valid || (m1.valid && m1.txid > m0.txid) {
		newest = m1
	}
	if newest.valid {
		if need := int64(newest.pgid) * int64(newest.pageSize); size < need {
			problems = append(problems, fmt.Sprintf("%s is cut short: its pages reach %d bytes, the file has %d", path, need, size))
		}
	}
	return problems, nil
}

// Check lists what is wrong with the file's storage: its meta pages and
// length, then, reading every bucket's keys and values (so that a page
// that would make bbolt panic or fault is found here, where that is
// recovered), bbolt's own consistency check (pages reachable, free, in
// order). It lists at most maxCheckProblems.
func (s *Store) Check(ctx context.Context) ([]string, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("boltstore: check %s: %w", s.path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("boltstore: check %s: %w", s.path, err)
	}
	problems, err := checkMetas(f, info.Size(), s.path)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return problems, nil
	}
	if err := s.view(walkAll); err != nil {
		if errors.Is(err, ledger.ErrCorrupt) {
			return append(problems, err.Error()), nil
		}
		return nil, err
	}
	err = s.view(func(btx *bolt.Tx) error {
		for err := range btx.Check() {
			if len(problems) < maxCheckProblems {
				problems = append(problems, err.Error())
			}
		}
		return ctx.Err()
	})
	return problems, err
}

const maxCheckProblems = 20

// walkAll reads every key and value of every bucket (a bank has no
// nested buckets).
func walkAll(btx *bolt.Tx) error {
	var sum byte
	return btx.ForEach(func(_ []byte, b *bolt.Bucket) error {
		return b.ForEach(func(_, v []byte) error {
			for _, x := range v {
				sum ^= x // touch every byte of the value's pages
			}
			return nil
		})
	})
}
