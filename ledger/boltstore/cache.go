package boltstore

import (
	"slices"

	"github.com/ingot-hpc/ingot/ledger"
)

// decodedCache keeps the committer's decoded copies of the records that
// nearly every change reads and few change (settings, nodes, users,
// machines, allocations, records such as rate tables and policies), and of
// liens, which a charge reads twice (by job, then by id as the entry is
// appended), and the accounts' running sums (reserved, charged), which
// every lien and charge reads and changes several times. Decoding them
// again and again was a large part of the single writer's time.
//
// It keeps keys found missing (absent) the same way: only a write makes
// them present, and a write forgets them.
//
// Only the committer's transactions use it, one at a time, so it needs no
// lock. It is exact because every write of a cached bucket goes through
// the committer's session, which forgets the key (put then keeps the value
// it was given), because undoing a failed call forgets every key the call
// wrote, and because the committer empties it when a group could not be
// written. Read-only transactions do not use it: they read the file.
type decodedCache struct {
	// byBucket holds each bucket's records by key: looking a key up with
	// string(key) builds no string, where one map keyed by bucket and key
	// built one per lookup. A key's slot is changed in place when it is
	// kept again, which builds no string either (storing under string(key)
	// makes one every time) and boxes no running sum in an interface: the
	// running sums and allocations are kept again at nearly every change.
	byBucket [numBuckets]map[string]*cacheSlot
	n        int
}

// cacheSlot is what the cache holds at a key: a running sum ([]ledger.Hold,
// which no one changes) in a bucket of running sums, and in the others
// absent or a pointer to a decoded record, which the caller must copy
// (copyOf) before handing it out.
//
// A write forgets a key by emptying its slot (held false) rather than
// deleting it: it is nearly always kept again at once (put keeps the value
// it was given), and a new slot, and its key's string, were then made
// again. Empty slots count towards maxCached, so a bank that writes many
// keys once and deletes them (guaranteed quotes) empties the cache a
// little sooner; settled liens, the keys that come and go by the
// thousand, are dropped (drop).
type cacheSlot struct {
	v    any
	sum  []ledger.Hold
	held bool
}

// absent is what the cache holds for a key the bucket does not have:
// every lien and charge looks up records that a bank may never set (the
// liens' configuration and the rate table, while at their defaults), and
// each miss searched the overlay and the file. A write of the key forgets
// it, as it forgets a value.
type absent struct{}

// cachedBuckets are the buckets whose records are cached.
var cachedBuckets = [numBuckets]bool{
	bucketMeta: true, bucketNodes: true, bucketUsers: true,
	bucketMachines: true, bucketAllocations: true, bucketRecords: true,
	bucketLiens: true, bucketReserved: true, bucketReservedSum: true,
	bucketCharged: true,
}

func newDecodedCache() *decodedCache { return &decodedCache{} }

// lookup returns what the cache holds at key (cacheSlot.v).
func (c *decodedCache) lookup(bucket bucketID, key []byte) (any, bool) {
	if c == nil {
		return nil, false
	}
	if slot := c.byBucket[bucket][string(key)]; slot != nil && slot.held {
		return slot.v, true
	}
	return nil, false
}

// lookupSum returns the running sum the cache holds at key.
func (c *decodedCache) lookupSum(bucket bucketID, key []byte) ([]ledger.Hold, bool) {
	if c == nil {
		return nil, false
	}
	if slot := c.byBucket[bucket][string(key)]; slot != nil && slot.held {
		return slot.sum, true
	}
	return nil, false
}

// copyOf is a copy of the cached record at p that its receiver may change.
func copyOf[T any](p *T) T {
	v := *p
	unshare(&v)
	return v
}

// keep caches a record just decoded or written: a copy, so that the
// caller's changes to its slices do not reach the cache, held by pointer,
// so that handing it out (copyOf) allocates only the slices it copies.
// Running sums and absent are kept as they are.
func keep[T any](c *decodedCache, bucket bucketID, key []byte, v T) {
	if c == nil || !cachedBuckets[bucket] {
		return
	}
	if l, ok := any(&v).(*ledger.Lien); ok && l.State != ledger.LienActive {
		// A settled lien is seldom read again. Keeping only active ones
		// bounds the cache by the running jobs, not the bank's history (a
		// server kept every lien it had seen).
		c.drop(bucket, key)
		return
	}
	switch r := any(&v).(type) {
	case *absent:
		*c.slot(bucket, key) = cacheSlot{v: *r, held: true}
	case *[]ledger.Hold:
		*c.slot(bucket, key) = cacheSlot{sum: *r, held: true}
	default:
		p := new(T)
		*p = v
		unshare(p)
		*c.slot(bucket, key) = cacheSlot{v: p, held: true}
	}
}

// slot is the slot for key, made if the cache has none.
func (c *decodedCache) slot(bucket bucketID, key []byte) *cacheSlot {
	records := c.byBucket[bucket]
	if slot := records[string(key)]; slot != nil {
		return slot
	}
	if c.n >= maxCached {
		c.reset() // a bound on memory; what is needed again is decoded again
	}
	if records == nil {
		records = map[string]*cacheSlot{}
		c.byBucket[bucket] = records
	}
	slot := new(cacheSlot)
	records[string(key)] = slot
	c.n++
	return slot
}

// maxCached bounds the slots the cache holds.
const maxCached = 1 << 16

// forget empties key's slot, if the cache has one.
func (c *decodedCache) forget(bucket bucketID, key []byte) {
	if c != nil && cachedBuckets[bucket] { // most writes are of other buckets: no key to build
		if slot := c.byBucket[bucket][string(key)]; slot != nil {
			*slot = cacheSlot{}
		}
	}
}

// drop removes key's slot, if the cache has one.
func (c *decodedCache) drop(bucket bucketID, key []byte) {
	records := c.byBucket[bucket]
	if _, ok := records[string(key)]; ok {
		delete(records, string(key))
		c.n--
	}
}

// reset empties the cache, after a rollback.
func (c *decodedCache) reset() {
	for _, records := range c.byBucket {
		clear(records)
	}
	c.n = 0
}

// unshare gives the record at p slices of its own where a receiver might
// change them in place; the other kinds are plain values (a Node's Limit
// points to an immutable decimal). JSON held as bytes (a lien's detail, a
// record's value) is only ever replaced, never written into: it is shared,
// clipped to its length so that an append makes a new array.
func unshare(p any) {
	switch r := p.(type) {
	case *ledger.User:
		r.Memberships = slices.Clone(r.Memberships)
	case *ledger.Record:
		r.Value = slices.Clip(r.Value)
	case *ledger.Lien:
		r.Holds, r.Detail = slices.Clone(r.Holds), slices.Clip(r.Detail)
	}
}
