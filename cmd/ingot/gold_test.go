package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestGoldEndToEnd: `ingot serve --gold-listen` on a real loopback socket,
// driven by a client written from the specification (goldClient) as Maui
// and Gold's staff commands would: a job reserved, charged incrementally
// and finally, quoted (with and without the funds, cost only, guaranteed),
// refunded; a deposit; balances, reservations and transactions queried.
// Then, with the server stopped, ingot's own commands on the file give
// the same numbers, the journal names the Gold actors, and the audit is
// clean.
func TestGoldEndToEnd(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("account", "create", "bio")
	b.ok("machine", "add", "hpc1", "--cores", "32")
	b.ok("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	b.ok("deposit", "chem", "100000")
	// More allocations preset than a balance lists: Gold's allocation
	// query (glsalloc) lists them all.
	for i := range ledger.UpcomingListed + 1 {
		b.ok("deposit", "bio", "10", "--start", fmt.Sprintf("now+%dd", i+1))
	}
	maui := goldClient{key: goldKey(t, b, "maui", "--role", "scheduler", "--scope", "hpc1"), actor: "maui", maui: true}
	staff := goldClient{key: goldKey(t, b, "staff", "--role", "admin"), actor: "root"}

	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--gold-listen", "127.0.0.1:0")
	maui.addr = srv.line(t, "gold listening on ")
	staff.addr = maui.addr

	job := func(id, processors string, fields ...string) string {
		return goldData("Job", append([]string{"JobId", id, "MachineName", "hpc1", "UserId", "amy", "Processors", processors}, fields...)...)
	}
	ok := func(g goldClient, count string, action, object string, parts ...string) goldReply {
		t.Helper()
		r, err := g.do(action, object, parts...)
		if err != nil {
			t.Fatalf("%s %s: %v", object, action, err)
		}
		if r.Value != "Success" || r.Code != "000" || count != "" && r.Count != count {
			t.Fatalf("%s %s: %+v; want Success with count %s", object, action, r, count)
		}
		return r
	}
	fails := func(g goldClient, code, says string, action, object string, parts ...string) {
		t.Helper()
		r, err := g.do(action, object, parts...)
		if err != nil {
			t.Fatalf("%s %s: %v", object, action, err)
		}
		if r.Value != "Failure" || r.Code != code || !strings.Contains(r.Message, says) {
			t.Errorf("%s %s: %+v; want Failure %s saying %q", object, action, r, code, says)
		}
	}

	// A job's life, as Maui tells it: 4 processors for an hour held, half
	// an hour charged while it runs, ten minutes more at its end.
	r := ok(maui, "14400", "Reserve", "Job", goldOption("WallDuration", "3600"), job("101", "4"))
	if r.Rows[0]["Reservation.Amount"] != "14400" {
		t.Errorf("reservation %+v", r.Rows)
	}
	ok(maui, "7200", "Charge", "Job", goldOption("Incremental", "True"), job("101", "4", "WallDuration", "1800"))
	ok(maui, "2400", "Charge", "Job", job("101", "4", "WallDuration", "600"))
	fails(maui, "740", "already charged", "Charge", "Job", job("101", "4", "WallDuration", "60"))

	// Quotes: what 8 processors for 1000 s cost; what the account cannot
	// pay (refused as Gold refused it, unless only the cost is asked); a
	// guaranteed quote.
	ok(maui, "8000", "Quote", "Job", job("q1", "8", "WallDuration", "1000"))
	fails(maui, "782", "Insufficient balance to satisfy quotation", "Quote", "Job", job("q2", "32", "WallDuration", "100000"))
	ok(maui, "3200000", "Quote", "Job", goldOption("CostOnly", "True"), job("q2", "32", "WallDuration", "100000"))
	if r := ok(maui, "8000", "Quote", "Job", goldOption("Guarantee", "True"), job("q3", "8", "WallDuration", "1000")); r.Rows[0]["Id"] == "" {
		t.Errorf("guaranteed quote without an id: %+v", r.Rows)
	}

	// Staff: a refund of part of the job, a deposit elsewhere.
	ok(staff, "1000", "Refund", "Job", goldOption("Amount", "1000"), goldData("Job", "JobId", "101"))
	ok(staff, "500", "Deposit", "Account", goldOption("Id", "bio"), goldOption("Amount", "500"))
	fails(maui, "444", "may not", "Deposit", "Account", goldOption("Id", "bio"), goldOption("Amount", "500"))

	// A second job running, then the queries gbalance, glsres and glstxn
	// send.
	ok(maui, "14400", "Reserve", "Job", goldOption("WallDuration", "3600"), job("102", "4"))
	balance := ok(staff, "1", "Query", "Account", goldGet("Name"), goldGet("Amount"), goldGet("Reserved"), goldGet("Balance"), goldGet("CreditLimit"), goldGet("Available"),
		goldOption("UseRules", "True"), goldOption("IncludeAncestors", "True"), goldOption("Project", "chem.lab1"), goldOption("User", "amy"))
	want := map[string]string{"Name": "chem", "Amount": "91400", "Reserved": "14400", "Balance": "77000", "CreditLimit": "0", "Available": "77000"}
	for k, v := range want {
		if balance.Rows[0][k] != v {
			t.Errorf("gbalance %s = %s, want %s (%+v)", k, balance.Rows[0][k], v, balance.Rows[0])
		}
	}
	if r := ok(staff, "1", "Query", "Reservation", goldGet("Name"), goldGet("Amount"), goldWhere("Project", "eq", "chem.lab1")); r.Rows[0]["Name"] != "102" || r.Rows[0]["Amount"] != "14400" {
		t.Errorf("glsres: %+v", r.Rows)
	}
	txns := ok(staff, "4", "Query", "Transaction", goldWhere("JobId", "eq", "101"))
	var actions []string
	for _, row := range txns.Rows {
		actions = append(actions, row["Object"]+" "+row["Action"]+" "+row["Amount"])
	}
	if got := strings.Join(actions, ", "); got != "Job Reserve 14400, Job Charge 7200, Job Charge 2400, Job Refund 1000" {
		t.Errorf("glstxn -J 101: %s", got)
	}
	fails(staff, "315", "Job Modify is not implemented", "Modify", "Job", job("101", "4"))
	preset := 0
	for _, row := range ok(staff, "13", "Query", "Allocation").Rows {
		if row["Active"] == "False" {
			preset++
		}
	}
	if preset != ledger.UpcomingListed+1 {
		t.Errorf("glsalloc lists %d of the %d allocations yet to start", preset, ledger.UpcomingListed+1)
	}

	if err := srv.shutdown(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.stderr.String())
	}
	// ingot's own commands on the file: the same numbers.
	nb := balanceOf(b, "chem")
	for field, got := range map[string]decimal.Decimal{"Amount": nb.Amount, "Reserved": nb.Reserved, "Balance": nb.Balance.Balance, "Available": nb.Available} {
		if got.String() != want[field] {
			t.Errorf("ingot balance chem: %s %s, Gold's query said %s", field, got, want[field])
		}
	}
	var entries []ledger.Entry
	b.json(&entries, "journal", "--node", "chem")
	actors := map[string]bool{}
	for _, e := range entries {
		actors[e.Actor] = true
	}
	if !actors["client:maui gold:maui"] || !actors["client:staff gold:root"] {
		t.Errorf("journal actors %v; want the clients with their Gold actors", actors)
	}
	if out := b.ok("audit"); !strings.Contains(out, "OK") {
		t.Errorf("audit: %s", out)
	}
}

// goldKey adds a client made with --gold and returns its key as Gold's
// auth_key file holds it.
func goldKey(t testing.TB, b *cliBank, name string, flags ...string) string {
	t.Helper()
	return goldKeyOf(t, b.ok(append([]string{"client", "add", name, "--gold"}, flags...)...))
}

// goldKeyOf is the key in Gold's auth_key form that client add --gold
// printed.
func goldKeyOf(t testing.TB, out string) string {
	t.Helper()
	_, after, ok := strings.Cut(out, "# Gold's auth_key file")
	lines := strings.Split(after, "\n")
	if !ok || len(lines) < 2 || lines[1] == "" {
		t.Fatalf("client add --gold printed no auth_key:\n%s", out)
	}
	return lines[1]
}
