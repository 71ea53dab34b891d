package boltstore

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestKeyFilterHasNoFalseNegatives: every key added is held; at capacity
// keys never added are mostly not; past it the filter says it is full.
func TestKeyFilterHasNoFalseNegatives(t *testing.T) {
	f := newKeyFilter(0) // the smallest, minFilterKeys
	key := func(prefix string, i int) []byte { return fmt.Appendf(nil, "%s\x00req-%d", prefix, i) }
	for i := range minFilterKeys {
		f.add(key("sched", i))
	}
	if f.full() {
		t.Fatalf("full at its capacity, %d keys", minFilterKeys)
	}
	for i := range minFilterKeys {
		if !f.mayHold(key("sched", i)) {
			t.Fatalf("key %d was added but is not held", i)
		}
	}
	positives := 0
	const others = 100_000
	for i := range others {
		if f.mayHold(key("other", i)) {
			positives++
		}
	}
	rate := float64(positives) / others
	t.Logf("false positives at capacity: %.2f%%", 100*rate)
	if rate > 0.02 {
		t.Errorf("false positives at capacity: %.2f%%, want about 1%%", 100*rate)
	}
	f.add([]byte("one more"))
	if !f.full() {
		t.Error("not full past its capacity")
	}
}

// TestCheckpointedKeysAreFound: requests and journal entries the
// checkpointer moved to the file, and which the overlay then dropped, are
// found by the committer's lookups through the filters; so are they after
// the store is opened again, and a key never written is not.
func TestCheckpointedKeysAreFound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]ledger.RequestKey, 200)
	for i := range keys {
		keys[i] = ledger.RequestKey{Client: "sched", ID: fmt.Sprintf("req-%d", i)}
	}
	rec := ledger.RequestRecord{ContentHash: strings.Repeat("ab", 32), Result: []byte(`{}`), Seq: 1, Time: time.Unix(0, 0).UTC()}
	const entries = 3
	if err := store.Update(func(tx ledger.Tx) error {
		for _, k := range keys {
			if err := tx.PutRequest(k, rec); err != nil {
				return err
			}
		}
		entry, err := ledger.SealedEntry(strings.Repeat("cd", 32), []byte(`{}`))
		if err != nil {
			return err
		}
		for seq := range uint64(entries) {
			if err := tx.AppendEntry(ledger.Entry{Seq: seq + 1, Kind: ledger.KindInit}, entry); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// found runs in the committer, where a test must not stop: it reports
	// through the call's error.
	found := func(s *Store, what string) {
		t.Helper()
		if err := s.Update(func(tx ledger.Tx) error {
			for _, k := range keys {
				if _, ok, err := tx.Request(k); err != nil || !ok {
					return fmt.Errorf("request %s not found (%v)", k.ID, err)
				}
			}
			if _, ok, err := tx.Request(ledger.RequestKey{Client: "sched", ID: "never"}); err != nil || ok {
				return fmt.Errorf("a request never written found: %v %v", ok, err)
			}
			for seq := range uint64(entries) {
				if _, ok, err := tx.Entry(seq + 1); err != nil || !ok {
					return fmt.Errorf("journal entry %d not found (%v)", seq+1, err)
				}
			}
			if _, ok, err := tx.Entry(entries + 1); err != nil || ok {
				return fmt.Errorf("a journal entry never written found: %v %v", ok, err)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := store.flush(); err != nil {
		t.Fatal(err)
	}
	// The idle committer trims what the checkpoint wrote from the
	// overlay: the next lookups go to the file. The overlay is read in
	// the committer.
	inOverlay := func() (held bool) {
		if err := store.Update(func(ltx ledger.Tx) error {
			_, held, _ = ltx.(*tx).s.ov.get(bucketRequests, requestKey(keys[0]))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return held
	}
	for deadline := time.Now().Add(10 * time.Second); inOverlay(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the overlay still holds the checkpointed request: the test would not reach the file")
		}
	}
	found(store, "after a checkpoint")
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if store, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	found(store, "opened again")
}

// TestFullFilterIsMadeAgain: a filter past its capacity is made again at
// the next checkpoint, bigger, from the file, and holds every key the file
// holds, those of that checkpoint too.
func TestFullFilterIsMadeAgain(t *testing.T) {
	store := openTempStore(t)
	old := store.filters.byBucket[bucketRequests].Load()
	old.capacity = 1 // nothing checkpointed yet: no one else reads it
	rec := ledger.RequestRecord{ContentHash: strings.Repeat("ab", 32), Result: []byte(`{}`), Seq: 1, Time: time.Unix(0, 0).UTC()}
	keys := []ledger.RequestKey{{Client: "sched", ID: "a"}, {Client: "sched", ID: "b"}, {Client: "sched", ID: "c"}}
	if err := store.Update(func(tx ledger.Tx) error {
		for _, k := range keys {
			if err := tx.PutRequest(k, rec); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.flush(); err != nil {
		t.Fatal(err)
	}
	remade := store.filters.byBucket[bucketRequests].Load()
	if remade == old || remade.full() || remade.capacity < minFilterKeys {
		t.Fatalf("after the checkpoint the filter is %p (was %p), capacity %d, full %v: not made again", remade, old, remade.capacity, remade.full())
	}
	for _, k := range keys {
		if !remade.mayHold(requestKey(k)) {
			t.Errorf("the filter made again lacks request %s, which the file holds", k.ID)
		}
	}
}
