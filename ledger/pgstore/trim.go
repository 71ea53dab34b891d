package pgstore

import (
	"context"
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// Trim removes, in one change, journal entries 1 to seq and what only
// they need, for ledger.Archive (ledger.Trimmer): their node index rows,
// and each allocation's history up to seq but its last state there, which
// the states after it are read from. Finished liens and charges are rows
// of their own here, whole (boltstore keeps them as references to their
// journal entries, which go): they stay, and read as before, so it
// removes none of them. It stores the records that records makes. The
// database's files keep their size until PostgreSQL's VACUUM reuses the
// space.
func (s *Store) Trim(ctx context.Context, seq uint64, records func(liens, charges uint64) ([]ledger.Record, error)) (liens, charges uint64, err error) {
	err = s.Update(ctx, func(ltx ledger.Tx) error {
		t := ltx.(*tx)
		for _, d := range []struct{ what, sql string }{
			{"the node index", `DELETE FROM journal_nodes WHERE seq <= $1`},
			{"the journal", `DELETE FROM journal WHERE seq <= $1`},
			{"the allocations' history", `DELETE FROM balance_history h WHERE h.seq < (SELECT max(l.seq)
				FROM balance_history l WHERE l.allocation = h.allocation AND l.seq <= $1)`},
		} {
			if err := t.exec(fmt.Sprintf("trim %s up to entry %d", d.what, seq), d.sql, bigint(seq)); err != nil {
				return err
			}
		}
		recs, err := records(0, 0)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := t.PutRecord(r); err != nil {
				return err
			}
		}
		return nil
	})
	return 0, 0, err
}

// exec runs a statement that changes many rows at once, after the writes
// waiting, in the group's transaction.
func (t *tx) exec(what, sql string, args ...any) error {
	if !t.writable {
		return fmt.Errorf("%w: cannot %s in a read", ErrReadOnly, what)
	}
	t.wrote = true
	rows, done, err := t.send("", sql, args...)
	if err == nil {
		rows.Close()
		err = rows.Err()
		if derr := done(); err == nil {
			err = derr
		}
	}
	if err != nil {
		return t.note(fmt.Errorf("pgstore: %s: %w", what, err))
	}
	return nil
}
