package hfs

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// String lets test messages print nums.
func (a num) String() string { return a.readRat().RatString() }

// randomNum draws from small fractions, fractions near the int64 edge (so
// the fast path overflows and falls back), and fractions beyond it.
func randomNum(rng *rand.Rand) num {
	edge := func() int64 { return math.MaxInt64 - rng.Int64N(1000) }
	var r *big.Rat
	switch rng.IntN(4) {
	case 0:
		r = big.NewRat(rng.Int64N(2001)-1000, 1+rng.Int64N(100))
	case 1:
		r = big.NewRat(edge(), 1+rng.Int64N(3))
	case 2:
		r = big.NewRat(rng.Int64N(1000)-500, edge())
	default:
		n, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
		r = new(big.Rat).SetFrac(n.Mul(n, big.NewInt(rng.Int64N(1000)-500)), big.NewInt(1+rng.Int64N(7)))
	}
	if rng.IntN(2) == 0 {
		r.Neg(r)
	}
	return ratNum(r)
}

func TestNumMatchesBigRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 30_000 {
		a, b := randomNum(rng), randomNum(rng)
		ra, rb := a.rat(), b.rat()
		check := func(op string, got num, want *big.Rat) {
			t.Helper()
			if got.readRat().Cmp(want) != 0 {
				t.Fatalf("%s %s %s = %s, want %s", a, op, b, got, want.RatString())
			}
			if got.big == nil && (got.n == math.MinInt64 || got.den() < 1 || gcd(abs(got.n), got.den()) != 1 && got.n != 0) {
				t.Fatalf("%s %s %s = %d/%d: not in lowest terms", a, op, b, got.n, got.d)
			}
		}
		check("+", a.add(b), new(big.Rat).Add(ra, rb))
		check("-", a.sub(b), new(big.Rat).Sub(ra, rb))
		check("*", a.mul(b), new(big.Rat).Mul(ra, rb))
		if b.sign() != 0 {
			check("/", a.quo(b), new(big.Rat).Quo(ra, rb))
		}
		if got, want := a.cmp(b), ra.Cmp(rb); got != want {
			t.Fatalf("cmp(%s, %s) = %d, want %d", a, b, got, want)
		}
		if got, want := a.sign(), ra.Sign(); got != want {
			t.Fatalf("sign(%s) = %d, want %d", a, got, want)
		}
		var q, m big.Int
		q.DivMod(ra.Num(), ra.Denom(), &m)
		if q.IsInt64() && a.floor() != q.Int64() {
			t.Fatalf("floor(%s) = %d, want %s", a, a.floor(), &q)
		}
		if a.sign() >= 0 && b.sign() > 0 {
			quo := new(big.Rat).Quo(ra, rb)
			q.Quo(quo.Num(), quo.Denom())
			want := int64(math.MaxInt64)
			if q.IsInt64() {
				want = q.Int64()
			}
			if got := a.floorQuo(b); got != want {
				t.Fatalf("floorQuo(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestNumZeroValue(t *testing.T) {
	var z num
	if z.sign() != 0 || z.add(intNum(3)).cmp(intNum(3)) != 0 || z.den() != 1 || z.floor() != 0 {
		t.Fatalf("zero num is not 0: %+v", z)
	}
}
