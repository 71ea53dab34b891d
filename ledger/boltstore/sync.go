package boltstore

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/runtimetune"
)

// checkpointQueue bounds how many durable batches wait for the
// checkpointer; past it the syncer waits, which bounds the overlay.
const checkpointQueue = 1024

// durableQueue holds the groups made durable until the checkpointer takes
// them. The syncer adds each sync's groups under a lock without waking
// the checkpointer, which takes them all when its timer fires: a channel
// woke it at every sync only to add the batch to its list, a thread's
// wake-up on this VM each. It is woken early only when the queue is full
// (the syncer then waits for room) or closed.
type durableQueue struct {
	mu      sync.Mutex
	room    sync.Cond // signalled when the checkpointer takes the groups
	groups  []*group
	batches int  // syncs whose groups are in groups
	closed  bool // the syncer is done
	// wake tells the checkpointer to take the groups now (capacity 1).
	wake chan struct{}
}

func newDurableQueue() *durableQueue {
	q := &durableQueue{wake: make(chan struct{}, 1)}
	q.room.L = &q.mu
	return q
}

// add queues a sync's durable groups, first waiting while checkpointQueue
// batches wait already.
func (q *durableQueue) add(groups []*group) {
	q.mu.Lock()
	for q.batches >= checkpointQueue {
		q.kick()
		q.room.Wait()
	}
	q.groups = append(q.groups, groups...)
	q.batches++
	q.mu.Unlock()
}

// close tells the checkpointer that no more groups come.
func (q *durableQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.kick()
}

func (q *durableQueue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take appends the queued groups to dst and empties the queue, telling
// whether the syncer is done.
func (q *durableQueue) take(dst []*group) ([]*group, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dst = append(dst, q.groups...)
	clear(q.groups)
	q.groups = q.groups[:0]
	q.batches = 0
	q.room.Broadcast()
	return dst, q.closed
}

// checkpointEvery spaces the checkpoints (see checkpointLoop); a variable
// so that tests can hold them off. A checkpoint's bbolt commit holds a
// core while it writes, so shorter ones keep the callers' tail shorter;
// each also costs two syncs and a commit's fixed work. Against 50 ms,
// 20 gave in-process p99 at 64 clients 14-16 ms against 15-22 and no
// more CPU over loopback; 10 gave 11-12 ms but 5-10% more server CPU.
var checkpointEvery = 20 * time.Millisecond

// recorderStageCPUs is the fewest cores on which a recorder goroutine
// makes each group's log record while the syncer writes and syncs the
// groups before it; a variable so that tests can run both ways. With
// fewer, the syncer makes the records of the groups it writes: on this
// project's 2-core machine the recorder's handoffs (a thread woken for
// every group, and again for the syncer) cost more than the overlap
// gained. In process, 64 goroutines, 40,000 lien+charge cycles on the
// disk, fourteen alternating pairs, twice: 19,458 -> 19,980 and 19,992 ->
// 20,470 cycles/s, 72.9 -> 69.7 and 70.3 -> 67.8 µs of CPU a cycle
// (docs/performance.md, session 12). On four cores
// or more the recorder also makes the answers kept for retries
// (runtimetune.Offload), which it was made for (session 9).
var recorderStageCPUs = runtimetune.OffloadCPUs

// recorderStage tells whether the store runs a recorder goroutine.
func recorderStage() bool { return runtime.NumCPU() >= recorderStageCPUs }

// recordLoop makes each group's log record, with the values its calls
// left to be made later (request answers, deferred), while the syncer
// writes and syncs the groups before it: made by the syncer, they held
// every call of its next write for as long as they took.
func (s *Store) recordLoop() {
	defer close(s.toSync)
	for g := range s.toRecord {
		s.record(g)
		s.toSync <- g
	}
}

// record makes g's log record, in a buffer the syncer is done with if
// there is one.
func (s *Store) record(g *group) {
	if len(g.writes.writes) == 0 {
		return
	}
	var buf []byte
	select {
	case buf = <-s.spareRecords:
	default:
	}
	g.record, g.recordErr = appendRecord(buf, g.writes.group, g.writes.writes)
}

// syncLoop writes the groups the committer ran, as many as are waiting,
// to the log with one sync, and only then publishes their state and
// answers their calls.
func (s *Store) syncLoop() {
	defer s.durableGroups.close()
	for first := range s.toSync {
		s.sync(gather(first, s.toSync, math.MaxInt))
	}
}

// sync makes durable the groups that ran on durable state (their epoch is
// current), and fails those that ran on top of a group that could not be
// written.
func (s *Store) sync(groups []*group) {
	epoch := s.failures.Load()
	var current []*group
	s.logBuf = s.logBuf[:0]
	calls := 0
	var err error
	for _, g := range groups {
		if !s.recorder {
			s.record(g)
		}
		for _, c := range g.calls {
			if !c.snapshot {
				calls++ // a reader's request for a snapshot is no change
			}
		}
		if g.epoch == epoch && err == nil {
			current = append(current, g)
			// A deferred value that could not be made fails the write as
			// the disk failing it would: its group and those run after it
			// are undone.
			err = g.recordErr
			s.logBuf = append(s.logBuf, g.record...)
		}
		if g.record != nil {
			select {
			case s.spareRecords <- g.record[:0]:
			default:
			}
			g.record = nil
		}
	}
	if err == nil && len(s.logBuf) > 0 {
		err = s.log.append(s.logBuf)
	}
	durable := err == nil && len(current) > 0
	if err != nil {
		s.lastFailure = err
		s.failures.Add(1)
	} else if durable {
		s.durable.Store(current[len(current)-1].writes.group)
		s.publish(current)
		if s.onCommit != nil && calls > 0 {
			s.onCommit(calls, time.Since(groups[0].start))
		}
	}
	for _, g := range groups {
		for _, c := range g.calls {
			if c.err == nil && (err != nil || g.epoch != epoch) {
				c.err = s.lastFailure
			}
			s.waiting.Add(-1)
			close(c.done)
		}
	}
	// After the answers, which need none of it: starting a new segment
	// (renaming or making a file, and syncing it and the directory) held
	// every caller of the group.
	if durable {
		if len(s.logBuf) > 0 {
			s.logged(current[len(current)-1].writes.group)
		}
		s.durableGroups.add(current)
	}
}

// publish gives readers the newest snapshot the durable groups carry,
// if any does.
func (s *Store) publish(durable []*group) {
	for i := len(durable) - 1; i >= 0; i-- {
		if snap := durable[i].snap; snap != nil {
			s.published.Store(snap)
			return
		}
	}
}

// logged notes that the current segment holds groups up to last, and starts
// a new segment when it is full, or when it was started from fallocate's
// blocks and a spare is there now (spare.go). When no spare is there or
// coming (a full segment the file does not hold yet), it asks for one
// made of zeros once the segment holds a sixteenth of its size: a store
// that never logs that much (most tests' banks) writes none. A segment
// that cannot be started is not an error for the groups already durable:
// the syncer goes on with the current one and tries again after the next
// write.
func (s *Store) logged(last uint64) {
	s.segsMu.Lock()
	defer s.segsMu.Unlock()
	current := &s.segs[len(s.segs)-1]
	current.last = last
	full := s.log.size >= segmentSize
	switch {
	case full || s.log.fresh && s.log.spare.ready():
		current.full = full
		if err := s.log.rotate(last); err == nil {
			s.segs = append(s.segs, segment{n: s.log.n})
		}
	case !s.log.spareAsked && s.log.size >= segmentSize/16 && !s.fullSegmentWaiting():
		s.log.spareAsked = true
		s.log.spare.makeZeros(segmentSize + segmentSize/4)
	}
}

// fullSegmentWaiting tells whether a segment before the current one was
// full: once the file holds it, it becomes the spare.
func (s *Store) fullSegmentWaiting() bool {
	for _, seg := range s.segs[:len(s.segs)-1] {
		if seg.full {
			return true
		}
	}
	return false
}

// checkpointLoop applies durable groups to the bbolt file, at most every
// checkpointEvery, all that waited in one transaction, and removes the log
// segments it no longer needs. Spacing them lets one bbolt commit (its page
// writes and two syncs) serve many groups: checkpointing after each sync
// took as long as the syncs themselves and competed with them for the
// disk. When the log has been drained at Close, it reports the last
// checkpoint's error, if any.
func (s *Store) checkpointLoop() {
	var waiting []*group
	var err error
	timer := time.NewTimer(checkpointEvery)
	for done := false; !done; {
		select {
		case <-timer.C:
		case <-s.durableGroups.wake:
		}
		waiting, done = s.durableGroups.take(waiting)
		if len(waiting) > 0 {
			if err = s.checkpoint(waiting); err == nil {
				clear(waiting)
				waiting = waiting[:0]
			}
		}
		timer.Reset(checkpointEvery)
	}
	if err == nil {
		err = s.removeAllSegments()
	}
	s.finished <- errors.Join(err, s.log.close())
}

// checkpoint applies groups to the file. On failure (a full disk) the
// groups stay in the log and the overlay, and the next checkpoint tries
// them again.
func (s *Store) checkpoint(groups []*group) error {
	last := groups[len(groups)-1].writes.group
	kept := s.lastOfHotKeys(groups)
	writes := byBucket(s.checkpointSorted, kept)
	s.checkpointSorted = writes
	err := s.db.Update(func(btx *bolt.Tx) error {
		if err := apply(btx, writes); err != nil {
			return err
		}
		s.filters.added(btx, writes)
		return setApplied(btx, last)
	})
	clear(kept) // the buffers are kept for the next checkpoint, not what they held
	clear(writes)
	if err != nil {
		err = fmt.Errorf("boltstore: checkpoint: %w", err)
		s.checkpointErr.Store(err)
		return err
	}
	s.checkpointed.Store(last)
	return s.dropCheckpointed(last)
}

// byBucket is writes ordered bucket by bucket (in dst's array), each
// bucket's in their order, so that the last write of a key still comes
// last. Applied so, a checkpoint's puts walk one bucket's B+tree after
// another rather than all of them in turn: the checkpointer took a tenth
// less CPU (tmpfs profiles of 2 x 80,000 cycles, three alternating runs).
func byBucket(dst, writes []write) []write {
	var next [numBuckets + 1]int
	for _, w := range writes {
		next[w.bucket+1]++
	}
	for b := 1; b < len(next); b++ {
		next[b] += next[b-1]
	}
	dst = slices.Grow(dst[:0], len(writes))[:len(writes)]
	for _, w := range writes {
		dst[next[w.bucket]] = w
		next[w.bucket]++
	}
	return dst
}

// rewrittenByID are the buckets keyed by an id whose records are written
// again and again (lastOfHotKeys): a set of ids finds the repeats for a
// fraction of what a set of strings did (session 8 found that one cost
// what the puts it saved did).
var rewrittenByID = [numBuckets]bool{bucketLiens: true, bucketAllocations: true}

// lastOfHotKeys is the groups' writes, in their order, less those that a
// later write of the same key overrides among the keys written over and
// over: the resident buckets' (the journal head, an account's running sums
// and version, the active-lien indexes, whose keys come and go), the
// buckets' sequences, and the liens and allocations, whose keys are ids
// (a lien is written when placed and again when charged, an allocation at
// every change of its balance). Applied, they leave what all the writes
// would: about half of a checkpoint's writes were such repeats. The other
// buckets' keys are new nearly every time (journal entries, requests,
// charges), and finding their repeats would cost more than writing them
// twice.
func (s *Store) lastOfHotKeys(groups []*group) []write {
	n := 0
	for _, g := range groups {
		n += len(g.writes.writes)
	}
	out := s.checkpointBuf[:0]
	if cap(out) < n {
		out = make([]write, 0, n)
	}
	seen := &s.checkpointSeen
	for _, keys := range seen {
		clear(keys)
	}
	seenIDs := &s.checkpointSeenIDs
	for _, ids := range seenIDs {
		clear(ids)
	}
	for i := len(groups) - 1; i >= 0; i-- {
		writes := groups[i].writes.writes
		for j := len(writes) - 1; j >= 0; j-- {
			w := writes[j]
			switch {
			case w.superseded:
				continue
			case rewrittenByID[w.bucket] && len(w.key) == 8:
				ids := seenIDs[w.bucket]
				if ids == nil {
					ids = map[uint64]bool{}
					seenIDs[w.bucket] = ids
				}
				id := decodeUint(w.key)
				if ids[id] {
					continue
				}
				ids[id] = true
			case w.seq || residentBuckets[w.bucket]:
				keys := seen[w.bucket]
				if keys == nil {
					keys = map[string]bool{}
					seen[w.bucket] = keys
				}
				if keys[string(w.key)] { // a sequence's key is nil: no key is empty
					continue
				}
				keys[string(w.key)] = true
			}
			out = append(out, w)
		}
	}
	slices.Reverse(out) // the other keys' writes in their order: a lien is placed, then settled
	s.checkpointBuf = out
	return out
}

// dropCheckpointed removes the segments, but the current one, whose groups
// are all in the file; the first that was full becomes the spare if there
// is none. It does so holding segsMu, so that the syncer never finds
// neither a spare nor a full segment waiting while one is on its way to be
// kept (logged would have zeros written for nothing).
func (s *Store) dropCheckpointed(applied uint64) error {
	s.segsMu.Lock()
	var err error
	dropped := false
	for len(s.segs) > 1 && s.segs[0].last <= applied {
		seg := s.segs[0]
		s.segs = s.segs[1:]
		dropped = true
		if seg.full {
			err = errors.Join(err, s.log.spare.keep(segmentPath(s.path, seg.n)))
		} else {
			err = errors.Join(err, removeSegmentFile(segmentPath(s.path, seg.n)))
		}
	}
	s.segsMu.Unlock()
	if err == nil && dropped {
		err = syncDir(s.path)
	}
	return err
}

// removeAllSegments removes the log once the file holds all of it, at Close.
func (s *Store) removeAllSegments() error {
	s.segsMu.Lock()
	defer s.segsMu.Unlock()
	var nums []uint64
	for _, seg := range s.segs {
		nums = append(nums, seg.n)
	}
	return s.removeSegments(nums)
}

// flush waits until the file holds every group durable now, or fails
// after flushWait with the checkpointer's last error (a full disk).
func (s *Store) flush() error {
	want := s.durable.Load()
	if s.readOnly && s.checkpointed.Load() < want {
		return fmt.Errorf("boltstore: the write-ahead log holds changes the file does not (the bank was not closed cleanly): open it read-write once to apply them")
	}
	deadline := time.Now().Add(flushWait)
	for s.checkpointed.Load() < want {
		s.mu.RLock()
		closed := s.closed
		s.mu.RUnlock()
		if closed {
			return ErrClosed
		}
		if time.Now().After(deadline) {
			err, _ := s.checkpointErr.Load().(error)
			return fmt.Errorf("boltstore: the file did not catch up with the log in %s: %v", flushWait, err)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

const flushWait = 30 * time.Second
