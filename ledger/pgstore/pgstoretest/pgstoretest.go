// Package pgstoretest opens PostgreSQL stores for tests of the packages
// above the ledger: ledgertest.NewBank(t, pgstoretest.Open), each on a new
// database of the test package's PostgreSQL server (internal/pgtest), in a
// package whose TestMain returns pgtest.Main(m).
package pgstoretest

import (
	"context"
	"testing"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

// Open opens a store on a new database; the test closes it.
func Open(t testing.TB) ledger.Store {
	t.Helper()
	return OpenURL(t, pgtest.DB(t))
}

// OpenURL opens a store on the database url names, making its schema if
// it is empty.
func OpenURL(t testing.TB, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{Create: true})
	if err != nil {
		t.Fatalf("open PostgreSQL store: %v", err)
	}
	return s
}
