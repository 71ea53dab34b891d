package hfs

import (
	"cmp"
	"math"
	"math/big"
	"math/bits"
)

// num is an exact rational with value semantics. Nearly every number an HFS
// tree produces is a small fraction, so num keeps n/d in two int64s (lowest
// terms, d > 0) and costs no allocation; an operation whose result does not
// fit moves to a *big.Rat, and a big result that fits again moves back.
// Results are the same either way: the fast path is exact or not taken.
// A *big.Rat inside a num is never mutated after it is made, so nums can be
// copied freely.
//
// The zero num is 0. Invariants of the small form: n != math.MinInt64 (so
// -n and |n| never overflow) and d >= 1, where d == 0 stands for 1.
type num struct {
	n, d int64
	big  *big.Rat
}

func intNum(v int64) num { return num{n: v, d: 1} }

// ratNum is r as a num; r is copied, never kept.
func ratNum(r *big.Rat) num {
	if s, ok := smallNum(r); ok {
		return s
	}
	return num{big: new(big.Rat).Set(r)}
}

// bigNum wraps a freshly made *big.Rat, moving back to the small form when
// it fits.
func bigNum(r *big.Rat) num {
	if s, ok := smallNum(r); ok {
		return s
	}
	return num{big: r}
}

// smallNum is r in the small form, if it fits.
func smallNum(r *big.Rat) (num, bool) {
	n, d := r.Num(), r.Denom()
	if n.IsInt64() && d.IsInt64() && n.Int64() != math.MinInt64 {
		return num{n: n.Int64(), d: d.Int64()}, true
	}
	return num{}, false
}

// rat is a new *big.Rat holding a, which the caller may change.
func (a num) rat() *big.Rat {
	if a.big != nil {
		return new(big.Rat).Set(a.big)
	}
	return big.NewRat(a.n, a.den())
}

// readRat is a *big.Rat holding a, for reading only.
func (a num) readRat() *big.Rat {
	if a.big != nil {
		return a.big
	}
	return big.NewRat(a.n, a.den())
}

func (a num) den() int64 {
	if a.d == 0 {
		return 1
	}
	return a.d
}

func (a num) sign() int {
	if a.big != nil {
		return a.big.Sign()
	}
	switch {
	case a.n > 0:
		return 1
	case a.n < 0:
		return -1
	}
	return 0
}

func (a num) cmp(b num) int {
	if a.big != nil || b.big != nil {
		return a.readRat().Cmp(b.readRat())
	}
	if a.den() == b.den() {
		return cmp.Compare(a.n, b.n)
	}
	sa, sb := a.sign(), b.sign()
	if sa != sb || sa == 0 {
		return cmp.Compare(sa, sb)
	}
	// Same sign, not zero: compare |a.n|*b.d with |b.n|*a.d in 128 bits.
	hi1, lo1 := bits.Mul64(uint64(abs(a.n)), uint64(b.den()))
	hi2, lo2 := bits.Mul64(uint64(abs(b.n)), uint64(a.den()))
	if hi1 != hi2 {
		return cmp.Compare(hi1, hi2) * sa
	}
	return cmp.Compare(lo1, lo2) * sa
}

func (a num) neg() num {
	if a.big != nil {
		return num{big: new(big.Rat).Neg(a.big)}
	}
	return num{n: -a.n, d: a.d}
}

func (a num) add(b num) num {
	switch {
	case b.isZero():
		return a
	case a.isZero():
		return b
	}
	if a.big == nil && b.big == nil {
		if s, ok := addSmall(a.n, a.den(), b.n, b.den()); ok {
			return s
		}
	}
	return bigNum(new(big.Rat).Add(a.readRat(), b.readRat()))
}

func (a num) sub(b num) num {
	if b.isZero() {
		return a
	}
	return a.add(b.neg())
}

// isZero is a cheaper sign() == 0.
func (a num) isZero() bool { return a.big == nil && a.n == 0 }

func (a num) mul(b num) num {
	if a.big == nil && b.big == nil {
		if p, ok := mulSmall(a.n, a.den(), b.n, b.den()); ok {
			return p
		}
	}
	return bigNum(new(big.Rat).Mul(a.readRat(), b.readRat()))
}

// quo is a/b; b must not be 0.
func (a num) quo(b num) num {
	if a.big == nil && b.big == nil {
		// a/b = a·(rn/rd), b's reciprocal with its sign on top.
		rn, rd := b.den(), b.n
		if rd < 0 {
			rn, rd = -rn, -rd
		}
		if p, ok := mulSmall(a.n, a.den(), rn, rd); ok {
			return p
		}
	}
	return bigNum(new(big.Rat).Quo(a.readRat(), b.readRat()))
}

// floor is the largest integer <= a, saturated to the int64 range.
func (a num) floor() int64 {
	if a.big == nil {
		q := a.n / a.den()
		if a.n < 0 && q*a.den() != a.n {
			q-- // Go's division truncates towards zero
		}
		return q
	}
	var q, m big.Int
	q.DivMod(a.big.Num(), a.big.Denom(), &m) // Euclidean: floor for d > 0
	switch {
	case q.IsInt64():
		return q.Int64()
	case q.Sign() > 0:
		return math.MaxInt64
	}
	return math.MinInt64
}

// floorQuo is floor(a/b) for a >= 0 and b > 0, saturated at
// math.MaxInt64: a/b's quotient straight from 128-bit products, with no
// fraction to reduce.
func (a num) floorQuo(b num) int64 {
	if a.big == nil && b.big == nil {
		hi, lo := bits.Mul64(uint64(a.n), uint64(b.den()))
		dhi, dlo := bits.Mul64(uint64(a.den()), uint64(b.n))
		if dhi == 0 {
			if hi >= dlo {
				return math.MaxInt64 // the quotient needs more than 64 bits
			}
			q, _ := bits.Div64(hi, lo, dlo)
			return int64(min(q, math.MaxInt64))
		}
	}
	return a.quo(b).floor()
}

func minNum(a, b num) num {
	if a.cmp(b) <= 0 {
		return a
	}
	return b
}

func maxNum(a, b num) num {
	if a.cmp(b) >= 0 {
		return a
	}
	return b
}

// addSmall is a/b + c/d in lowest terms (Knuth, TAOCP 4.5.1), or false if
// it does not fit.
func addSmall(a, b, c, d int64) (num, bool) {
	if b == d {
		n, ok := addInt64(a, c)
		if !ok {
			return num{}, false
		}
		g := gcd(abs(n), b)
		return num{n: n / g, d: b / g}, true
	}
	g := gcd(b, d)
	x, ok1 := mulInt64(a, d/g)
	y, ok2 := mulInt64(c, b/g)
	t, ok3 := addInt64(x, y)
	if !ok1 || !ok2 || !ok3 {
		return num{}, false
	}
	if t == 0 {
		return num{}, true
	}
	g2 := gcd(abs(t), g)
	den, ok := mulInt64(b/g, d/g2)
	return num{n: t / g2, d: den}, ok
}

// mulSmall is (a/b)·(c/d) in lowest terms, or false if it does not fit;
// b and d are > 0.
func mulSmall(a, b, c, d int64) (num, bool) {
	if a == 0 || c == 0 {
		return num{}, true
	}
	g1, g2 := gcd(abs(a), d), gcd(abs(c), b)
	n, ok1 := mulInt64(a/g1, c/g2)
	den, ok2 := mulInt64(b/g2, d/g1)
	return num{n: n, d: den}, ok1 && ok2
}

// mulInt64 is x·y, or false if it overflows or is math.MinInt64.
func mulInt64(x, y int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(abs(x)), uint64(abs(y)))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if (x < 0) != (y < 0) {
		return -int64(lo), true
	}
	return int64(lo), true
}

// addInt64 is x+y, or false if it overflows or is math.MinInt64.
func addInt64(x, y int64) (int64, bool) {
	s := x + y
	if (x >= 0) == (y >= 0) && (s >= 0) != (x >= 0) || s == math.MinInt64 {
		return 0, false
	}
	return s, true
}

// gcd is the greatest common divisor of x, y >= 0 (binary GCD: no
// divisions); gcd(0, y) = y.
func gcd(x, y int64) int64 {
	if x == 0 {
		return y
	}
	if y == 0 {
		return x
	}
	u, v := uint64(x), uint64(y)
	shift := bits.TrailingZeros64(u | v)
	u >>= bits.TrailingZeros64(u)
	for v != 0 {
		v >>= bits.TrailingZeros64(v)
		if u > v {
			u, v = v, u
		}
		v -= u
	}
	return int64(u << shift)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// bound is an amount that may be unbounded: a demand with no cap, what a
// subtree holding such a demand can still take, or an absent limit.
type bound struct {
	v   num
	inf bool
}

var unbounded = bound{inf: true}

func finite(v num) bound { return bound{v: v} }

func (b bound) positive() bool { return b.inf || b.v.sign() > 0 }

// sub lowers b by x; an unbounded b stays unbounded.
func (b bound) sub(x num) bound {
	if b.inf {
		return b
	}
	return finite(b.v.sub(x))
}

func (b bound) add(o bound) bound {
	if b.inf || o.inf {
		return unbounded
	}
	return finite(b.v.add(o.v))
}

func (b bound) min(o bound) bound {
	if b.cmp(o) <= 0 {
		return b
	}
	return o
}

// capped is x lowered to b.
func (b bound) capped(x num) num {
	if b.inf || x.cmp(b.v) <= 0 {
		return x
	}
	return b.v
}

func (b bound) cmp(o bound) int {
	switch {
	case b.inf && o.inf:
		return 0
	case b.inf:
		return 1
	case o.inf:
		return -1
	}
	return b.v.cmp(o.v)
}
