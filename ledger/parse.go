package ledger

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// excerptLen is how many characters of an input an error message quotes:
// enough to recognise it, never a page of it.
const excerptLen = 64

// Excerpt quotes an input for an error message, as %q does: whole when it
// is short, else its first 64 characters, an ellipsis and its length. A
// name of 5,000 characters is then refused in one line of the terminal
// and of the server's log, which still says what was wrong with it.
func Excerpt(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= excerptLen {
		return strconv.Quote(s)
	}
	cut := 0
	for range excerptLen {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return fmt.Sprintf("%q… (%d characters)", s[:cut], n)
}

// MaxAmount bounds every amount a request may carry. No centre hands out a
// quadrillion credits; a bigger number is a typo or an attack, and bounding
// it keeps sums far from any overflow in other engines' numeric types.
var MaxAmount = decimal.New(1, 15)

var amountSyntax = regexp.MustCompile(`^[0-9]{1,16}(\.[0-9]{1,18})?$`)

// ParseAmount reads a positive amount such as "100" or "12.50". It refuses
// signs, exponents, separators, zero, more decimal places than the bank's
// precision, and anything above MaxAmount.
func ParseAmount(s string, precision int32) (decimal.Decimal, error) {
	d, err := parsePlain(s)
	if err != nil {
		return d, err
	}
	return d, CheckAmount(d, precision)
}

// ParseCreditLimit is ParseAmount that also takes zero (no credit).
func ParseCreditLimit(s string, precision int32) (decimal.Decimal, error) {
	d, err := parsePlain(s)
	if err != nil {
		return d, err
	}
	return d, CheckCreditLimit(d, precision)
}

func parsePlain(s string) (decimal.Decimal, error) {
	if !amountSyntax.MatchString(s) {
		return decimal.Decimal{}, fmt.Errorf("%w: amount %s is not a plain positive decimal number like 100 or 12.50", ErrInvalid, Excerpt(s))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("%w: amount %s: %v", ErrInvalid, Excerpt(s), err)
	}
	return d, nil
}

// CheckAmount refuses an amount that is not positive, has more decimal
// places than the precision, or exceeds MaxAmount.
func CheckAmount(d decimal.Decimal, precision int32) error {
	if !d.IsPositive() {
		return fmt.Errorf("%w: amount %s must be greater than zero", ErrInvalid, d)
	}
	if !d.Equal(d.Truncate(precision)) {
		return fmt.Errorf("%w: amount %s has more than %d decimal places (the bank's precision)", ErrInvalid, d, precision)
	}
	if d.GreaterThan(MaxAmount) {
		return fmt.Errorf("%w: amount %s is above the maximum %s", ErrInvalid, d, MaxAmount)
	}
	return nil
}

// CheckCreditLimit refuses a negative or oversized credit limit (zero is
// fine: no credit).
func CheckCreditLimit(d decimal.Decimal, precision int32) error {
	if d.IsZero() {
		return nil
	}
	if err := CheckAmount(d, precision); err != nil {
		return fmt.Errorf("credit limit: %w", err)
	}
	return nil
}

var (
	nodeComponent = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	userName      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
)

// maxNameLen bounds every name; 255 matches what file systems and most
// schedulers accept.
const maxNameLen = 255

// CheckNodeName refuses a node name that is not dotted components of
// lowercase letters, digits, '-' and '_' (each starting with a letter or
// digit).
func CheckNodeName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: node name %s must be 1 to %d characters", ErrInvalid, Excerpt(name), maxNameLen)
	}
	for _, c := range strings.Split(name, ".") {
		if !nodeComponent.MatchString(c) {
			return fmt.Errorf("%w: node name %s: each dot-separated part must be lowercase letters, digits, '-' or '_', starting with a letter or digit", ErrInvalid, Excerpt(name))
		}
	}
	return nil
}

// CheckMachineName refuses a machine name that is not a single node-name
// component.
func CheckMachineName(name string) error {
	if len(name) > maxNameLen || !nodeComponent.MatchString(name) {
		return fmt.Errorf("%w: machine name %s must be 1 to %d lowercase letters, digits, '-' or '_', starting with a letter or digit", ErrInvalid, Excerpt(name), maxNameLen)
	}
	return nil
}

// CheckUserName refuses a user name that a POSIX system would not accept.
func CheckUserName(name string) error {
	if len(name) > maxNameLen || !userName.MatchString(name) {
		return fmt.Errorf("%w: user name %s must be 1 to %d letters, digits, '.', '-' or '_', not starting with '.' or '-'", ErrInvalid, Excerpt(name), maxNameLen)
	}
	return nil
}

// The layouts ParseTime accepts without a zone, read in the given location.
var localLayouts = []string{
	"2006-01-02",
	"2006-01-02 15:04",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04",
	"2006-01-02T15:04:05",
}

// EarliestTime is the earliest time the bank takes as input. No bank holds
// anything older, so an earlier date is a typo; and Go's zero time (year
// 1) stands for "not given" throughout the bank (a deposit's start is then
// now, its end never), so a date the operator typed must never be read as
// one.
var EarliestTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// checkGiven refuses a time that was given (not zero) but is before
// EarliestTime; what names it in the message.
func checkGiven(what string, t time.Time) error {
	if t.IsZero() || !t.Before(EarliestTime) {
		return nil
	}
	return tooEarly(what, t.UTC().Format(time.RFC3339))
}

func tooEarly(what, t string) error {
	return fmt.Errorf("%w: %s %s is before %s, earlier than any bank: a typo in the year?", ErrInvalid, what, t, EarliestTime.Format(time.DateOnly))
}

var relativeTime = regexp.MustCompile(`^now([+-])([0-9]{1,9})([smhdw])$`)

// ParseTime reads a point in time: "now", "now-2h", "now+30d" (units s, m,
// h, d, w), RFC 3339 ("2026-11-22T05:00:00Z"), or a local date or date and
// time ("2026-11-22", "2026-11-22 14:30"), read in loc. The result is UTC,
// and never before EarliestTime.
func ParseTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	t, err := parseTime(s, now, loc)
	if err == nil && t.Before(EarliestTime) {
		return time.Time{}, tooEarly("time", Excerpt(s))
	}
	return t, err
}

func parseTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if s == "now" {
		return now.UTC(), nil
	}
	if m := relativeTime.FindStringSubmatch(s); m != nil {
		n, _ := strconv.ParseInt(m[2], 10, 64) // nine digits always fit
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[3]]
		d := time.Duration(n) * unit
		if d/unit != time.Duration(n) {
			return time.Time{}, fmt.Errorf("%w: time %s is too far from now", ErrInvalid, Excerpt(s))
		}
		if m[1] == "-" {
			d = -d
		}
		return now.Add(d).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: time %s: use now, now-2h, now+30d, 2026-11-22, \"2026-11-22 14:30\" or RFC 3339 (2026-11-22T14:30:00Z)", ErrInvalid, Excerpt(s))
}

// ParseEnd is ParseTime that also takes "never" (or "infinity") for an
// allocation without an end, returned as the zero time.
func ParseEnd(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if s == "never" || s == "infinity" {
		return time.Time{}, nil
	}
	return ParseTime(s, now, loc)
}
