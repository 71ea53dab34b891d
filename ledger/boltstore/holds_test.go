package boltstore

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

func TestHoldsRoundTrip(t *testing.T) {
	l := ledger.Lien{ID: 7, Expires: time.Date(2026, 11, 22, 5, 0, 0, 123000, time.UTC),
		Holds: []ledger.Hold{{Allocation: 1, Amount: decimal.RequireFromString("14400")}, {Allocation: 1 << 40, Amount: decimal.RequireFromString("-0.05")}}}
	h, err := decodeHolds(7, encodeHolds(l))
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != 7 || !h.Expires.Equal(l.Expires) || len(h.Holds) != 2 || h.Holds[1].Allocation != 1<<40 || !h.Holds[1].Amount.Equal(l.Holds[1].Amount) {
		t.Errorf("round trip: %+v", h)
	}
}

// FuzzDecodeHolds feeds arbitrary index values to the active-lien decoder:
// it must refuse or decode, never panic, and what it decodes re-encodes to
// the same bytes when the amounts are in canonical form.
func FuzzDecodeHolds(f *testing.F) {
	f.Add(encodeHolds(ledger.Lien{Expires: time.Unix(1e9, 0), Holds: []ledger.Hold{{Allocation: 3, Amount: decimal.NewFromInt(60)}}}))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHolds(1, b)
		if err != nil {
			return
		}
		again, err := decodeHolds(1, encodeHolds(ledger.Lien{Expires: h.Expires, Holds: h.Holds}))
		if err != nil || !again.Expires.Equal(h.Expires) || len(again.Holds) != len(h.Holds) {
			t.Fatalf("re-encoding of %x: %+v %v", b, again, err)
		}
	})
}
