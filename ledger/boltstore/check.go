package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/boltfile"
	"github.com/ingot-hpc/ingot/ledger"
)

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
	problems, err := metaProblems(path)
	if err != nil {
		return false, err
	}
	if len(problems) > 0 {
		return false, fmt.Errorf("%w: %s; `ingot backup` copies are what to restore from", ledger.ErrCorrupt, problems[0])
	}
	return false, nil
}

// metaProblems lists what is wrong with the meta pages and the length of
// the file at path (boltfile.Check), a file with no meta page being no
// bank.
func metaProblems(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	problems, err := boltfile.Check(f, info.Size(), path)
	if errors.Is(err, boltfile.ErrNotBolt) {
		return nil, fmt.Errorf("%w: %s is not a bbolt database, so not an ingot bank", ledger.ErrNotInitialized, path)
	}
	return problems, err
}

// Check lists what is wrong with the file's storage: its meta pages and
// length, then, reading every bucket's keys and values (so that a page
// that would make bbolt panic or fault is found here, where that is
// recovered), bbolt's own consistency check (pages reachable, free, in
// order). It lists at most maxCheckProblems.
func (s *Store) Check(ctx context.Context) ([]string, error) {
	problems, err := metaProblems(s.path)
	if err != nil {
		return nil, fmt.Errorf("boltstore: check: %w", err)
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
// nested buckets), touching a byte of every page a value lies on: a page
// the file does not have faults there.
func walkAll(btx *bolt.Tx) error {
	var sum byte
	defer runtime.KeepAlive(&sum) // the reads must stay
	page := os.Getpagesize()
	return btx.ForEach(func(_ []byte, b *bolt.Bucket) error {
		return b.ForEach(func(_, v []byte) error {
			for i := 0; i < len(v); i += page {
				sum ^= v[i]
			}
			if len(v) > 0 {
				sum ^= v[len(v)-1]
			}
			return nil
		})
	})
}
