package main

import (
	"encoding/json"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/internal/report"
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
	if f == formatJSON {
		return writeJSON(w, t.data)
	}
	return report.Write(w, f.text(), report.Table{Headers: t.headers, Rows: t.rows})
}

// text is the report format of a text output format (not formatJSON).
func (f format) text() report.Format {
	switch f {
	case formatParsable:
		return report.Parsable
	case formatCSV:
		return report.CSV
	}
	return report.Aligned
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// amount, localTime and endTime show amounts and times as every report
// does (package report).
var (
	amount    = report.Amount
	localTime = report.LocalTime
	endTime   = report.EndTime
)

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
