package decimals

import "github.com/shopspring/decimal"

// Add is a + b.
func Add(a, b decimal.Decimal) decimal.Decimal {
	switch {
	case b.IsZero():
		return a
	case a.IsZero():
		return b
	}
	return a.Add(b)
}

// Sub is a - b.
func Sub(a, b decimal.Decimal) decimal.Decimal {
	switch {
	case b.IsZero():
		return a
	case a.IsZero():
		return b.Neg()
	}
	return a.Sub(b)
}
