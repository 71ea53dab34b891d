package boltstore

import (
	"hash/maphash"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// Nearly every change looks up keys that are in neither the overlay nor
// the file: its request id (to answer a retry), a new job's lien, the
// journal entry it is about to append. Each such miss searched bbolt's
// B+tree (the requests bucket grows with every change). A Bloom filter of
// the keys the requests and job-lien buckets hold in the file answers most
// misses from memory; a key the filter may hold is searched for as
// before, so a false positive costs only the search. The journal's keys
// only grow: one past the file's newest is not in it. The committer's CPU
// per lien and charge cycle fell by about 3 µs of 50 (tmpfs profiles, two
// alternating pairs of 2 × 80,000 cycles: 8.12 -> 7.67 s and 7.94 -> 7.41
// s, measured when the journal had a Bloom filter too; its newest entry
// instead measured the same and takes no memory per entry).
//
// A filter takes 12 bits of memory per key it has room for, twice the
// keys of its bucket when built (3 bytes a key), at least 1.5 MiB; Open
// reads every key of the two buckets to build them.
//
// The filters hold every key the file holds: Open builds them from the
// file, and the checkpointer adds the keys it writes (and moves the
// journal's end) before its transaction commits and before the committer
// may trim them from the overlay (it trims only groups the file holds,
// after the commit). A key the file loses (a delete) stays in its filter,
// a false positive.

// filteredBuckets are the buckets whose file keys have a Bloom filter.
var filteredBuckets = [...]bucketID{bucketRequests, bucketLiensByJob}

const (
	// filterBitsPerKey and filterHashes give about 1% false positives at
	// capacity (a key's bits all in one 64-byte block, so that a lookup
	// misses the processor's cache once, not filterHashes times).
	filterBitsPerKey = 12
	filterHashes     = 7
	blockWords       = 8 // a 64-byte cache line
	// minFilterKeys is the capacity of a filter for a small bucket: 1.5
	// MiB, so that a young bank does not rebuild it every few seconds.
	minFilterKeys = 1 << 20
)

// keyFilter is a blocked Bloom filter of byte-string keys, safe for one
// writer (the checkpointer) and any number of readers (the committer) at
// once.
type keyFilter struct {
	seed     maphash.Seed
	bits     []atomic.Uint64 // blocks of blockWords words
	blocks   uint64
	keys     atomic.Int64 // keys added
	capacity int64        // keys it was sized for
}

func newKeyFilter(capacity int64) *keyFilter {
	capacity = max(capacity, minFilterKeys)
	blocks := (capacity*filterBitsPerKey + 511) / 512
	return &keyFilter{seed: maphash.MakeSeed(), bits: make([]atomic.Uint64, blocks*blockWords), blocks: uint64(blocks), capacity: capacity}
}

// block is where key's bits are, and the hash that places them in it.
func (f *keyFilter) block(key []byte) ([]atomic.Uint64, uint64) {
	h := maphash.Bytes(f.seed, key)
	b := (h >> 32) % f.blocks * blockWords
	return f.bits[b : b+blockWords], h
}

// bit is the i-th of a key's bits in its block: h1 + i·h2 (mod 512), from
// the hash's low half.
func bit(h, i uint64) (word uint64, mask uint64) {
	h1, h2 := h&0xffff, (h>>16)&0xffff|1
	n := (h1 + i*h2) % (blockWords * 64)
	return n / 64, 1 << (n % 64)
}

func (f *keyFilter) add(key []byte) {
	block, h := f.block(key)
	for i := range uint64(filterHashes) {
		w, m := bit(h, i)
		block[w].Or(m)
	}
	f.keys.Add(1)
}

// mayHold is false only for a key never added.
func (f *keyFilter) mayHold(key []byte) bool {
	block, h := f.block(key)
	for i := range uint64(filterHashes) {
		if w, m := bit(h, i); block[w].Load()&m == 0 {
			return false
		}
	}
	return true
}

// full reports that more keys were added than the filter was sized for:
// its false positives grow past 1%.
func (f *keyFilter) full() bool { return f.keys.Load() > f.capacity }

// keyFilters are a store's filters, by bucket (nil for a bucket without),
// and for the journal, whose keys only grow, the newest key the file holds.
type keyFilters struct {
	byBucket     [numBuckets]atomic.Pointer[keyFilter]
	journalEnd   atomic.Uint64 // the file's newest entry
	journalKnown atomic.Bool   // journalEnd is set (build ran)
}

// mayHold is false only for a key the file does not hold in bucket.
func (fs *keyFilters) mayHold(bucket bucketID, key []byte) bool {
	if bucket == bucketJournal {
		return !fs.journalKnown.Load() || len(key) != 8 || decodeUint(key) <= fs.journalEnd.Load()
	}
	f := fs.byBucket[bucket].Load()
	return f == nil || f.mayHold(key)
}

// build makes every filtered bucket's filter from the file as btx sees it,
// sized for twice the keys it holds, and notes the journal's newest entry.
func (fs *keyFilters) build(btx *bolt.Tx) {
	for _, id := range filteredBuckets {
		b := btx.Bucket(id.name())
		n := int64(b.Stats().KeyN)
		f := newKeyFilter(2 * n)
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			f.add(k)
		}
		fs.byBucket[id].Store(f)
	}
	if k, _ := btx.Bucket(bucketJournal.name()).Cursor().Last(); len(k) == 8 {
		fs.journalEnd.Store(decodeUint(k))
	}
	fs.journalKnown.Store(true)
}

// added notes the keys that writes put in the file through btx, which has
// not committed yet; a filter past its capacity is made again, bigger,
// from btx (the file with these writes).
func (fs *keyFilters) added(btx *bolt.Tx, writes []write) {
	rebuild := false
	for _, w := range writes {
		if w.seq || w.deleted {
			continue
		}
		if w.bucket == bucketJournal && len(w.key) == 8 {
			fs.journalEnd.Store(max(fs.journalEnd.Load(), decodeUint(w.key)))
		} else if f := fs.byBucket[w.bucket].Load(); f != nil {
			f.add(w.key)
			rebuild = rebuild || f.full()
		}
	}
	if rebuild {
		fs.build(btx)
	}
}
