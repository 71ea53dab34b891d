package pgstore

import (
	"context"
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// Trim removes, in one change, journal entries 1 to seq and what only
// they need, for ledger.Archive (ledger.Trimmer): their node index rows;
// each allocation's history up to seq but its last state there, which the
// states after it are read from; the finished liens and the charges kept
// as references to those entries. It stores the records that records
// makes of how many liens and charges it removed. The database's files
// keep their size until PostgreSQL's VACUUM reuses the space.
func (s *Store) Trim(ctx context.Context, seq uint64, records func(liens, charges uint64) ([]ledger.Record, error)) (liens, charges uint64, err error) {
	err = s.Update(ctx, func(ltx ledger.Tx) error {
		t := ltx.(*tx)
		var removed [2]uint64
		for _, d := range []struct {
			what, sql string
			count     *uint64
		}{
			{"the finished liens", `DELETE FROM liens WHERE carrier <= $1`, &removed[0]},
			{"the charges", `DELETE FROM charges WHERE carrier <= $1`, &removed[1]},
			{"the node index", `DELETE FROM journal_nodes WHERE seq <= $1`, nil},
			{"the journal", `DELETE FROM journal WHERE seq <= $1`, nil},
			{"the allocations' history", `DELETE FROM balance_history h WHERE h.seq < (SELECT max(l.seq)
				FROM balance_history l WHERE l.allocation = h.allocation AND l.seq <= $1)`, nil},
		} {
			n, err := t.exec(fmt.Sprintf("trim %s up to entry %d", d.what, seq), d.sql, bigint(seq))
			if err != nil {
				return err
			}
			if d.count != nil {
				*d.count = n
			}
		}
		liens, charges = removed[0], removed[1]
		recs, err := records(liens, charges)
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
	return liens, charges, err
}

// exec runs a statement that changes many rows at once, after the writes
// waiting, in the group's transaction, and says how many it changed.
func (t *tx) exec(what, sql string, args ...any) (uint64, error) {
	if !t.writable {
		return 0, fmt.Errorf("%w: cannot %s in a read", ErrReadOnly, what)
	}
	t.wrote = true
	rows, done, err := t.send("", sql, args...)
	var n uint64
	if err == nil {
		rows.Close()
		err = rows.Err()
		n = uint64(rows.CommandTag().RowsAffected())
		if derr := done(); err == nil {
			err = derr
		}
	}
	if err != nil {
		return 0, t.note(fmt.Errorf("pgstore: %s: %w", what, err))
	}
	return n, nil
}
