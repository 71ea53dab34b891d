package boltstore

import (
	"errors"
	"fmt"
	"os"
	"sync"
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
type spareSegment struct {
	path string

	mu    sync.Mutex
	ready bool // the spare is there
}

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
		if !s.ready && os.Rename(file, s.path) == nil {
			s.ready = true
			return nil
		}
	}
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
	if !s.ready {
		return "", false
	}
	s.ready = false
	return s.path, true
}

// remove removes the spare.
func (s *spareSegment) remove() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = false
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("boltstore: remove spare log segment: %w", err)
	}
	return nil
}
