package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// CopyReport says what Copy copied.
type CopyReport struct {
	Entries     int `json:"entries"`
	Allocations int `json:"allocations"`
	Liens       int `json:"liens"`
	Charges     int `json:"charges"`
	Records     int `json:"records"`
	Requests    int `json:"kept_answers"`
}

// CopyOptions tune Copy.
type CopyOptions struct {
	// Progress, if set, is told how many journal entries Copy has copied,
	// every progressEntries of them (those of the source are Head's).
	Progress func(entries int)
}

// Copy copies the bank in from into to, which must hold none, from one
// snapshot of from, in one change of to: its settings; its journal, each
// entry's bytes as stored (so its hash and the chain hold); each
// allocation's history after every entry that changed it; every node,
// user, machine, lien, charge, journaled record and kept answer. The
// running sums are rebuilt; the audit's checkpoint is left behind, so the
// copy's first audit is a full one. It is what `ingot migrate` does
// between engines; the ids go on from the copied ones (Tx.NextLienID).
func Copy(ctx context.Context, from, to Store, opts CopyOptions) (CopyReport, error) {
	var rep CopyReport
	err := from.View(ctx, func(src Tx) error {
		return to.Update(ctx, func(dst Tx) error {
			rep = CopyReport{}
			if _, ok, err := dst.Settings(); err != nil {
				return err
			} else if ok {
				return fmt.Errorf("%w: the destination already holds a bank", ErrExists)
			}
			s, ok, err := src.Settings()
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w: the source holds no bank", ErrNotInitialized)
			}
			if b, archived, err := boundaryOf(src); err != nil || archived {
				return errors.Join(err, fmt.Errorf("%w: the source's entries up to %d are in an archive (%s): a bank is copied with its whole journal", ErrInvalid, b.Seq, b.File))
			}
			if err := dst.PutSettings(s); err != nil {
				return err
			}
			kinds, err := copyJournal(ctx, src, dst, &rep, opts.Progress)
			if err != nil {
				return err
			}
			if err := copyState(src, dst, kinds, &rep); err != nil {
				return err
			}
			return RebuildAccountStates(dst)
		})
	})
	if err != nil {
		return rep, fmt.Errorf("ledger: copy: %w", err)
	}
	return rep, nil
}

// copyJournal appends the source's entries to dst with the history of the
// allocations each changed, until ctx is done, and returns the kinds of the records the
// journal carries (every record but the ledger's own is journaled).
func copyJournal(ctx context.Context, src, dst Tx, rep *CopyReport, progress func(int)) (map[string]bool, error) {
	kinds := map[string]bool{}
	err := src.Entries(1, math.MaxUint64, func(se StoredEntry) (bool, error) {
		e, err := DecodeEntry(se)
		if err != nil {
			return false, err
		}
		se.Terms = IndexTerms(e)
		if err := dst.AppendEntry(se); err != nil {
			return false, err
		}
		rep.Entries++
		if rep.Entries%progressEntries == 0 {
			if progress != nil {
				progress(rep.Entries)
			}
			if err := ctx.Err(); err != nil { // stopped (Ctrl-C): nothing of the copy is committed
				return false, err
			}
		}
		if e.Record != nil {
			for _, r := range e.Record.Writes() {
				kinds[r.Kind] = true
				if err := putRecordDigest(dst, r); err != nil {
					return false, err
				}
			}
		}
		if err := copyHistory(src, dst, e); err != nil {
			return false, err
		}
		return true, nil
	})
	return kinds, err
}

// copyState copies the records that are not the journal's: nodes, users,
// machines, liens, charges, the records of kinds, and the kept answers.
// The allocations are where their history left them; one whose stored
// state differs is refused (the source's audit says more).
func copyState(src, dst Tx, kinds map[string]bool, rep *CopyReport) error {
	nodes, err := src.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := dst.PutNode(n); err != nil {
			return err
		}
	}
	users, err := src.Users()
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := dst.PutUser(u); err != nil {
			return err
		}
	}
	machines, err := src.Machines()
	if err != nil {
		return err
	}
	for _, m := range machines {
		if err := dst.PutMachine(m); err != nil {
			return err
		}
	}
	allocs, err := src.Allocations()
	if err != nil {
		return err
	}
	for _, a := range allocs {
		copied, ok, err := dst.Allocation(a.ID)
		if err != nil {
			return err
		}
		if !ok || !sameJSON(a, copied) {
			return fmt.Errorf("%w: allocation %d is not as its history leaves it (run ingot audit on the source)", ErrCorrupt, a.ID)
		}
		rep.Allocations++
	}
	carriers, _ := src.(Carriers)
	err = src.Liens(func(l Lien) (bool, error) {
		rep.Liens++
		carrier, err := carrierOf(carriers, Carriers.LienCarrier, l.ID)
		if err != nil {
			return false, err
		}
		return true, dst.PutLien(l, carrier)
	})
	if err != nil {
		return err
	}
	err = src.Charges(func(c Charge) (bool, error) {
		rep.Charges++
		carrier, err := carrierOf(carriers, Carriers.ChargeCarrier, c.ID)
		if err != nil {
			return false, err
		}
		return true, dst.PutCharge(c, carrier)
	})
	if err != nil {
		return err
	}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		records, err := src.Records(kind)
		if err != nil {
			return err
		}
		for _, r := range records {
			if err := dst.PutRecord(r); err != nil {
				return err
			}
			rep.Records++
		}
	}
	return src.Requests(func(k RequestKey, r RequestRecord) (bool, error) {
		rep.Requests++
		return true, dst.PutRequest(k, r)
	})
}

// carrierOf is the journal entry the source keeps record id as (the
// copy's entries have the source's numbers), 0 if it keeps it in full or
// keeps none as references.
func carrierOf(src Carriers, carrier func(Carriers, uint64) (uint64, bool, error), id uint64) (uint64, error) {
	if src == nil {
		return 0, nil
	}
	seq, _, err := carrier(src, id)
	return seq, err
}
