package boltstore

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

func TestHoldsRoundTrip(t *testing.T) {
	holds := []ledger.Hold{{Allocation: 1, Amount: decimal.RequireFromString("14400")}, {Allocation: 1 << 40, Amount: decimal.RequireFromString("-0.05")}}
	got, err := decodeHolds(encodeHolds(holds))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Allocation != 1<<40 || !got[1].Amount.Equal(holds[1].Amount) || !got[0].Amount.Equal(holds[0].Amount) {
		t.Errorf("round trip: %+v", got)
	}
	// The layout: the allocation id (8 bytes), the text's length, the text
	// as decimal's String gives it.
	if packed, want := encodeHolds(holds[1:]), "\x00\x00\x01\x00\x00\x00\x00\x00\x05-0.05"; string(packed) != want {
		t.Errorf("packed %q, want %q", packed, want)
	}
	if got, err := decodeHolds(nil); err != nil || len(got) != 0 {
		t.Errorf("empty: %+v %v", got, err)
	}
}

// FuzzDecodeHolds feeds arbitrary packed holds (active-lien index values,
// reserved sums) to their decoder: it must refuse or decode, never panic,
// and what it decodes must survive a re-encoding.
func FuzzDecodeHolds(f *testing.F) {
	f.Add(encodeHolds([]ledger.Hold{{Allocation: 3, Amount: decimal.NewFromInt(60)}}))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 2, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		holds, err := decodeHolds(b)
		if err != nil {
			return
		}
		again, err := decodeHolds(encodeHolds(holds))
		if err != nil || len(again) != len(holds) {
			t.Fatalf("re-encoding of %x: %+v %v", b, again, err)
		}
		for i := range holds {
			if again[i].Allocation != holds[i].Allocation || !again[i].Amount.Equal(holds[i].Amount) {
				t.Fatalf("re-encoding of %x changed hold %d: %+v -> %+v", b, i, holds[i], again[i])
			}
		}
	})
}

// FuzzDecodeEntry feeds arbitrary journal values to their decoder: it must
// refuse with ErrCorrupt or decode, never panic.
func FuzzDecodeEntry(f *testing.F) {
	e := ledger.Entry{Seq: 1, Kind: ledger.KindInit}
	body, _, _ := e.Encode()
	f.Add(append(make([]byte, 32), body...))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = decodeEntry(1, raw)
	})
}
