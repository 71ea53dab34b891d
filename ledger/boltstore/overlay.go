package boltstore

import (
	"bytes"
	"sync"

	"github.com/tidwall/btree"
)

// An overlay holds, in memory, the writes that are not in the bbolt file
// yet: those of the groups the checkpointer has not applied. The committer
// reads through its own (merged.go), so it can run the next group while the
// previous one is being made durable; readers read through a copy taken
// when a group became durable (a snapshot). Only the committer changes
// its overlay, so it needs no lock.
//
// Every entry is stamped with the group that wrote it. Once the file holds
// group D, the entries stamped D or earlier hold what the file holds and
// are dropped (trim); a newer write of the same key keeps its entry.
//
// Puts and deletions are kept in two trees: walks visit only the live one,
// and the dead one hides the file's keys. With deletions among the puts, a
// walk would step over every key deleted since the last checkpoint: the
// active liens of an account, placed and charged by the thousand, made
// each lien's walk of that index long.
type overlay struct {
	buckets [numBuckets]*overlayTrees
	// seqs are the buckets' sequences (bbolt's NextSequence) moved on by
	// groups not yet in the file.
	seqs [numBuckets]overlaySeq
	// pending lists, oldest first, what each group not yet trimmed wrote,
	// so that trim visits only those keys.
	pending []groupWrites
	// spare are the write lists of trimmed groups, emptied, for the next
	// groups (spareWrites): allocating one per group was a fifteenth of
	// the bank's allocation. Once trimmed, a group's list is no one's: the
	// recorder, syncer and checkpointer are done with it.
	spare [][]write
}

// maxSpareWrites bounds the write lists kept for reuse.
const maxSpareWrites = 64

// spareWrites is an empty write list with room for n writes: a trimmed
// group's, or a new one with room to spare (groups vary in size).
func (o *overlay) spareWrites(n int) []write {
	for i := len(o.spare) - 1; i >= 0; i-- {
		if w := o.spare[i]; cap(w) >= n {
			last := len(o.spare) - 1
			o.spare[i], o.spare[last] = o.spare[last], nil
			o.spare = o.spare[:last]
			return w
		}
	}
	return make([]write, 0, n+n/2)
}

// overlayTrees are a bucket's puts (live) and deletions (dead); a key is
// in one of them at most.
type overlayTrees struct {
	live, dead *btree.BTreeG[overlayEntry]
	// The paths of the trees' last changes and trims: most buckets' new
	// keys follow the last (journal entries, liens, charges, a client's
	// requests), so the next search starts near its place.
	liveHint, deadHint, trimHint btree.PathHint
}

type overlayEntry struct {
	key, value []byte
	later      *deferred // the value, when it is made later
	group      uint64
	at         int // the write's place in its group's writes
}

// bytes is the entry's value, made now if it was deferred.
func (e overlayEntry) bytes() ([]byte, error) {
	if e.later != nil {
		return e.later.bytes()
	}
	return e.value, nil
}

// overlaySeq is a bucket's sequence as a group not yet in the file left
// it (set false: no such group).
type overlaySeq struct {
	value, group uint64
	set          bool
	at           int // the write's place in its group's writes
}

// A write is one change of a group, as the log and the checkpointer apply
// it to the file: a put, a delete, or (seq true) a bucket's new sequence.
// A put's value is value, or later's once made.
type write struct {
	bucket     bucketID
	key, value []byte
	later      *deferred
	deleted    bool
	seq        bool
	sequence   uint64
	// superseded says that a later write of the same group replaces this
	// one (session.record): the log record and the checkpoint leave it
	// out, and its deferred value is never made.
	superseded bool
}

// bytes is a put's value, made now if it was deferred.
func (w write) bytes() ([]byte, error) {
	if w.later != nil {
		return w.later.bytes()
	}
	return w.value, nil
}

// A deferred value is a put's value made after its call, by whoever needs
// its bytes first: the recorder making the log record, nearly always, or
// the committer reading the key again (a retry of a request on its way to
// the disk). Requests' answers (ledger.RequestRecord.Answer), allocation
// records and running sums are stored so: encoding them was a tenth of
// the committer's time; so are journal entries, sealed with the hash of
// the entry before them (AppendEntry), which the recorder has made first. What they encode is encoded in the call first (in
// its request or journal entry), so that an unencodable value is refused
// in its own call (TestTimesPastYear9999AreRefused in package lien); one
// that still failed here would fail its group like a failed disk write.
type deferred struct {
	once  sync.Once
	make  func() ([]byte, error)
	value []byte
	err   error
}

func (d *deferred) bytes() ([]byte, error) {
	d.once.Do(func() {
		d.value, d.err = d.make()
		d.make = nil // what it holds (an answer) is not needed again
	})
	return d.value, d.err
}

type groupWrites struct {
	group  uint64
	writes []write
}

func newOverlay() *overlay {
	return &overlay{}
}

func lessEntry(a, b overlayEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

func newTree() *btree.BTreeG[overlayEntry] {
	return btree.NewBTreeGOptions(lessEntry, btree.Options{NoLocks: true})
}

func (o *overlay) trees(bucket bucketID) *overlayTrees {
	t := o.buckets[bucket]
	if t == nil {
		t = &overlayTrees{live: newTree(), dead: newTree()}
		o.buckets[bucket] = t
	}
	return t
}

// get tells what the overlay knows of key: found, with its entry, or
// deleted, or nothing (the file decides).
func (o *overlay) get(bucket bucketID, key []byte) (e overlayEntry, found, deleted bool) {
	t := o.buckets[bucket]
	if t == nil {
		return e, false, false
	}
	if e, ok := t.live.Get(overlayEntry{key: key}); ok {
		return e, true, false
	}
	return e, false, o.deleted(bucket, key)
}

// deleted tells whether the overlay deleted key.
func (o *overlay) deleted(bucket bucketID, key []byte) bool {
	t := o.buckets[bucket]
	if t == nil || t.dead.Len() == 0 {
		return false
	}
	_, deleted := t.dead.Get(overlayEntry{key: key})
	return deleted
}

// ceil is the overlay's first put at or after key.
func (o *overlay) ceil(bucket bucketID, key []byte) (e overlayEntry, ok bool) {
	if t := o.buckets[bucket]; t != nil {
		t.live.Ascend(overlayEntry{key: key}, func(item overlayEntry) bool {
			e, ok = item, true
			return false
		})
	}
	return e, ok
}

// below is the overlay's last put before key (the last of all when key
// is nil).
func (o *overlay) below(bucket bucketID, key []byte) (e overlayEntry, ok bool) {
	t := o.buckets[bucket]
	if t == nil {
		return e, false
	}
	if key == nil {
		return t.live.Max()
	}
	t.live.Descend(overlayEntry{key: key}, func(item overlayEntry) bool {
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
func (o *overlay) set(w write, group uint64, at int) undo {
	if w.seq {
		old := o.seqs[w.bucket]
		o.seqs[w.bucket] = overlaySeq{value: w.sequence, group: group, set: true, at: at}
		return undo{bucket: w.bucket, seq: true, oldSeq: old}
	}
	t := o.trees(w.bucket)
	e := overlayEntry{key: w.key, value: w.value, later: w.later, group: group, at: at}
	u := undo{bucket: w.bucket, key: w.key}
	switch {
	case w.deleted && residentBuckets[w.bucket]:
		u.live, u.hadLive = t.live.DeleteHint(e, &t.liveHint) // no file to hide
	case w.deleted:
		u.live, u.hadLive = t.live.DeleteHint(e, &t.liveHint)
		u.dead, u.hadDead = t.dead.SetHint(e, &t.deadHint)
	default:
		// Most buckets never delete (and resident ones keep no
		// deletions): no search of an empty tree.
		if t.dead.Len() > 0 {
			u.dead, u.hadDead = t.dead.DeleteHint(e, &t.deadHint)
		}
		u.live, u.hadLive = t.live.SetHint(e, &t.liveHint)
	}
	return u
}

// residentBuckets are held whole in the overlay, loaded when the store
// opens, never trimmed: the small ones nearly every change reads (settings
// and the journal head, nodes, users, machines) and the indexes and
// running sums of active liens, which change with every lien and charge.
// Their size follows the bank's structure and its running jobs, not its
// history. (Records are not resident: guaranteed quotes and reservations
// are records too and accumulate; the rate tables and policies among them
// are read from the committer's cache.) Reading them never touches the file;
// and for the active-lien index, walks would otherwise step over every
// lien the file holds as active that was charged since the last
// checkpoint. The growing buckets (journal, history, requests, liens,
// charges) stay in the file, with only recent writes in the overlay.
var residentBuckets = [numBuckets]bool{
	bucketMeta: true, bucketNodes: true, bucketUsers: true,
	bucketMachines: true, bucketByAccount: true,
	bucketLiensActive: true, bucketLiensExpiry: true, bucketReserved: true,
	bucketCharged: true, bucketReservedSum: true, bucketVersions: true,
}

// load puts a resident bucket's records in the overlay.
func (o *overlay) load(bucket bucketID, fn func(func(k, v []byte) error) error) error {
	t := o.trees(bucket)
	return fn(func(k, v []byte) error {
		t.live.Set(overlayEntry{key: bytes.Clone(k), value: bytes.Clone(v)})
		return nil
	})
}

// An undo puts back what one write replaced.
type undo struct {
	bucket           bucketID
	key              []byte
	live, dead       overlayEntry
	hadLive, hadDead bool
	seq              bool
	oldSeq           overlaySeq
	superseding      int // the place in the group's writes of the write this one superseded; -1 for none
}

// replaced is the place in group's writes of the write that the one u
// undoes replaced, if the same group made it; -1 if not.
func (u undo) replaced(group uint64) int {
	switch {
	case u.seq && u.oldSeq.set && u.oldSeq.group == group:
		return u.oldSeq.at
	case !u.seq && u.hadLive && u.live.group == group:
		return u.live.at
	case !u.seq && u.hadDead && u.dead.group == group:
		return u.dead.at
	}
	return -1
}

func (o *overlay) revert(u undo) {
	if u.seq {
		o.seqs[u.bucket] = u.oldSeq
		return
	}
	t := o.trees(u.bucket)
	restore(t.live, u.key, u.live, u.hadLive)
	restore(t.dead, u.key, u.dead, u.hadDead)
}

func restore(tr *btree.BTreeG[overlayEntry], key []byte, e overlayEntry, had bool) {
	if had {
		tr.Set(e)
	} else {
		tr.Delete(overlayEntry{key: key})
	}
}

// committed remembers what a group wrote, for trim.
func (o *overlay) committed(g groupWrites) {
	if len(g.writes) > 0 {
		o.pending = append(o.pending, g)
	}
}

// canTrim tells whether the file holds groups the overlay has not dropped.
func (o *overlay) canTrim(applied uint64) bool {
	return len(o.pending) > 0 && o.pending[0].group <= applied
}

// backlog is how many groups' writes the overlay holds (resident buckets
// aside).
func (o *overlay) backlog() int { return len(o.pending) }

// trim drops what the file holds now that groups up to applied are in it
// and returns applied. A tree that loses many of its entries is rebuilt
// from those it keeps (appended in order, bulk-loading the new tree: about
// a tenth of what deleting a key costs) and one that loses few has them
// deleted key by key: deleting each trimmed write's key took a tenth of
// the committer's time, and rebuilding costs in proportion to the tree,
// which holds about two checkpoints' writes in steady state, so a trim
// stops the committer for a fraction of a millisecond.
func (o *overlay) trim(applied uint64) uint64 {
	n := 0
	var trimmed [numBuckets][2]int // each bucket's trimmed writes, live and dead
	for n < len(o.pending) && o.pending[n].group <= applied {
		for _, w := range o.pending[n].writes {
			if !w.seq && !residentBuckets[w.bucket] {
				trimmed[w.bucket][deadIndex(w.deleted)]++
			}
		}
		n++
	}
	var rebuilt [numBuckets][2]bool
	for b, counts := range trimmed {
		t := o.buckets[b]
		if counts[0] > 0 && counts[0]*rebuildFraction >= t.live.Len() {
			t.live, t.liveHint = withoutTrimmed(t.live, applied), btree.PathHint{}
			rebuilt[b][0] = true
		}
		if counts[1] > 0 && counts[1]*rebuildFraction >= t.dead.Len() {
			t.dead, t.deadHint = withoutTrimmed(t.dead, applied), btree.PathHint{}
			rebuilt[b][1] = true
		}
	}
	for _, g := range o.pending[:n] {
		for _, w := range g.writes {
			if w.seq || !rebuilt[w.bucket][deadIndex(w.deleted)] {
				o.trimWrite(w, applied)
			}
		}
		if len(o.spare) < maxSpareWrites {
			clear(g.writes) // what the writes held is garbage now
			o.spare = append(o.spare, g.writes[:0])
		}
	}
	o.pending = o.pending[n:]
	return applied
}

// rebuildFraction: a tree is rebuilt when at least this fraction of its
// entries (one in rebuildFraction) are trimmed; below it, deleting them
// one by one costs less.
const rebuildFraction = 8

func deadIndex(deleted bool) int {
	if deleted {
		return 1
	}
	return 0
}

// withoutTrimmed is a new tree of tr's entries written after applied.
func withoutTrimmed(tr *btree.BTreeG[overlayEntry], applied uint64) *btree.BTreeG[overlayEntry] {
	kept := newTree()
	tr.Scan(func(e overlayEntry) bool {
		if e.group > applied {
			kept.Load(e)
		}
		return true
	})
	return kept
}

func (o *overlay) trimWrite(w write, applied uint64) {
	if w.seq {
		if s := o.seqs[w.bucket]; s.set && s.group <= applied {
			o.seqs[w.bucket] = overlaySeq{}
		}
		return
	}
	if residentBuckets[w.bucket] {
		return
	}
	// A put's key is in the live tree unless a later write deleted it, and
	// then that write trims the dead one: each write looks in its own tree.
	t := o.buckets[w.bucket]
	tr := t.live
	if w.deleted {
		tr = t.dead
	}
	// Deleted at once, and put back in the rare case that a later group
	// wrote the key again: one search per write rather than two.
	if e, ok := tr.DeleteHint(overlayEntry{key: w.key}, &t.trimHint); ok && e.group > applied {
		tr.SetHint(e, &t.trimHint)
	}
}

// A snapshot is a state readers can see: the file, once it holds at
// least the groups up to trimmed, read through ov, a copy of the overlay
// after group.
type snapshot struct {
	group, trimmed uint64
	ov             *overlay
}

// copy is a copy of the overlay that later writes to o do not change:
// the trees are copied on write, so it costs little until o changes.
func (o *overlay) copy() *overlay {
	c := &overlay{seqs: o.seqs}
	for b, t := range o.buckets {
		if t != nil {
			c.buckets[b] = &overlayTrees{live: t.live.Copy(), dead: t.dead.Copy()}
		}
	}
	return c
}

// forgetAfter drops from pending the groups after last, which were
// undone (Store.rollBack).
func (o *overlay) forgetAfter(last uint64) {
	kept := o.pending[:0]
	for _, g := range o.pending {
		if g.group <= last {
			kept = append(kept, g)
		}
	}
	o.pending = kept
}
