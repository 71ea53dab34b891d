package recordcache

import (
	"bytes"
	"slices"

	"github.com/ingot-hpc/ingot/ledger"
)

// Cache is the committed layer: records as the store holds them.
type Cache struct{ m map[string]any }

// Writes are writes not yet committed: a transaction's, or one call's
// within a transaction. A key maps to the record written, Absent for a
// deletion, or forget for a record the cache is not to keep.
type Writes map[string]any

// Max bounds the cache; past it the cache starts again empty.
const Max = 1 << 16

// Absent marks a key known to have no record.
type Absent struct{}

// forget marks a key whose record the cache is not to keep.
type forget struct{}

// New is an empty cache.
func New() *Cache { return &Cache{m: map[string]any{}} }

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

// Lookup finds key's record in the layers, newest first, then in the
// cache; ok is false if none knows it. A nil cache knows nothing.
func (c *Cache) Lookup(key string, layers ...Writes) (v any, ok bool) {
	for _, w := range layers {
		if v, ok := w[key]; ok {
			_, forgotten := v.(forget)
			return v, !forgotten
		}
	}
	if c == nil {
		return nil, false
	}
	v, ok = c.m[key]
	return v, ok
}

// Remember keeps v, read from the store, as committed, unless a layer has
// written key since (or v is not kept).
func (c *Cache) Remember(key string, v any, layers ...Writes) {
	if c == nil || !kept(v) {
		return
	}
	for _, w := range layers {
		if _, written := w[key]; written {
			return
		}
	}
	c.m[key] = v
}

// Put records v as written at key (Absent: deleted).
func (w Writes) Put(key string, v any) {
	if !kept(v) {
		v = forget{}
	}
	w[key] = v
}

// Merge adds later writes to w: a call's to its transaction's.
func (w Writes) Merge(later Writes) {
	for k, v := range later {
		w[k] = v
	}
}

// Commit moves a committed transaction's writes into the cache.
func (c *Cache) Commit(w Writes) {
	if len(c.m)+len(w) > Max {
		c.Clear()
	}
	for k, v := range w {
		if _, forgotten := v.(forget); forgotten {
			delete(c.m, k)
		} else {
			c.m[k] = v
		}
	}
}

// Clear empties the cache.
func (c *Cache) Clear() { clear(c.m) }

// Clone copies what a record shares with the cache: its slices.
func Clone[T any](v T) T {
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
	case *[]uint64:
		*r = slices.Clone(*r)
	}
	return v
}

// Forget marks key as written with a value the cache is not to know: an
// index the write changed in a way the engine does not work out.
func (w Writes) Forget(key string) { w[key] = forget{} }

// Get is key's record from the layers or the cache, or else what read
// finds in the store, remembered (ok false: there is none). What it
// returns is the caller's own copy.
func Get[T any](c *Cache, key string, layers []Writes, read func() (v T, ok bool, err error)) (v T, ok bool, err error) {
	if r, found := c.Lookup(key, layers...); found {
		if _, missing := r.(Absent); missing {
			return v, false, nil
		}
		return Clone(r.(T)), true, nil
	}
	if v, ok, err = read(); err != nil {
		return v, false, err
	}
	if ok {
		c.Remember(key, Clone(v), layers...)
	} else {
		c.Remember(key, Absent{}, layers...)
	}
	return v, ok, nil
}
