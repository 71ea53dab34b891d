package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"
)

// format is how a command prints its result.
type format int

const (
	formatTable format = iota
	formatJSON
	formatParsable
	formatCSV // for the reports that take --csv
)

func outputFormat(c *cli.Context) (format, error) {
	j, p, csv := flagBool(c, "json"), flagBool(c, "parsable"), flagBool(c, "csv")
	switch {
	case j && p, j && csv, p && csv:
		return 0, usageError{"--json, --parsable and --csv exclude each other"}
	case j:
		return formatJSON, nil
	case p:
		return formatParsable, nil
	case csv:
		return formatCSV, nil
	}
	return formatTable, nil
}

// csvFlag is --csv, for the reports people open in a spreadsheet.
func csvFlag() cli.Flag {
	return &cli.BoolFlag{Name: "csv", Usage: "print comma-separated values (RFC 4180) with a header line"}
}

// table is a result as rows under headers; data is what --json prints.
type table struct {
	headers []string
	rows    [][]string
	data    any
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// show writes the table in the command's format.
func show(c *cli.Context, t table) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	return write(c.App.Writer, f, t)
}

func write(w io.Writer, f format, t table) error {
	if f != formatJSON {
		t.rows = escapedRows(t.rows, f == formatParsable)
	}
	switch f {
	case formatJSON:
		return writeJSON(w, t.data)
	case formatCSV:
		cw := csv.NewWriter(w)
		cw.Write(t.headers)
		cw.WriteAll(t.rows) // flushes; the error is the first write's
		return cw.Error()
	case formatParsable:
		lines := append([][]string{t.headers}, t.rows...)
		for _, cells := range lines {
			if _, err := fmt.Fprintln(w, strings.Join(cells, "|")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.headers, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// escapedRows are rows whose control characters (a bank made before
// bodies were checked may hold some, in a name or a description), and in
// -P output '|' (the separator), are written as Go escapes: a stored
// string cannot forge a line in an operator's terminal or a field of -P.
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// amount shows an amount with the bank's precision.
func amount(d decimal.Decimal, precision int32) string { return d.StringFixedBank(precision) }

// localTime shows a stored (UTC) time in the local zone; zero is "-".
func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// endTime shows an allocation's end, where zero means it never ends.
func endTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return localTime(t)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
