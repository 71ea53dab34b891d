package ledger_test

import (
	"fmt"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestFundsTakeFreeCreditsBeforeCredit: a lien or a charge takes what the
// allocations hold free, in debit order, before any credit limit, then
// the credit limits in debit order; a charge past both overdraws the
// first allocation. The first allocation here has nothing free but a
// credit limit, the second has funds (one reserved by another lien).
func TestFundsTakeFreeCreditsBeforeCredit(t *testing.T) {
	dec := decimal.RequireFromString
	f := ledger.Funds{
		Account: "chem",
		Allocations: []ledger.Allocation{
			{AllocationTerms: ledger.AllocationTerms{ID: 1, CreditLimit: dec("50")}, Amount: dec("0")},
			{AllocationTerms: ledger.AllocationTerms{ID: 2}, Amount: dec("100")},
		},
		Reserved: map[uint64]decimal.Decimal{2: dec("20")},
	}
	if got := f.Available(); !got.Equal(dec("130")) {
		t.Errorf("Available = %s, want 130", got)
	}
	for _, c := range []struct {
		amount, want string
		overdrawn    string
	}{
		{"80", "[{2 80}]", "0"},
		{"100", "[{1 20} {2 80}]", "0"},
		{"130", "[{1 50} {2 80}]", "0"},
		{"150", "[{1 70} {2 80}]", "20"},
	} {
		debits, overdrawn, err := f.Debit(dec(c.amount))
		if err != nil {
			t.Fatalf("Debit(%s): %v", c.amount, err)
		}
		got := "["
		for i, d := range debits {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("{%d %s}", d.Allocation, d.Amount)
		}
		got += "]"
		if got != c.want || !overdrawn.Equal(dec(c.overdrawn)) {
			t.Errorf("Debit(%s) = %s overdrawn %s, want %s overdrawn %s", c.amount, got, overdrawn, c.want, c.overdrawn)
		}
	}
	if _, err := f.Hold(dec("131")); err == nil {
		t.Errorf("Hold(131) with 130 available succeeded")
	}
	if holds, err := f.Hold(dec("90")); err != nil || len(holds) != 2 || holds[0].Allocation != 1 || !holds[0].Amount.Equal(dec("10")) {
		t.Errorf("Hold(90) = %v, %v; want 10 on credit from allocation 1 after 80 free from allocation 2", holds, err)
	}
}
