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
// detail is a table under its title; -P and CSV have no titles, and each
// detail line starts with its section, credit or debit, instead.
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
	for _, part := range []struct {
		title string
		lines []ledger.StatementLine
	}{{"Credit detail", st.CreditLines}, {"Debit detail", st.DebitLines}} {
		if f == Aligned {
			fmt.Fprintf(w, "\n%s\n", part.title)
		}
		t := Table{Headers: []string{"Section", "Entry", "Time", "Kind", "Count", "Amount", "Allocations", "Ref", "Actor", "Description"}}
		if summarized {
			t.Headers = []string{"Section", "Kind", "Count", "Amount"}
		}
		if f == Aligned {
			t.Headers = t.Headers[1:]
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
			t.Add(cells...)
		}
		if err := Write(w, f, t); err != nil {
			return err
		}
	}
	return nil
}
