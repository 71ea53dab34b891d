// Package bolttest opens bbolt stores for tests of the packages above the
// ledger: ledgertest.NewBank(t, bolttest.Open).
package bolttest

import (
	"path/filepath"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// Open opens a new bbolt store in the test's temporary directory.
func Open(t testing.TB) ledger.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "bank.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatalf("open bolt store: %v", err)
	}
	return s
}
