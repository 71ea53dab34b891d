package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/internal/jsonbuf"
	"github.com/ingot-hpc/ingot/internal/runtimetune"
)

// Ledger is the bank. It is safe for concurrent use.
type Ledger struct {
	store    Store
	settings Settings
	created  time.Time
	plans    *planCache
	now      func() time.Time
	// deferAnswers: the answers kept for retries are encoded when the
	// store first needs them (its log's recorder) rather than in the call,
	// on machines with the cores for it (runtimetune.Offload).
	deferAnswers bool
}

// Option configures a Ledger.
type Option func(*Ledger)

// WithClock replaces the wall clock, for tests that move through time.
func WithClock(now func() time.Time) Option {
	return func(l *Ledger) { l.now = now }
}

// WithDeferredAnswers says whether the answers kept for retries are
// encoded by the store after the call (on) or in the call (off), whatever
// the machine's cores, for tests that run both ways.
func WithDeferredAnswers(on bool) Option {
	return func(l *Ledger) { l.deferAnswers = on }
}

// Request says who asks for a change and under which request id. A retry
// with the same Actor and ID gets the first answer; an empty ID makes the
// request not retryable.
type Request struct {
	Actor string
	ID    string
	// Answer, if set, receives the JSON of the answer as Mutate keeps it
	// for retries (json.Marshal's bytes: see jsonbuf.Marshal), so that a server
	// can send it without encoding the result again. It receives nothing
	// for an answer kept by reference (AnswerReference), which the caller
	// encodes itself, as jsonbuf.Marshal does, off the store's writer.
	Answer *[]byte
}

// Init creates a bank in an empty store: its settings and the first journal
// entry. It refuses a store that already holds one.
func Init(store Store, s Settings, req Request, now time.Time) error {
	if s.Precision < 0 || s.Precision > 8 {
		return fmt.Errorf("%w: precision %d must be 0 to 8 decimal places", ErrInvalid, s.Precision)
	}
	return store.Update(func(tx Tx) error {
		if _, ok, err := tx.Settings(); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: this database already holds a bank", ErrExists)
		}
		if err := tx.PutSettings(s); err != nil {
			return err
		}
		w := &Writer{tx: tx, req: req, now: stamp(now)}
		_, err := w.Append(Entry{Kind: KindInit, Settings: &s})
		return err
	})
}

// Open opens the bank held in store.
func Open(store Store, opts ...Option) (*Ledger, error) {
	l := &Ledger{store: store, now: time.Now, plans: newPlanCache(), deferAnswers: runtimetune.Offload()}
	for _, o := range opts {
		o(l)
	}
	err := store.View(func(tx Tx) error {
		s, ok, err := tx.Settings()
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotInitialized
		}
		l.settings = s
		first, ok, err := tx.Entry(1)
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
func (l *Ledger) Backup(w io.Writer) (int64, error) {
	n, err := l.store.Backup(w)
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// View runs fn in a read-only transaction: a consistent snapshot for the
// layers above the ledger.
func (l *Ledger) View(fn func(Tx) error) error { return l.store.View(fn) }

// Close closes the store.
func (l *Ledger) Close() error { return l.store.Close() }

func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Mutate runs one idempotent change: the building block of every change to
// the bank, here and in the packages above (lien). content is what the
// request asks (hashed to detect a reused id); fn does the change through a
// Writer and returns the answer, which is recorded for retries. fn may run
// more than once (see Store.Update) and must keep its effects in the Writer.
// Content and answer are encoded as json.Marshal encodes them, by their
// AppendJSON method if they have one (see jsonbuf.Marshal).
func Mutate[R any](l *Ledger, req Request, kind Kind, content any, fn func(w *Writer) (R, error)) (R, error) {
	var result R
	hash, err := contentHash(kind, content)
	if err != nil {
		return result, err
	}
	key := RequestKey{Client: req.Actor, ID: req.ID}
	err = l.store.Update(func(tx Tx) error {
		var zero R
		result = zero // the store may run this function again
		if req.ID != "" {
			rec, ok, err := tx.Request(key)
			if err != nil {
				return err
			}
			if ok {
				if rec.ContentHash != hash {
					return fmt.Errorf("%w: request %q was first used at %s for other content (entry %d)", ErrRequestConflict, req.ID, rec.Time.Format(time.RFC3339), rec.Seq)
				}
				return firstAnswer(tx, req, rec, &result)
			}
		}
		w := &Writer{tx: tx, req: req, now: l.Now(), plans: l.plans}
		r, err := fn(w)
		if err != nil {
			return err
		}
		if req.ID == "" {
			result = r
			return nil
		}
		answer := func(dst []byte) ([]byte, error) {
			if ref, ok := any(&r).(AnswerReference); ok && w.lastSeq != 0 {
				if b, whole := ref.AppendReference(append(dst, answerByReference), w); whole {
					return b, nil
				}
			}
			hint := answerSizes[kind]
			start := len(dst)
			// &r, so that no copy of r is boxed: the same bytes as r's,
			// since no answer type encodes itself by a pointer receiver.
			b, err := jsonbuf.Marshal(hint.Grow(dst), &r)
			if err != nil {
				return nil, fmt.Errorf("ledger: encode answer to request %q: %w", req.ID, err)
			}
			hint.Note(b[start:])
			req.keep(b[start:])
			return b, nil
		}
		// Deferred, the answer is encoded when the store needs its bytes
		// (its log's recorder, off the single writer's path): nothing
		// changes it after fn, as its caller reads it while later changes
		// run. Made at once, a reference may note in r what it encoded
		// (AnswerReference), which the result then carries.
		err = tx.PutRequest(key, RequestRecord{ContentHash: hash, Seq: w.lastSeq, Time: w.now, Answer: answer, Deferred: l.deferAnswers})
		result = r
		return err
	})
	return result, err
}

// An AnswerReference is an answer (Mutate's *R) that repeats what the
// last journal entry of its call holds, and so is kept for retries as a
// reference to that entry and what the answer holds besides: in a lien
// and charge cycle the answers repeated about 1.8 KB of lien and charge
// that the single writer copied, the log wrote and the checkpointer put
// into the file again (package lien's placements and charges; measured in
// docs/performance.md, session 14).
type AnswerReference interface {
	// AppendReference appends to dst what the answer holds beyond the last
	// journal entry w appended, and tells whether that entry holds the
	// rest, as the answer does (w.Carried); if not, the answer is kept
	// whole, as JSON. The answer may keep slices of what it appended
	// (parts of the stored record, not to be changed), so that encoding
	// it copies them.
	AppendReference(dst []byte, w *Writer) ([]byte, bool)
	// FromReference makes the answer again from the entry and what
	// AppendReference appended: the same answer, encoded to the same
	// bytes (the entry's parts decode and encode again exactly, as the
	// audit's hash check holds them to).
	FromReference(e Entry, ref []byte) error
}

// answerByReference starts a kept answer that is a reference
// (AnswerReference); an answer kept as JSON starts otherwise.
const answerByReference = 0x01

// firstAnswer sets *result to the first answer to the request, kept in
// rec, and hands its JSON to the request if it is kept so.
func firstAnswer[R any](tx Tx, req Request, rec RequestRecord, result *R) error {
	if len(rec.Result) == 0 || rec.Result[0] != answerByReference {
		if err := json.Unmarshal(rec.Result, result); err != nil {
			return fmt.Errorf("%w: stored answer of request %q: %v", ErrCorrupt, req.ID, err)
		}
		req.keep(rec.Result)
		return nil
	}
	ref, ok := any(result).(AnswerReference)
	if !ok {
		return fmt.Errorf("%w: the stored answer of request %q refers to journal entry %d, which a %T is not made from", ErrCorrupt, req.ID, rec.Seq, *result)
	}
	e, found, err := tx.Entry(rec.Seq)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: the stored answer of request %q refers to journal entry %d, which the journal does not hold", ErrCorrupt, req.ID, rec.Seq)
	}
	if err := ref.FromReference(e, rec.Result[1:]); err != nil {
		return fmt.Errorf("%w: the stored answer of request %q: %v", ErrCorrupt, req.ID, err)
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
func contentHash(kind Kind, content any) (string, error) {
	// The buffer is pooled: one on the stack escaped to the heap (content
	// encodes itself through an interface), half a kilobyte per call.
	buf := requestBufs.Get().(*[]byte)
	b := append(append((*buf)[:0], kind...), 0)
	b, err := jsonbuf.Marshal(b, content)
	sum := sha256.Sum256(b)
	if cap(b) <= maxPooledRequest { // a batch's buffer is not kept
		*buf = b
		requestBufs.Put(buf)
	}
	if err != nil {
		return "", fmt.Errorf("ledger: encode request: %w", err)
	}
	return hex.EncodeToString(sum[:]), nil
}

// requestBufs are contentHash's buffers, of at most maxPooledRequest
// bytes.
var requestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledRequest = 64 << 10

// Writer appends journal entries and the state they change in one
// transaction.
type Writer struct {
	tx      Tx
	req     Request
	now     time.Time
	lastSeq uint64
	plans   *planCache // nil while a bank is initialised
	// newLien and newCharge are ids reserved through the writer (0 for
	// none) that no Append has stored yet: nothing is stored under them.
	newLien, newCharge uint64
	// carriedLien and carriedCharge are the encodings of the lien and
	// charge that the last entry appended carries (Carried).
	carriedLien, carriedCharge []byte
}

// Carried is the canonical JSON of the lien and of the charge that the
// last entry the call appended carries, nil for none: parts of the stored
// entry, not to be changed. An answer that holds the same lien or charge
// copies them rather than encode them again (package lien's results): on
// a 2-core machine answers are encoded by the single writer, and encoding
// the lien twice and the charge once more took about 1.3 µs of CPU a lien
// and charge cycle (docs/performance.md, session 12).
func (w *Writer) Carried() (lien, charge []byte) { return w.carriedLien, w.carriedCharge }

// Tx is the transaction, for reads; changes go through Append.
func (w *Writer) Tx() Tx { return w.tx }

// NewLienID reserves the id of a new lien (Tx.NextLienID). Append then
// knows that there is no stored lien to replace: looking one up was a miss
// in the store at every lien.
func (w *Writer) NewLienID() (uint64, error) {
	id, err := w.tx.NextLienID()
	w.newLien = id
	return id, err
}

// NewChargeID reserves the id of a new charge, as NewLienID.
func (w *Writer) NewChargeID() (uint64, error) {
	id, err := w.tx.NextChargeID()
	w.newCharge = id
	return id, err
}

// Now is the time of this change.
func (w *Writer) Now() time.Time { return w.now }

// Append journals e (filling in its sequence, time, actor and request;
// the store fills in the hashes as it seals it) and stores what it
// changed: the allocations given, and the lien, charge or record the entry
// carries. Nothing changes without its entry. The entry returned has no
// hashes.
func (w *Writer) Append(e Entry, changed ...Allocation) (Entry, error) {
	head, err := w.tx.Head()
	if err != nil {
		return Entry{}, err
	}
	e.Seq, e.Time = head.Seq+1, w.now
	if head.Time.After(e.Time) {
		e.Time = head.Time // entry times never go backwards
	}
	e.Actor, e.RequestID = w.req.Actor, w.req.ID
	enc, err := e.encodeSealable()
	if err != nil {
		return Entry{}, err
	}
	var oldLien *Lien
	var oldCharge *Charge
	if e.Lien != nil && e.Lien.ID == w.newLien {
		w.newLien = 0 // stored below: a later entry of the call replaces it
	} else if e.Lien != nil {
		if l, ok, err := w.tx.Lien(e.Lien.ID); err != nil {
			return Entry{}, err
		} else if ok {
			oldLien = &l
		}
	}
	if e.Charge != nil && e.Charge.ID == w.newCharge {
		w.newCharge = 0
	} else if e.Charge != nil {
		if c, ok, err := w.tx.Charge(e.Charge.ID); err != nil {
			return Entry{}, err
		} else if ok {
			oldCharge = &c
		}
	}
	if err := w.tx.AppendEntry(e, enc.sealable); err != nil {
		return Entry{}, err
	}
	for _, a := range changed {
		if err := w.tx.PutAllocation(a, e.Seq); err != nil {
			return Entry{}, err
		}
	}
	if e.Lien != nil {
		if err := w.tx.PutLien(*e.Lien, enc.lien, oldLien); err != nil {
			return Entry{}, err
		}
	}
	if e.Charge != nil {
		if err := w.tx.PutCharge(*e.Charge, enc.charge, oldCharge); err != nil {
			return Entry{}, err
		}
	}
	if e.Record != nil {
		if err := w.tx.PutRecord(*e.Record); err != nil {
			return Entry{}, err
		}
	}
	for _, account := range touchedAccounts(e, oldLien) {
		prev, err := w.tx.AccountVersion(account)
		if err != nil {
			return Entry{}, err
		}
		version := newVersion()
		if err := w.tx.PutAccountVersion(account, version); err != nil {
			return Entry{}, err
		}
		if w.plans != nil {
			w.plans.afterAppend(account, prev, version, e, oldLien, oldCharge, w.now)
		}
	}
	w.lastSeq = e.Seq
	w.carriedLien, w.carriedCharge = enc.lien, enc.charge
	return e, nil
}

// touchedAccounts are the accounts whose state e changes, each once, in
// the order the entry names them. An entry touches one account or two: a
// walk of a small array finds a repeat sooner than a map is made.
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
