package boltstore

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
	closeLeavingNoLog(t, store, path)
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

// TestFreshSegmentLeftForASpare: a new bank's first segment is started
// from fallocate's blocks; once it holds a sixteenth of a segment, a spare
// made of zeros is written and the syncer leaves the segment for it before
// it is full. From then on every segment is made from a spare (the zeros,
// then segments that were filled), and the segment left early is removed,
// never kept as a spare, since its blocks are not all written. The test
// lets the checkpointer catch up at each new segment, as it does in a bank
// whose segments take longer to fill than its checkpoints are apart.
func TestFreshSegmentLeftForASpare(t *testing.T) {
	defer SmallSegments(64 << 10)()
	path := filepath.Join(t.TempDir(), "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := initBank(t, store)
	// Segment 1's header (its bank and the group before it) is no other
	// segment's; a spare made of zeros has none.
	first, err := os.ReadFile(segmentPath(path, 1))
	if err != nil {
		t.Fatal(err)
	}
	firstHeader := first[:segmentHeader]
	underLock := func(f func() bool) func() bool {
		return func() bool {
			store.segsMu.Lock()
			defer store.segsMu.Unlock()
			return f()
		}
	}
	fileHoldsOlderSegments := underLock(func() bool { return len(store.segs) == 1 })
	// The deposit's answer comes before the syncer looks at the segment
	// (logged): the test may read segment 1 just before the syncer moves
	// onto the spare asked for earlier, and then find no spare to see any
	// more (a sleep before logged and one before the wait made the plain
	// "spare ready" wait time out every time). A segment that did not move
	// onto a spare is fresh or grows full, which the test catches below;
	// without the zeros the wait still times out.
	spareReadyOrTaken := underLock(func() bool { return store.log.spare.ready() || store.log.n > 1 })
	fresh := map[uint64]bool{}
	largest := map[uint64]int64{}
	const deposits = 600
	last := uint64(1)
	for i := range deposits {
		if _, err := l.Deposit(ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatalf("deposit %d: %v", i, err)
		}
		store.segsMu.Lock()
		n, isFresh, size := store.log.n, store.log.fresh, store.log.size
		store.segsMu.Unlock()
		if isFresh {
			fresh[n] = true
		}
		largest[n] = max(largest[n], size)
		if spare, err := os.ReadFile(sparePath(path)); err == nil && bytes.HasPrefix(spare, firstHeader) {
			t.Fatalf("after deposit %d segment 1, left before it was full, is the spare", i)
		}
		if n != last {
			waitFor(t, "the file to hold the segments before "+strconv.FormatUint(n, 10), fileHoldsOlderSegments)
			last = n
		}
		if n == 1 && size >= segmentSize/16 {
			waitFor(t, "a spare made of zeros", spareReadyOrTaken)
		}
	}
	if len(fresh) != 1 || !fresh[1] {
		t.Errorf("segments started from fallocate's blocks: %v; want only segment 1", fresh)
	}
	if largest[1] >= segmentSize {
		t.Errorf("segment 1 grew to %d bytes of %d before the syncer left it", largest[1], segmentSize)
	}
	if len(largest) < 4 {
		t.Errorf("%d deposits went through segments %v; want at least four", deposits, largest)
	}
	checkDeposits(t, store, deposits)
	closeLeavingNoLog(t, store, path)
}

// closeLeavingNoLog closes the store at path: no log segment and no spare
// may be left beside it.
func closeLeavingNoLog(t *testing.T, store *Store, path string) {
	t.Helper()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(path + "-wal*"); len(left) > 0 {
		t.Errorf("Close left %v", left)
	}
}

// TestNoZerosWhileAFullSegmentWaits: with the checkpoints held off, a full
// segment waits for the file to hold it. It is to be the next spare, so
// the syncer has no zeros written meanwhile: they would be written for
// nothing, as keep removes a segment while a spare is being made.
func TestNoZerosWhileAFullSegmentWaits(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour
	defer SmallSegments(64 << 10)()
	store, err := Open(filepath.Join(t.TempDir(), "bank.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := initBank(t, store)
	seen := 0
	for i := range 300 {
		if _, err := l.Deposit(ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatalf("deposit %d: %v", i, err)
		}
		store.segsMu.Lock()
		n, size, waiting, spare := store.log.n, store.log.size, store.fullSegmentWaiting(), store.log.spare
		store.segsMu.Unlock()
		if !waiting || size < segmentSize/16 {
			continue
		}
		seen++
		spare.mu.Lock()
		state := spare.state
		spare.mu.Unlock()
		if state != spareNone {
			t.Fatalf("after deposit %d, segment %d at %d bytes: a spare is there or being made (%d) while a full segment waits", i, n, size, state)
		}
	}
	if seen == 0 {
		t.Fatal("no full segment waited for the checkpointer while the next one passed a sixteenth of its size")
	}
}

// waitFor waits up to ten seconds for ok.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited ten seconds for %s", what)
		}
	}
}

// TestRemoveStopsTheSpareBeingMade: removing the spare (Close) while its
// zeros are being written stops the writer, short of the size asked, and
// waits for it, so that no spare appears after the store is closed.
func TestRemoveStopsTheSpareBeingMade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	spare, err := newSpareSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 30
	if !spare.makeZeros(size) {
		t.Fatal("no spare being made")
	}
	if spare.makeZeros(size) {
		t.Error("a second spare started while the first is being made")
	}
	// Held open, the file shows after its removal how far the zeros went.
	var f *os.File
	waitFor(t, "the spare's file", func() bool { f, err = os.Open(sparePath(path)); return err == nil })
	defer f.Close()
	if err := spare.remove(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-spare.made:
	default:
		t.Fatal("remove returned while the zeros were still being written")
	}
	if fi, err := f.Stat(); err != nil || fi.Size() >= size {
		t.Errorf("the writer went on to %v bytes of %d after remove (%v)", fi.Size(), size, err)
	}
	if _, err := os.Stat(sparePath(path)); !os.IsNotExist(err) {
		t.Errorf("the spare is still there after remove: %v", err)
	}
	if _, ok := spare.take(); ok {
		t.Error("a removed spare was taken")
	}
}
