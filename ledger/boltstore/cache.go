package boltstore

import (
	"bytes"
	"slices"

	"github.com/ingot-hpc/ingot/ledger"
)

// recordCache keeps decoded copies of the records the committer reads and
// writes: nearly every change reads the same nodes, users, allocations,
// rate tables and sums, and decoding them was most of the committer's
// time, which bounds the bank (docs/performance.md). It is exact because
// only the committer writes: a transaction's writes wait in pending, join
// the cache when it commits and go when it rolls back. Views do not use
// it. Records go in and out as copies.
type recordCache map[string]any

// maxCached bounds the cache; past it the cache starts again empty.
const maxCached = 1 << 16

// absent marks a key known to have no record; forget, a key whose record
// the cache is not to keep.
type (
	absent struct{}
	forget struct{}
)

// kept says whether the cache keeps record v: not charges, nor finished
// liens, seldom read again, which would fill it with the bank's history.
func kept(v any) bool {
	switch r := v.(type) {
	case ledger.Charge:
		return false
	case ledger.Lien:
		return r.State == ledger.LienActive
	}
	return true
}

func cacheKey(bucket, key []byte) string { return string(bucket) + "\x00" + string(key) }

// lookup finds a record's decoded copy: in the transaction's writes, then
// in the cache.
func (t *tx) lookup(bucket, key []byte) (any, bool) {
	if t.cache == nil {
		return nil, false
	}
	k := cacheKey(bucket, key)
	if v, ok := t.pending[k]; ok {
		_, forgotten := v.(forget)
		return v, !forgotten
	}
	v, ok := t.cache[k]
	return v, ok
}

// remember keeps v, read from the file, as committed.
func (t *tx) remember(bucket, key []byte, v any) {
	if t.cache == nil {
		return
	}
	k := cacheKey(bucket, key)
	if _, written := t.pending[k]; !written && kept(v) {
		t.cache[k] = v
	}
}

// written keeps v (absent{} for a deletion) as this transaction wrote it.
func (t *tx) written(bucket, key []byte, v any) {
	if t.cache != nil {
		if !kept(v) {
			v = forget{}
		}
		t.pending[cacheKey(bucket, key)] = v
	}
}

// commit moves a committed transaction's writes into the cache.
func (c recordCache) commit(pending recordCache) {
	if len(c)+len(pending) > maxCached {
		clear(c)
	}
	for k, v := range pending {
		if _, forgotten := v.(forget); forgotten {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
}

// clone copies what a record shares with the cache: its slices.
func clone[T any](v T) T {
	switch r := any(&v).(type) {
	case *ledger.Lien:
		r.Holds, r.Detail = slices.Clone(r.Holds), bytes.Clone(r.Detail)
	case *ledger.Charge:
		r.Debits, r.Refunds, r.Detail = slices.Clone(r.Debits), slices.Clone(r.Refunds), bytes.Clone(r.Detail)
	case *ledger.User:
		r.Memberships = slices.Clone(r.Memberships)
	case *ledger.Node:
		if r.Policy.Limit != nil {
			limit := *r.Policy.Limit
			r.Policy.Limit = &limit
		}
	case *[]byte:
		*r = bytes.Clone(*r)
	}
	return v
}
