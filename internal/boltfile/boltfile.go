// Package boltfile reads what bbolt itself trusts of its file format: the
// two meta pages, whose checksums bbolt checks only to fall back silently
// from a damaged one to the other, older one, and the file's length
// against the pages in use, which bbolt does not check before it faults on
// a file cut short. A meta page (one of the first two pages) is a 16-byte
// page header, then magic, version, page size, flags (4 bytes each), the
// root bucket (page, sequence), the free list's page, the high-water page
// number, the transaction id and an FNV-64a checksum of what comes before
// it (8 bytes each), in the machine's byte order (little-endian here).
// Compact copies a bbolt file without its free pages.
package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"
)

const (
	pageHeaderSize = 16
	magic          = 0xED0CDAED
	checksumAt     = 56
	metaSize       = 64
)

// ErrNotBolt marks a file that has no bbolt meta page at all.
var ErrNotBolt = errors.New("not a bbolt database")

// meta is what the checks read of a meta page.
type meta struct {
	valid    bool // its magic and checksum are right
	magic    bool // it has bbolt's magic number
	pageSize int
	pgid     uint64 // pages below this one are in use
	txid     uint64
}

func readMeta(page []byte) meta {
	m := page[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(m[:checksumAt])
	isBolt := binary.LittleEndian.Uint32(m) == magic
	return meta{
		magic:    isBolt,
		valid:    isBolt && h.Sum64() == binary.LittleEndian.Uint64(m[checksumAt:]),
		pageSize: int(binary.LittleEndian.Uint32(m[8:])),
		pgid:     binary.LittleEndian.Uint64(m[40:]),
		txid:     binary.LittleEndian.Uint64(m[48:]),
	}
}

func readAt(f io.ReaderAt, off int64) ([]byte, error) {
	page := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(page, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return page, nil
}

// Check reads both meta pages of the bbolt file f of size bytes, named
// name in messages, and lists what is wrong with them and with the file's
// length. It fails with ErrNotBolt if neither is a bbolt meta page.
func Check(f io.ReaderAt, size int64, name string) ([]string, error) {
	first, err := readAt(f, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	m0 := readMeta(first)
	// The second meta page is one page in: take the page size the first
	// says, or, if it is damaged, find the second at the sizes bbolt uses.
	var m1 meta
	for at := 4096; at <= 65536; at *= 2 {
		if m0.valid && at != m0.pageSize {
			continue
		}
		page, err := readAt(f, int64(at))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if m1 = readMeta(page); m1.magic {
			break
		}
	}
	if !m0.magic && !m1.magic {
		return nil, fmt.Errorf("%w: %s", ErrNotBolt, name)
	}
	var problems []string
	for i, m := range []meta{m0, m1} {
		if !m.valid {
			problems = append(problems, fmt.Sprintf("meta page %d of %s is damaged (its checksum does not match): bbolt would fall back to the other meta page's older state and lose what was committed after it", i, name))
		}
	}
	newest := m0
	if !m0.valid || (m1.valid && m1.txid > m0.txid) {
		newest = m1
	}
	if need := int64(newest.pgid) * int64(newest.pageSize); newest.valid && size < need {
		problems = append(problems, fmt.Sprintf("%s is cut short: its pages reach %d bytes, the file has %d", name, need, size))
	}
	return problems, nil
}

// Compact writes a compacted copy of the bbolt file src to dst (a new
// file): every key and value in pages filled to bbolt's default, without
// the free pages src has grown, then syncs it.
func Compact(dst, src string) error {
	from, err := bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("compact: open %s: %w", src, err)
	}
	defer from.Close()
	return CompactDB(dst, from)
}

// CompactDB is Compact from a database already open (and locked): the
// file it is copied from stays its owner's while the copy is made.
func CompactDB(dst string, from *bolt.DB) error {
	to, err := bolt.Open(dst, 0o600, nil)
	if err != nil {
		return fmt.Errorf("compact: create %s: %w", dst, err)
	}
	if err := bolt.Compact(to, from, 64<<20); err != nil {
		to.Close()
		return fmt.Errorf("compact %s: %w", from.Path(), err)
	}
	if err := to.Close(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	// bbolt grew the new file ahead of its pages: cut it to them.
	f, err := os.OpenFile(dst, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	defer f.Close()
	first, err := readAt(f, 0)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	m0 := readMeta(first)
	second, err := readAt(f, int64(m0.pageSize))
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	newest := m0
	if m1 := readMeta(second); m1.valid && (!m0.valid || m1.txid > m0.txid) {
		newest = m1
	}
	if !newest.valid {
		return fmt.Errorf("compact: %s: no valid meta page", dst)
	}
	if err := f.Truncate(int64(newest.pgid) * int64(newest.pageSize)); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return f.Sync()
}
