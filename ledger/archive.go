package ledger

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrArchived marks a query about entries that are in an archive the
// command was not given (it is also ErrNotFound).
var ErrArchived = fmt.Errorf("%w (in an archive)", ErrNotFound)

// archiveKind is the kind of the ledger's own record (not journaled) where
// a bank whose oldest entries are in an archive keeps its Boundary, under
// boundaryKey.
const (
	archiveKind = "ledger.archive"
	boundaryKey = "boundary"
)

// Boundary is where a bank's journal starts once its oldest entries have
// been moved to an archive (Archive): the archive holds entries up to Seq
// (from 1, or from its own boundary on), the bank those after it.
type Boundary struct {
	Seq uint64 `json:"seq"`
	// Hash is entry Seq's: the first kept entry's previous hash, and the
	// archive's last.
	Hash string    `json:"hash"`
	Time time.Time `json:"time"`
	// Before is the date the archive was asked for, File the archive's
	// name as given then, Made when it was made: for messages.
	Before time.Time `json:"before"`
	File   string    `json:"file"`
	Made   time.Time `json:"made"`
	// Created is when the bank was initialised (its first entry's time).
	Created time.Time `json:"created"`
	// State is the state the journal gave up to Seq, which the bank's
	// audits start from.
	State auditCheckpoint `json:"state"`
}

// Trimmer is what an engine that can archive offers: Trim removes in one
// change the journal entries up to seq and what only they need (their
// index entries, the history of allocations before their last state up
// to seq, the finished liens and the charges kept as references to those
// entries), then calls finish in the same change with how many liens and
// charges it removed (the ledger stores its boundary there), and returns
// those numbers.
type Trimmer interface {
	Trim(ctx context.Context, seq uint64, finish func(tx Tx, liens, charges uint64) error) (liens, charges uint64, err error)
}

// journalStarter is the Tx of an engine that can begin an empty journal
// after a given entry: an archive that follows an earlier one.
type journalStarter interface {
	StartJournalAfter(head JournalHead) error
}

// boundaryOf reads the store's boundary; ok is false for a bank that
// keeps its whole journal.
func boundaryOf(tx Tx) (b Boundary, ok bool, err error) {
	r, ok, err := tx.Record(archiveKind, boundaryKey)
	if err != nil || !ok {
		return b, false, err
	}
	if err := json.Unmarshal(r.Value, &b); err != nil {
		return b, false, fmt.Errorf("%w: the archive boundary: %v", ErrCorrupt, err)
	}
	return b, true, nil
}

// ArchiveReport says what Archive moved.
type ArchiveReport struct {
	From, To          uint64 // the entries moved
	Liens, Charges    uint64 // the records the bank no longer keeps
	Boundary          Boundary
	ArchiveEntries    uint64 // the archive's audit: entries replayed
	ArchiveProblems   []string
	AuditedBeforehand AuditReport
}

// Archive moves the journal entries made before before, and what only they
// need, from the bank into dst, an empty store, and makes the bank start
// after them. dst becomes a bank of its own that holds the entries from
// the first the bank kept (1, or after its boundary) to the last made
// before before, with the state they gave (settings, nodes, users,
// machines, allocations and their history, records, liens, charges,
// running sums), audited in full; the bank keeps the entries after, and
// the state at the boundary that its audits start from. A date before
// which the bank keeps nothing, or an answer kept for retries within its
// retention that names an entry to move, is refused with the bank
// unchanged; then the answers past their retention are dropped, the bank
// is audited in full, and nothing is moved unless both audits are clean.
// file names dst in the boundary, for messages.
//
// progress, if not nil, is told how far each step has gone: the bank's
// audit, the copy and the archive's audit, in journal entries done of the
// step's total.
func (l *Ledger) Archive(ctx context.Context, before time.Time, dst Store, file string, progress ArchiveProgress) (ArchiveReport, error) {
	if progress == nil {
		progress = func(string, uint64, uint64) {}
	}
	var rep ArchiveReport
	trimmer, ok := l.store.(Trimmer)
	if !ok {
		return rep, fmt.Errorf("%w: this engine cannot archive (it has no Trim)", ErrInvalid)
	}
	before = stamp(before)
	// What can be refused is, before anything is changed.
	var old Boundary
	var hasOld bool
	var last Entry
	dropped := l.Now().Add(-RequestRetention) // the answers ingot serve drops
	err := l.store.View(ctx, func(tx Tx) error {
		var err error
		if old, hasOld, err = boundaryOf(tx); err != nil {
			return err
		}
		// The last entry made before before (times are to the
		// microsecond).
		n, err := searchSeq(tx, old.Seq, before.Add(-time.Microsecond))
		if err != nil {
			return err
		}
		if n <= old.Seq {
			return fmt.Errorf("%w: no entry the bank keeps was made before %s (its oldest, %d, was made %s)", ErrInvalid,
				before.Format(time.RFC3339), old.Seq+1, firstTime(tx, old.Seq+1))
		}
		var named uint64
		err = tx.Requests(func(k RequestKey, r RequestRecord) (bool, error) {
			if r.Seq <= n && !r.Time.Before(dropped) {
				named = r.Seq
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		if named > 0 {
			return fmt.Errorf("%w: an answer kept for retries names entry %d, which would be archived: archive before an earlier date, or once the answers are dropped (after %s)",
				ErrInvalid, named, RequestRetention)
		}
		var found bool
		last, found, err = ReadEntry(tx, n)
		if err == nil && !found {
			err = fmt.Errorf("%w: journal entry %d is missing", ErrCorrupt, n)
		}
		return err
	})
	if err != nil {
		return rep, err
	}
	// The answers past their retention go, as ingot serve drops them (it
	// is stopped while a bank is archived).
	for {
		n, err := l.PruneRequests(ctx, dropped, 10000)
		if err != nil {
			return rep, err
		}
		if n == 0 {
			break
		}
	}
	head, err := l.JournalLength(ctx)
	if err != nil {
		return rep, err
	}
	audit, err := l.Audit(ctx, AuditOptions{Full: true, Progress: func(n uint64) { progress(ArchiveStepAuditBank, n, head-old.Seq) }})
	if err != nil {
		return rep, err
	}
	rep.AuditedBeforehand = audit
	if len(audit.Problems) > 0 {
		return rep, fmt.Errorf("%w: the bank's audit found %d problems: nothing is archived (run ingot audit --full)", ErrCorrupt, len(audit.Problems))
	}
	rep.From, rep.To = old.Seq+1, last.Seq
	copied := func(n uint64) { progress(ArchiveStepCopy, n, last.Seq-old.Seq) }
	if err := copyPrefix(ctx, l.store, dst, old, hasOld, last.Seq, copied); err != nil {
		return rep, fmt.Errorf("ledger: archive: %w", err)
	}
	archived, err := Open(ctx, dst)
	if err != nil {
		return rep, fmt.Errorf("ledger: archive: %w", err)
	}
	check, err := archived.Audit(ctx, AuditOptions{Full: true, Progress: func(n uint64) { progress(ArchiveStepAuditArchive, n, last.Seq-old.Seq) }})
	rep.ArchiveEntries, rep.ArchiveProblems = check.Entries, check.Problems
	if err != nil {
		return rep, fmt.Errorf("ledger: archive: its audit: %w", err)
	}
	if len(check.Problems) > 0 {
		return rep, fmt.Errorf("%w: the archive's audit found %d problems: nothing is removed from the bank", ErrCorrupt, len(check.Problems))
	}
	var state auditCheckpoint
	var dstFrom Boundary // what the archive started from, if it follows another
	err = dst.View(ctx, func(tx Tx) error {
		r, ok, err := tx.Record(auditKind, auditKey)
		if err == nil && !ok {
			err = fmt.Errorf("%w: the archive's audit left no checkpoint", ErrCorrupt)
		}
		if err == nil {
			err = json.Unmarshal(r.Value, &state)
		}
		if err == nil {
			dstFrom, _, err = boundaryOf(tx)
		}
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("ledger: archive: %w", err)
	}
	rep.Boundary = Boundary{Seq: last.Seq, Hash: last.Hash, Time: last.Time, Before: before, File: file, Made: l.Now(), Created: l.created, State: state}
	// The audits start from the boundary, counting the liens and charges
	// made up to it that the bank still keeps: those the archive holds,
	// but those trimmed with their entries, and those the bank kept at its
	// old boundary that the archive does not hold (kept whole, by an
	// ingot before references: no entry it trims carries them).
	kept := func(liens, charges uint64) Boundary {
		b := rep.Boundary
		b.State.Liens = b.State.Liens - liens + old.State.Liens - dstFrom.State.Liens
		b.State.Charges = b.State.Charges - charges + old.State.Charges - dstFrom.State.Charges
		return b
	}
	rep.Liens, rep.Charges, err = trimmer.Trim(ctx, last.Seq, func(tx Tx, liens, charges uint64) error {
		raw, err := json.Marshal(kept(liens, charges))
		if err == nil {
			err = tx.PutRecord(Record{Kind: archiveKind, Key: boundaryKey, Value: raw})
		}
		if err == nil {
			err = tx.PutRecord(Record{Kind: auditKind, Key: auditKey, Deleted: true})
		}
		return err
	})
	rep.Boundary = kept(rep.Liens, rep.Charges)
	if err != nil {
		return rep, fmt.Errorf("ledger: archive: remove the archived entries from the bank: %w", err)
	}
	return rep, nil
}

// firstTime is entry seq's time, for messages.
func firstTime(tx Tx, seq uint64) string {
	se, ok, err := tx.Entry(seq)
	if err != nil || !ok {
		return "(unknown)"
	}
	return se.Time.Format(time.RFC3339)
}

// copyPrefix makes dst a bank of the entries from the first src keeps to
// last: the settings, the boundary src starts from (and the state it
// holds), then each entry with what it stored (the history of the
// allocations it changed, its lien, charge, record and states), then the
// running sums. It commits every archiveBatch entries: dst is a new file,
// which nothing else reads until it is done.
func copyPrefix(ctx context.Context, src, dst Store, from Boundary, hasFrom bool, last uint64, copied func(uint64)) error {
	err := dst.Update(ctx, func(dtx Tx) error {
		if _, ok, err := dtx.Settings(); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: the archive's file already holds a bank", ErrExists)
		}
		if !hasFrom {
			return nil
		}
		starter, ok := dtx.(journalStarter)
		if !ok {
			return fmt.Errorf("%w: the archive's engine cannot start a journal after entry %d", ErrInvalid, from.Seq)
		}
		head := JournalHead{Seq: from.Seq, Time: from.Time}
		if _, err := hex.Decode(head.Hash[:], []byte(from.Hash)); err != nil {
			return fmt.Errorf("%w: the boundary's hash: %v", ErrCorrupt, err)
		}
		if err := starter.StartJournalAfter(head); err != nil {
			return err
		}
		return putState(dtx, from.State)
	})
	if err != nil {
		return err
	}
	// The liens and charges made after from: the others dst keeps (those
	// active at from, and charges refunded after it) are counted in the
	// boundary its audits start from.
	newLiens, newCharges := map[uint64]bool{}, map[uint64]bool{}
	// What the charges took, as the journal says from the boundary on.
	charged := map[string]ByProject{}
	for account, sums := range from.State.Charged {
		charged[account] = ByProject{}
		for project, byAlloc := range sums {
			for id, v := range byAlloc {
				charged[account].Add(project, id, v)
			}
		}
	}
	for next := from.Seq + 1; next <= last; next += archiveBatch {
		to := min(next+archiveBatch-1, last)
		// What a batch learns is kept once it is committed: Update may
		// run its function more than once.
		var liens, charges []uint64
		var moved []Entry
		err := src.View(ctx, func(stx Tx) error {
			return dst.Update(ctx, func(dtx Tx) error {
				liens, charges, moved = nil, nil, nil
				return EachEntry(stx, next, to, func(e Entry) (bool, error) {
					if e.Lien != nil && e.Lien.ID > from.State.MaxLien {
						liens = append(liens, e.Lien.ID)
					}
					if e.Charge != nil {
						moved = append(moved, Entry{Kind: e.Kind, Charge: e.Charge, Deltas: e.Deltas})
						if e.Charge.ID > from.State.MaxCharge {
							charges = append(charges, e.Charge.ID)
						}
					}
					return true, copyEntry(stx, dtx, e)
				})
			})
		})
		if err != nil {
			return err
		}
		for _, id := range liens {
			newLiens[id] = true
		}
		for _, id := range charges {
			newCharges[id] = true
		}
		for _, e := range moved {
			addCharged(charged, e)
		}
		copied(to - from.Seq)
	}
	return dst.Update(ctx, func(tx Tx) error {
		if hasFrom {
			liens, err := tx.LienCount()
			if err != nil {
				return err
			}
			charges, err := tx.ChargeCount()
			if err != nil {
				return err
			}
			from.State.Liens, from.State.Charges = liens-uint64(len(newLiens)), charges-uint64(len(newCharges))
			raw, err := json.Marshal(from)
			if err != nil {
				return err
			}
			if err := tx.PutRecord(Record{Kind: archiveKind, Key: boundaryKey, Value: raw}); err != nil {
				return err
			}
		}
		return rebuildAccountStates(tx, charged)
	})
}

// ArchiveProgress is told how far a step of Archive has gone.
type ArchiveProgress func(step string, done, total uint64)

// The steps of Archive, as ArchiveProgress names them.
const (
	ArchiveStepAuditBank    = "audit of the bank"
	ArchiveStepCopy         = "copy"
	ArchiveStepAuditArchive = "audit of the archive"
)

// archiveBatch is how many entries copyPrefix copies a commit.
const archiveBatch = 10000

// putState stores a checkpoint's state as a bank's current state: where
// an archive that follows an earlier one starts.
func putState(tx Tx, cp auditCheckpoint) error {
	if cp.Settings != nil {
		if err := tx.PutSettings(*cp.Settings); err != nil {
			return err
		}
	}
	for _, n := range cp.Nodes {
		if err := tx.PutNode(n); err != nil {
			return err
		}
	}
	for _, u := range cp.Users {
		if err := tx.PutUser(u); err != nil {
			return err
		}
	}
	for _, m := range cp.Machines {
		if err := tx.PutMachine(m); err != nil {
			return err
		}
	}
	for _, a := range cp.Allocations {
		if err := tx.PutAllocation(a, cp.Seq); err != nil {
			return err
		}
	}
	for _, r := range cp.Records {
		if err := tx.PutRecord(r); err != nil {
			return err
		}
		if err := putRecordDigest(tx, r); err != nil {
			return err
		}
	}
	for _, l := range cp.Active {
		if err := tx.PutLien(l, 0); err != nil {
			return err
		}
	}
	return nil
}

// copyEntry appends e to dst with what it stored in src's history and
// what it carries, as Writer.Append stored them.
func copyEntry(src, dst Tx, e Entry) error {
	se, ok, err := src.Entry(e.Seq)
	if err == nil && !ok {
		err = fmt.Errorf("%w: journal entry %d is missing", ErrCorrupt, e.Seq)
	}
	if err != nil {
		return err
	}
	se.Terms = IndexTerms(e)
	if err := dst.AppendEntry(se); err != nil {
		return err
	}
	if e.Settings != nil {
		if err := dst.PutSettings(*e.Settings); err != nil {
			return err
		}
	}
	for _, put := range []func() error{
		func() error { return putIf(e.NodeState, dst.PutNode) },
		func() error { return putIf(e.UserState, dst.PutUser) },
		func() error { return putIf(e.Machine, dst.PutMachine) },
		func() error { return putIf(e.Record, dst.PutRecord) },
		func() error {
			return putIf(e.Lien, func(l Lien) error { return dst.PutLien(l, e.Seq) })
		},
		func() error {
			return putIf(e.Charge, func(c Charge) error { return dst.PutCharge(c, e.Seq) })
		},
	} {
		if err := put(); err != nil {
			return err
		}
	}
	return copyHistory(src, dst, e)
}

// copyHistory copies the state src's history keeps after entry e of each
// allocation e changed.
func copyHistory(src, dst Tx, e Entry) error {
	var touched []uint64
	for _, t := range e.Terms {
		touched = append(touched, t.ID)
	}
	for _, d := range e.Deltas {
		touched = append(touched, d.Allocation)
	}
	slices.Sort(touched)
	for _, id := range slices.Compact(touched) {
		a, ok, err := src.AllocationAsOf(id, e.Seq)
		if err == nil && !ok {
			err = fmt.Errorf("%w: allocation %d has no state recorded for entry %d", ErrCorrupt, id, e.Seq)
		}
		if err != nil {
			return err
		}
		if err := dst.PutAllocation(a, e.Seq); err != nil {
			return err
		}
	}
	return nil
}

func putIf[T any](v *T, put func(T) error) error {
	if v == nil {
		return nil
	}
	return put(*v)
}

// ArchivedBefore is the date before which the bank's entries are in an
// archive (the zero time: it keeps them all).
func (l *Ledger) ArchivedBefore(ctx context.Context) (time.Time, error) {
	var before time.Time
	err := l.store.View(ctx, func(tx Tx) error {
		b, _, err := boundaryOf(tx)
		before = b.Before
		return err
	})
	return before, err
}

// WithArchive gives the ledger the archive of its oldest entries (the
// store Archive wrote, opened read-only), which its queries about them
// then read: statements, the journal, balances at a time. Without it
// they say which archive they need (ErrArchived). Open checks that the
// archive is this bank's: its last entry is the one the boundary names.
// The ledger closes it with its own store.
func WithArchive(archive Store) Option {
	return func(l *Ledger) { l.archive = archive }
}

// view runs fn in a read transaction of the bank that reaches into its
// archive for the entries it no longer keeps (joinedTx).
func (l *Ledger) view(ctx context.Context, fn func(Tx) error) error {
	return l.store.View(ctx, func(tx Tx) error {
		b, ok, err := boundaryOf(tx)
		if err != nil || !ok {
			return errors.Join(err, fn(tx))
		}
		if l.archive == nil {
			return fn(&joinedTx{Tx: tx, bound: b})
		}
		return l.archive.View(ctx, func(older Tx) error {
			// An archive that follows an earlier one has a boundary too,
			// which it says it needs.
			ob, ok, err := boundaryOf(older)
			if err != nil {
				return err
			}
			if ok {
				older = &joinedTx{Tx: older, bound: ob}
			}
			return fn(&joinedTx{Tx: tx, bound: b, older: older})
		})
	})
}

// checkArchive checks, at Open, that the archive given holds the entries
// the bank's boundary says were moved.
func (l *Ledger) checkArchive(ctx context.Context, tx Tx, b Boundary) error {
	return l.archive.View(ctx, func(older Tx) error {
		head, err := older.Head()
		if err != nil {
			return err
		}
		switch {
		case head.Seq < b.Seq:
			return fmt.Errorf("%w: the archive given is not the one this bank starts after: it ends with entry %d, the bank after entry %d, which is in %s. "+
				"An older archive of this bank is read with the archive that follows it as the bank: --db %[4]s --archive OLDER",
				ErrInvalid, head.Seq, b.Seq, b.File)
		case head.Seq != b.Seq || hex.EncodeToString(head.Hash[:]) != b.Hash:
			return fmt.Errorf("%w: the archive given is not this bank's: its last entry is %d with hash %.12s…, and the bank's archive (%s) ends with entry %d, hash %.12s…",
				ErrInvalid, head.Seq, hex.EncodeToString(head.Hash[:]), b.File, b.Seq, b.Hash)
		}
		return nil
	})
}

// joinedTx is a read transaction of a bank whose entries up to bound.Seq
// are in an archive: what is about them is read from older, the
// archive's transaction, or is ErrArchived without one. Only reads go
// through it.
type joinedTx struct {
	Tx
	bound Boundary
	older Tx
}

func (j *joinedTx) archived(what string) error {
	return fmt.Errorf("%w: %s: the entries made before %s (1 to %d) are in the archive %s: give it with --archive",
		ErrArchived, what, j.bound.Before.Format(time.DateOnly), j.bound.Seq, j.bound.File)
}

func (j *joinedTx) Entry(seq uint64) (StoredEntry, bool, error) {
	if seq > j.bound.Seq {
		return j.Tx.Entry(seq)
	}
	if j.older == nil {
		return StoredEntry{}, false, j.archived(fmt.Sprintf("journal entry %d", seq))
	}
	return j.older.Entry(seq)
}

func (j *joinedTx) Entries(from, to uint64, fn func(StoredEntry) (bool, error)) error {
	more := true
	if from <= j.bound.Seq {
		if j.older == nil {
			return j.archived(fmt.Sprintf("journal entry %d", from))
		}
		err := j.older.Entries(from, min(to, j.bound.Seq), func(se StoredEntry) (bool, error) {
			var err error
			more, err = fn(se)
			return more, err
		})
		if err != nil || to <= j.bound.Seq {
			return err
		}
	}
	if !more {
		return nil
	}
	return j.Tx.Entries(max(from, j.bound.Seq+1), to, fn)
}

func (j *joinedTx) NodeEntries(node string, from, to uint64, reverse bool, fn func(StoredEntry) (bool, error)) error {
	stopped := false
	until := func(se StoredEntry) (bool, error) {
		more, err := fn(se)
		stopped = !more
		return more, err
	}
	live := func() error {
		if to <= j.bound.Seq {
			return nil
		}
		return j.Tx.NodeEntries(node, max(from, j.bound.Seq+1), to, reverse, until)
	}
	archived := func() error {
		if from > j.bound.Seq || stopped {
			return nil
		}
		if j.older == nil {
			return j.archived("the journal of " + node + " then")
		}
		return j.older.NodeEntries(node, from, min(to, j.bound.Seq), reverse, until)
	}
	if reverse {
		if err := live(); err != nil || stopped {
			return err
		}
		return archived()
	}
	if err := archived(); err != nil || stopped {
		return err
	}
	return live()
}

// AllocationAsOf reads the archive's history before the boundary: the
// bank keeps, of each allocation, only its last state up to it.
func (j *joinedTx) AllocationAsOf(id, seq uint64) (Allocation, bool, error) {
	if seq >= j.bound.Seq {
		return j.Tx.AllocationAsOf(id, seq)
	}
	if j.older == nil {
		return Allocation{}, false, j.archived(fmt.Sprintf("the state of allocation %d after entry %d", id, seq))
	}
	return j.older.AllocationAsOf(id, seq)
}

// Lien and Charge find in the archive those the bank no longer keeps.
func (j *joinedTx) Lien(id uint64) (Lien, bool, error) {
	l, ok, err := j.Tx.Lien(id)
	if err != nil || ok || j.older == nil {
		return l, ok, err
	}
	return j.older.Lien(id)
}

func (j *joinedTx) Charge(id uint64) (Charge, bool, error) {
	c, ok, err := j.Tx.Charge(id)
	if err != nil || ok || j.older == nil {
		return c, ok, err
	}
	return j.older.Charge(id)
}

// JobLien is the bank's, or the archive's for a job the bank no longer
// keeps a lien of.
func (j *joinedTx) JobLien(machine, job string) (Lien, bool, error) {
	l, ok, err := j.Tx.JobLien(machine, job)
	if err != nil || ok || j.older == nil {
		return l, ok, err
	}
	return j.older.JobLien(machine, job)
}

// JobCharges are the archive's charges of the job that the bank no longer
// keeps, then the bank's, in id order.
func (j *joinedTx) JobCharges(machine, job string) ([]Charge, error) {
	kept, err := j.Tx.JobCharges(machine, job)
	if err != nil || j.older == nil {
		return kept, err
	}
	archived, err := j.older.JobCharges(machine, job)
	if err != nil {
		return nil, err
	}
	var out []Charge
	for _, c := range archived {
		if !slices.ContainsFunc(kept, func(k Charge) bool { return k.ID == c.ID }) {
			out = append(out, c)
		}
	}
	out = append(out, kept...)
	slices.SortFunc(out, func(a, b Charge) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Charges gives the archive's charges the bank no longer keeps, then the
// bank's.
func (j *joinedTx) Charges(fn func(Charge) (bool, error)) error {
	more := true
	if j.older != nil {
		err := j.older.Charges(func(c Charge) (bool, error) {
			if _, kept, err := j.Tx.Charge(c.ID); err != nil || kept {
				return err == nil, err // the bank's is the newer
			}
			var err error
			more, err = fn(c)
			return more, err
		})
		if err != nil || !more {
			return err
		}
	}
	return j.Tx.Charges(fn)
}

// NeedsArchive says, for a query over the charges made since since (the
// zero time: ever), whether it needs the archive of the bank's oldest
// entries that it was not given (ErrArchived, naming it).
func NeedsArchive(tx Tx, since time.Time) error {
	j, ok := tx.(*joinedTx)
	if !ok || j.older != nil || (!since.IsZero() && !since.Before(j.bound.Time)) {
		return nil
	}
	return j.archived("the charges of that time")
}

// seqAtOrBefore searches the bank's entries, then the archive's.
func (j *joinedTx) seqAtOrBefore(t time.Time) (uint64, error) {
	seq, err := searchSeq(j.Tx, j.bound.Seq, t)
	if err != nil || seq > j.bound.Seq || !t.Before(j.bound.Time) {
		return seq, err
	}
	if j.older == nil {
		return 0, j.archived("the bank as it was then")
	}
	return seqAtOrBefore(j.older, t)
}

// startOfReserved is where a replay of the liens up to entry seq starts:
// at the boundary, from the liens active there, when seq is after it.
func (j *joinedTx) startOfReserved(seq uint64) (from uint64, active []Lien) {
	if seq > j.bound.Seq {
		return j.bound.Seq + 1, j.bound.State.Active
	}
	return startOfReserved(j.older, seq)
}
