package pgstore_test

import (
	"os"
	"testing"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestConformance runs the suite every engine passes, each scenario on a
// database of its own, audited at its end.
func TestConformance(t *testing.T) { ledgertest.Conformance(t, pgstoretest.Open) }
