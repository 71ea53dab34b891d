package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Format is how a table is written.
type Format int

const (
	// Aligned is columns padded with spaces, for a terminal.
	Aligned Format = iota
	// Parsable is fields separated by '|' under a header line (-P).
	Parsable
	// CSV is comma-separated values (RFC 4180) under a header line.
	CSV
)

// Table is rows of text cells under headers.
type Table struct {
	Headers []string
	Rows    [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write writes the table in format f, its cells escaped.
func Write(w io.Writer, f Format, t Table) error {
	rows := escapedRows(t.Rows, f == Parsable)
	switch f {
	case CSV:
		for _, r := range rows {
			for j, cell := range r {
				r[j] = inertCell(cell)
			}
		}
		cw := csv.NewWriter(w)
		cw.Write(t.Headers)
		cw.WriteAll(rows) // flushes; the error is the first write's
		return cw.Error()
	case Parsable:
		for _, cells := range append([][]string{t.Headers}, rows...) {
			if _, err := fmt.Fprintln(w, strings.Join(cells, "|")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Headers, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// escapedRows are rows whose control characters (a bank made before
// bodies were checked may hold some, in a name or a description), and in
// -P output '|' (the separator), are written as Go escapes.
func escapedRows(rows [][]string, parsable bool) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(r))
		for j, cell := range r {
			out[i][j] = escapeCell(cell, parsable)
		}
	}
	return out
}

func escapeCell(s string, parsable bool) string {
	special := func(r rune) bool {
		return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError || (parsable && r == '|')
	}
	if !strings.ContainsFunc(s, special) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !special(r):
			b.WriteRune(r)
		case r == '|':
			b.WriteString(`\x7c`)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// signedNumber is a cell that is a number, such as a negative balance:
// a spreadsheet reads it as the number it is, never as a formula.
var signedNumber = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?$`)

// inertCell is a CSV cell that a spreadsheet shows as the text it is. A
// cell beginning with '=', '+', '-' or '@' (or a tab or carriage return,
// which escapeCell has already written as text) would be taken for a
// formula, and a description such as =HYPERLINK(...) would run in the
// spreadsheet of whoever opens a statement: OWASP's rule for CSV
// injection prefixes such a cell with a single quote, which spreadsheets
// hide. Numbers stay numbers.
func inertCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || signedNumber.MatchString(s) {
		return s
	}
	return "'" + s
}

// Amount shows an amount with the bank's precision (decimal places).
func Amount(d decimal.Decimal, precision int32) string { return d.StringFixedBank(precision) }

// Grouped shows an amount as Amount does, with its whole part in groups
// of three digits ("83,547,714.00"): for people, where Amount is for
// scripts and spreadsheets.
func Grouped(d decimal.Decimal, precision int32) string {
	s := Amount(d, precision)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// LocalTime shows a stored (UTC) time in the local zone; zero is "-".
func LocalTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// EndTime shows an allocation's end, where zero means it never ends.
func EndTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return LocalTime(t)
}
