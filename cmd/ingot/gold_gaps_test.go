package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// What Gold's command line could do that ingot's could not (issue 27):
// each test replays what a Gold site's staff did.

// TestCreditLimitOnlyDeposit: gdeposit -L 3000 made an allocation of
// credit alone; its limit can be changed later (gchalloc -L).
func TestCreditLimitOnlyDeposit(t *testing.T) {
	b := newLienSite(t)
	var r ledger.Receipt
	b.json(&r, "deposit", "bio", "0", "--credit-limit", "3000")
	if len(r.Allocations) != 1 || !r.Allocations[0].CreditLimit.Equal(dec(t, "3000")) {
		t.Fatalf("deposit 0 --credit-limit 3000: %+v", r)
	}
	wantBalance(t, b, "bio", "0", "0", "3000")
	id := strconv.FormatUint(r.Allocations[0].ID, 10)
	b.ok("allocation", "modify", id, "--credit-limit", "5000")
	wantBalance(t, b, "bio", "0", "0", "5000")
	b.ok("allocation", "modify", id, "--credit-limit", "0")
	wantBalance(t, b, "bio", "0", "0", "0")
	b.refused(t, exitUsage, "must be greater than zero", "deposit", "bio", "0")
	b.refused(t, exitUsage, "must be greater than zero", "deposit", "bio", "0", "--allocation", id)
	b.refused(t, exitNotFound, "no allocation 99", "allocation", "modify", "99", "--credit-limit", "1")
}

// TestLienModifyEnd: gchres -e moved a reservation's end; ingot's lien
// modify --end moves it later or earlier, and a lien whose end has passed
// stops counting at once.
func TestLienModifyEnd(t *testing.T) {
	b := newLienSite(t)
	b.ok("lien", "place", "M1", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday)
	var l ledger.Lien
	b.json(&l, "lien", "modify", "M1", "--end", "2030-01-08T00:00:00Z")
	if !l.Expires.Equal(time.Date(2030, 1, 8, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("moved later: expires %s", l.Expires)
	}
	wantBalance(t, b, "chem", "200000", "7200", "192800")
	b.json(&l, "lien", "modify", "M1", "--end", "now")
	wantBalance(t, b, "chem", "200000", "0", "200000")
	b.refused(t, exitRefused, "expired", "lien", "modify", "M1", "--end", "2030-01-09T00:00:00Z")
}

// TestExpiredLienListedAsExpired: a lien past its end, not yet swept, is
// listed and shown as expired (balance no longer counts it), not active.
func TestExpiredLienListedAsExpired(t *testing.T) {
	b := newLienSite(t)
	b.ok("policy", "grace", "0")
	b.ok("lien", "place", "E1", "--user", "amy", "--procs", "1", "--wallclock", "1")
	time.Sleep(1100 * time.Millisecond)
	wantBalance(t, b, "chem", "200000", "0", "200000")
	var liens []ledger.Lien
	b.json(&liens, "lien", "list")
	if len(liens) != 1 || liens[0].State != ledger.LienExpired {
		t.Errorf("lien list: %+v", liens)
	}
	if out := b.ok("lien", "show", "E1"); !strings.Contains(out, "State") || !strings.Contains(out, "expired") {
		t.Errorf("lien show:\n%s", out)
	}
}

// TestGuaranteedQuoteRefusedWhenNotCovered: Gold refused a guaranteed
// quote the project could not pay for (782); so does ingot, writing
// nothing.
func TestGuaranteedQuoteRefusedWhenNotCovered(t *testing.T) {
	b := newLienSite(t)
	b.refused(t, exitRefused, "insufficient funds", "quote", "--user", "amy", "--procs", "32", "--wallclock", "10h", "--start", futureMonday, "--guarantee", "--valid-for", "1h")
	var q lien.StoredQuote
	b.json(&q, "quote", "--user", "amy", "--procs", "8", "--wallclock", "1h", "--start", futureMonday, "--guarantee", "--valid-for", "1h")
	wantCredits(t, "a quote the project can pay", q.Amount.Credits, "28800")
}

// TestChargeWithQuoteWithoutLien: gcharge -q charged a job at a
// guaranteed quote's prices though it had no reservation.
func TestChargeWithQuoteWithoutLien(t *testing.T) {
	b := newLienSite(t)
	var q lien.StoredQuote
	b.json(&q, "quote", "--user", "amy", "--procs", "8", "--wallclock", "1h", "--start", futureMonday, "--guarantee", "--valid-for", "1h")
	b.ok("rate", "add", "VBR", "Processors", "2")
	id := strconv.FormatUint(q.ID, 10)
	var charged lien.ChargeResult
	b.json(&charged, "charge", "Q1", "--user", "amy", "--procs", "8", "--wallclock-used", "1h", "--start", pastMonday, "--quote", id)
	wantCredits(t, "charge at the quote's prices", charged.Charge.Amount, "28800")
	var qs []lien.StoredQuote
	b.json(&qs, "quote", "list")
	if len(qs) != 1 || qs[0].Used != 1 {
		t.Errorf("quote list = %+v", qs)
	}
	b.refused(t, exitRefused, "used up", "charge", "Q2", "--user", "amy", "--procs", "8", "--wallclock-used", "1h", "--start", pastMonday, "--quote", id)
}

// TestJournalByJob: glstxn -J listed a job's transactions.
func TestJournalByJob(t *testing.T) {
	b := newLienSite(t)
	b.ok("lien", "place", "J1", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday)
	b.ok("lien", "place", "J2", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday)
	b.ok("charge", "J1", "--procs", "2", "--wallclock-used", "30m", "--start", pastMonday)
	var entries []ledger.Entry
	b.json(&entries, "journal", "--job", "J1")
	var kinds []string
	for _, e := range entries {
		kinds = append(kinds, string(e.Kind)+" "+e.Ref)
	}
	if got := strings.Join(kinds, ", "); got != "lien_place J1, charge J1" {
		t.Errorf("journal --job J1: %s", got)
	}
}

// TestRefundByJob: grefund -J refunded a job, not a charge id.
func TestRefundByJob(t *testing.T) {
	b := newLienSite(t)
	b.ok("lien", "place", "R1", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday)
	b.ok("charge", "R1", "--procs", "2", "--wallclock-used", "30m", "--start", pastMonday, "--incremental")
	b.ok("charge", "R1", "--procs", "2", "--wallclock-used", "30m", "--start", "2026-01-05T09:30:00Z")
	var r lien.JobRefund
	b.json(&r, "refund", "--job", "R1", "5000")
	wantCredits(t, "refunded", r.Refunded, "5000")
	if len(r.Charges) != 2 {
		t.Errorf("refund --job R1 5000 took from %d charges: %+v", len(r.Charges), r.Charges)
	}
	b.json(&r, "refund", "--job", "R1")
	wantCredits(t, "the rest refunded", r.Refunded, "2200")
	wantBalance(t, b, "chem", "200000", "0", "200000")
	b.refused(t, exitRefused, "cannot be refunded", "refund", "--job", "R1", "1")
}

// TestAccountShowGoldID: account show gives the number Gold's clients name
// the account by (gdeposit -a N), as a column and in --json.
func TestAccountShowGoldID(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("account", "create", "bio")
	var shown struct {
		Name   string `json:"name"`
		GoldID uint64 `json:"gold_id"`
	}
	b.json(&shown, "account", "show", "bio")
	if shown.Name != "bio" || shown.GoldID != 2 {
		t.Errorf("account show bio --json: %+v, want bio numbered 2", shown)
	}
	if out := b.ok("account", "show", "chem"); !regexp.MustCompile(`(?m)^GoldId\s+1$`).MatchString(out) {
		t.Errorf("account show chem:\n%s\nwant its GoldId 1", out)
	}
}
