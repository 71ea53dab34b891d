package boltstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, bolttest.Open)
}

// TestBackupWhileWriting copies the bank while deposits go on and checks the
// copy is a sound bank of its own.
func TestBackupWhileWriting(t *testing.T) {
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem")
	// Deposits go on while the copy is made: the first has landed before
	// it starts, and at most a bounded number follow.
	stop, first := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 10000 {
			b.MustDeposit("chem", "1", time.Time{})
			if i == 0 {
				close(first)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	dest := filepath.Join(t.TempDir(), "copy.db")
	f, err := os.Create(dest)
	if err != nil {
		t.Fatal(err)
	}
	<-first
	if _, err := b.Backup(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rep := auditFile(t, dest, boltstore.Options{ReadOnly: true})
	if rep.Allocations == 0 {
		t.Error("the copy holds no allocations: backup ran before any deposit")
	}
}

// openLedger opens the bank at path, to be closed by the caller.
func openLedger(t *testing.T, path string, opts boltstore.Options) *ledger.Ledger {
	t.Helper()
	store, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	return l
}

// auditFile opens the bank at path, audits it in full and fails the test
// on any problem.
func auditFile(t *testing.T, path string, opts boltstore.Options) ledger.AuditReport {
	t.Helper()
	rep := auditBank(t, path, opts, true)
	if len(rep.Problems) > 0 {
		t.Fatalf("audit of %s: %v", path, rep.Problems)
	}
	return rep
}

// auditBank opens the bank at path, audits it (in full, or from its last
// checkpoint) and closes it.
func auditBank(t *testing.T, path string, opts boltstore.Options, full bool) ledger.AuditReport {
	t.Helper()
	l := openLedger(t, path, opts)
	defer l.Close()
	rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: full})
	if err != nil {
		t.Fatalf("audit of %s: %v", path, err)
	}
	return rep
}

func TestOpenRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []boltstore.Options{{}, {ReadOnly: true}} {
		if _, err := boltstore.Open(filepath.Join(dir, "missing.db"), opts); !errors.Is(err, ledger.ErrNotInitialized) {
			t.Errorf("open of a missing file (%+v): %v, want ErrNotInitialized", opts, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open without Create made the file: %v", err)
	}
	if _, err := boltstore.Open(dir, boltstore.Options{}); !errors.Is(err, ledger.ErrNotInitialized) {
		t.Errorf("open of a directory: %v, want ErrNotInitialized", err)
	}
	path := filepath.Join(dir, "bank.db")
	s, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := ledger.Open(context.Background(), s); !errors.Is(err, ledger.ErrNotInitialized) {
		t.Errorf("open of an empty store: %v, want ErrNotInitialized", err)
	}
	// A second writer in another process would wait for the lock; bbolt
	// locks per open file description, so a second Open here shows it.
	if _, err := boltstore.Open(path, boltstore.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, boltstore.ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(context.Background(), func(ledger.Tx) error { return nil }); !errors.Is(err, boltstore.ErrClosed) {
		t.Errorf("update after close: %v, want ErrClosed", err)
	}
}

// TestOtherFilesAreNotWritten: a file that is not an ingot bank (another
// program's bbolt database, an empty file, something else) is refused and
// left exactly as it was.
func TestOtherFilesAreNotWritten(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("theirs"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	empty := filepath.Join(dir, "empty.db")
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(empty, nil, 0o600)
	os.WriteFile(text, bytes.Repeat([]byte("not a database\n"), 1000), 0o600)
	for _, path := range []string{other, empty, text} {
		before := digest(t, path)
		_, err := boltstore.Open(path, boltstore.Options{})
		if !errors.Is(err, ledger.ErrNotInitialized) {
			t.Errorf("open %s: %v, want ErrNotInitialized", filepath.Base(path), err)
		}
		if digest(t, path) != before {
			t.Errorf("open %s changed the file", filepath.Base(path))
		}
	}
}

func digest(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestReadOnlyFile: a bank whose file this process may only read is read
// and audited; changes are refused.
func TestReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		// root reads and writes any file: a read-only bind is what stops it,
		// so the test opens the file read-only as a reader would be made to.
		t.Log("running as root: the read-only open is asked for")
	}
	path := filepath.Join(t.TempDir(), "bank.db")
	makeBank(t, path, 3)
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	opts := boltstore.Options{ReadOnly: os.Geteuid() == 0}
	store, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := l.BalanceAt(context.Background(), "chem", time.Now()); err != nil || !b.Balance.Amount.Equal(decimal.NewFromInt(3)) {
		t.Errorf("balance: %+v %v", b.Balance, err)
	}
	if rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) > 0 {
		t.Errorf("audit: %v %v", rep.Problems, err)
	}
	if _, err := l.Deposit(context.Background(), ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); !errors.Is(err, boltstore.ErrReadOnly) {
		t.Errorf("deposit: %v, want ErrReadOnly", err)
	}
}

// makeBank makes a bank at path with account chem and n deposits of 1.
func makeBank(t *testing.T, path string, n int) {
	t.Helper()
	store, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ledger.Init(ctx, store, ledger.Settings{Precision: 2}, ledger.Request{Actor: "t"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateNode(ctx, ledger.Request{Actor: "t"}, ledger.NodeSpec{Name: "chem"}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := l.Deposit(ctx, ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIncrementalAudit: an audit starts where the last clean one ended and
// replays only what came after; a change to an entry before that is found
// only by a full audit, and a change to the entry it ended at sends it back
// to the start.
func TestIncrementalAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	makeBank(t, path, 5)
	audit := func(full bool) ledger.AuditReport { t.Helper(); return auditBank(t, path, boltstore.Options{}, full) }
	if rep := audit(false); !rep.Full || rep.From != 1 || rep.Entries != 7 || len(rep.Problems) > 0 {
		t.Fatalf("first audit: %+v, want a full one of entries 1-7", rep)
	}
	if rep := audit(false); rep.Full || rep.From != 8 || rep.Entries != 0 || len(rep.Problems) > 0 {
		t.Fatalf("audit with nothing new: %+v", rep)
	}
	deposits(t, path, 3)
	if rep := audit(false); rep.Full || rep.From != 8 || rep.Entries != 3 || len(rep.Problems) > 0 {
		t.Fatalf("audit of 3 new deposits: %+v", rep)
	}
	// An amount changed in entry 4, before the checkpoint (entry 10).
	bolttest.EditEntry(t, path, 4, func(e *ledger.Entry) { e.Deltas[0].Amount = decimal.NewFromInt(9) })
	if rep := audit(false); len(rep.Problems) > 0 {
		t.Errorf("incremental audit looked before its checkpoint: %v", rep.Problems)
	}
	rep := audit(true)
	if len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0], "journal: entry 4: stored hash") {
		t.Errorf("full audit missed the changed entry 4: %v", rep.Problems)
	}
	// The entry the checkpoint names, changed: back to a full replay.
	bolttest.EditEntry(t, path, 10, func(e *ledger.Entry) { e.Deltas[0].Amount = decimal.NewFromInt(9) })
	rep = audit(false)
	if !rep.Full || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0], "journal: entry 10, where the last clean audit ended, is not the one it checked") {
		t.Errorf("audit after the checkpoint's entry changed: %+v", rep)
	}
}

// TestIncrementalAuditChecksNewAnswers: an incremental audit checks the
// answers kept for the requests of the entries it replays, and only
// those; a full audit checks every answer kept.
func TestIncrementalAuditChecksNewAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	makeBank(t, path, 5)
	deposit := func(id string) {
		t.Helper()
		l := openLedger(t, path, boltstore.Options{})
		defer l.Close()
		if _, err := l.Deposit(context.Background(), ledger.Request{Actor: "t", ID: id}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatal(err)
		}
	}
	audit := func(full bool) []string { t.Helper(); return auditBank(t, path, boltstore.Options{}, full).Problems }
	deposit("old") // entry 8
	if problems := audit(false); len(problems) > 0 {
		t.Fatalf("first audit: %v", problems)
	}
	deposit("new")   // entry 9
	deposit("other") // entry 10
	changeRequest := func(id string, change func(raw []byte) []byte) {
		t.Helper()
		bolttest.Edit(t, path, func(tx *bolt.Tx) error {
			b, k := tx.Bucket([]byte("requests")), []byte("t\x00"+id)
			return b.Put(k, change(bytes.Clone(b.Get(k))))
		})
	}
	addSpace := func(raw []byte) []byte { return append(raw, ' ') } // the answer's JSON, one byte longer
	changeRequest("old", addSpace)
	changeRequest("new", addSpace)
	changeRequest("other", func(raw []byte) []byte { // names entry 9, request new's
		binary.BigEndian.PutUint64(raw[32:40], 9)
		return raw
	})
	want := []string{
		`requests: ledger: corrupt data: the answer kept for request "new" of t is not the one journal entry 9 recorded`,
		`requests: ledger: corrupt data: the answer kept for request "other" of t names journal entry 9, which is request "new" of t`,
	}
	if problems := audit(false); !slices.Equal(problems, want) {
		t.Errorf("incremental audit:\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	want = append(want, `requests: ledger: corrupt data: the answer kept for request "old" of t is not the one journal entry 8 recorded`)
	if problems := audit(true); len(problems) != 3 || !slices.Contains(problems, want[0]) || !slices.Contains(problems, want[1]) || !slices.Contains(problems, want[2]) {
		t.Errorf("full audit:\n%s\nwant the three answers", strings.Join(problems, "\n"))
	}
}

// TestAuditChecksNodeIndex: an entry missing from the node index, or one
// listed under a node it does not concern, is a problem of the audit that
// replays it.
func TestAuditChecksNodeIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	makeBank(t, path, 5) // entry 1 sets up the bank, 2 makes chem, 3-7 deposit into it
	audit := func(full bool) []string { t.Helper(); return auditBank(t, path, boltstore.Options{}, full).Problems }
	if problems := audit(true); len(problems) > 0 {
		t.Fatalf("audit of the bank as made: %v", problems)
	}
	key := func(node string, seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte(node+"\x00"), seq) }
	changeIndex := func(change func(b *bolt.Bucket) error) {
		t.Helper()
		bolttest.Edit(t, path, func(tx *bolt.Tx) error { return change(tx.Bucket([]byte("journal_by_node"))) })
	}
	want := "journal index: the entries listed under chem from entry 1 on are not those of the journal that concern it"
	changeIndex(func(b *bolt.Bucket) error { return b.Delete(key("chem", 5)) })
	if problems := audit(true); len(problems) != 1 || problems[0] != want {
		t.Errorf("audit with entry 5 missing from chem's index: %v", problems)
	}
	changeIndex(func(b *bolt.Bucket) error {
		if err := b.Put(key("chem", 5), nil); err != nil {
			return err
		}
		return b.Put(key("chem", 1), nil)
	})
	if problems := audit(true); len(problems) != 1 || problems[0] != want {
		t.Errorf("audit with entry 1 listed under chem: %v", problems)
	}
	changeIndex(func(b *bolt.Bucket) error { return b.Delete(key("chem", 1)) })
	if problems := audit(true); len(problems) > 0 {
		t.Fatalf("audit with the index mended: %v", problems)
	}
	// An incremental audit checks the index of the entries it replays.
	deposits(t, path, 2)
	changeIndex(func(b *bolt.Bucket) error { return b.Delete(key("chem", 9)) })
	if problems := audit(false); len(problems) != 1 || !strings.Contains(problems[0], "listed under chem from entry 8 on") {
		t.Errorf("incremental audit with entry 9 missing from chem's index: %v", problems)
	}
}

// deposits makes n more deposits of 1 into chem.
func deposits(t *testing.T, path string, n int) {
	t.Helper()
	l := openLedger(t, path, boltstore.Options{})
	defer l.Close()
	for range n {
		if _, err := l.Deposit(context.Background(), ledger.Request{Actor: "t"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSettingsLost: a bank whose settings record is gone (a damaged key)
// is a damaged bank, not an empty database: ErrCorrupt, never
// ErrNotInitialized, which would have an operator run init on it.
func TestSettingsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	makeBank(t, path, 1)
	bolttest.Edit(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("settings")) })
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = ledger.Open(context.Background(), store)
	if !errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrNotInitialized) || !strings.Contains(err.Error(), "settings are missing") {
		t.Errorf("open: %v, want ErrCorrupt saying the settings are missing", err)
	}
}

// TestAuditChecksJobIndex: a full audit finds a job's entry missing from
// the journal's index, or listed under another job.
func TestAuditChecksJobIndex(t *testing.T) {
	path := unpack(t, t.TempDir(), "schema13-clean.db") // job-1: lien 9, charge 10, refund 16
	if problems := auditBank(t, path, boltstore.Options{}, true).Problems; len(problems) > 0 {
		t.Fatalf("audit of the upgraded bank: %v", problems)
	}
	key := func(term string, seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte(term+"\x00"), seq) }
	changeIndex := func(change func(b *bolt.Bucket) error) {
		t.Helper()
		bolttest.Edit(t, path, func(tx *bolt.Tx) error { return change(tx.Bucket([]byte("journal_by_node"))) })
	}
	var seqs []uint64
	changeIndex(func(b *bolt.Bucket) error {
		c := b.Cursor()
		for k, _ := c.Seek([]byte("job job-1\x00")); k != nil && bytes.HasPrefix(k, []byte("job job-1\x00")); k, _ = c.Next() {
			seqs = append(seqs, binary.BigEndian.Uint64(k[len(k)-8:]))
		}
		return nil
	})
	if len(seqs) != 3 {
		t.Fatalf("job-1's entries in the index: %v, want its lien, charge and refund", seqs)
	}
	want := "journal index: the entries listed under jobs"
	for _, damage := range []func(b *bolt.Bucket) error{
		func(b *bolt.Bucket) error { return b.Delete(key("job job-1", seqs[1])) },
		func(b *bolt.Bucket) error { return b.Put(key("job job-9", seqs[1]), nil) },
	} {
		changeIndex(damage)
		if problems := auditBank(t, path, boltstore.Options{}, true).Problems; len(problems) != 1 || !strings.HasPrefix(problems[0], want) {
			t.Errorf("audit of the damaged index: %v", problems)
		}
		changeIndex(func(b *bolt.Bucket) error {
			if err := b.Delete(key("job job-9", seqs[1])); err != nil {
				return err
			}
			return b.Put(key("job job-1", seqs[1]), nil)
		})
	}
	if problems := auditBank(t, path, boltstore.Options{}, true).Problems; len(problems) > 0 {
		t.Fatalf("audit with the index mended: %v", problems)
	}
}
