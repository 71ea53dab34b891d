package ledger

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
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

// plainDecimal is the bank's one grammar of a decimal number on input,
// whatever the interface (the command line, the JSON API, Gold's
// listener): digits, then optionally a point and more digits. No sign,
// exponent, spaces or separators: "1e3", "+1", ".5" and "1,000" mean
// different things to different readers (a spreadsheet's "1,5" is one and
// a half), and shopspring/decimal, which the API's types decode with,
// takes most of them; so the bank takes only the form that every reader
// reads alike and that the bank itself prints. Sixteen digits before the
// point and eighteen after hold any amount up to MaxAmount at any
// precision, and keep a number far from any engine's numeric limits.
var plainDecimal = regexp.MustCompile(`^[0-9]{1,16}(\.[0-9]{1,18})?$`)

// tooLong is a number in the grammar's form but for more digits before the
// point than it takes: too big, which is what its error must say.
var tooLong = regexp.MustCompile(`^[0-9]{17,}(\.[0-9]+)?$`)

// ParseDecimal reads a decimal number in the bank's one grammar
// (plainDecimal): "100", "12.50", "0.25". what names the number in the
// error. It is the whole of the grammar; what a number may be (positive,
// within the bank's precision, below a bound) is the business of the
// field it fills: ParseAmount and ParseCreditLimit for amounts.
func ParseDecimal(what, s string) (decimal.Decimal, error) {
	if tooLong.MatchString(s) {
		return decimal.Decimal{}, fmt.Errorf("%w: %s %s is above the maximum %s", ErrInvalid, what, Excerpt(s), MaxAmount)
	}
	if !plainDecimal.MatchString(s) {
		return decimal.Decimal{}, fmt.Errorf("%w: %s %s is not a plain decimal number like 100 or 12.50 (digits, optionally a point and more digits; no sign, exponent, spaces or separators)", ErrInvalid, what, Excerpt(s))
	}
	d, err := decimal.NewFromString(s)
	if err != nil { // never: the grammar is a part of what decimal reads
		return decimal.Decimal{}, fmt.Errorf("%w: %s %s: %v", ErrInvalid, what, Excerpt(s), err)
	}
	return d, nil
}

// ParseAmount reads a positive amount such as "100" or "12.50": a plain
// decimal (ParseDecimal) that CheckAmount takes. Signs, exponents,
// separators, zero, more decimal places than the bank's precision, and
// anything above MaxAmount are refused.
func ParseAmount(s string, precision int32) (decimal.Decimal, error) {
	d, err := ParseDecimal("amount", s)
	if err != nil {
		return d, err
	}
	return d, CheckAmount(d, precision)
}

// ParseCreditLimit is ParseAmount that also takes zero (no credit).
func ParseCreditLimit(s string, precision int32) (decimal.Decimal, error) {
	d, err := ParseDecimal("amount", s)
	if err != nil {
		return d, err
	}
	return d, CheckCreditLimit(d, precision)
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
// fine: no credit). Its error says "amount": the caller says which.
func CheckCreditLimit(d decimal.Decimal, precision int32) error {
	if d.IsZero() {
		return nil
	}
	return CheckAmount(d, precision)
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

// CheckText refuses a name or a description that does not print as
// itself: one that is not UTF-8, or holds a control character (C0, DEL,
// C1), which a terminal obeys rather than shows; a format character
// (Unicode's category Cf), which changes how the text around it shows
// without being seen: the bidirectional embeddings, overrides and
// isolates (U+202A..U+202E, U+2066..U+2069) reorder it, so that
// "grant\u202e1202" reads as "grant2021"; the zero-width characters
// (U+200B..U+200F, U+2060, U+FEFF) make two texts that print alike
// differ; or a line or paragraph separator (U+2028, U+2029), which breaks
// a line as a newline does. A bank's records are read in terminals, logs,
// statements, spreadsheets and a web page, and must read the same in
// each: so the bank refuses such text when it is given, on every
// interface, rather than trust every reader to escape it. The price is
// the few scripts that use a zero-width joiner or non-joiner within
// words (Persian, some Indic scripts), and emoji joined by one: such a
// description is written without them. what names the text in the error.
func CheckText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, what)
	}
	for _, r := range s {
		var kind string
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			kind = "control character"
		case unicode.Is(unicode.Cf, r):
			kind = "format character"
		case r == '\u2028':
			kind = "line separator"
		case r == '\u2029':
			kind = "paragraph separator"
		default:
			continue
		}
		return fmt.Errorf("%w: %s holds the %s U+%04X, which would not print as itself", ErrInvalid, what, kind, r)
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
