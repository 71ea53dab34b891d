package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ingot-hpc/ingot/internal/boltfile"
	"github.com/ingot-hpc/ingot/ledger"
)

// Trim removes, in one change, journal entries 1 to seq and what only
// they need, for ledger.Archive (ledger.Trimmer): their node index
// entries; each allocation's history up to seq but its last state there,
// which the states after it are read from; the finished liens and the
// charges kept as references to those entries, and their job index
// entries. It calls finish in the same change with how many liens and
// charges it removed. The file keeps its size until it is compacted.
func (s *Store) Trim(ctx context.Context, seq uint64, finish func(tx ledger.Tx, liens, charges uint64) error) (liens, charges uint64, err error) {
	err = s.Update(ctx, func(ltx ledger.Tx) error {
		t := ltx.(*tx)
		upTo := func(k []byte) bool { return decodeUint(k[len(k)-8:]) <= seq }
		if err := t.deleteWhere(bucketJournal, func(k, _ []byte) bool { return len(k) == 8 && upTo(k) }); err != nil {
			return err
		}
		if err := t.deleteWhere(bucketByNode, func(k, _ []byte) bool { return len(k) > 8 && upTo(k) }); err != nil {
			return err
		}
		if err := t.trimHistory(seq); err != nil {
			return err
		}
		var err error
		liens, err = t.trimCarried(bucketLiens, seq, bucketLiensByJob, func(_, v []byte) (uint64, bool) { return lastID(v, 8) })
		if err != nil {
			return err
		}
		charges, err = t.trimCarried(bucketCharges, seq, bucketChargesJob, func(k, _ []byte) (uint64, bool) { return lastID(k, 9) })
		if err != nil {
			return err
		}
		return finish(t, liens, charges)
	})
	return liens, charges, err
}

// CompactTo writes a compacted copy of the bank to the new file path,
// synced, while the bank stays open and locked: no other process changes
// it meanwhile, so the copy may be put in its place (ingot archive does,
// after Trim, for the file to shrink). Nothing may change the bank while
// it runs.
func (s *Store) CompactTo(path string) error {
	return boltfile.CompactDB(path, s.db)
}

// StartJournalAfter makes the empty journal of this bank go on after
// entry head: an archive that follows an earlier one (ledger.Archive).
func (t *tx) StartJournalAfter(head ledger.JournalHead) error {
	if now, err := t.Head(); err != nil || now.Seq != 0 {
		return errors.Join(err, fmt.Errorf("%w: the journal holds entries up to %d: it cannot start after entry %d", ledger.ErrExists, now.Seq, head.Seq))
	}
	h := binary.BigEndian.AppendUint64(encodeUint(head.Seq), encodeTime(head.Time))
	return t.putRaw(bucketMeta, keyHead, append(h, head.Hash[:]...))
}

// deleteWhere deletes the keys of a bucket that gone says go, collected
// first: a cursor's Next after a Delete may skip a key.
func (t *tx) deleteWhere(bucket []byte, gone func(k, v []byte) bool) error {
	var keys [][]byte
	err := t.bucket(bucket).ForEach(func(k, v []byte) error {
		if gone(k, v) {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("boltstore: trim %s: %w", bucket, err)
	}
	for _, k := range keys {
		if err := t.delete(bucket, k); err != nil {
			return err
		}
	}
	return nil
}

// trimHistory deletes each allocation's states up to entry seq but the
// last of them.
func (t *tx) trimHistory(seq uint64) error {
	var keys [][]byte
	var last []byte // the last state up to seq of the allocation being read
	c := t.bucket(bucketHistory).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) != 16 {
			return fmt.Errorf("%w: %s/%x is not an allocation and an entry", ledger.ErrCorrupt, bucketHistory, k)
		}
		if decodeUint(k[8:]) > seq {
			continue
		}
		if last != nil && bytes.Equal(last[:8], k[:8]) {
			keys = append(keys, last)
		}
		last = bytes.Clone(k)
	}
	for _, k := range keys {
		if err := t.delete(bucketHistory, k); err != nil {
			return err
		}
	}
	return nil
}

// trimCarried deletes the records of a bucket kept as references to
// entries up to seq, and the entries of its job index (byJob) that name
// them (named reads the id an index entry names); it returns how many
// records it deleted.
func (t *tx) trimCarried(bucket []byte, seq uint64, byJob []byte, named func(k, v []byte) (uint64, bool)) (uint64, error) {
	gone := map[uint64]bool{}
	err := t.deleteWhere(bucket, func(k, v []byte) bool {
		carrier, ok := refOf(v)
		if ok && carrier <= seq && len(k) == 8 {
			gone[decodeUint(k)] = true
			return true
		}
		return false
	})
	if err != nil {
		return 0, err
	}
	err = t.deleteWhere(byJob, func(k, v []byte) bool {
		id, ok := named(k, v)
		return ok && gone[id]
	})
	return uint64(len(gone)), err
}

// lastID is the id that ends b, which is at least atLeast bytes long.
func lastID(b []byte, atLeast int) (uint64, bool) {
	if len(b) < atLeast || len(b) < 8 {
		return 0, false
	}
	return decodeUint(b[len(b)-8:]), true
}

var _ ledger.Trimmer = (*Store)(nil)
