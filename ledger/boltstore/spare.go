package boltstore

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// A log segment the file holds all of is not removed but kept as the spare,
// PATH-wal.next, and the syncer's next segment is made from it (rotate):
// a renamed file whose blocks are written already. Blocks given by
// fallocate are "unwritten" to ext4: the first write into each converts it,
// a change of the file's metadata, so every log sync also waited for a
// commit of ext4's journal, which the checkpoint's bbolt writes to the
// other file share and slow; making, growing and removing a segment cost
// such commits too. Measured (a 100 KB write and fdatasync at a time, with
// a checkpoint-like writer beside it, two runs): 3,404 and 3,664 syncs/s
// into fallocated blocks, 5,364 and 6,214 into written ones.
//
// The spare keeps its old records after the new ones. A reader stops at
// the first record whose group is not newer than the one before it (or
// than the segment's header says came before it), and those are all older.
// A spare is no segment (its name has no number): recovery ignores it, and
// Open and Close remove it, so a spare's old records never meet a file
// other than the one whose groups they were (an older copy of the file put
// back, whose groups would come after them again).
//
// A spare is also made of zeros, written by a goroutine of its own, when
// the log has none to come: at first the only segment is one the store
// started from fallocate's blocks, and so is the next one if nothing is
// kept by the time it starts. The syncer then leaves such a segment for
// the spare as soon as the spare is made (logWriter.fresh), and the
// segment, whose blocks are not all written, is removed rather than kept
// once the file holds it. A spare half made when the process died is
// removed at Open like any other. Measured in process, 64 goroutines,
// 40,000 lien+charge cycles on the disk (a fresh bank, whose first two
// segments were made from fallocate's blocks), twelve alternating pairs:
// a throwaway writing zeros into every new segment first, twice, 16,907
// -> 17,870 and 14,632 -> 15,422 cycles/s, ahead in nine pairs of twelve
// each time; this code, 18,121 -> 19,114, ahead in ten
// (docs/performance.md, session 14).
type spareSegment struct {
	path string

	mu    sync.Mutex
	state spareState
	// made is closed when the zeros being written are done with (made,
	// failed or stopped); stop asks their writer to stop.
	made chan struct{}
	stop atomic.Bool
}

type spareState uint8

const (
	spareNone   spareState = iota
	spareMaking            // zeros being written to the spare's path
	spareReady             // the spare is there
)

// zeroChunk is how much of a spare made of zeros is written at a time,
// between looks at whether the store is closing.
const zeroChunk = 1 << 20

func sparePath(path string) string { return path + "-wal.next" }

// newSpareSegment removes the spare a crash may have left beside the
// database at path.
func newSpareSegment(path string) (*spareSegment, error) {
	s := &spareSegment{path: sparePath(path)}
	if err := s.remove(); err != nil {
		return nil, err
	}
	return s, nil
}

// keep makes the segment file the spare if there is none, and else
// removes it. A nil spareSegment keeps none (a log written by a test
// alone).
func (s *spareSegment) keep(file string) error {
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.state == spareNone && os.Rename(file, s.path) == nil {
			s.state = spareReady
			return nil
		}
	}
	return removeSegmentFile(file)
}

func removeSegmentFile(file string) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("boltstore: remove log segment: %w", err)
	}
	return nil
}

// take hands over the spare's path if there is one: it is then the
// caller's.
func (s *spareSegment) take() (string, bool) {
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != spareReady {
		return "", false
	}
	s.state = spareNone
	return s.path, true
}

// ready tells whether there is a spare to take.
func (s *spareSegment) ready() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == spareReady
}

// makeZeros starts writing a spare of size bytes of zeros, if there is no
// spare and none is being made; it tells whether it did.
func (s *spareSegment) makeZeros(size int64) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != spareNone {
		return false
	}
	s.state = spareMaking
	s.made = make(chan struct{})
	go s.writeZeros(size)
	return true
}

// writeZeros writes the spare. A spare that could not be made (a full
// disk) is only not there: the next segment is made from fallocate's
// blocks, as it would have been.
func (s *spareSegment) writeZeros(size int64) {
	err := func() error {
		f, err := os.OpenFile(s.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		zeros := make([]byte, zeroChunk)
		for off := int64(0); off < size && err == nil; off += zeroChunk {
			if s.stop.Load() {
				err = errSpareStopped
				break
			}
			_, err = f.WriteAt(zeros[:min(zeroChunk, size-off)], off)
		}
		if err == nil {
			err = f.Sync()
		}
		return errors.Join(err, f.Close())
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		os.Remove(s.path)
		s.state = spareNone
	} else {
		s.state = spareReady
	}
	close(s.made)
}

var errSpareStopped = errors.New("boltstore: the store is closing")

// remove removes the spare.
func (s *spareSegment) remove() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == spareMaking {
		s.stop.Store(true)
		s.mu.Unlock()
		<-s.made
		s.mu.Lock()
	}
	s.state = spareNone
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("boltstore: remove spare log segment: %w", err)
	}
	return nil
}
