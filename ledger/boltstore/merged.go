package boltstore

import (
	"bytes"
	"fmt"
	"runtime"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// kvBucket is what a transaction needs of a bucket (as bbolt's has it).
// Put and Delete keep key (the overlay holds it until the file does):
// every caller makes the key for the write and never changes it after.
// Copying them was a fifth of the committer's allocations.
type kvBucket interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
	Delete(key []byte) error
	NextSequence() (uint64, error)
	Cursor() kvCursor
}

// kvCursor walks a bucket in key order, as bbolt's Cursor does.
type kvCursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Seek(key []byte) (key2, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
}

// mergedBucket reads a bucket of the file through an overlay: the
// committer's, which its writes go to (s is its session), or a published
// snapshot's, read-only.
type mergedBucket struct {
	s   *session
	ov  *overlay
	id  bucketID
	btx *bolt.Tx
	// base is the file's bucket, opened when first read (file): a group
	// reads the file for few of the buckets it uses, and never for the
	// resident ones.
	base *bolt.Bucket
	// resident: the overlay holds the whole bucket (overlay.go), and the
	// file is not read.
	resident bool
}

func newMergedBucket(s *session, ov *overlay, id bucketID, btx *bolt.Tx) *mergedBucket {
	return &mergedBucket{s: s, ov: ov, id: id, btx: btx, resident: residentBuckets[id]}
}

// value is an overlay entry's value as a read sees it. A deferred value
// that cannot be made reads as missing: the call reading it fails all the
// same, as the syncer cannot write the value either and fails its group
// and every group run after it (Store.sync), the reader's among them. A
// snapshot holds only durable groups, whose values were all made.
func (b *mergedBucket) value(e overlayEntry) []byte {
	v, err := e.bytes()
	if err != nil {
		return nil
	}
	return nonNil(v)
}

// file is the file's bucket.
func (b *mergedBucket) file() *bolt.Bucket {
	if b.base == nil {
		b.base = b.btx.Bucket(b.id.name())
	}
	return b.base
}

func (b *mergedBucket) Get(key []byte) []byte {
	e, found, deleted := b.ov.get(b.id, key)
	switch {
	case found:
		return b.value(e)
	case deleted || b.resident:
		return nil
	case b.s != nil && b.s.filters != nil && !b.s.filters.mayHold(b.id, key):
		return nil // not in the file either (filter.go)
	}
	return b.file().Get(key)
}

func (b *mergedBucket) Put(key, value []byte) error {
	if b.s == nil {
		return bolt.ErrTxNotWritable
	}
	b.s.record(write{bucket: b.id, key: key, value: value})
	return nil
}

func (b *mergedBucket) Delete(key []byte) error {
	if b.s == nil {
		return bolt.ErrTxNotWritable
	}
	b.s.record(write{bucket: b.id, key: key, deleted: true})
	return nil
}

func (b *mergedBucket) NextSequence() (uint64, error) {
	if b.s == nil {
		return 0, bolt.ErrTxNotWritable
	}
	var seq uint64
	if s := b.ov.seqs[b.id]; s.set {
		seq = s.value
	} else {
		seq = b.file().Sequence()
	}
	seq++
	b.s.record(write{bucket: b.id, seq: true, sequence: seq})
	return seq, nil
}

func (b *mergedBucket) Cursor() kvCursor {
	if b.resident {
		return &mergedCursor{b: b, base: noCursor{}}
	}
	return &mergedCursor{b: b, base: b.file().Cursor()}
}

// mergedCursor walks the file's bucket and the overlay's entries
// together; the overlay's entry wins over the file's for the same key, and
// its deletions hide the file's keys. bk is the base cursor's position,
// valid for forward steps only while forward is true.
type mergedCursor struct {
	b       *mergedBucket
	base    kvCursor
	bk, bv  []byte
	cur     []byte
	forward bool
}

func (c *mergedCursor) First() ([]byte, []byte) {
	c.bk, c.bv = c.base.First()
	e, ok := c.b.ov.ceil(c.b.id, []byte{})
	return c.ahead(e, ok)
}

func (c *mergedCursor) Seek(key []byte) ([]byte, []byte) {
	c.bk, c.bv = c.base.Seek(key)
	e, ok := c.b.ov.ceil(c.b.id, key)
	return c.ahead(e, ok)
}

func (c *mergedCursor) Next() ([]byte, []byte) {
	if c.cur == nil {
		return nil, nil
	}
	if !c.forward {
		c.bk, c.bv = c.base.Seek(successor(c.cur))
	} else if c.bk != nil && bytes.Equal(c.bk, c.cur) {
		c.bk, c.bv = c.base.Next()
	}
	e, ok := c.b.ov.ceil(c.b.id, successor(c.cur))
	return c.ahead(e, ok)
}

// ahead settles on the first visible key from the base position and the
// overlay's put e.
func (c *mergedCursor) ahead(e overlayEntry, ok bool) ([]byte, []byte) {
	c.forward = true
	for c.bk != nil && c.b.ov.deleted(c.b.id, c.bk) {
		c.bk, c.bv = c.base.Next()
	}
	if ok && (c.bk == nil || bytes.Compare(e.key, c.bk) <= 0) {
		if c.bk != nil && bytes.Equal(e.key, c.bk) {
			c.bk, c.bv = c.base.Next() // shadowed by the overlay
		}
		c.cur = e.key
		return e.key, c.b.value(e)
	}
	c.cur = c.bk
	return c.bk, c.bv
}

func (c *mergedCursor) Last() ([]byte, []byte) { return c.behind(nil) }

func (c *mergedCursor) Prev() ([]byte, []byte) {
	if c.cur == nil {
		return nil, nil
	}
	return c.behind(c.cur)
}

// behind settles on the last visible key before before (of all, if nil).
func (c *mergedCursor) behind(before []byte) ([]byte, []byte) {
	c.forward = false
	bk, bv := c.baseBefore(before)
	for bk != nil && c.b.ov.deleted(c.b.id, bk) {
		bk, bv = c.baseBefore(bk)
	}
	e, ok := c.b.ov.below(c.b.id, before)
	if !ok || (bk != nil && bytes.Compare(e.key, bk) < 0) {
		c.cur = bk
		return bk, bv
	}
	c.cur = e.key
	return e.key, c.b.value(e)
}

// noCursor is the file's side of a resident bucket: nothing.
type noCursor struct{}

func (noCursor) First() ([]byte, []byte)      { return nil, nil }
func (noCursor) Last() ([]byte, []byte)       { return nil, nil }
func (noCursor) Seek([]byte) ([]byte, []byte) { return nil, nil }
func (noCursor) Next() ([]byte, []byte)       { return nil, nil }
func (noCursor) Prev() ([]byte, []byte)       { return nil, nil }

// nonNil is a present value as bbolt gives it: never nil.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (c *mergedCursor) baseBefore(before []byte) ([]byte, []byte) {
	if before == nil {
		return c.base.Last()
	}
	if k, _ := c.base.Seek(before); k == nil {
		return c.base.Last()
	}
	return c.base.Prev()
}

// successor is the first key after k.
func successor(k []byte) []byte { return append(bytes.Clone(k), 0) }

// forEach calls fn for every key of b in order.
func forEach(b kvBucket, fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// session is the committer's state while it runs a group: the overlay,
// the file's buckets seen through it (opened once per group: opening a
// bbolt bucket costs an allocation and a lookup), the group's writes, and
// how to undo them.
type session struct {
	ov      *overlay
	cache   *decodedCache
	filters *keyFilters // nil for none
	group   uint64
	btx     *bolt.Tx
	buckets [numBuckets]kvBucket
	writes  []write
	undos   []undo
}

func newSession(btx *bolt.Tx, ov *overlay, cache *decodedCache, filters *keyFilters, group uint64) *session {
	return &session{ov: ov, cache: cache, filters: filters, group: group, btx: btx}
}

// bucket is the named bucket as the session sees it, opened when the group
// first uses it: groups are often of a few calls, which use half the
// buckets.
func (s *session) bucket(id bucketID) kvBucket {
	b := s.buckets[id]
	if b == nil {
		b = newMergedBucket(s, s.ov, id, s.btx)
		s.buckets[id] = b
	}
	return b
}

// record applies a write to the overlay, remembering how to undo it, and
// marks the group's earlier write of the same key superseded. A group
// writes an account's running sums, version and allocations, the journal
// head and the buckets' sequences once a call: in the lien and charge
// benchmark (64 goroutines, one account) two writes in five were replaced
// within their group, and making their values, logging them and putting
// them in the file was work for nothing.
// Journal entries and request records are never marked: their deferred
// values do more than make bytes (the hash chain, the caller's answer),
// and their keys are new to every call anyway.
func (s *session) record(w write) {
	u := s.ov.set(w, s.group, len(s.writes))
	u.superseding = -1
	if at := u.replaced(s.group); at >= 0 && !keptWhole[w.bucket] {
		s.writes[at].superseded = true
		u.superseding = at
	}
	s.undos = append(s.undos, u)
	s.writes = append(s.writes, w)
	if !w.seq {
		s.cache.forget(w.bucket, w.key)
	}
}

// keptWhole are the buckets whose every write is logged and applied, even
// when a later write of the group replaces it (session.record).
var keptWhole = [numBuckets]bool{bucketJournal: true, bucketRequests: true}

// runCall runs one call, keeping its writes if it succeeds and undoing
// them if it fails. The group's undo records stay until the group is
// durable: a failed log write undoes the whole group (Store.rollBack).
func (s *session) runCall(fn func(ledger.Tx) error, btx *bolt.Tx) error {
	mark, undoMark := len(s.writes), len(s.undos)
	err := runCall(fn, &tx{btx: btx, cache: s.cache, s: s})
	if err == nil {
		return nil
	}
	for _, u := range s.undos[undoMark:] {
		if u.superseding >= 0 && u.superseding < mark {
			s.writes[u.superseding].superseded = false // the call's write that replaced it is undone
		}
	}
	revert(s.ov, s.cache, s.undos[undoMark:])
	s.undos = s.undos[:undoMark]
	s.writes = s.writes[:mark]
	return err
}

// revert undoes undos, newest first, and makes the cache forget the keys.
func revert(ov *overlay, cache *decodedCache, undos []undo) {
	for i := len(undos) - 1; i >= 0; i-- {
		u := undos[i]
		ov.revert(u)
		if !u.seq {
			cache.forget(u.bucket, u.key)
		}
	}
}

// runCall runs fn, turning a panic into an error so that one bad call cannot
// stop the committer that every writer waits on.
func runCall(fn func(ledger.Tx) error, t *tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("boltstore: update panicked: %v", r)
		}
	}()
	return fn(t)
}

// yieldEvery is how many writes apply makes between yields.
const yieldEvery = 64

// appendedBuckets are the buckets whose new keys come after their others
// (ids from a sequence) or after the others of their prefix (an allocation's
// history by seq, a client's requests by ids that grow with time). Keys in
// random order, as a client sending random request ids makes, fare no
// worse: 20,000 random keys with 1.3 KB values, 100 to a transaction, left
// pages 77% in use whether split at half or full.
var appendedBuckets = []bucketID{bucketJournal, bucketLiens, bucketCharges, bucketHistory, bucketRequests}

// apply writes a group's changes into the file's buckets.
func apply(btx *bolt.Tx, writes []write) error {
	// bbolt splits a page at half its size by default, which suits keys
	// that arrive in any order; appended keys would then leave every page
	// half empty for good (two 1.1 KB journal entries to a 4 KiB page) and
	// each checkpoint would write twice the pages it needs.
	var open [numBuckets]*bolt.Bucket
	for b := range numBuckets {
		open[b] = btx.Bucket(b.name())
	}
	for _, b := range appendedBuckets {
		open[b].FillPercent = 1
	}
	for i, w := range writes {
		if i%yieldEvery == yieldEvery-1 {
			// A checkpoint applies thousands of writes; on two cores it
			// would keep a core from the callers its syncer just answered
			// until the scheduler preempts it (10 ms): their requests' p99.
			runtime.Gosched()
		}
		b := open[w.bucket]
		var err error
		switch {
		case w.seq:
			err = b.SetSequence(w.sequence)
		case w.deleted:
			err = b.Delete(w.key)
		default:
			var value []byte
			if value, err = w.bytes(); err == nil {
				err = b.Put(w.key, value)
			}
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", w.bucket, err)
		}
	}
	return nil
}
