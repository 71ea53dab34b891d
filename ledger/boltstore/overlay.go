package boltstore

import (
	"bytes"

	"github.com/tidwall/btree"
)

// An overlay holds, in memory, the committer's writes that are not yet in
// the bbolt file: the groups the syncer is still writing (or has not taken
// yet). The committer reads through it (merged.go), so it can run the next
// group while the previous one is written and synced. Only the committer
// touches it, so it needs no lock.
//
// Every entry is stamped with the group that wrote it. Once the syncer has
// committed group D, the entries stamped D or earlier hold what the file
// holds and are dropped (trim); a newer write of the same key keeps its
// entry, since its stamp is newer.
type overlay struct {
	buckets map[string]*btree.BTreeG[overlayEntry]
	// seqs are the buckets' sequences (bbolt's NextSequence) moved on by
	// groups not yet in the file.
	seqs map[string]overlaySeq
	// pending lists, oldest first, what each group not yet trimmed wrote,
	// so that trim visits only those keys.
	pending []groupWrites
}

type overlayEntry struct {
	key, value []byte
	deleted    bool
	group      uint64
}

type overlaySeq struct{ value, group uint64 }

// A write is one change of a group, as the syncer applies it to the file:
// a put, a delete, or (seq true) a bucket's new sequence.
type write struct {
	bucket     []byte
	key, value []byte
	deleted    bool
	seq        bool
	sequence   uint64
}

type groupWrites struct {
	group  uint64
	writes []write
}

func newOverlay() *overlay {
	return &overlay{buckets: map[string]*btree.BTreeG[overlayEntry]{}, seqs: map[string]overlaySeq{}}
}

func lessEntry(a, b overlayEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

func (o *overlay) tree(bucket []byte) *btree.BTreeG[overlayEntry] {
	tr := o.buckets[string(bucket)]
	if tr == nil {
		tr = btree.NewBTreeGOptions(lessEntry, btree.Options{NoLocks: true})
		o.buckets[string(bucket)] = tr
	}
	return tr
}

// get is the overlay's entry for key, if it has one (a deletion included).
func (o *overlay) get(bucket, key []byte) (overlayEntry, bool) {
	tr := o.buckets[string(bucket)]
	if tr == nil {
		return overlayEntry{}, false
	}
	return tr.Get(overlayEntry{key: key})
}

// ceil is the overlay's first entry at or after key.
func (o *overlay) ceil(bucket, key []byte) (e overlayEntry, ok bool) {
	if tr := o.buckets[string(bucket)]; tr != nil {
		tr.Ascend(overlayEntry{key: key}, func(item overlayEntry) bool {
			e, ok = item, true
			return false
		})
	}
	return e, ok
}

// below is the overlay's last entry before key (the last of all when key
// is nil).
func (o *overlay) below(bucket, key []byte) (e overlayEntry, ok bool) {
	tr := o.buckets[string(bucket)]
	if tr == nil {
		return e, false
	}
	if key == nil {
		return tr.Max()
	}
	tr.Descend(overlayEntry{key: key}, func(item overlayEntry) bool {
		if bytes.Equal(item.key, key) {
			return true
		}
		e, ok = item, true
		return false
	})
	return e, ok
}

// set records w, stamped with group, and returns what it replaced so that
// a failed call can be undone.
func (o *overlay) set(w write, group uint64) undo {
	name := string(w.bucket)
	if w.seq {
		old, had := o.seqs[name]
		o.seqs[name] = overlaySeq{value: w.sequence, group: group}
		return undo{bucket: w.bucket, seq: true, hadSeq: had, oldSeq: old}
	}
	old, had := o.tree(w.bucket).Set(overlayEntry{key: w.key, value: w.value, deleted: w.deleted, group: group})
	return undo{bucket: w.bucket, key: w.key, had: had, old: old}
}

// An undo puts back what one write replaced.
type undo struct {
	bucket, key []byte
	had         bool
	old         overlayEntry
	seq, hadSeq bool
	oldSeq      overlaySeq
}

func (o *overlay) revert(u undo) {
	name := string(u.bucket)
	switch {
	case u.seq && u.hadSeq:
		o.seqs[name] = u.oldSeq
	case u.seq:
		delete(o.seqs, name)
	case u.had:
		o.tree(u.bucket).Set(u.old)
	default:
		o.tree(u.bucket).Delete(overlayEntry{key: u.key})
	}
}

// committed remembers what a group wrote, for trim.
func (o *overlay) committed(g groupWrites) {
	if len(g.writes) > 0 {
		o.pending = append(o.pending, g)
	}
}

// trim drops what the file holds now that groups up to durable are in it.
func (o *overlay) trim(durable uint64) {
	n := 0
	for _, g := range o.pending {
		if g.group > durable {
			break
		}
		n++
		for _, w := range g.writes {
			name := string(w.bucket)
			if w.seq {
				if s, ok := o.seqs[name]; ok && s.group <= durable {
					delete(o.seqs, name)
				}
				continue
			}
			if e, ok := o.get(w.bucket, w.key); ok && e.group <= durable {
				o.buckets[name].Delete(e)
			}
		}
	}
	o.pending = o.pending[n:]
}

// reset forgets everything: after a group could not be written, the file
// is the truth again.
func (o *overlay) reset() {
	clear(o.buckets)
	clear(o.seqs)
	o.pending = nil
}
