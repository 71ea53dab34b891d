package boltstore_test

import (
	"testing"

	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, ledgertest.Bolt)
}
