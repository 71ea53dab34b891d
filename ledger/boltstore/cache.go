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
	// byBucket holds each bucket's records by key (see lookup for what a
	// value is): looking a key up with string(key) builds no string, where
	// one map keyed by bucket and key built one per lookup.
	byBucket [numBuckets]map[string]any
	n        int
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

// lookup returns what the cache holds at key: absent, a running sum
// ([]ledger.Hold, which no one changes), or a pointer to a decoded record,
// which the caller must copy (copyOf) before handing it out.
func (c *decodedCache) lookup(bucket bucketID, key []byte) (any, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.byBucket[bucket][string(key)]
	return v, ok
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
		c.forget(bucket, key)
		return
	}
	switch r := any(&v).(type) {
	case *absent:
		c.set(bucket, key, *r)
	case *[]ledger.Hold:
		c.set(bucket, key, *r)
	default:
		p := new(T)
		*p = v
		unshare(p)
		c.set(bucket, key, p)
	}
}

func (c *decodedCache) set(bucket bucketID, key []byte, v any) {
	if c.n >= maxCached {
		c.reset() // a bound on memory; what is needed again is decoded again
	}
	records := c.byBucket[bucket]
	if records == nil {
		records = map[string]any{}
		c.byBucket[bucket] = records
	}
	if _, ok := records[string(key)]; !ok {
		c.n++
	}
	records[string(key)] = v
}

// maxCached bounds the records the cache holds.
const maxCached = 1 << 16

func (c *decodedCache) forget(bucket bucketID, key []byte) {
	if c != nil && cachedBuckets[bucket] { // most writes are of other buckets: no key to build
		records := c.byBucket[bucket]
		if _, ok := records[string(key)]; ok {
			delete(records, string(key))
			c.n--
		}
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
