package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The write-ahead log: what makes a group durable. The syncer appends the
// groups' writes to it and fdatasyncs once; the checkpointer applies them
// to the bbolt file later, many groups in one bbolt transaction. A log
// record costs a sequential write of the bytes that changed and one sync,
// where a bbolt commit rewrites every page a group touched and syncs twice.
//
// The log is a series of segment files beside the database, PATH-wal.N
// (N from 1 up); the syncer starts a new one when the current one passes
// segmentSize, and the checkpointer removes a segment once every group in
// it is in the bbolt file (keeping one as the spare the next segment is
// made from: spare.go). A segment starts with a header,
//
//	"IWALSEG1" ‖ the bank's id (16 bytes, meta "bank_id") ‖ the newest group logged before it (8)
//
// so that opening a file refuses a log of another bank, or one that starts
// after what the file holds (the file replaced by an older copy): applying
// either would make a bank of neither. A record is
//
//	"IWAL" ‖ payload length (4, big-endian) ‖ CRC-32C of the payload (4) ‖ payload
//
// and its payload is the number of the newest group it holds (8) followed
// by the writes, each
//
//	kind (1: put, delete, sequence) ‖ bucket (1, its bucketID) ‖
//	put:      key length (uvarint) ‖ key ‖ value length (uvarint) ‖ value
//	delete:   key length (uvarint) ‖ key
//	sequence: the bucket's new sequence (8)
//
// A crash can leave a record half written at the end of the newest
// segment; reading stops at the first record that is incomplete or fails
// its checksum, and that record was never acknowledged. It also stops at a
// record whose group is not newer than the one before it (or, for the
// first, than the header's): one a failed write left, or one from the
// segment's earlier use as another segment.
const (
	segmentMagic  = "IWALSEG1"
	segmentHeader = len(segmentMagic) + bankIDSize + 8
	bankIDSize    = 16
	walMagic      = "IWAL"
	walHeader     = 12
	// maxRecord bounds a record's payload, so that a corrupt length cannot
	// make the reader allocate without limit.
	maxRecord = 1 << 30
)

const (
	walPut byte = iota
	walDelete
	walSequence
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends a log record holding writes, the last of which
// belongs to group.
func appendRecord(dst []byte, group uint64, writes []write) ([]byte, error) {
	start := len(dst)
	dst = append(dst, walMagic...)
	dst = append(dst, make([]byte, 8)...) // length and checksum, below
	dst = binary.BigEndian.AppendUint64(dst, group)
	for _, w := range writes {
		b := byte(w.bucket)
		switch {
		case w.superseded:
		case w.seq:
			dst = append(dst, walSequence, b)
			dst = binary.BigEndian.AppendUint64(dst, w.sequence)
		case w.deleted:
			dst = append(dst, walDelete, b)
			dst = binary.AppendUvarint(dst, uint64(len(w.key)))
			dst = append(dst, w.key...)
		default:
			value, err := w.bytes()
			if err != nil {
				return dst[:start], fmt.Errorf("boltstore: group %d: %s value: %w", group, w.bucket, err)
			}
			dst = append(dst, walPut, b)
			dst = binary.AppendUvarint(dst, uint64(len(w.key)))
			dst = append(dst, w.key...)
			dst = binary.AppendUvarint(dst, uint64(len(value)))
			dst = append(dst, value...)
		}
	}
	payload := dst[start+walHeader:]
	binary.BigEndian.PutUint32(dst[start+4:], uint32(len(payload)))
	binary.BigEndian.PutUint32(dst[start+8:], crc32.Checksum(payload, crcTable))
	return dst, nil
}

// errTorn marks the end of what a log segment holds intact.
var errTorn = errors.New("boltstore: log record incomplete or damaged")

// readRecord decodes the record at the start of b: its group, its writes
// and its size. errTorn means b does not start with a whole, intact
// record; any other error means an intact record that makes no sense.
func readRecord(b []byte) (group uint64, writes []write, size int, err error) {
	if len(b) < walHeader || string(b[:4]) != walMagic {
		return 0, nil, 0, errTorn
	}
	n := binary.BigEndian.Uint32(b[4:])
	if n > maxRecord || uint64(len(b)-walHeader) < uint64(n) {
		return 0, nil, 0, errTorn
	}
	payload := b[walHeader : walHeader+int(n)]
	if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(b[8:]) {
		return 0, nil, 0, errTorn
	}
	if len(payload) < 8 {
		return 0, nil, 0, fmt.Errorf("boltstore: log record of %d bytes has no group", n)
	}
	group = binary.BigEndian.Uint64(payload)
	for p := payload[8:]; len(p) > 0; {
		var w write
		if w, p, err = readWrite(p); err != nil {
			return 0, nil, 0, fmt.Errorf("boltstore: log record of group %d: %w", group, err)
		}
		writes = append(writes, w)
	}
	return group, writes, walHeader + int(n), nil
}

func readWrite(p []byte) (write, []byte, error) {
	if len(p) < 2 {
		return write{}, nil, errors.New("write is truncated")
	}
	kind, b := p[0], bucketID(p[1])
	if b >= numBuckets {
		return write{}, nil, fmt.Errorf("unknown bucket %d", b)
	}
	w := write{bucket: b}
	p = p[2:]
	if kind == walSequence {
		if len(p) < 8 {
			return write{}, nil, errors.New("sequence is truncated")
		}
		w.seq, w.sequence = true, binary.BigEndian.Uint64(p)
		return w, p[8:], nil
	}
	if kind != walPut && kind != walDelete {
		return write{}, nil, fmt.Errorf("unknown write kind %d", kind)
	}
	var err error
	if w.key, p, err = readBytes(p); err != nil {
		return write{}, nil, fmt.Errorf("key: %w", err)
	}
	if kind == walDelete {
		w.deleted = true
		return w, p, nil
	}
	if w.value, p, err = readBytes(p); err != nil {
		return write{}, nil, fmt.Errorf("value: %w", err)
	}
	return w, p, nil
}

func readBytes(p []byte) ([]byte, []byte, error) {
	n, size := binary.Uvarint(p)
	if size <= 0 || n > uint64(len(p)-size) {
		return nil, nil, errors.New("length is truncated or too long")
	}
	end := size + int(n)
	return slices.Clone(p[size:end]), p[end:], nil
}

// segmentPath is the path of log segment n of the database at path.
func segmentPath(path string, n uint64) string { return fmt.Sprintf("%s-wal.%d", path, n) }

// segments lists the numbers of the database's log segments, in order.
func segments(path string) ([]uint64, error) {
	matches, err := filepath.Glob(path + "-wal.*")
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, m := range matches {
		n, err := strconv.ParseUint(strings.TrimPrefix(m, path+"-wal."), 10, 64)
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// loggedGroup is a group's writes as read back from the log.
type loggedGroup struct {
	group  uint64
	writes []write
}

// A segmentInfo is what a segment's header says.
type segmentInfo struct {
	bank [bankIDSize]byte
	prev uint64
	ok   bool // false for a segment whose header was never written (a crash as it was made)
}

// readSegment reads a segment's header and intact records, and how many
// bytes they take: a torn record ends it.
func readSegment(file string) (segmentInfo, []loggedGroup, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return segmentInfo{}, nil, fmt.Errorf("boltstore: read log: %w", err)
	}
	var info segmentInfo
	if len(data) < segmentHeader || string(data[:len(segmentMagic)]) != segmentMagic {
		if len(bytes.Trim(data, "\x00")) == 0 {
			return info, nil, nil // made, but nothing written in it
		}
		return info, nil, fmt.Errorf("%w: %s has no segment header", errCorruptLog, file)
	}
	copy(info.bank[:], data[len(segmentMagic):])
	info.prev = binary.BigEndian.Uint64(data[len(segmentMagic)+bankIDSize:])
	info.ok = true
	var out []loggedGroup
	off := segmentHeader
	for data = data[segmentHeader:]; len(data) > 0; {
		group, writes, size, err := readRecord(data)
		newest := info.prev
		if len(out) > 0 {
			newest = out[len(out)-1].group
		}
		if errors.Is(err, errTorn) || err == nil && group <= newest {
			// A record left by a failed write, or from the segment's
			// earlier use (recycle), is older than the one before it.
			break
		}
		if err != nil {
			return info, nil, fmt.Errorf("%w: %s at byte %d: %v", errCorruptLog, file, off, err)
		}
		out = append(out, loggedGroup{group: group, writes: writes})
		data, off = data[size:], off+size
	}
	return info, out, nil
}

var errCorruptLog = errors.New("boltstore: write-ahead log is corrupt")

// A logWriter appends records to the newest segment, which it
// preallocates walChunk at a time; the zeros after the last record read as
// the end of the log.
type logWriter struct {
	path      string
	n         uint64
	bank      [bankIDSize]byte
	f         *os.File
	size      int64
	allocated int64
	// spare is the segment the next one is made from, if any.
	spare *spareSegment
	// fresh says the segment was started from fallocate's blocks (no spare
	// was there): its syncs also commit ext4's journal (spare.go), so the
	// syncer leaves it for a spare as soon as there is one.
	fresh bool
	// spareAsked says a spare of zeros was asked for while this segment
	// was the log's (at most once a segment: on a full disk it fails).
	spareAsked bool
}

const walChunk = 4 << 20

// segmentSize is the size past which the syncer starts a new segment; a
// variable so that tests can make segments small. Segments are made anew
// (blocks from fallocate) until the checkpointer keeps one as the spare
// (spare.go), so smaller ones are reused sooner: in process, 64
// goroutines, 40,000 cycles on the disk, 16 MiB gave 0-8% more cycles than
// 64 MiB in three alternating pairs (over loopback the same within the
// noise), for a sync of the directory every 16 MiB of log.
var segmentSize int64 = 16 << 20

// openLog starts segment n, holding only its header: bank's log, after
// group prev.
func openLog(path string, n uint64, bank [bankIDSize]byte, prev uint64) (*logWriter, error) {
	f, err := os.OpenFile(segmentPath(path, n), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("boltstore: start log segment: %w", err)
	}
	w, err := startSegment(f, path, n, bank, prev)
	if err != nil {
		return nil, err
	}
	w.fresh = true
	return w, nil
}

// startSegment writes segment n's header at the start of f and makes it,
// and the segment's name, durable. What f holds past the header, zeros or
// older records, is the logWriter's to write over.
func startSegment(f *os.File, path string, n uint64, bank [bankIDSize]byte, prev uint64) (*logWriter, error) {
	header := binary.BigEndian.AppendUint64(append([]byte(segmentMagic), bank[:]...), prev)
	fi, err := func() (os.FileInfo, error) {
		if _, err := f.WriteAt(header, 0); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if err := syncDir(path); err != nil {
			return nil, err
		}
		return f.Stat()
	}()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("boltstore: start log segment: %w", err)
	}
	size := int64(len(header))
	return &logWriter{path: path, n: n, bank: bank, f: f, size: size, allocated: max(size, fi.Size())}, nil
}

// append writes records and syncs them. On failure it cuts the segment
// back to what it held, so that the next record does not follow a torn one
// (which would hide it from recovery).
func (w *logWriter) append(records []byte) error {
	if end := w.size + int64(len(records)); end > w.allocated {
		n := (end + walChunk - 1) / walChunk * walChunk
		if err := preallocate(w.f, n); err != nil {
			// Nearly full: take only what this write needs.
			if err := preallocate(w.f, end); err != nil {
				return w.undo(fmt.Errorf("boltstore: extend log: %w", err), 0)
			}
			n = end
		}
		w.allocated = n
	}
	if _, err := w.f.WriteAt(records, w.size); err != nil {
		return w.undo(fmt.Errorf("boltstore: write log: %w", err), len(records))
	}
	if err := w.f.Sync(); err != nil {
		return w.undo(fmt.Errorf("boltstore: sync log: %w", err), len(records))
	}
	w.size += int64(len(records))
	return nil
}

// undo removes what a failed write of n bytes may have left after the
// last whole record: zeros end the log for a reader, so it overwrites them
// with zeros within the preallocated size, or else cuts the file back.
func (w *logWriter) undo(err error, n int) error {
	if n == 0 {
		return err
	}
	if w.size+int64(n) <= w.allocated {
		if _, zerr := w.f.WriteAt(make([]byte, n), w.size); zerr == nil {
			return err
		}
	}
	if terr := w.f.Truncate(w.size); terr != nil {
		return fmt.Errorf("%w; and cutting the log back failed: %v", err, terr)
	}
	w.allocated = w.size
	return err
}

// rotate closes the segment and starts the next one, after group prev:
// from the spare if there is one, else a new file.
func (w *logWriter) rotate(prev uint64) error {
	next, err := w.next(prev)
	if err != nil {
		return err
	}
	w.f.Close()
	next.spare = w.spare
	*w = *next
	return nil
}

func (w *logWriter) next(prev uint64) (*logWriter, error) {
	spare, ok := w.spare.take()
	if !ok {
		return openLog(w.path, w.n+1, w.bank, prev)
	}
	next, err := adoptSpare(spare, w.path, w.n+1, w.bank, prev)
	if err != nil {
		// It only makes syncs faster: a new file does as well.
		os.Remove(spare)
		return openLog(w.path, w.n+1, w.bank, prev)
	}
	return next, nil
}

// adoptSpare makes the spare segment n, holding only its header.
func adoptSpare(spare, path string, n uint64, bank [bankIDSize]byte, prev uint64) (*logWriter, error) {
	name := segmentPath(path, n)
	if err := os.Rename(spare, name); err != nil {
		return nil, fmt.Errorf("boltstore: start log segment: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("boltstore: start log segment: %w", err)
	}
	// A crash before the header is written leaves the header of the
	// spare's earlier use, whose records are all older than the file's.
	return startSegment(f, path, n, bank, prev)
}

// close closes the segment and removes the spare.
func (w *logWriter) close() error { return errors.Join(w.f.Close(), w.spare.remove()) }

// syncDir makes a new or removed segment's name durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("boltstore: sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("boltstore: sync directory: %w", err)
	}
	return nil
}
