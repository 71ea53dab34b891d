package boltstore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestLastOfHotKeysLeavesWhatAllWritesLeave: applying the writes a
// checkpoint keeps leaves every key and sequence as applying all the
// groups' writes in order does, on random puts, deletions and sequences
// over few keys of resident, id-keyed (liens, allocations) and other
// buckets (so that keys are written many times over), with the same
// checkpointer state reused from one checkpoint to the next.
func TestLastOfHotKeysLeavesWhatAllWritesLeave(t *testing.T) {
	s := &Store{}
	buckets := []bucketID{bucketMeta, bucketLiensActive, bucketReserved, bucketLiens, bucketAllocations, bucketJournal}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var groups []*group
		var all []write
		for g := range 1 + rng.IntN(20) {
			gw := groupWrites{group: uint64(g + 1)}
			for range rng.IntN(30) {
				gw.writes = append(gw.writes, randomWrite(rng, buckets, 4))
			}
			groups = append(groups, &group{writes: gw})
			all = append(all, gw.writes...)
		}
		kept := s.lastOfHotKeys(groups)
		if got, want := applyToModel(kept), applyToModel(all); !maps.Equal(got, want) {
			t.Fatalf("seed %d: the checkpoint's writes leave %v, all writes leave %v", seed, got, want)
		}
		sorted := byBucket(nil, kept)
		if got, want := applyToModel(sorted), applyToModel(all); !maps.Equal(got, want) {
			t.Fatalf("seed %d: the checkpoint's writes bucket by bucket leave %v, all writes leave %v", seed, got, want)
		}
		if len(sorted) != len(kept) || !slices.IsSortedFunc(sorted, func(a, b write) int { return int(a.bucket) - int(b.bucket) }) {
			t.Fatalf("seed %d: %d writes not ordered bucket by bucket, from %d", seed, len(sorted), len(kept))
		}
		repeated := map[string]bool{}
		for _, w := range kept {
			if !w.seq && !residentBuckets[w.bucket] && !rewrittenByID[w.bucket] {
				continue
			}
			id := fmt.Sprintf("%s/%s/%v", w.bucket, w.key, w.seq)
			if repeated[id] {
				t.Fatalf("seed %d: the checkpoint writes %s twice", seed, id)
			}
			repeated[id] = true
		}
	}
}

// randomWrite is a put, a deletion or a bucket's new sequence, in one of
// buckets, of one of keys keys (ids in the buckets keyed by id).
func randomWrite(rng *rand.Rand, buckets []bucketID, keys int) write {
	w := write{bucket: buckets[rng.IntN(len(buckets))], key: []byte(fmt.Sprint("k", rng.IntN(keys)))}
	if rewrittenByID[w.bucket] {
		w.key = encodeUint(uint64(rng.IntN(keys)))
	}
	switch rng.IntN(4) {
	case 0:
		w.deleted = true
	case 1:
		w.seq, w.key, w.sequence = true, nil, rng.Uint64()
	default:
		w.value = []byte(fmt.Sprint(rng.Uint64()))
	}
	return w
}

// applyToModel applies writes to a map of bucket/key to value ("seq" for
// a bucket's sequence); a deletion removes the key.
func applyToModel(writes []write) map[string]string {
	m := map[string]string{}
	for _, w := range writes {
		switch {
		case w.seq:
			m[w.bucket.String()+"/seq"] = fmt.Sprint(w.sequence)
		case w.deleted:
			delete(m, w.bucket.String()+"/"+string(w.key))
		default:
			m[w.bucket.String()+"/"+string(w.key)] = string(w.value)
		}
	}
	return m
}

// TestGroupsTakeHalfTheWaitingCalls: with the committer held by one call
// and 40 more queued behind it, the next group takes 20 of them (half the
// calls waiting, counted by submit), not all 40, nor one at a time.
func TestGroupsTakeHalfTheWaitingCalls(t *testing.T) {
	store := openTempStore(t)
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error)
	go func() {
		first <- store.Update(func(ledger.Tx) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	const queued = 40
	groups := make([]uint64, queued)
	errs := make(chan error, queued)
	for i := range queued {
		go func() {
			errs <- store.Update(func(ltx ledger.Tx) error {
				groups[i] = ltx.(*tx).s.group
				return nil
			})
		}()
	}
	// All counted and all queued: a call counts itself before it queues,
	// and the group is gathered from the queue.
	for deadline := time.Now().Add(10 * time.Second); store.waiting.Load() < queued+1 || len(store.calls) < queued; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d calls counted waiting and %d queued, want %d and %d", store.waiting.Load(), len(store.calls), queued+1, queued)
		}
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range queued {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sizes := map[uint64]int{}
	for _, g := range groups {
		sizes[g]++
	}
	if biggest := slices.Max(slices.Collect(maps.Values(sizes))); biggest != queued/2 {
		t.Errorf("%d calls queued behind a running one went in groups of %v: the biggest of %d, want %d", queued, sizes, biggest, queued/2)
	}
}

// TestGroupLimit: a group takes half the waiting calls, at least one and at
// most maxGroup, so that two groups are on their way at once.
func TestGroupLimit(t *testing.T) {
	for waiting, want := range map[int64]int{0: 1, 1: 1, 2: 1, 3: 1, 64: 32, 65: 32, 2 * maxGroup: maxGroup, 10 * maxGroup: maxGroup} {
		if got := groupLimit(waiting); got != want {
			t.Errorf("groupLimit(%d) = %d, want %d", waiting, got, want)
		}
	}
}

// TestIdleCommitterTrims: with fewer groups than trimBacklog in the
// overlay, groups do not trim as they start; the committer drops what the
// file holds while no call waits, so a store left idle after a checkpoint
// holds nothing in its overlay but the resident buckets.
func TestIdleCommitterTrims(t *testing.T) {
	store := openTempStore(t)
	const changes = 20
	for i := range changes {
		if err := store.Update(func(ltx ledger.Tx) error {
			return ltx.PutRequest(ledger.RequestKey{Client: "c", ID: fmt.Sprint(i)},
				ledger.RequestRecord{ContentHash: fmt.Sprintf("%064x", i), Result: []byte("{}"), Seq: uint64(i)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The backlog is read in the committer, by a call that writes
	// nothing (and so adds no group to it).
	backlog := func() (n int) {
		if err := store.Update(func(ltx ledger.Tx) error {
			n = ltx.(*tx).s.ov.backlog()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := backlog(); n == 0 || n > trimBacklog {
		t.Fatalf("the overlay holds %d groups right after %d changes, want some and at most %d", n, changes, trimBacklog)
	}
	for deadline := time.Now().Add(10 * time.Second); backlog() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the overlay still holds %d groups 10 s after the last change (checkpointed up to group %d)", backlog(), store.checkpointed.Load())
		}
	}
	// What was dropped is read from the file.
	if err := store.View(func(ltx ledger.Tx) error {
		for i := range changes {
			if _, ok, err := ltx.Request(ledger.RequestKey{Client: "c", ID: fmt.Sprint(i)}); !ok || err != nil {
				t.Errorf("request %d is gone after the trim (%v)", i, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestDurableQueue: the syncer's durable groups reach the checkpointer in
// order; once checkpointQueue syncs' groups wait, the queue wakes the
// checkpointer and the next sync waits until they are taken; closing it
// wakes the checkpointer and says so.
func TestDurableQueue(t *testing.T) {
	q := newDurableQueue()
	var sent []*group
	for range checkpointQueue {
		batch := []*group{{calls: make([]*call, 1)}, {}}
		sent = append(sent, batch...)
		q.add(batch)
	}
	select {
	case <-q.wake:
		t.Fatal("the checkpointer was woken before the queue was full")
	default:
	}
	added := make(chan struct{})
	last := &group{}
	go func() {
		q.add([]*group{last})
		close(added)
	}()
	select {
	case <-q.wake:
	case <-time.After(10 * time.Second):
		t.Fatal("a full queue did not wake the checkpointer")
	}
	select {
	case <-added:
		t.Fatal("a sync was queued past the bound without waiting")
	case <-time.After(50 * time.Millisecond):
	}
	got, done := q.take(nil)
	if done || !slices.Equal(got, sent) {
		t.Fatalf("took %d groups (done %v), want the %d sent in order", len(got), done, len(sent))
	}
	<-added // there is room again
	if got, done = q.take(got[:0]); done || len(got) != 1 || got[0] != last {
		t.Fatalf("took %d groups (done %v), want the one sent after the wait", len(got), done)
	}
	q.close()
	select {
	case <-q.wake:
	default:
		t.Fatal("closing did not wake the checkpointer")
	}
	if got, done = q.take(got[:0]); !done || len(got) != 0 {
		t.Fatalf("after close took %d groups, done %v", len(got), done)
	}
}
