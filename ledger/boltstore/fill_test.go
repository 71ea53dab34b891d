package boltstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// TestAppendedBucketsFillTheirPages makes deposits whose journal entries
// are about 1 KB, as a lien's or a charge's are, and checks the journal's
// pages in the file are mostly full: split at bbolt's default half page,
// appended entries leave two to a 4 KiB page, half of it empty for good.
func TestAppendedBucketsFillTheirPages(t *testing.T) {
	b := ledgertest.NewBank(t, ledgertest.Bolt)
	b.MustNode("chem")
	description := strings.Repeat("grant for the spectroscopy group ", 9) // entries of about 1.1 KB
	for range 600 {
		if _, err := b.Deposit(b.Req(), ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(t, "1"), Description: description}); err != nil {
			t.Fatal(err)
		}
	}
	// A backup is the file's pages as they are, once a checkpoint has
	// written the log into them.
	path := filepath.Join(t.TempDir(), "copy.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Backup(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(btx *bolt.Tx) error {
		for _, name := range []string{"journal", "requests"} {
			st := btx.Bucket([]byte(name)).Stats()
			fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
			t.Logf("%s: %d keys on %d leaf pages, %.0f%% in use", name, st.KeyN, st.LeafPageN, 100*fill)
			if fill < 0.7 {
				t.Errorf("%s: %d leaf pages only %.0f%% in use; want at least 70%%", name, st.LeafPageN, 100*fill)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
