package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestCacheKeepsOnlyActiveLiens writes liens as the lien layer does (placed
// active, then settled) and checks that the committer's cache holds the
// active ones only, so that it does not grow with every job the bank saw.
func TestCacheKeepsOnlyActiveLiens(t *testing.T) {
	store := openTempStore(t)
	put := func(l ledger.Lien, old *ledger.Lien) {
		t.Helper()
		if err := store.Update(func(tx ledger.Tx) error { return tx.PutLien(l, encodedLien(t, l), old) }); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	for id := uint64(1); id <= 100; id++ {
		l := ledger.Lien{ID: id, JobRef: ledger.JobRef{JobID: "j", Machine: "m", Project: "p", Account: "a"},
			Amount: decimal.NewFromInt(1), Holds: []ledger.Hold{{Allocation: 1, Amount: decimal.NewFromInt(1)}},
			Created: now, Expires: now.Add(time.Hour), State: ledger.LienActive}
		put(l, nil)
		if id%2 == 0 {
			settled := l
			settled.State = ledger.LienSettled
			put(settled, &l)
		}
	}
	cached := 0
	for key, slot := range store.cache.byBucket[bucketLiens] {
		l, ok := slot.v.(*ledger.Lien)
		if !ok {
			continue
		}
		cached++
		if l.State != ledger.LienActive {
			t.Errorf("the cache holds settled lien %d (%q)", l.ID, key)
		}
	}
	if cached != 50 {
		t.Errorf("the cache holds %d liens, want the 50 active ones", cached)
	}
}

// encodedLien is l's encoding, as Writer.Append passes it to PutLien.
func encodedLien(t testing.TB, l ledger.Lien) []byte {
	t.Helper()
	raw, err := l.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestCachedRecordsAreHandedOutAsCopies: a call that changes the slices of
// records it read (a lien's holds, a user's memberships) or appends to a
// lien's detail changes neither the cache nor what the next call reads.
func TestCachedRecordsAreHandedOutAsCopies(t *testing.T) {
	store := openTempStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	lien := ledger.Lien{ID: 1, JobRef: ledger.JobRef{JobID: "j", Machine: "m", Project: "p", Account: "a"},
		Amount: decimal.NewFromInt(1), Holds: []ledger.Hold{{Allocation: 1, Amount: decimal.NewFromInt(1)}},
		Charged: decimal.Zero, Created: now, Expires: now.Add(time.Hour), State: ledger.LienActive,
		Detail: append(make([]byte, 0, 64), `{"quoted":"1"}`...)} // room to append in place
	user := ledger.User{Name: "amy", Memberships: []ledger.Membership{{Node: "chem", Role: ledger.RoleMember}}}
	if err := store.Update(func(tx ledger.Tx) error {
		if err := tx.PutLien(lien, encodedLien(t, lien), nil); err != nil {
			return err
		}
		return tx.PutUser(user)
	}); err != nil {
		t.Fatal(err)
	}
	// The writer's own values, changed after it wrote them.
	lien.Holds[0].Amount = decimal.NewFromInt(7)
	user.Memberships[0].Node = "biology"
	for round := range 3 { // kept as written, then as read (a cache hit), then again
		if err := store.Update(func(tx ledger.Tx) error {
			l, ok, err := tx.Lien(1)
			if err != nil || !ok {
				return fmt.Errorf("lien 1: %v %v", ok, err)
			}
			u, ok, err := tx.User("amy")
			if err != nil || !ok {
				return fmt.Errorf("user amy: %v %v", ok, err)
			}
			if !l.Holds[0].Amount.Equal(decimal.NewFromInt(1)) || string(l.Detail) != string(lien.Detail) || u.Memberships[0].Node != "chem" {
				t.Errorf("round %d: read lien holds %v, detail %s, user memberships %v: a change of an earlier read reached the cache",
					round, l.Holds, l.Detail, u.Memberships)
			}
			again, _, err := tx.Lien(1)
			if err != nil {
				return err
			}
			l.Holds[0].Amount = decimal.NewFromInt(99)
			l.Detail = append(l.Detail, " changed"...)
			again.Detail = append(again.Detail, " as well"...)
			if string(l.Detail) != string(lien.Detail)+" changed" {
				t.Errorf("round %d: two copies of a lien appended to one detail: %s", round, l.Detail)
			}
			u.Memberships[0].Node = "physics"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCacheIsBounded keeps more records than the cache may hold.
func TestCacheIsBounded(t *testing.T) {
	c := newDecodedCache()
	for i := range maxCached + 10 {
		keep(c, bucketNodes, encodeUint(uint64(i)), ledger.Node{Name: "n"})
	}
	if n := c.n; n == 0 || n > maxCached || n != len(c.byBucket[bucketNodes]) {
		t.Fatalf("the cache holds %d records, bound %d", n, maxCached)
	}
	if _, ok := c.lookup(bucketNodes, encodeUint(maxCached+9)); !ok {
		t.Error("the newest record is not cached")
	}
}

// TestCacheForgetsMissingKeysWhenWritten looks a record up while it is
// missing (the cache then remembers it missing), and checks that a write
// makes it present, within the same call and in the next ones, and that a
// call that wrote it and failed leaves it missing again.
func TestCacheForgetsMissingKeysWhenWritten(t *testing.T) {
	store := openTempStore(t)
	rec := ledger.Record{Kind: "config", Key: "rates", Value: []byte(`{"x":1}`)}
	present := func(tx ledger.Tx) bool {
		t.Helper()
		_, ok, err := tx.Record(rec.Kind, rec.Key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	update := func(fn func(ledger.Tx) error) error { return store.Update(fn) }
	failed := errors.New("the call fails")
	// Missing, then written and failed: still missing.
	if err := update(func(tx ledger.Tx) error {
		if present(tx) {
			t.Error("the record is present before it was written")
		}
		if err := tx.PutRecord(rec); err != nil {
			return err
		}
		if !present(tx) {
			t.Error("the record is missing right after its write")
		}
		return failed
	}); !errors.Is(err, failed) {
		t.Fatalf("the failing call returned %v", err)
	}
	if err := update(func(tx ledger.Tx) error {
		if present(tx) {
			t.Error("the record of a failed call is present")
		}
		return tx.PutRecord(rec)
	}); err != nil {
		t.Fatal(err)
	}
	if err := update(func(tx ledger.Tx) error {
		if !present(tx) {
			t.Error("the record written by the call before is missing")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestPutWithoutEncodingIsRefused: a lien or charge handed over without
// its encoding is refused with ErrInvalid and nothing of the call stays.
func TestPutWithoutEncodingIsRefused(t *testing.T) {
	store := openTempStore(t)
	l := ledger.Lien{ID: 1, JobRef: ledger.JobRef{JobID: "j", Machine: "m", Project: "p", Account: "a"}, State: ledger.LienActive}
	for what, put := range map[string]func(ledger.Tx) error{
		"lien":   func(tx ledger.Tx) error { return tx.PutLien(l, nil, nil) },
		"charge": func(tx ledger.Tx) error { return tx.PutCharge(ledger.Charge{ID: 1, JobRef: l.JobRef}, nil, nil) },
	} {
		if err := store.Update(put); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s without its encoding: %v, want ErrInvalid", what, err)
		}
	}
	err := store.View(func(tx ledger.Tx) error {
		if _, ok, err := tx.Lien(1); err != nil || ok {
			t.Errorf("a refused lien is stored (%v)", err)
		}
		if _, ok, err := tx.Charge(1); err != nil || ok {
			t.Errorf("a refused charge is stored (%v)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openTempStore opens a new store in the test's temporary directory and
// closes it when the test ends.
func openTempStore(t *testing.T) *Store {
	t.Helper()
	store, err := Open(filepath.Join(t.TempDir(), "bank.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// TestCacheForgetsRolledBackSums: a call that changes an account's running
// sums and fails leaves the sums the calls before it made, read by the next
// call (through the committer's cache) and by a reader; and a write emptying
// a cached key's slot does not make it read as held.
func TestCacheForgetsRolledBackSums(t *testing.T) {
	store := openTempStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	lien := func(id uint64, amount int64) ledger.Lien {
		return ledger.Lien{ID: id, JobRef: ledger.JobRef{JobID: fmt.Sprint(id), Machine: "m", Project: "p", Account: "a"},
			Amount: decimal.NewFromInt(amount), Holds: []ledger.Hold{{Allocation: 1, Amount: decimal.NewFromInt(amount)}},
			Charged: decimal.Zero, Created: now, Expires: now.Add(time.Hour), State: ledger.LienActive}
	}
	first := lien(1, 10)
	if err := store.Update(func(tx ledger.Tx) error { return tx.PutLien(first, encodedLien(t, first), nil) }); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("refused after writing")
	for round := range 2 {
		second := lien(2, 5)
		err := store.Update(func(tx ledger.Tx) error {
			if err := tx.PutLien(second, encodedLien(t, second), nil); err != nil {
				return err
			}
			return fail
		})
		if !errors.Is(err, fail) {
			t.Fatalf("update: %v, want %v", err, fail)
		}
		for _, read := range []func(func(ledger.Tx) error) error{store.Update, store.View} {
			if err := read(func(tx ledger.Tx) error {
				total, err := tx.ReservedTotal("a", now)
				if err != nil {
					return err
				}
				byProject, err := tx.Reserved("a", now)
				if err != nil {
					return err
				}
				if len(total) != 1 || !total[1].Equal(decimal.NewFromInt(10)) || len(byProject) != 1 || !byProject["p"][1].Equal(decimal.NewFromInt(10)) {
					t.Errorf("round %d: reserved %v, by project %v after the rollback, want 10 on allocation 1", round, total, byProject)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
