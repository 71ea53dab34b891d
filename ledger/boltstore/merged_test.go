package boltstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tidwall/btree"
	bolt "go.etcd.io/bbolt"
)

// TestMergedCursorMatchesModel checks that reading the file through the
// overlay gives what a plain map holding both would: Get, and walks from
// First, Seek, Last and Prev, over random keys put and deleted in the file
// and then in the overlay (deletions of keys the file has, puts over
// them, keys only one side has), for many seeds.
func TestMergedCursorMatchesModel(t *testing.T) {
	db := openPrepared(t)
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		model := map[string]string{}
		key := func() []byte { return []byte(fmt.Sprintf("k%02d", rng.IntN(40))) }
		err := db.Update(func(btx *bolt.Tx) error {
			if err := btx.DeleteBucket(bucketRequests.name()); err != nil {
				return err
			}
			b, err := btx.CreateBucket(bucketRequests.name())
			if err != nil {
				return err
			}
			for range rng.IntN(30) {
				k, v := key(), fmt.Sprint("base", rng.IntN(100))
				model[string(k)] = v
				if err := b.Put(k, []byte(v)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		btx, err := db.Begin(false)
		if err != nil {
			t.Fatal(err)
		}
		ses := newSession(btx, newOverlay(), newDecodedCache(), nil, 1)
		b := ses.bucket(bucketRequests)
		for range rng.IntN(30) {
			k := key()
			if rng.IntN(3) == 0 {
				delete(model, string(k))
				b.Delete(k)
			} else {
				v := fmt.Sprint("over", rng.IntN(100))
				model[string(k)] = v
				b.Put(k, []byte(v))
			}
		}
		func() {
			defer btx.Rollback() // before db.Close, which waits for it, even when the check fails
			checkMerged(t, seed, b, model, rng)
		}()
	}
}

func checkMerged(t *testing.T, seed uint64, b kvBucket, model map[string]string, rng *rand.Rand) {
	t.Helper()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range model {
			if !yield(k) {
				return
			}
		}
	})
	for i := range 40 {
		k := fmt.Sprintf("k%02d", i)
		got, want := b.Get([]byte(k)), model[k]
		if _, ok := model[k]; (got != nil) != ok || string(got) != want {
			t.Fatalf("seed %d: Get(%s) = %q, want %q", seed, k, got, want)
		}
	}
	var walked []string
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if model[string(k)] != string(v) {
			t.Fatalf("seed %d: %s holds %q, want %q", seed, k, v, model[string(k)])
		}
		walked = append(walked, string(k))
	}
	if !slices.Equal(walked, keys) {
		t.Fatalf("seed %d: forward walk %v, want %v", seed, walked, keys)
	}
	walked = nil
	for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
		walked = append(walked, string(k))
	}
	slices.Reverse(walked)
	if !slices.Equal(walked, keys) {
		t.Fatalf("seed %d: backward walk %v, want %v", seed, walked, keys)
	}
	for range 20 {
		from := fmt.Sprintf("k%02d", rng.IntN(42))
		i, _ := slices.BinarySearch(keys, from)
		k, _ := c.Seek([]byte(from))
		if want := at(keys, i); !bytes.Equal(k, want) {
			t.Fatalf("seed %d: Seek(%s) = %s, want %s", seed, from, k, want)
		}
		if k != nil {
			next, _ := c.Next()
			if want := at(keys, i+1); !bytes.Equal(next, want) {
				t.Fatalf("seed %d: Next after Seek(%s) = %s, want %s", seed, from, next, want)
			}
			if next == nil {
				continue // past the end: the callers Seek or take Last again, as with bbolt
			}
			prev, _ := c.Prev()
			if want := at(keys, i); !bytes.Equal(prev, want) {
				t.Fatalf("seed %d: Prev after Seek(%s), Next = %s, want %s", seed, from, prev, want)
			}
			again, _ := c.Next()
			if want := at(keys, i+1); !bytes.Equal(again, want) {
				t.Fatalf("seed %d: Next after Prev = %s, want %s", seed, again, want)
			}
		}
	}
}

func at(keys []string, i int) []byte {
	if i < 0 || i >= len(keys) {
		return nil
	}
	return []byte(keys[i])
}

// TestTrimDropsWhatTheFileHolds runs random groups of puts and deletions
// over few keys, applies the first groups to the file as a checkpoint
// would, and trims the overlay up to them, in one or two steps: reads through the overlay must
// still give every write's result, and no entry the file now holds may be
// left in the overlay.
func TestTrimDropsWhatTheFileHolds(t *testing.T) {
	db := openPrepared(t)
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		if err := db.Update(func(btx *bolt.Tx) error {
			if err := btx.DeleteBucket(bucketRequests.name()); err != nil {
				return err
			}
			_, err := btx.CreateBucket(bucketRequests.name())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		ov, model := newOverlay(), map[string]string{}
		var groups []groupWrites
		for g := uint64(1); g <= 1+uint64(rng.IntN(30)); g++ {
			gw := groupWrites{group: g}
			for range rng.IntN(10) {
				w := write{bucket: bucketRequests, key: []byte(fmt.Sprintf("k%03d", rng.IntN(200)))}
				if rng.IntN(3) == 0 {
					w.deleted = true
					delete(model, string(w.key))
				} else {
					w.value = []byte(fmt.Sprint("v", rng.IntN(100)))
					model[string(w.key)] = string(w.value)
				}
				ov.set(w, g, -1)
				gw.writes = append(gw.writes, w)
			}
			ov.committed(gw)
			groups = append(groups, gw)
		}
		applied := uint64(rng.IntN(len(groups) + 1))
		if err := db.Update(func(btx *bolt.Tx) error {
			for _, g := range groups[:applied] {
				if err := apply(btx, g.writes); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// Trimming first to an earlier group leaves trees much bigger
		// than what is trimmed, whose keys are then deleted one by one;
		// the second trim mostly rebuilds them.
		ov.trim(uint64(rng.IntN(int(applied) + 1)))
		ov.trim(applied)
		trees := ov.buckets[bucketRequests]
		for _, tr := range []*btree.BTreeG[overlayEntry]{trees.live, trees.dead} {
			tr.Scan(func(e overlayEntry) bool {
				if e.group <= applied {
					t.Fatalf("seed %d: after trimming to group %d the overlay still holds %s of group %d", seed, applied, e.key, e.group)
				}
				return true
			})
		}
		btx, err := db.Begin(false)
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer btx.Rollback()
			checkMerged(t, seed, newMergedBucket(nil, ov, bucketRequests, btx), model, rng)
		}()
	}
}

// openPrepared opens a bbolt file with the bank's buckets, closed when the
// test ends.
func openPrepared(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "bank.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := prepare(db, false); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestTrimmedWriteListsAreReused: a trimmed group's write list, emptied of
// what it held, is handed once to a later group that fits in it.
func TestTrimmedWriteListsAreReused(t *testing.T) {
	ov := newOverlay()
	commit := func(group uint64) groupWrites {
		gw := groupWrites{group: group, writes: make([]write, 0, 8)}
		w := write{bucket: bucketRequests, key: []byte(fmt.Sprint("k", group)), value: []byte("v")}
		ov.set(w, group, -1)
		gw.writes = append(gw.writes, w)
		ov.committed(gw)
		return gw
	}
	same := func(a, b []write) bool { return &a[:1][0] == &b[:1][0] }
	first := commit(1)
	if got := ov.spareWrites(4); same(got, first.writes) {
		t.Fatal("a group's list was reused before it was trimmed")
	}
	ov.trim(1)
	if first.writes[0].key != nil || first.writes[0].value != nil {
		t.Error("a trimmed list still holds its writes")
	}
	got := ov.spareWrites(4)
	if len(got) != 0 || !same(got, first.writes) {
		t.Errorf("the trimmed list was not reused: %d writes, cap %d", len(got), cap(got))
	}
	if again := ov.spareWrites(4); same(again, first.writes) {
		t.Error("the list was handed out twice")
	}
	second := commit(2)
	ov.trim(2)
	if got := ov.spareWrites(16); same(got, second.writes) || cap(got) < 16 {
		t.Errorf("a list too small was handed out (cap %d)", cap(got))
	}
}
