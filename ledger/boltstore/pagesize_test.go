package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// TestPageSizes: a file Open creates has 16 KiB pages, and a file made
// with the 4 KiB pages of banks from before keeps them and works: a bank on
// it takes deposits, reopens with them and passes its audit.
func TestPageSizes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		make     func(path string) error
		pageSize int
	}{
		{"new", func(string) error { return nil }, 16 << 10},
		{"old", func(path string) error {
			db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 4096})
			if err != nil {
				return err
			}
			return db.Close()
		}, 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".db")
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			t.Run("deposits", func(t *testing.T) {
				b := ledgertest.NewBank(t, func(t testing.TB) ledger.Store {
					s, err := boltstore.Open(path, boltstore.Options{})
					if err != nil {
						t.Fatal(err)
					}
					return s
				})
				b.MustNode("chem")
				for range 300 {
					b.MustDeposit("chem", "1.25", time.Time{})
				}
			}) // closed and audited
			store, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(store)
			if err != nil {
				t.Fatal(err)
			}
			if nb, err := l.BalanceAt("chem", time.Time{}); err != nil || nb.Amount.String() != "375" {
				t.Errorf("reopened, chem has %v (%v), want 375", nb.Amount, err)
			}
			if rep, err := l.Audit(); err != nil || len(rep.Problems) > 0 {
				t.Errorf("reopened, the audit: %v %v", err, rep.Problems)
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := db.Info().PageSize; got != c.pageSize {
				t.Errorf("the file has %d-byte pages, want %d", got, c.pageSize)
			}
		})
	}
}

// TestJournalHeadOfEarlierFilesIsRead: files from before entries were
// sealed after their call keep the newest entry's hash in the journal
// head record after its number and time. Such a file opens, its head reads
// as the same number and time, new entries chain to the stored ones, and
// the audit passes.
func TestJournalHeadOfEarlierFilesIsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bank.db")
	open := func(t testing.TB) ledger.Store {
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var before ledger.JournalHead
	t.Run("made", func(t *testing.T) {
		b := ledgertest.NewBank(t, open)
		b.MustNode("chem")
		b.MustDeposit("chem", "10", time.Time{})
		if err := b.Store.View(func(tx ledger.Tx) (err error) {
			before, err = tx.Head()
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}) // closed and audited
	// Write the head as earlier versions did: seq ‖ time ‖ the entry's hash.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		head := meta.Get([]byte("journal_head"))
		entry := tx.Bucket([]byte("journal")).Get(head[:8])
		if len(head) != 16 || len(entry) < 32 {
			t.Fatalf("head record of %d bytes, newest entry of %d", len(head), len(entry))
		}
		return meta.Put([]byte("journal_head"), append(append([]byte(nil), head...), entry[:32]...))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	store := open(t)
	defer store.Close()
	l, err := ledger.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deposit(ledger.Request{Actor: "test", ID: "after"}, ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(5)}); err != nil {
		t.Fatal(err)
	}
	if err := store.View(func(tx ledger.Tx) error {
		e, ok, err := tx.Entry(before.Seq)
		if err != nil || !ok || !e.Time.Equal(before.Time) {
			t.Errorf("entry %d read as %+v %v %v, head %+v", before.Seq, e, ok, err, before)
		}
		head, err := tx.Head()
		if err != nil || head.Seq != before.Seq+1 {
			t.Errorf("after a deposit the head is %+v (%v), want entry %d", head, err, before.Seq+1)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if nb, err := l.BalanceAt("chem", time.Time{}); err != nil || nb.Amount.String() != "15" {
		t.Errorf("chem has %v (%v), want 15", nb.Amount, err)
	}
	if rep, err := l.Audit(); err != nil || len(rep.Problems) > 0 {
		t.Errorf("the audit: %v %v", err, rep.Problems)
	}
}
