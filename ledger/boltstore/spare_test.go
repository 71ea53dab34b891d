package boltstore

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestSegmentsFromSpares writes through many small segments: each one the
// file holds becomes the spare, and the syncer makes the next segment from
// it, old records after its new ones (a new file holds zeros there); no
// change is lost across them, and Close leaves no log file and no spare.
func TestSegmentsFromSpares(t *testing.T) {
	defer SmallSegments(32 << 10)()
	dir := t.TempDir()
	path := filepath.Join(dir, "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := initBank(t, store)
	reused := map[uint64]bool{}
	const deposits = 400
	for i := range deposits {
		if _, err := l.Deposit(ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatalf("deposit %d: %v", i, err)
		}
		nums, err := segments(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nums {
			if !reused[n] && holdsOldRecords(t, segmentPath(path, n)) {
				reused[n] = true
			}
		}
	}
	if len(reused) < 2 {
		t.Errorf("segments made from an earlier one: %v; want at least two in %d deposits", reused, deposits)
	}
	checkDeposits(t, store, deposits)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(path + "-wal*"); len(left) > 0 {
		t.Errorf("Close left %v", left)
	}
	store, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	checkDeposits(t, store, deposits)
}

// holdsOldRecords reports whether the segment file has anything but zeros
// after the records a reader takes from it.
func holdsOldRecords(t *testing.T, file string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false // not made yet, or removed
	}
	// Read a copy: the syncer may start the file again, or keep it.
	copied := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(copied, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, groups, err := readSegment(copied)
	if err != nil {
		t.Fatal(err)
	}
	end := segmentHeader
	for _, g := range groups {
		end += len(logRecord(t, nil, g.group, g.writes))
	}
	return end < len(data) && len(bytes.Trim(data[end:], "\x00")) > 0
}

// TestOpenRemovesALeftSpare: a spare a crash left (half made, say) is no
// segment; Open removes it and recovers the log as it is.
func TestOpenRemovesALeftSpare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	initBank(t, store)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sparePath(path), []byte("IWALSEG1 half made"), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sparePath(path)); !os.IsNotExist(err) {
		t.Errorf("the spare a crash left is still there after Open: %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecycledSegmentHidesItsOldRecords writes groups into a segment,
// keeps it as the spare, starts the next segment from it and writes fewer,
// smaller groups: reading the new segment, after every write and after
// none, gives exactly the new groups, never one of the old ones left
// after them.
func TestRecycledSegmentHidesItsOldRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	path := filepath.Join(t.TempDir(), "bank.db")
	bank := [bankIDSize]byte{9}
	spare, err := newSpareSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := openLog(path, 1, bank, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.spare = spare
	defer w.close() // and removes the spare
	for g := uint64(1); g <= 40; g++ {
		if err := w.append(logRecord(t, nil, g, randomWrites(rng))); err != nil {
			t.Fatal(err)
		}
	}
	first, err := w.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := spare.keep(segmentPath(path, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.rotate(40); err != nil {
		t.Fatal(err)
	}
	if now, err := w.f.Stat(); err != nil || w.n != 2 || !os.SameFile(first, now) {
		t.Fatalf("segment %d (%v): want segment 2 made from segment 1's file", w.n, err)
	}
	var want []loggedGroup
	for g := uint64(41); ; g++ {
		_, got, err := readSegment(segmentPath(path, 2))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("after %d new groups the segment reads as %d groups (the first %v)", len(want), len(got), got[0].group)
		}
		for i := range got {
			if !sameGroup(got[i], want[i]) {
				t.Fatalf("record %d read back as %+v, want %+v", i, got[i], want[i])
			}
		}
		if g > 45 {
			break
		}
		writes := []write{{bucket: bucketMeta, key: []byte("k"), value: []byte{byte(g)}}}
		if err := w.append(logRecord(t, nil, g, writes)); err != nil {
			t.Fatal(err)
		}
		want = append(want, loggedGroup{group: g, writes: writes})
	}
}
