package ledger_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// TestAppendAfterNewLienID places a lien under an id reserved with
// Writer.NewLienID and releases it in the same call: the first Append must
// take it as new (nothing stored under the id), the second must replace
// what the first stored, so that the lien leaves the active index and the
// reserved sums. The audit at the end compares the sums with a replay.
func TestAppendAfterNewLienID(t *testing.T) {
	bank := ledgertest.NewBank(t, ledgertest.Bolt)
	bank.MustNode("chem", "chem.lab1")
	alloc := bank.MustDeposit("chem", "100", time.Time{})
	ten := decimal.NewFromInt(10)
	_, err := ledger.Mutate(bank.Ledger, bank.Req(), ledger.KindLienPlace, "place and release", func(w *ledger.Writer) (uint64, error) {
		id, err := w.NewLienID()
		if err != nil {
			return 0, err
		}
		l := ledger.Lien{ID: id, JobRef: ledger.JobRef{JobID: "j1", Machine: "m", Project: "chem.lab1", Account: "chem"},
			Amount: ten, Holds: []ledger.Hold{{Allocation: alloc, Amount: ten}}, Charged: decimal.Zero,
			Created: w.Now(), Expires: w.Now().Add(time.Hour), State: ledger.LienActive}
		if _, err := w.Append(ledger.Entry{Kind: ledger.KindLienPlace, Node: l.Project, Ref: l.JobID, Lien: &l}); err != nil {
			return 0, err
		}
		if active, err := w.Tx().ActiveLiens("chem"); err != nil || len(active) != 1 {
			t.Errorf("after the placement the account has active liens %v (%v), want lien %d", active, err, id)
		}
		released := l
		released.State = ledger.LienReleased
		_, err = w.Append(ledger.Entry{Kind: ledger.KindLienRelease, Node: l.Project, Ref: l.JobID, Lien: &released})
		return id, err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = bank.Store.View(func(tx ledger.Tx) error {
		active, err := tx.ActiveLiens("chem")
		if err != nil {
			return err
		}
		if len(active) != 0 {
			t.Errorf("the released lien is still active: %+v", active)
		}
		reserved, err := tx.ReservedTotal("chem", bank.Clock.Now())
		if err != nil {
			return err
		}
		if r := reserved[alloc]; !r.IsZero() {
			t.Errorf("allocation %d still has %s reserved", alloc, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
