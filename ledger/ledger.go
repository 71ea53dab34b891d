package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Ledger is the bank. It is safe for concurrent use.
type Ledger struct {
	store    Store
	archive  Store // its oldest entries' (WithArchive), or nil
	settings Settings
	created  time.Time
	plans    *planCache
	now      func() time.Time
}

// Option configures a Ledger.
type Option func(*Ledger)

// WithClock replaces the wall clock, for tests that move through time.
func WithClock(now func() time.Time) Option {
	return func(l *Ledger) { l.now = now }
}

// Request says who asks for a change and under which request id. A retry
// with the same Actor and ID gets the first answer; an empty ID makes the
// request not retryable.
type Request struct {
	Actor string
	ID    string
	// Answer, if set, receives the JSON of the answer as Mutate keeps it
	// for retries, so that a server can send it without encoding the
	// result again. It receives nothing for a change that journaled
	// nothing, whose answer is not kept.
	Answer *[]byte
}

// Init creates a bank in an empty store: its settings and the first journal
// entry. It refuses a store that already holds one.
func Init(ctx context.Context, store Store, s Settings, req Request, now time.Time) error {
	if s.Precision < 0 || s.Precision > 8 {
		return fmt.Errorf("%w: precision %d must be 0 to 8 decimal places", ErrInvalid, s.Precision)
	}
	return store.Update(ctx, func(tx Tx) error {
		if _, ok, err := tx.Settings(); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: this database already holds a bank", ErrExists)
		}
		if err := tx.PutSettings(s); err != nil {
			return err
		}
		w := newWriter(tx, req, stamp(now), nil)
		if _, err := w.Append(Entry{Kind: KindInit, Settings: &s}); err != nil {
			return err
		}
		return w.flush("")
	})
}

// Open opens the bank held in store.
func Open(ctx context.Context, store Store, opts ...Option) (*Ledger, error) {
	l := &Ledger{store: store, now: time.Now, plans: newPlanCache()}
	for _, o := range opts {
		o(l)
	}
	err := store.View(ctx, func(tx Tx) error {
		s, ok, err := tx.Settings()
		if err != nil {
			return err
		}
		if !ok {
			// A journal without settings is a bank whose settings record
			// was lost (a damaged file), not an empty database.
			head, err := tx.Head()
			if err != nil {
				return err
			}
			if head.Seq > 0 {
				return fmt.Errorf("%w: the bank's settings are missing, but its journal holds %d entries", ErrCorrupt, head.Seq)
			}
			return ErrNotInitialized
		}
		l.settings = s
		b, archived, err := boundaryOf(tx)
		if err != nil {
			return err
		}
		if archived {
			l.created = b.Created
			if l.archive != nil {
				return l.checkArchive(ctx, tx, b)
			}
			return nil
		}
		first, ok, err := ReadEntry(tx, 1)
		if err != nil || !ok {
			return fmt.Errorf("%w: the journal has no first entry (%v)", ErrCorrupt, err)
		}
		l.created = first.Time
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open bank: %w", err)
	}
	return l, nil
}

// Settings are the bank's fixed settings.
func (l *Ledger) Settings() Settings { return l.settings }

// Created is when the bank was initialised (its first journal entry).
func (l *Ledger) Created() time.Time { return l.created }

// Now is the ledger's clock, in UTC to the microsecond (what every engine
// can store exactly).
func (l *Ledger) Now() time.Time { return stamp(l.now()) }

// Backup writes a consistent copy of the bank to w while it is in use.
func (l *Ledger) Backup(ctx context.Context, w io.Writer) (int64, error) {
	n, err := l.store.Backup(ctx, w)
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// JournalLength is the number of the bank's newest journal entry: how
// many a full audit or a copy goes through (those archived included).
func (l *Ledger) JournalLength(ctx context.Context) (uint64, error) {
	return JournalLength(ctx, l.store)
}

// JournalLength is the number of the newest journal entry of the bank in s.
func JournalLength(ctx context.Context, s Store) (uint64, error) {
	var head JournalHead
	err := s.View(ctx, func(tx Tx) error {
		var err error
		head, err = tx.Head()
		return err
	})
	return head.Seq, err
}

// View runs fn in a read-only transaction: a consistent snapshot for the
// layers above the ledger.
func (l *Ledger) View(ctx context.Context, fn func(Tx) error) error { return l.view(ctx, fn) }

// Inspect runs fn with a Writer on a read-only transaction, for a question
// that a change would ask in the same words (could this lien be placed
// now?) without making one: anything fn appends is refused by the store.
func (l *Ledger) Inspect(ctx context.Context, fn func(*Writer) error) error {
	return l.store.View(ctx, func(tx Tx) error { return fn(newWriter(tx, Request{}, l.Now(), l.plans)) })
}

// Close closes the store.
func (l *Ledger) Close() error {
	err := l.store.Close()
	if l.archive != nil {
		err = errors.Join(err, l.archive.Close())
	}
	return err
}

func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Mutate runs one idempotent change: the building block of every change to
// the bank, here and in the packages above (lien). content is what the
// request asks (hashed to detect a reused id); fn does the change through a
// Writer and returns the answer. fn may run more than once (see
// Store.Update) and must keep its effects in the Writer.
//
// The answer to a change that journaled something is kept for retries
// (json.Marshal's bytes), and its SHA-256 goes into the change's last
// journal entry, so the audit can tell a kept answer that was altered. A
// change that journaled nothing (asking again for what is already so)
// keeps no answer: a retry asks again.
func Mutate[R any](ctx context.Context, l *Ledger, req Request, kind Kind, content any, fn func(w *Writer) (R, error)) (R, error) {
	var result R
	hash, err := contentHash(kind, content)
	if err != nil {
		return result, err
	}
	key := RequestKey{Client: req.Actor, ID: req.ID}
	err = l.store.Update(ctx, func(tx Tx) error {
		var zero R
		result = zero // the store may run this function again
		if req.ID != "" {
			rec, ok, err := tx.Request(key)
			if err != nil {
				return err
			}
			if ok {
				if rec.ContentHash != hash {
					return fmt.Errorf("%w: request %s was first used at %s for other content (entry %d)", ErrRequestConflict, Excerpt(req.ID), rec.Time.Format(time.RFC3339), rec.Seq)
				}
				return firstAnswer(tx, req, rec, &result)
			}
		}
		w := newWriter(tx, req, l.Now(), l.plans)
		r, err := fn(w)
		if err != nil {
			return err
		}
		var answer []byte
		if req.ID != "" && len(w.pending) > 0 {
			if answer, err = json.Marshal(r); err != nil {
				return fmt.Errorf("ledger: encode answer to request %q: %w", req.ID, err)
			}
			sum := sha256.Sum256(answer)
			if err := w.flush(hex.EncodeToString(sum[:])); err != nil {
				return err
			}
			rec := RequestRecord{ContentHash: hash, Result: answer, Seq: w.head.Seq, Time: w.now}
			if err := tx.PutRequest(key, rec); err != nil {
				return err
			}
			req.keep(answer)
		} else if err := w.flush(""); err != nil {
			return err
		}
		result = r
		return nil
	})
	return result, err
}

// firstAnswer sets *result to the first answer to the request, kept in
// rec, after checking it against the hash its journal entry carries.
func firstAnswer[R any](tx Tx, req Request, rec RequestRecord, result *R) error {
	e, ok, err := ReadEntry(tx, rec.Seq)
	if err != nil {
		return err
	}
	if err := checkAnswer(req.Actor, req.ID, rec, e, ok); err != nil {
		return err
	}
	if e.Answer == "" {
		return fmt.Errorf("%w: request %q was applied as journal entry %d by an earlier version of ingot, whose kept answers this one does not read; `ingot journal` shows the change", ErrRequestConflict, req.ID, rec.Seq)
	}
	if err := json.Unmarshal(rec.Result, result); err != nil {
		return fmt.Errorf("%w: stored answer of request %q: %v", ErrCorrupt, req.ID, err)
	}
	req.keep(rec.Result)
	return nil
}

// checkAnswer checks a kept answer against the journal entry it names
// (found says whether the journal holds it). An entry journaled before
// answers were anchored carries no hash: its answer is not checked, and
// not given (firstAnswer).
func checkAnswer(client, id string, rec RequestRecord, e Entry, found bool) error {
	switch {
	case !found:
		return fmt.Errorf("%w: the answer kept for request %q of %s names journal entry %d, which the journal does not hold", ErrCorrupt, id, client, rec.Seq)
	case e.Actor != client || e.RequestID != id:
		return fmt.Errorf("%w: the answer kept for request %q of %s names journal entry %d, which is request %q of %s", ErrCorrupt, id, client, rec.Seq, e.RequestID, e.Actor)
	case e.Answer == "":
		return nil
	}
	sum := sha256.Sum256(rec.Result)
	if e.Answer != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("%w: the answer kept for request %q of %s is not the one journal entry %d recorded", ErrCorrupt, id, client, rec.Seq)
	}
	return nil
}

// keep hands the answer's JSON to whoever asked for it.
func (req Request) keep(answer []byte) {
	if req.Answer != nil {
		*req.Answer = answer
	}
}

// contentHash is the SHA-256 of the request's kind, a zero byte and the
// request's JSON: what tells a retry from another request under the same id.
func contentHash(kind Kind, content any) ([sha256.Size]byte, error) {
	b, err := json.Marshal(content)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("ledger: encode request: %w", err)
	}
	return sha256.Sum256(slices.Concat([]byte(kind), []byte{0}, b)), nil
}

// Writer appends journal entries and the state they change in one
// transaction. The state changes are stored as each entry is appended;
// the entries themselves are sealed and stored together at the end of
// the change (flush), when the answer whose hash the last one carries is
// known.
type Writer struct {
	tx    Tx
	req   Request
	now   time.Time
	plans *planCache // nil while a bank is initialised
	// head is the newest entry, stored or pending; read once.
	head    JournalHead
	headSet bool
	pending []Entry
	// accounts are the account states read or written in this change.
	accounts map[string]*accountState
	// live are, per account, the ids of its allocations active now when
	// this change read them (activeAllocations).
	live map[string]map[uint64]bool
}

func newWriter(tx Tx, req Request, now time.Time, plans *planCache) *Writer {
	return &Writer{tx: tx, req: req, now: now, plans: plans}
}

// Tx is the transaction, for reads; changes go through Append.
func (w *Writer) Tx() Tx { return w.tx }

// Now is the time of this change.
func (w *Writer) Now() time.Time { return w.now }

// LastSeq is the number of the newest entry, this change's own included.
func (w *Writer) LastSeq() (uint64, error) {
	if err := w.loadHead(); err != nil {
		return 0, err
	}
	return w.head.Seq, nil
}

func (w *Writer) loadHead() error {
	if w.headSet {
		return nil
	}
	head, err := w.tx.Head()
	if err != nil {
		return err
	}
	w.head, w.headSet = head, true
	return nil
}

// Append journals e (filling in its sequence, time, actor and request;
// the hashes are filled in as the change ends) and stores what it
// changed: the allocations given, and the lien, charge or record the entry
// carries, and the running sums of the accounts it touches. Nothing
// changes without its entry. The entry returned has no hashes.
func (w *Writer) Append(e Entry, changed ...Allocation) (Entry, error) {
	if err := w.loadHead(); err != nil {
		return Entry{}, err
	}
	e.Seq, e.Time = w.head.Seq+1, w.now
	if w.head.Time.After(e.Time) {
		e.Time = w.head.Time // entry times never go backwards
	}
	e.Actor, e.RequestID = w.req.Actor, w.req.ID
	var oldLien *Lien
	var oldCharge *Charge
	if e.Lien != nil {
		if l, ok, err := w.tx.Lien(e.Lien.ID); err != nil {
			return Entry{}, err
		} else if ok {
			oldLien = &l
		}
	}
	if e.Charge != nil {
		if c, ok, err := w.tx.Charge(e.Charge.ID); err != nil {
			return Entry{}, err
		} else if ok {
			oldCharge = &c
		}
	}
	var revived map[uint64]bool
	for _, a := range changed {
		if !a.UsedUp() {
			// Was it used up? Its sums come back to Charged (moveAccount).
			if old, ok, err := w.tx.Allocation(a.ID); err != nil {
				return Entry{}, err
			} else if ok && old.UsedUp() {
				if revived == nil {
					revived = map[uint64]bool{}
				}
				revived[a.ID] = true
			}
		}
		if err := w.tx.PutAllocation(a, e.Seq); err != nil {
			return Entry{}, err
		}
	}
	if e.Lien != nil {
		if err := w.tx.PutLien(*e.Lien, e.Seq); err != nil {
			return Entry{}, err
		}
	}
	if e.Charge != nil {
		if err := w.tx.PutCharge(*e.Charge, e.Seq); err != nil {
			return Entry{}, err
		}
	}
	if e.Record != nil {
		if err := w.putRecord(*e.Record); err != nil {
			return Entry{}, err
		}
	}
	for _, account := range touchedAccounts(e, oldLien) {
		if err := w.moveAccount(account, e, oldLien, oldCharge, changed, revived); err != nil {
			return Entry{}, err
		}
	}
	w.pending = append(w.pending, e)
	w.head = JournalHead{Seq: e.Seq, Time: e.Time}
	return e, nil
}

// AppendRecord journals record r with the change's last entry, if the
// change has appended one that carries no record, else in an entry of
// its own, e (Append): a change that records what it did beside doing it
// (a peer's transaction, applied) costs no entry more. The entry
// returned has no hashes.
func (w *Writer) AppendRecord(e Entry, r Record) (Entry, error) {
	if n := len(w.pending); n == 0 || w.pending[n-1].Record != nil {
		e.Record = &r
		return w.Append(e)
	}
	if err := w.putRecord(r); err != nil {
		return Entry{}, err
	}
	last := &w.pending[len(w.pending)-1]
	last.Record = &r
	return *last, nil
}

// putRecord stores what an entry's record writes, and its digests.
func (w *Writer) putRecord(rec Record) error {
	for _, r := range rec.Writes() {
		if err := w.tx.PutRecord(r); err != nil {
			return err
		}
		if err := putRecordDigest(w.tx, r); err != nil {
			return err
		}
	}
	return nil
}

// flush seals and stores the pending entries in order, the last one
// carrying answer (the kept answer's hash, or "").
func (w *Writer) flush(answer string) error {
	if len(w.pending) == 0 {
		return nil
	}
	w.pending[len(w.pending)-1].Answer = answer
	prev, err := w.tx.Head()
	if err != nil {
		return err
	}
	for _, e := range w.pending {
		if e.Seq != prev.Seq+1 {
			return fmt.Errorf("%w: entry %d would follow entry %d", ErrCorrupt, e.Seq, prev.Seq)
		}
		if e.Seq > 1 {
			e.PrevHash = hex.EncodeToString(prev.Hash[:])
		}
		se, err := SealEntry(e)
		if err != nil {
			return err
		}
		if err := w.tx.AppendEntry(se); err != nil {
			return err
		}
		prev = JournalHead{Seq: se.Seq, Time: se.Time, Hash: se.Hash}
	}
	w.pending, w.head = nil, prev
	return nil
}

// touchedAccounts are the accounts whose state e changes, each once, in
// the order the entry names them.
func touchedAccounts(e Entry, oldLien *Lien) []string {
	touched := make([]string, 0, 2)
	add := func(node string) {
		if node == "" {
			return
		}
		if account := AccountOf(node); !slices.Contains(touched, account) {
			touched = append(touched, account)
		}
	}
	add(e.Node)
	if e.Kind == KindTransfer {
		add(e.Ref) // the destination; elsewhere Ref is a job id
	}
	for _, d := range e.Deltas {
		add(d.Account)
	}
	if e.NodeState != nil {
		add(e.NodeState.Name)
	}
	if e.Lien != nil {
		add(e.Lien.Account)
	}
	if oldLien != nil {
		add(oldLien.Account)
	}
	if e.Charge != nil {
		add(e.Charge.Account)
	}
	return touched
}

// RequestRetention is how long the answer to a request is kept for its
// retries by default: a client retries a change it got no answer to
// within seconds or minutes, and a request id used again after this is a
// new request.
const RequestRetention = 7 * 24 * time.Hour

// MinRequestRetention is the shortest retention a server may keep answers
// for. A signed request is accepted while its date is within minutes of the
// server's clock (package auth's window, either way), and the nonces that
// stop its replay live only in the server's memory: after a restart, only
// the answer kept under its signed request id stops a captured change from
// being applied again. An hour is far above the window's ten minutes at
// most, and above any clock error a site would run with.
const MinRequestRetention = time.Hour

// PruneRequests drops the answers kept for requests made before before,
// at most limit of them, and says how many it dropped. The audit checks
// the answers kept, and a bank's history should not make it slower.
func (l *Ledger) PruneRequests(ctx context.Context, before time.Time, limit int) (int, error) {
	var old []RequestKey
	err := l.store.View(ctx, func(tx Tx) error {
		old = old[:0]
		return tx.Requests(func(k RequestKey, r RequestRecord) (bool, error) {
			if r.Time.Before(before) {
				old = append(old, k)
			}
			return len(old) < limit, nil
		})
	})
	if err != nil || len(old) == 0 {
		return 0, err
	}
	err = l.store.Update(ctx, func(tx Tx) error {
		for _, k := range old {
			if err := tx.DeleteRequest(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: prune requests: %w", err)
	}
	return len(old), nil
}
