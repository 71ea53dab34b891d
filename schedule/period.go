package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Every is a period's length.
type Every string

// The lengths of a period.
const (
	Month   Every = "month"
	Quarter Every = "quarter"
	Year    Every = "year"
)

// months is the length of a period in months.
func (e Every) months() (int, error) {
	switch e {
	case Month:
		return 1, nil
	case Quarter:
		return 3, nil
	case Year:
		return 12, nil
	}
	return 0, fmt.Errorf("%w: every %q: month, quarter or year", ErrInvalid, string(e))
}

// CarryOver is what of a period's leftover moves into the next: none,
// all, or Percent of it up to Cap (zero: no cap).
type CarryOver struct {
	All     bool            `json:"all,omitempty"`
	Percent decimal.Decimal `json:"percent,omitzero"`
	Cap     decimal.Decimal `json:"cap,omitzero"`
}

var hundred = decimal.NewFromInt(100)

// ParseCarryOver reads none, all, PERCENT or PERCENT:CAP (PERCENT from 0
// to 100, CAP a positive amount).
func ParseCarryOver(s string) (CarryOver, error) {
	switch s {
	case "", "none":
		return CarryOver{}, nil
	case "all":
		return CarryOver{All: true}, nil
	}
	pct, capText, capped := strings.Cut(s, ":")
	p, err := decimal.NewFromString(strings.TrimSuffix(pct, "%"))
	if err != nil || p.IsNegative() || p.GreaterThan(hundred) {
		return CarryOver{}, fmt.Errorf("%w: carry-over %q: none, all, PERCENT (0 to 100) or PERCENT:CAP", ErrInvalid, s)
	}
	c := CarryOver{Percent: p}
	if capped {
		if c.Cap, err = decimal.NewFromString(capText); err != nil || !c.Cap.IsPositive() {
			return CarryOver{}, fmt.Errorf("%w: carry-over %q: the cap after ':' must be a positive amount", ErrInvalid, s)
		}
	}
	if c.Percent.Equal(hundred) && !capped {
		return CarryOver{All: true}, nil
	}
	return c, nil
}

// String is the rule as ParseCarryOver reads it.
func (c CarryOver) String() string {
	switch {
	case c.All:
		return "all"
	case c.Percent.IsZero():
		return "none"
	case c.Cap.IsZero():
		return c.Percent.String() + "%"
	}
	return c.Percent.String() + "%:" + c.Cap.String()
}

// Of is what moves of leftover, rounded down to precision places.
func (c CarryOver) Of(leftover decimal.Decimal, precision int32) decimal.Decimal {
	if !leftover.IsPositive() {
		return decimal.Zero
	}
	if c.All {
		return leftover
	}
	moved := leftover.Mul(c.Percent).Div(hundred).RoundDown(precision)
	if !c.Cap.IsZero() && moved.GreaterThan(c.Cap) {
		moved = c.Cap
	}
	return moved
}

// PeriodStart is the start of period k (from 0): Start plus k periods,
// counted in calendar months in UTC (the 31st of a month runs to the end
// of shorter months, as time.AddDate normalises it).
func (s Schedule) PeriodStart(k int) time.Time {
	m, _ := s.Every.months()
	return s.Start.AddDate(0, k*m, 0)
}

// Periods is the number of periods, or -1 without end.
func (s Schedule) Periods() int {
	if s.Count > 0 {
		return s.Count
	}
	if s.Until.IsZero() {
		return -1
	}
	n := 0
	for s.PeriodStart(n).Before(s.Until) {
		n++
	}
	return n
}
