package charge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/shopspring/decimal"
)

// TestFastPathMatchesExact prices thousands of random jobs and requests
// (randomCases) in machine words where they fit and then with big.Rat
// throughout, and through Price and a CompiledTable, and wants the very
// same answers: the same error, or Amounts that are reflect.DeepEqual and
// encode to the same JSON.
func TestFastPathMatchesExact(t *testing.T) {
	cases := randomCases(1, 4000)
	fast := priceAll(cases)
	compiledFast := priceAllCompiled(cases)
	exactOnly = true
	exact := priceAll(cases)
	exactOnly = false
	charged := 0
	for i := range cases {
		for _, got := range []priced{fast[i], compiledFast[i]} {
			if err := samePrice(got, exact[i]); err != nil {
				t.Fatalf("case %d (%+v): %v", i, cases[i], err)
			}
		}
		if exact[i].chargeErr == nil {
			charged++
		}
	}
	if charged < len(cases)/2 {
		t.Errorf("only %d of %d cases priced: the generator tests errors more than prices", charged, len(cases))
	}
}

// priced is a case's charge and quote, or their errors.
type priced struct {
	charge, quote       Amount
	chargeErr, quoteErr error
}

func priceAll(cases []randomCase) []priced {
	out := make([]priced, len(cases))
	for i, c := range cases {
		p := &out[i]
		p.charge, p.chargeErr = Price(c.table, c.policy, c.shape, c.usage)
		p.quote, p.quoteErr = Quote(c.table, c.policy, c.shape, c.request)
	}
	return out
}

func priceAllCompiled(cases []randomCase) []priced {
	out := make([]priced, len(cases))
	for i, c := range cases {
		ct, err := c.table.Compile()
		p := &out[i]
		if err != nil {
			// Quote checks the request before the table.
			p.chargeErr = err
			_, p.quoteErr = Quote(c.table, c.policy, c.shape, c.request)
			continue
		}
		p.charge, p.chargeErr = ct.Price(c.policy, c.shape, c.usage)
		p.quote, p.quoteErr = ct.Quote(c.policy, c.shape, c.request)
	}
	return out
}

func samePrice(got, want priced) error {
	if err := sameAmount(got.charge, got.chargeErr, want.charge, want.chargeErr); err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	if err := sameAmount(got.quote, got.quoteErr, want.quote, want.quoteErr); err != nil {
		return fmt.Errorf("quote: %w", err)
	}
	return nil
}

func sameAmount(got Amount, gotErr error, want Amount, wantErr error) error {
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		return fmt.Errorf("error %v, exactly %v", gotErr, wantErr)
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		return err
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return err
	}
	if !bytes.Equal(gotJSON, wantJSON) {
		return fmt.Errorf("got\n%s\nexactly\n%s", gotJSON, wantJSON)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("same JSON, yet not deeply equal: %#v\n%#v", got, want)
	}
	return nil
}

// TestFractionMatchesBigRat: every operation on fractions, in machine
// words or moved to big.Rat when a result does not fit, gives big.Rat's
// value, and display and rounding give what they give from big.Rat, on
// operands from 0 to beyond math.MaxInt64.
func TestFractionMatchesBigRat(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	operand := func() fraction {
		pick := func() int64 {
			switch r.IntN(4) {
			case 0:
				return math.MaxInt64 - r.Int64N(3)
			case 1:
				return r.Int64N(math.MaxInt64)
			case 2:
				return 1 << r.IntN(63)
			}
			return r.Int64N(1000)
		}
		f := fractionOf(pick(), max(1, pick()))
		if r.IntN(8) == 0 {
			f = fractionOfRat(new(big.Rat).Mul(f.rat(), big.NewRat(math.MaxInt64, 3))) // beyond int64
		}
		return f
	}
	for range 20_000 {
		a, b := operand(), operand()
		x, y := a.rat(), b.rat()
		for _, c := range []struct {
			op        string
			got, want *big.Rat
		}{
			{"×", a.mul(b).rat(), new(big.Rat).Mul(x, y)},
			{"+", a.add(b).rat(), new(big.Rat).Add(x, y)},
		} {
			if c.got.Cmp(c.want) != 0 {
				t.Fatalf("%s %s %s = %s, want %s", a, c.op, b, c.got, c.want)
			}
		}
		if got, want := a.cmp(b), x.Cmp(y); got != want {
			t.Fatalf("cmp(%s, %s) = %d, want %d", a, b, got, want)
		}
		if got, want := a.display(), exactFigure(x); !reflect.DeepEqual(got, want) {
			t.Fatalf("display(%s) = %s, want %s", a, got, want)
		}
		up := new(big.Int).Add(x.Num(), x.Denom())
		up.Sub(up, big.NewInt(1)).Quo(up, x.Denom())
		if up.IsInt64() && a.ceil() != up.Int64() {
			t.Fatalf("⌈%s⌉ = %d, want %s", a, a.ceil(), up)
		}
		places := int32(r.IntN(int(MaxPrecision) + 1))
		if got, want := a.roundHalfEven(places), roundHalfEven(x, places); !reflect.DeepEqual(got, want) {
			t.Fatalf("roundHalfEven(%s, %d) = %s, want %s", a, places, got, want)
		}
	}
}

// exactFigure is fraction.display worked out in big.Rat.
func exactFigure(r *big.Rat) decimal.Decimal {
	exactOnly = true
	defer func() { exactOnly = false }()
	return fractionOfRat(r).display()
}
