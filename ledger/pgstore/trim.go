package pgstore

import (
	"context"
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// Trim removes, in one change, journal entries 1 to seq and what only
// they need, for ledger.Archive (ledger.Trimmer): the finished liens and
// the charges kept as references to those entries; their node index rows;
// each allocation's history up to seq but its last state there, which the
// states after it are read from. It calls finish in the same change with
// how many liens and charges it removed. The database's files keep their
// size until PostgreSQL's VACUUM reuses the space.
func (s *Store) Trim(ctx context.Context, seq uint64, finish func(tx ledger.Tx, liens, charges uint64) error) (liens, charges uint64, err error) {
	err = s.Update(ctx, func(ltx ledger.Tx) error {
		t := ltx.(*tx)
		trim := func(what, sql string) (uint64, error) {
			return t.exec(fmt.Sprintf("trim %s up to entry %d", what, seq), sql, bigint(seq))
		}
		var err error
		if liens, err = trim("the finished liens", `DELETE FROM liens WHERE carrier <= $1`); err != nil {
			return err
		}
		if charges, err = trim("the charges", `DELETE FROM charges WHERE carrier <= $1`); err != nil {
			return err
		}
		for _, d := range []struct{ what, sql string }{
			{"the node index", `DELETE FROM journal_nodes WHERE seq <= $1`},
			{"the journal", `DELETE FROM journal WHERE seq <= $1`},
			{"the allocations' history", `DELETE FROM balance_history h WHERE h.seq < (SELECT max(l.seq)
				FROM balance_history l WHERE l.allocation = h.allocation AND l.seq <= $1)`},
		} {
			if _, err := trim(d.what, d.sql); err != nil {
				return err
			}
		}
		return finish(t, liens, charges)
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
