package charge

import (
	"cmp"
	"math"
	"math/big"
	"math/bits"

	"github.com/shopspring/decimal"
)

// fraction is an exact rational number. Pricing multiplies and adds a few
// dozen of them a job, nearly all small: in machine words that costs
// nanoseconds, where big.Rat allocates at every step. A fraction is kept
// as n/d in lowest terms while both fit in an int64 and it is not
// negative, and as a big.Rat otherwise; an operation whose result would
// not fit moves to big.Rat. Either way the value is exact, and everything
// shown or charged depends only on the value, so the two forms give the
// same results to the last digit. (hfs's num is the same idea; charge and
// hfs import nothing of ours, so each keeps its own.)
type fraction struct {
	n, d uint64   // the value n/d, 0 <= n, 0 < d, both <= math.MaxInt64, gcd 1; when big is nil
	big  *big.Rat // the value, when it is not held in n/d
}

// exactOnly makes every new fraction a big.Rat, so that a test can price
// the same job both ways and compare.
var exactOnly bool

// fractionOf is n/d; d must be positive.
func fractionOf(n, d int64) fraction {
	if exactOnly || n < 0 {
		return fraction{big: big.NewRat(n, d)}
	}
	return lowestTerms(uint64(n), uint64(d))
}

func integer(n int64) fraction { return fractionOf(n, 1) }

// fractionOfRat is r's value; r is not kept.
func fractionOfRat(r *big.Rat) fraction {
	if num, den := r.Num(), r.Denom(); !exactOnly && num.IsInt64() && den.IsInt64() && num.Sign() >= 0 {
		return fraction{n: num.Uint64(), d: den.Uint64()}
	}
	return fraction{big: new(big.Rat).Set(r)}
}

// fractionOfDecimal is d's value.
func fractionOfDecimal(d decimal.Decimal) fraction { return fractionOfRat(d.Rat()) }

// lowestTerms is n/d reduced; both must be at most math.MaxInt64.
func lowestTerms(n, d uint64) fraction {
	g := gcd(n, d)
	return fraction{n: n / g, d: d / g}
}

// gcd is Stein's binary greatest common divisor; gcd(0, b) is b.
func gcd(a, b uint64) uint64 {
	if a == 0 || b == 0 {
		return a | b
	}
	shift := bits.TrailingZeros64(a | b)
	a >>= bits.TrailingZeros64(a)
	for b != 0 {
		b >>= bits.TrailingZeros64(b)
		if a > b {
			a, b = b, a
		}
		b -= a
	}
	return a << shift
}

// product is x × y if it fits the small form.
func product64(x, y uint64) (uint64, bool) {
	hi, lo := bits.Mul64(x, y)
	return lo, hi == 0 && lo <= math.MaxInt64
}

// rat is the value as a big.Rat, which the caller must not change.
func (f fraction) rat() *big.Rat {
	if f.big != nil {
		return f.big
	}
	return new(big.Rat).SetFrac(new(big.Int).SetUint64(f.n), new(big.Int).SetUint64(f.d))
}

func (f fraction) mul(g fraction) fraction {
	if f.big == nil && g.big == nil {
		if f.n == 0 || g.n == 0 {
			return fraction{n: 0, d: 1}
		}
		// Each factor is in lowest terms, so cancelling across is enough
		// for the product to be too.
		a, b := gcd(f.n, g.d), gcd(g.n, f.d)
		n, okN := product64(f.n/a, g.n/b)
		d, okD := product64(f.d/b, g.d/a)
		if okN && okD {
			return fraction{n: n, d: d}
		}
	}
	return fraction{big: new(big.Rat).Mul(f.rat(), g.rat())}
}

func (f fraction) add(g fraction) fraction {
	if f.big == nil && g.big == nil {
		c := gcd(f.d, g.d)
		x, okX := product64(f.n, g.d/c)
		y, okY := product64(g.n, f.d/c)
		d, okD := product64(f.d, g.d/c)
		if okX && okY && okD && x+y <= math.MaxInt64 { // x, y <= MaxInt64: the sum cannot wrap
			return lowestTerms(x+y, d)
		}
	}
	return fraction{big: new(big.Rat).Add(f.rat(), g.rat())}
}

// Equal and String let a fraction be compared and shown as a decimal is.
func (f fraction) Equal(g fraction) bool { return f.cmp(g) == 0 }

func (f fraction) String() string { return f.rat().RatString() }

func (f fraction) sign() int {
	if f.big != nil {
		return f.big.Sign()
	}
	if f.n == 0 {
		return 0
	}
	return 1
}

func (f fraction) cmp(g fraction) int {
	if f.big != nil || g.big != nil {
		return f.rat().Cmp(g.rat())
	}
	// n/d against m/e is n·e against m·d, in 128 bits.
	hi1, lo1 := bits.Mul64(f.n, g.d)
	hi2, lo2 := bits.Mul64(g.n, f.d)
	if hi1 != hi2 {
		return cmp.Compare(hi1, hi2)
	}
	return cmp.Compare(lo1, lo2)
}

// ceil rounds a non-negative fraction up to a whole number.
func (f fraction) ceil() int64 {
	if f.big == nil {
		return int64((f.n + f.d - 1) / f.d) // n, d <= MaxInt64: no wrap
	}
	q, m := new(big.Int).QuoRem(f.big.Num(), f.big.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// smallWholes are the whole figures below 1,024 as decimals, made once. An
// explanation shows many (a job's processors, a multiplier of 1, a count
// of licenses), and each new decimal allocates its big.Int: half a price's
// allocations were such figures. The decimals can share them because a
// decimal never changes its big.Int (shopspring/decimal's operations make
// new ones, and its own Zero is shared the same way).
var smallWholes = func() (d [1024]decimal.Decimal) {
	for i := range d {
		d[i] = decimal.New(int64(i), 0)
	}
	return d
}()

// displayPlaces is how far a figure of the explanation that does not
// terminate (a third of a node) is shown. Such figures are for reading
// only: the charge itself is computed exactly and rounded once.
const displayPlaces = 18

// display turns an exact figure into a decimal for the explanation: the
// figure itself when whole, else rounded half up (decimal.NewFromBigRat's
// rule) to displayPlaces.
func (f fraction) display() decimal.Decimal {
	if f.big == nil {
		if f.d == 1 {
			if f.n < uint64(len(smallWholes)) {
				return smallWholes[f.n]
			}
			return decimal.New(int64(f.n), 0)
		}
		if q, half, ok := f.scaledQuo(displayPlaces); ok && (q > 0 || half >= 0) {
			if half >= 0 {
				q++
			}
			return decimal.New(int64(q), -displayPlaces)
		}
		// A figure shown as 0 is left to decimal, whose zero here is
		// built unlike decimal.New's (reflect.DeepEqual tells them apart).
	}
	r := f.rat()
	if r.IsInt() { // most figures are: skip the long division
		return decimal.NewFromBigInt(r.Num(), 0)
	}
	return decimal.NewFromBigRat(r, displayPlaces)
}

// roundHalfEven is the package's roundHalfEven of the value, worked out in
// machine words when it fits.
func (f fraction) roundHalfEven(places int32) decimal.Decimal {
	if f.big == nil {
		if q, half, ok := f.scaledQuo(places); ok {
			if half > 0 || (half == 0 && q&1 == 1) {
				q++
			}
			return decimal.New(int64(q), -places)
		}
	}
	return roundHalfEven(f.rat(), places)
}

// roundHalfEven rounds an exact value to places decimal places, half to
// even: the same rule as decimal's RoundBank, applied to the exact
// fraction so that a quotient (a processor equivalent, a consumption rate)
// is never rounded twice.
func roundHalfEven(r *big.Rat, places int32) decimal.Decimal {
	scaled := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil))
	q, m := new(big.Int).QuoRem(scaled, r.Denom(), new(big.Int)) // q truncated toward zero
	twice := m.Abs(m).Lsh(m, 1)
	if c := twice.Cmp(r.Denom()); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(int64(r.Sign())))
	}
	return decimal.NewFromBigInt(q, -places)
}

// scaledQuo divides n·10^places by d for a rounding: the truncated
// quotient, and how twice the remainder compares with d (-1, 0, 1). ok is
// false when the quotient, rounded up, might not fit in an int64.
func (f fraction) scaledQuo(places int32) (q uint64, half int, ok bool) {
	hi, lo := bits.Mul64(f.n, pow10[places])
	if hi >= f.d { // the quotient needs more than 64 bits
		return 0, 0, false
	}
	q, rem := bits.Div64(hi, lo, f.d)
	if q >= math.MaxInt64 {
		return 0, 0, false
	}
	return q, cmp.Compare(rem<<1, f.d), true // rem < d <= MaxInt64: doubling cannot wrap
}

// pow10 holds the powers of ten up to every precision and displayPlaces.
var pow10 = func() (p [max(MaxPrecision, displayPlaces) + 1]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()
