package decimals

import (
	"testing"

	"github.com/shopspring/decimal"
)

// TestSameAsDecimal: Add and Sub give what decimal's do, zeros of any
// exponent (and the zero Decimal{}) included.
func TestSameAsDecimal(t *testing.T) {
	values := []decimal.Decimal{{}, decimal.Zero, decimal.RequireFromString("0.00"), decimal.RequireFromString("7.20"),
		decimal.RequireFromString("-3"), decimal.RequireFromString("1000000000000"), decimal.RequireFromString("-0.005"),
		decimal.New(5, 2)}
	for _, a := range values {
		for _, b := range values {
			for _, c := range []struct {
				name      string
				got, want decimal.Decimal
			}{{"Add", Add(a, b), a.Add(b)}, {"Sub", Sub(a, b), a.Sub(b)}} {
				if !c.got.Equal(c.want) || c.got.String() != c.want.String() {
					t.Errorf("%s(%s, %s) = %s, decimal gives %s", c.name, a, b, c.got, c.want)
				}
			}
		}
	}
}

// TestZerosAllocateNothing: a zero on either side costs no allocation,
// which is what the package is for.
func TestZerosAllocateNothing(t *testing.T) {
	x := decimal.RequireFromString("7.20")
	var zero decimal.Decimal
	if n := testing.AllocsPerRun(100, func() {
		_ = Add(decimal.Zero, x)
		_ = Add(x, zero)
		_ = Sub(x, decimal.Zero)
	}); n != 0 {
		t.Errorf("%v allocations with a zero operand, want none", n)
	}
}

func FuzzSameAsDecimal(f *testing.F) {
	f.Add(int64(720), int32(-2), int64(0), int32(0))
	f.Fuzz(func(t *testing.T, av int64, ae int32, bv int64, be int32) {
		a, b := decimal.New(av, ae%20), decimal.New(bv, be%20)
		if got, want := Add(a, b), a.Add(b); !got.Equal(want) {
			t.Fatalf("Add(%s, %s) = %s, want %s", a, b, got, want)
		}
		if got, want := Sub(a, b), a.Sub(b); !got.Equal(want) {
			t.Fatalf("Sub(%s, %s) = %s, want %s", a, b, got, want)
		}
	})
}
