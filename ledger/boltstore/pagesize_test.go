package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

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
