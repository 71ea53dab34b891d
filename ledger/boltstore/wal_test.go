package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

func randomWrites(rng *rand.Rand) []write {
	var out []write
	for range rng.IntN(20) {
		w := write{bucket: bucketID(rng.IntN(int(numBuckets)))}
		switch rng.IntN(3) {
		case 0:
			w.seq, w.sequence = true, rng.Uint64()
		case 1:
			w.deleted, w.key = true, []byte(fmt.Sprint("k", rng.IntN(1000)))
		default:
			w.key, w.value = []byte(fmt.Sprint("k", rng.IntN(1000))), bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(300))
		}
		out = append(out, w)
	}
	return out
}

// TestLogRecordsRoundTrip encodes random groups and reads them back, and
// checks that a segment cut anywhere yields exactly the records before the
// cut (a crash mid-write loses only the record being written).
func TestLogRecordsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	bank := [bankIDSize]byte{1, 2, 3}
	w, err := openLog(filepath.Join(dir, "bank.db"), 1, bank, 7)
	if err != nil {
		t.Fatal(err)
	}
	w.close()
	file := segmentPath(filepath.Join(dir, "bank.db"), 1)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var groups []loggedGroup
	var ends []int
	for g := uint64(8); g <= 37; g++ {
		w := randomWrites(rng)
		data = logRecord(t, data, g, w)
		groups = append(groups, loggedGroup{group: g, writes: w})
		ends = append(ends, len(data))
	}
	for cut := segmentHeader; cut <= len(data); cut += 1 + rng.IntN(40) {
		if err := os.WriteFile(file, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		info, got, err := readSegment(file)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if !info.ok || info.bank != bank || info.prev != 7 {
			t.Fatalf("cut at %d: header read as %+v", cut, info)
		}
		whole := 0
		for whole < len(ends) && ends[whole] <= cut {
			whole++
		}
		if len(got) != whole {
			t.Fatalf("cut at %d: read %d records, want %d", cut, len(got), whole)
		}
		for i := range got {
			if !sameGroup(got[i], groups[i]) {
				t.Fatalf("record %d read back as %+v, want %+v", i, got[i], groups[i])
			}
		}
	}
	// A flipped byte inside a record ends the segment there.
	damaged := bytes.Clone(data)
	damaged[ends[4]+walHeader+3] ^= 0x40
	if err := os.WriteFile(file, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, got, err := readSegment(file); err != nil || len(got) != 5 {
		t.Fatalf("damaged record: read %d records, %v; want the 5 before it", len(got), err)
	}
	// A segment made but never written (a crash as it was made) holds
	// nothing; one with another start is not a segment.
	for _, tc := range []struct {
		data []byte
		ok   bool
	}{{nil, true}, {make([]byte, 100), true}, {[]byte("not a log segment at all, but text"), false}} {
		if err := os.WriteFile(file, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		info, got, err := readSegment(file)
		if (err == nil) != tc.ok || info.ok || len(got) != 0 {
			t.Errorf("segment %q: %+v %d records, %v", tc.data, info, len(got), err)
		}
	}
}

func sameGroup(a, b loggedGroup) bool {
	if a.group != b.group || len(a.writes) != len(b.writes) {
		return false
	}
	for i := range a.writes {
		x, y := a.writes[i], b.writes[i]
		if x.bucket != y.bucket || !bytes.Equal(x.key, y.key) || !bytes.Equal(x.value, y.value) ||
			x.deleted != y.deleted || x.seq != y.seq || x.sequence != y.sequence {
			return false
		}
	}
	return true
}

// FuzzReadRecord feeds the log reader arbitrary bytes: it must not panic,
// and what it accepts must encode back to the same bytes.
func FuzzReadRecord(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for g := range uint64(5) {
		f.Add(logRecord(f, nil, g, randomWrites(rng)))
	}
	f.Add([]byte("IWAL\x00\x00\x00\x08\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		group, writes, size, err := readRecord(b)
		if err != nil {
			return
		}
		if again := logRecord(t, nil, group, writes); !bytes.Equal(again, b[:size]) {
			t.Fatalf("record re-encodes as %x, read from %x", again, b[:size])
		}
	})
}

// TestLogRecovery writes deposits that stay in the log (checkpoints held
// off), copies the bank as a crash would leave it, and opens the copy:
// read-only it reads the log in memory; read-write it applies the log to the
// file and removes it. Both see every deposit, and the audit passes.
func TestLogRecovery(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour
	dir, crashed := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := initBank(t, store)
	for range 40 {
		if _, err := l.Deposit(ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatal(err)
		}
	}
	// With checkpoints held off, everything since the file was made is only
	// in the log.
	matches, _ := filepath.Glob(path + "*")
	for _, m := range matches {
		copyFile(t, m, filepath.Join(crashed, filepath.Base(m)))
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := segments(path); len(left) != 0 {
		t.Errorf("Close left log segments %v", left)
	}
	copied := filepath.Join(crashed, "bank.db")
	if left, _ := segments(copied); len(left) == 0 {
		t.Fatal("the crashed copy has no log: the test did not hold the checkpoints off")
	}
	for _, readOnly := range []bool{true, false} {
		store, err := Open(copied, Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		checkDeposits(t, store, 40)
		if readOnly {
			if _, err := store.Backup(io.Discard); err == nil {
				t.Error("a read-only backup of a file behind its log succeeded")
			}
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := segments(copied); len(left) != 0 {
		t.Errorf("recovery left log segments %v", left)
	}
	store, err = Open(copied, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	checkDeposits(t, store, 40)
}

// TestOlderSchemasUpgrade opens a version 5 file and a version 6 file:
// read-write sets the current version, as the layout of the buckets is the
// same (version 6 added the log, version 7 answers kept by reference).
func TestOlderSchemasUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	store, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	initBank(t, store)
	store.Close()
	for _, version := range []uint64{5, 6} {
		setSchema(t, path, version)
		store, err = Open(path, Options{})
		if err != nil {
			t.Fatalf("version %d file: %v", version, err)
		}
		checkDeposits(t, store, 0)
		store.Close()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.View(func(btx *bolt.Tx) error {
			if v := decodeUint(btx.Bucket(bucketMeta.name()).Get(keySchema)); v != schemaVersion {
				t.Errorf("schema after upgrading version %d: %d", version, v)
			}
			return nil
		})
		db.Close()
	}
	setSchema(t, path, 4)
	if _, err := Open(path, Options{}); err == nil {
		t.Error("a version 4 file opened")
	}
	setSchema(t, path, schemaVersion+1)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer than this ingot's") {
		t.Errorf("a file of a newer schema: %v", err)
	}
}

func setSchema(t *testing.T, path string, v uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketMeta.name()).Put(keySchema, encodeUint(v)) }); err != nil {
		t.Fatal(err)
	}
}

func initBank(t *testing.T, store *Store) *ledger.Ledger {
	t.Helper()
	if err := ledger.Init(store, ledger.Settings{Precision: 2}, ledger.Request{Actor: "t"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateNode(ledger.Request{Actor: "t"}, ledger.NodeSpec{Name: "chem"}); err != nil {
		t.Fatal(err)
	}
	return l
}

func checkDeposits(t *testing.T, store *Store, want int64) {
	t.Helper()
	l, err := ledger.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := l.Audit()
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("audit: %v %v", rep.Problems, err)
	}
	nb, err := l.BalanceAt("chem", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !nb.Amount.Equal(decimal.NewFromInt(want)) {
		t.Fatalf("chem holds %s, want %d", nb.Amount, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLogThatDoesNotFitIsRefused opens files beside a log that must not
// be applied to them: another bank's log, and a log that starts after the
// groups the file holds (the file replaced by an older copy). Open refuses
// both, names the way out, and changes nothing.
func TestLogThatDoesNotFitIsRefused(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour
	dir := t.TempDir()
	pathA, pathB := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	a, err := Open(pathA, Options{})
	if err != nil {
		t.Fatal(err)
	}
	initBank(t, a)
	copyFile(t, segmentPath(pathA, 1), segmentPath(pathB, 1)) // only in the log while a is open
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(pathB, Options{})
	if !errors.Is(err, ErrLogMismatch) {
		t.Fatalf("b.db beside a.db's log opened: %v", err)
	}
	t.Log(err)
	if left, _ := segments(pathB); len(left) != 1 {
		t.Fatalf("the refused log is gone: %v", left)
	}
	os.Remove(segmentPath(pathB, 1))
	if b, err = Open(pathB, Options{}); err != nil {
		t.Fatalf("b.db without the log: %v", err)
	}
	initBank(t, b)
	bank, last := b.bank, b.lastGroup
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A log of b's that starts ten groups after the file ends.
	w, err := openLog(pathB, 9, bank, last+10)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.append(logRecord(t, nil, last+11, []write{{bucket: bucketNodes, key: []byte("x"), value: []byte("{}")}})); err != nil {
		t.Fatal(err)
	}
	w.close()
	if _, err := Open(pathB, Options{}); !errors.Is(err, ErrLogMismatch) {
		t.Fatalf("a log starting after the file opened: %v", err)
	}
	os.Remove(segmentPath(pathB, 9))
	b, err = Open(pathB, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	checkDeposits(t, b, 0)
}

// logRecord is appendRecord's record of writes that have no deferred
// value to fail.
func logRecord(tb testing.TB, dst []byte, group uint64, writes []write) []byte {
	tb.Helper()
	b, err := appendRecord(dst, group, writes)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
