package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
)

// WriteStatement writes a statement as Gold's gstatement shows it: the
// summary, then the credit detail and the debit detail. Aligned, each
// detail is a table under its title; -P and CSV have no titles, and one
// table of details whose lines start with their section, credit or debit.
func WriteStatement(w io.Writer, f Format, st ledger.Statement, p int32, summarized bool) error {
	summary := Table{Headers: []string{"Field", "Value"}}
	summary.Add("Account", st.Account)
	summary.Add("Period start", LocalTime(st.From))
	summary.Add("Period end", LocalTime(st.To))
	summary.Add("Beginning balance", Amount(st.Beginning, p))
	summary.Add("Total credits", Amount(st.Credits, p))
	summary.Add("Total debits", Amount(st.Debits.Neg(), p))
	summary.Add("Ending balance", Amount(st.Ending, p))
	if err := Write(w, f, summary); err != nil {
		return err
	}
	// Aligned, each detail is a table of its own under its title; -P and
	// CSV have one table with the header once, the section a column, so
	// that the header does not repeat as a line of the data (an empty
	// credit section used to leave two header lines in a row).
	headers := []string{"Section", "Entry", "Time", "Kind", "Count", "Amount", "Allocations", "Ref", "Actor", "Description"}
	if summarized {
		headers = []string{"Section", "Kind", "Count", "Amount"}
	}
	details := Table{Headers: headers}
	for _, part := range []struct {
		title string
		lines []ledger.StatementLine
	}{{"Credit detail", st.CreditLines}, {"Debit detail", st.DebitLines}} {
		if f == Aligned {
			fmt.Fprintf(w, "\n%s\n", part.title)
			details = Table{Headers: headers[1:]}
		}
		for _, line := range part.lines {
			ids := make([]string, len(line.Allocations))
			for i, id := range line.Allocations {
				ids[i] = strconv.FormatUint(id, 10)
			}
			cells := []string{strconv.FormatUint(line.Seq, 10), LocalTime(line.Time), string(line.Kind), strconv.Itoa(line.Count), Amount(line.Amount, p), strings.Join(ids, ","), line.Ref, line.Actor, line.Description}
			if summarized {
				cells = []string{string(line.Kind), strconv.Itoa(line.Count), Amount(line.Amount, p)}
			}
			if f != Aligned {
				cells = append([]string{strings.ToLower(strings.Fields(part.title)[0])}, cells...)
			}
			details.Add(cells...)
		}
		if f == Aligned {
			if err := Write(w, f, details); err != nil {
				return err
			}
		}
	}
	if f != Aligned {
		return Write(w, f, details)
	}
	return nil
}
