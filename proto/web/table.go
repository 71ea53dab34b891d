package web

import (
	"slices"
	"time"
)

// table is one of the tables that clients grow in the server's memory (the
// links waiting to be opened, the sessions signed in): entries found by the
// digest of their token, each owned by a client and alive until it
// expires. It is bounded twice: perOwner entries of one owner, so that one
// client cannot fill it and lock the others out, and max in all, a bound
// on the server's memory far above one owner's share. The caller holds the
// lock of the Sessions it is part of.
//
// Expired entries are dropped when they are looked up, when their owner
// adds one, or when the table is full: never a sweep of the whole table at
// every request, which a client asking in a loop would make costly.
type table[V any] struct {
	max, perOwner int
	entries       map[digest]entry[V]
	byOwner       map[string][]digest // each owner's entries, oldest first
}

type entry[V any] struct {
	owner   string
	expires time.Time
	value   V
}

func newTable[V any](max, perOwner int) *table[V] {
	return &table[V]{max: max, perOwner: perOwner, entries: map[digest]entry[V]{}, byOwner: map[string][]digest{}}
}

// get returns the live entry of d; an expired one is dropped.
func (t *table[V]) get(d digest, now time.Time) (entry[V], bool) {
	e, ok := t.entries[d]
	if ok && !now.Before(e.expires) {
		t.remove(d)
		return entry[V]{}, false
	}
	return e, ok
}

// add keeps v under d for owner until expires. The caller has checked
// owned and full first: add itself refuses nothing.
func (t *table[V]) add(d digest, owner string, expires time.Time, v V) {
	t.entries[d] = entry[V]{owner: owner, expires: expires, value: v}
	t.byOwner[owner] = append(t.byOwner[owner], d)
}

// remove drops the entry of d, if there is one. An owner left with none is
// forgotten, so that owners who came once do not stay in the table.
func (t *table[V]) remove(d digest) {
	e, ok := t.entries[d]
	if !ok {
		return
	}
	delete(t.entries, d)
	own := slices.DeleteFunc(t.byOwner[e.owner], func(o digest) bool { return o == d })
	if len(own) == 0 {
		delete(t.byOwner, e.owner)
		return
	}
	t.byOwner[e.owner] = own
}

// owned returns the live entries of owner, oldest first, once its expired
// ones are dropped. The slice is the table's: read it before the next
// change.
func (t *table[V]) owned(owner string, now time.Time) []digest {
	for _, d := range slices.Clone(t.byOwner[owner]) {
		if !now.Before(t.entries[d].expires) {
			t.remove(d)
		}
	}
	return t.byOwner[owner]
}

// full reports whether the table holds max live entries. The expired ones
// are swept only when it seems full: that sweep is the only one that
// visits every entry.
func (t *table[V]) full(now time.Time) bool {
	if len(t.entries) < t.max {
		return false
	}
	for d, e := range t.entries {
		if !now.Before(e.expires) {
			t.remove(d)
		}
	}
	return len(t.entries) >= t.max
}
