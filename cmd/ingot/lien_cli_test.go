package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// The in-process CLI runs on the real clock, and the walkthrough's rate
// table has night and weekend windows, so every price that depends on the
// time of day is anchored at an explicit Monday-morning start (UTC, the
// table's zone). Liens start in the future: a lien holds credits only until
// its start + limit + grace, so one placed in the past would hold nothing.
const (
	pastMonday   = "2026-01-05T09:00:00Z"
	futureMonday = "2030-01-07T09:00:00Z"
)

// newLienSite is a bank with account chem (200000 credits) and its project
// chem.lab1, account bio (empty), user amy (member of chem.lab1, her
// default project) and one machine, hpc1, with the node shape of
// docs/charge-policies.md.
func newLienSite(t *testing.T) *cliBank {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("account", "create", "bio")
	b.ok("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	b.ok("machine", "add", "hpc1", "--cores", "32", "--memory-mb", "128000", "--gpus", "4")
	b.ok("deposit", "chem", "200000")
	return b
}

// balanceOf is one node's balance, from `balance NODE --json`.
func balanceOf(b *cliBank, node string) ledger.NodeBalance {
	b.t.Helper()
	var nbs []ledger.NodeBalance
	b.json(&nbs, "balance", node)
	if len(nbs) != 1 {
		b.t.Fatalf("balance %s: %+v", node, nbs)
	}
	return nbs[0]
}

func wantBalance(t *testing.T, b *cliBank, node, amount, reserved, available string) {
	t.Helper()
	nb := balanceOf(b, node)
	if !nb.Amount.Equal(dec(t, amount)) || !nb.Reserved.Equal(dec(t, reserved)) || !nb.Available.Equal(dec(t, available)) {
		t.Errorf("%s: amount %s reserved %s available %s; want %s %s %s", node, nb.Amount, nb.Reserved, nb.Available, amount, reserved, available)
	}
}

func wantCredits(t *testing.T, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(dec(t, want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// jobA is job A of docs/charge-policies.md as the lien requests it: 8
// processors for a 7200 s limit.
func jobA(id string) []string {
	return []string{"lien", "place", id, "--user", "amy", "--procs", "8", "--wallclock", "7200", "--start", futureMonday}
}

// jobAUsage is job A's usage: 3600 s of its 7200 s limit, 14400 CPU
// seconds, completed, on a Monday morning.
func jobAUsage(id string) []string {
	return []string{"charge", id, "--procs", "8", "--wallclock-used", "1h", "--wallclock-limit", "2:00:00", "--cpu-seconds", "14400",
		"--start", pastMonday, "--state", "completed"}
}

// TestLienWalkthrough is the walkthrough through the command line:
// rates with a QOS multiplier and a night discount, a quote, a lien that
// moves Reserved and Available, charges under two policies matching
// docs/charge-policies.md, a refusal for lack of credits, a fallback
// account, a chargeable reservation through a flush and its end, and
// refunds; the audit passes after each step.
func TestLienWalkthrough(t *testing.T) {
	b := newLienSite(t)
	audit := func(step string) {
		t.Helper()
		if out, code := b.run("audit"); code != exitOK {
			t.Fatalf("audit after %s exited %d:\n%s", step, code, out)
		}
	}

	// Rates: premium QOS costs double, nights half, weekends 0.8.
	b.ok("rate", "add", "NBM", "QualityOfService=premium", "2")
	b.ok("rate", "add", "nbm", "qualityofservice=*", "1", "-d", "any other QOS")
	b.ok("rate", "window", "add", "night", "--start", "20:00", "--end", "06:00", "--multiplier", "0.5")
	b.ok("rate", "window", "add", "weekend", "--days", "Sat,Sun", "--multiplier", "0.8")
	list := b.ok("rate", "list", "--parsable")
	for _, want := range []string{
		"rate|VBR|Processors||1|1 credit per processor-second", "rate|NBM|QualityOfService|premium|2|",
		"rate|NBM|QualityOfService|*|1|any other QOS", "time|night|20:00|06:00|0.5|UTC", "day|weekend|Saturday,Sunday|0.8|UTC",
	} {
		if !strings.Contains(list, want) {
			t.Errorf("rate list lacks %q:\n%s", want, list)
		}
	}
	var rates charge.RateTable
	b.json(&rates, "rate", "list")
	if len(rates.Rates) != 3 || len(rates.TimeOfDay) != 1 || len(rates.DaysOfWeek) != 1 || rates.Precision != 2 {
		t.Errorf("rate list --json = %+v", rates)
	}
	audit("rates")

	// Quotes: premium doubles; a Saturday night is under both windows (× 0.4).
	var q lien.QuoteResult
	b.json(&q, "quote", "--user", "amy", "--procs", "8", "--wallclock", "2h", "--qos", "premium", "--start", futureMonday)
	wantCredits(t, "premium quote", q.Amount.Credits, "115200")
	if q.Project != "chem.lab1" {
		t.Errorf("quote project = %s", q.Project)
	}
	b.json(&q, "quote", "--user", "amy", "--procs", "1", "--wallclock", "1h", "--start", "2030-01-05T22:00:00Z")
	wantCredits(t, "Saturday-night quote", q.Amount.Credits, "1440")
	if out := b.ok("quote", "--user", "amy", "--procs", "8", "--wallclock", "2h", "--qos", "premium", "--start", futureMonday); !strings.Contains(out, "NBM QualityOfService=premium: 1 × 2 = 2") ||
		!strings.Contains(out, "Amount     115200.00") || !strings.Contains(out, "Lien now   granted") {
		t.Errorf("quote explanation:\n%s", out)
	}

	// A lien under DEBITSUCCESSFULWC: job A's request, 8 × 7200.
	b.ok("policy", "set", "DEBITSUCCESSFULWC")
	wantBalance(t, b, "chem", "200000", "0", "200000")
	var placed lien.LienResult
	b.json(&placed, jobA("A1")...)
	wantCredits(t, "lien of A1", placed.Lien.Amount, "57600")
	wantBalance(t, b, "chem", "200000", "57600", "142400")
	audit("lien A1")

	// Charged as job A: 8 × 3600, the rest of the lien released.
	var first lien.ChargeResult
	b.json(&first, jobAUsage("A1")...)
	wantCredits(t, "DEBITSUCCESSFULWC charge of job A", first.Charge.Amount, "28800")
	wantCredits(t, "released", first.Released, "28800")
	if first.Lien == nil || first.Lien.State != ledger.LienSettled {
		t.Errorf("lien after the final charge: %+v", first.Lien)
	}
	wantBalance(t, b, "chem", "171200", "0", "171200")

	// DEBITALLCPU for the project: the same job costs its CPU time.
	b.ok("policy", "set", "debitallcpu", "--project", "chem.lab1")
	var cfg lien.Config
	b.json(&cfg, "policy", "show")
	if cfg.ProjectPolicies["chem.lab1"] != charge.DebitAllCPU || cfg.Policy != charge.DebitSuccessfulWC {
		t.Errorf("policies = %+v", cfg)
	}
	b.ok(jobA("A2")...)
	out := b.ok(jobAUsage("A2")...)
	if !strings.Contains(out, "charge under DEBITALLCPU") || !strings.Contains(out, "Amount                     14400.00") {
		t.Errorf("DEBITALLCPU charge of job A:\n%s", out)
	}
	wantBalance(t, b, "chem", "156800", "0", "156800")
	var removed lien.Config // a fresh one: decoding into cfg would keep its map
	b.json(&removed, "policy", "set", "none", "--project", "chem.lab1")
	if len(removed.ProjectPolicies) != 0 {
		t.Errorf("policy set none left %v", removed.ProjectPolicies)
	}
	audit("charges")

	// Out of credits: 64 × 36000 is refused, naming project, need and available.
	big := []string{"lien", "place", "BIG", "--user", "amy", "--procs", "64", "--wallclock", "10h", "--start", futureMonday}
	b.refused(t, exitRefused, "project chem.lab1 needs 2304000, 156800 available", big...)

	// With a fallback, bio takes the job and the answer says so.
	b.ok("deposit", "bio", "3000000")
	b.ok("policy", "fallback", "bio", "--project", "chem.lab1")
	if out := b.ok(big...); !strings.Contains(out, "fell back from chem.lab1 to bio") {
		t.Errorf("fallback lien:\n%s", out)
	}
	wantBalance(t, b, "bio", "3000000", "2304000", "696000")
	wantBalance(t, b, "chem", "156800", "0", "156800")
	if out := b.ok(big...); !strings.Contains(out, "job BIG already had lien") {
		t.Errorf("placing again:\n%s", out)
	}
	var shown ledger.Lien
	b.json(&shown, "lien", "show", "BIG")
	if shown.Project != "bio" || len(shown.Holds) != 1 {
		t.Errorf("lien show BIG = %+v", shown)
	}
	b.ok("lien", "release", "BIG")
	wantBalance(t, b, "bio", "3000000", "0", "3000000")
	audit("fallback")

	// A reservation of 4 processors for two hours: a job used 2 of them for
	// the first hour, jobs still running report 3600 more; the rest is idle.
	b.ok("reservation", "add", "res1", "--procs", "4", "--start", "2026-01-05T10:00:00Z", "--end", "2026-01-05T12:00:00Z", "--user", "amy")
	var inside lien.ChargeResult
	b.json(&inside, "charge", "R1", "--user", "amy", "--procs", "2", "--wallclock-used", "3600", "--start", "2026-01-05T10:00:00Z", "--reservation", "res1")
	wantCredits(t, "job inside the reservation", inside.Charge.Amount, "7200")
	var flushed lien.FlushResult
	b.json(&flushed, "reservation", "flush", "res1", "--running-proc-seconds", "3600")
	if flushed.IdleSeconds != 4*7200-7200-3600 || flushed.Charge == nil {
		t.Fatalf("flush = %+v", flushed)
	}
	wantCredits(t, "idle charge", flushed.Charge.Charge.Amount, "18000")
	var ended lien.FlushResult
	b.json(&ended, "reservation", "end", "res1")
	if !ended.Reservation.Ended || ended.Charge != nil || ended.Reservation.Flushes != 1 {
		t.Errorf("end = %+v", ended)
	}
	if out, code := b.run("reservation", "flush", "res1"); code != exitRefused || !strings.Contains(out, "unknown or ended") {
		t.Errorf("flush after the end: exit %d\n%s", code, out)
	}
	wantBalance(t, b, "chem", "131600", "0", "131600")
	audit("reservation")

	// Refunds: part of job A's first charge, not more than is left, then the rest.
	id := strconv.FormatUint(first.Charge.ID, 10)
	var refunded ledger.Charge
	b.json(&refunded, "refund", id, "800", "-d", "node trouble")
	wantCredits(t, "refunded", refunded.Refunded, "800")
	b.refused(t, exitRefused, "30000 cannot be refunded", "refund", id, "30000")
	b.json(&refunded, "refund", id)
	wantCredits(t, "refunded in all", refunded.Refunded, "28800")
	wantBalance(t, b, "chem", "160400", "0", "160400")
	var charges []ledger.Charge
	b.json(&charges, "charge", "list", "A1")
	if len(charges) != 1 || !charges[0].Refunded.Equal(dec(t, "28800")) {
		t.Errorf("charge list A1 = %+v", charges)
	}
	audit("refunds")
}

// TestLienRefusals checks that bad or refused requests exit with the
// documented code, say why, and write nothing.
func TestLienRefusals(t *testing.T) {
	b := newLienSite(t)
	b.ok("machine", "add", "hpc2", "--cores", "16")
	b.ok("user", "add", "bob", "--member", "chem.lab1") // no default project
	b.ok("charge", "J0", "--machine", "hpc1", "--user", "amy", "--procs", "1", "--wallclock-used", "100", "--start", pastMonday)
	place := func(extra ...string) []string {
		return append([]string{"lien", "place", "J1", "--machine", "hpc1", "--user", "amy"}, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"negative procs", place("--procs", "-5", "--wallclock", "1h"), exitUsage, "--procs -5: want 1 to"},
		{"absurd procs", place("--procs", "100000000", "--wallclock", "1h"), exitUsage, "--procs 100000000"},
		{"no procs", place("--wallclock", "1h"), exitUsage, "--procs is required"},
		{"bad wallclock", place("--procs", "8", "--wallclock", "1h30x"), exitUsage, `--wallclock "1h30x"`},
		{"negative wallclock", place("--procs", "8", "--wallclock", "-1h"), exitUsage, "want 0 to"},
		{"no wallclock", place("--procs", "8"), exitUsage, "--wallclock is required"},
		{"bad license", place("--procs", "8", "--wallclock", "1h", "--license", "matlab=lots"), exitUsage, "NAME=COUNT"},
		{"unknown machine", []string{"lien", "place", "J1", "--machine", "nope", "--user", "amy", "--procs", "8", "--wallclock", "1h"}, exitNotFound, `no machine named "nope"`},
		{"machine left out among two", []string{"lien", "place", "J1", "--user", "amy", "--procs", "8", "--wallclock", "1h"}, exitUsage, "2 machines (hpc1, hpc2)"},
		{"unknown user", []string{"lien", "place", "J1", "--machine", "hpc1", "--user", "zed", "--procs", "8", "--wallclock", "1h"}, exitNotFound, `no user named "zed"`},
		{"not a member", place("--project", "bio", "--procs", "8", "--wallclock", "1h"), exitRefused, "may not use bio"},
		{"unknown quote", place("--procs", "8", "--wallclock", "1h", "--quote", "999"), exitRefused, "no quote 999"},
		{"unknown policy", []string{"policy", "set", "DEBITSOMETIMES"}, exitUsage, "unknown charge policy"},
		{"policy for an unknown machine", []string{"policy", "set", "DEBITALLWC", "--machine", "nope"}, exitNotFound, `no machine named "nope"`},
		{"policy for machine and project", []string{"policy", "set", "DEBITALLWC", "--machine", "hpc1", "--project", "chem.lab1"}, exitUsage, "not both"},
		{"unknown fallback", []string{"policy", "fallback", "nowhere"}, exitNotFound, `no node named "nowhere"`},
		{"grace beyond a week", []string{"policy", "grace", "8d"}, exitUsage, "want a Go duration"},
		{"grace beyond a week in hours", []string{"policy", "grace", "200h"}, exitUsage, "between 0 and a week"},
		{"charge with no lien and no user", []string{"charge", "J2", "--machine", "hpc1", "--procs", "1", "--wallclock-used", "60"}, exitUsage, "must name the user"},
		{"charge with no lien and no project", []string{"charge", "J2", "--machine", "hpc1", "--user", "bob", "--procs", "1", "--wallclock-used", "60"}, exitRefused, "no default project"},
		{"charge with a bad state", []string{"charge", "J2", "--machine", "hpc1", "--user", "amy", "--procs", "1", "--wallclock-used", "60", "--state", "exploded"}, exitUsage, "unknown exit state"},
		{"charge again", []string{"charge", "J0", "--machine", "hpc1", "--user", "amy", "--procs", "1", "--wallclock-used", "100"}, exitRefused, "already charged"},
		{"release without a lien", []string{"lien", "release", "J9", "--machine", "hpc1"}, exitNotFound, "no active lien"},
		{"extend without a lien", []string{"lien", "extend", "J9", "--machine", "hpc1", "--wallclock", "2h"}, exitNotFound, "no active lien"},
		{"reservation ending before its start", []string{"reservation", "add", "r1", "--machine", "hpc1", "--procs", "4", "--user", "amy",
			"--start", "2026-01-05T12:00:00Z", "--end", "2026-01-05T10:00:00Z"}, exitUsage, "end must be after start"},
		{"unknown reservation", []string{"reservation", "end", "r9"}, exitRefused, "unknown or ended"},
		{"refund beyond the charge", []string{"refund", "1", "100.01"}, exitRefused, "100.01 cannot be refunded"},
		{"refund of an unknown charge", []string{"refund", "99", "1"}, exitNotFound, "no charge 99"},
		{"refund with too many decimals", []string{"refund", "1", "0.001"}, exitUsage, "decimal places"},
		{"unknown rate name", []string{"rate", "add", "VBR", "Bananas", "1"}, exitUsage, "charge: unknown rate name"},
		{"negative rate", []string{"rate", "add", "VBR", "GPUs", "-1"}, exitUsage, "charge: negative rate"},
		{"name-based rate without instance", []string{"rate", "add", "NBM", "QualityOfService", "2"}, exitUsage, "needs an instance"},
		{"delete an unknown rate", []string{"rate", "delete", "VBR", "GPUs"}, exitNotFound, "no rate VBR GPUs"},
		{"window without times or days", []string{"rate", "window", "add", "w", "--multiplier", "0.5"}, exitUsage, "--start and --end"},
		{"bad window time", []string{"rate", "window", "add", "w", "--start", "25:00", "--end", "06:00", "--multiplier", "0.5"}, exitUsage, "charge: bad time window"},
		{"unknown zone", []string{"rate", "zone", "Mars/Olympus"}, exitUsage, "charge: unknown time zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.refused(t, tc.code, tc.says, tc.args...)
		})
	}
}

// TestGuaranteedQuote: a guaranteed quote keeps its price when the rates
// change, for as many jobs as it allows.
func TestGuaranteedQuote(t *testing.T) {
	b := newLienSite(t)
	var q lien.StoredQuote
	b.json(&q, "quote", "--user", "amy", "--procs", "8", "--wallclock", "1h", "--start", futureMonday, "--guarantee", "--valid-for", "1h", "--uses", "1")
	wantCredits(t, "guaranteed quote", q.Amount.Credits, "28800")
	b.ok("rate", "add", "VBR", "Processors", "2")
	id := strconv.FormatUint(q.ID, 10)
	var placed lien.LienResult
	b.json(&placed, "lien", "place", "G1", "--user", "amy", "--procs", "8", "--wallclock", "1h", "--start", futureMonday, "--quote", id)
	wantCredits(t, "lien under the quote", placed.Lien.Amount, "28800")
	var charged lien.ChargeResult
	b.json(&charged, "charge", "G1", "--procs", "8", "--wallclock-used", "1h", "--start", pastMonday)
	wantCredits(t, "charge under the quote", charged.Charge.Amount, "28800")
	var qs []lien.StoredQuote
	b.json(&qs, "quote", "list")
	if len(qs) != 1 || qs[0].Used != 1 {
		t.Errorf("quote list = %+v", qs)
	}
	if out, code := b.run("lien", "place", "G2", "--user", "amy", "--procs", "8", "--wallclock", "1h", "--quote", id); code != exitRefused || !strings.Contains(out, "used up") {
		t.Errorf("second use of a one-use quote: exit %d\n%s", code, out)
	}
	var unquoted lien.QuoteResult
	b.json(&unquoted, "quote", "--user", "amy", "--procs", "8", "--wallclock", "1h", "--start", futureMonday)
	wantCredits(t, "quote under the new rates", unquoted.Amount.Credits, "57600")
}

// TestExtendAndIncrementalCharge: an extension re-prices the lien; an
// incremental charge shrinks it and the final one settles it.
func TestExtendAndIncrementalCharge(t *testing.T) {
	b := newLienSite(t)
	b.ok("lien", "place", "L1", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday)
	var extended lien.LienResult
	b.json(&extended, "lien", "extend", "L1", "--wallclock", "02:00:00")
	wantCredits(t, "extended lien", extended.Lien.Amount, "14400")
	wantBalance(t, b, "chem", "200000", "14400", "185600")
	var inc lien.ChargeResult
	b.json(&inc, "charge", "L1", "--procs", "2", "--wallclock-used", "30m", "--start", pastMonday, "--incremental")
	wantCredits(t, "incremental charge", inc.Charge.Amount, "3600")
	if inc.Lien == nil || inc.Lien.State != ledger.LienActive || inc.Charge.Final {
		t.Fatalf("after an incremental charge: %+v", inc)
	}
	wantBalance(t, b, "chem", "196400", "10800", "185600")
	b.ok("charge", "L1", "--procs", "2", "--wallclock-used", "30m", "--start", "2026-01-05T09:30:00Z")
	wantBalance(t, b, "chem", "192800", "0", "192800")
	var liens []ledger.Lien
	b.json(&liens, "lien", "list")
	if len(liens) != 0 {
		t.Errorf("active liens after the final charge: %+v", liens)
	}
	b.json(&liens, "lien", "list", "chem", "--all")
	if len(liens) != 1 || liens[0].State != ledger.LienSettled {
		t.Errorf("lien list --all = %+v", liens)
	}
}

// TestRateTableRoundTrip: what `rate list --json` prints, `rate set` reads
// back unchanged; single changes edit the table in place.
func TestRateTableRoundTrip(t *testing.T) {
	b := newLienSite(t)
	b.ok("rate", "add", "VBR", "GPUs", "10", "-d", "per GPU-second")
	b.ok("rate", "add", "NBF", "Partition=gpu", "100")
	b.ok("rate", "add", "VBR", "GPUs", "12") // replaces
	b.ok("rate", "window", "add", "night", "--start", "22:00", "--end", "06:00", "--multiplier", "0.5")
	b.ok("rate", "window", "add", "night", "--start", "20:00", "--end", "06:00", "--multiplier", "0.6") // replaces
	b.ok("rate", "window", "add", "weekend", "--days", "sat,SUN", "--multiplier", "0.8")
	b.ok("rate", "zone", "Europe/Paris")
	printed := b.ok("rate", "list", "--json")
	file := filepath.Join(t.TempDir(), "rates.json")
	if err := os.WriteFile(file, []byte(printed), 0o600); err != nil {
		t.Fatal(err)
	}
	b.ok("rate", "delete", "NBF", "Partition=GPU")
	b.ok("rate", "window", "delete", "night")
	var edited charge.RateTable
	b.json(&edited, "rate", "list")
	if len(edited.Rates) != 2 || len(edited.TimeOfDay) != 0 || edited.Location != "Europe/Paris" || edited.DaysOfWeek[0].Days[0] != "Saturday" {
		t.Errorf("after deletes: %+v", edited)
	}
	b.ok("rate", "set", file)
	if again := b.ok("rate", "list", "--json"); again != printed {
		t.Errorf("rate set did not round-trip:\n%s\nwant\n%s", again, printed)
	}
	var table charge.RateTable
	b.json(&table, "rate", "list")
	if len(table.Rates) != 3 || !table.Rates[1].Rate.Equal(dec(t, "12")) || !table.TimeOfDay[0].Multiplier.Equal(dec(t, "0.6")) {
		t.Errorf("round-tripped table: %+v", table)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"rates": [{"type": "VBR", "name": "Processors", "rate": "1"}, {"type": "vbr", "name": "processors", "rate": "2"}]}`), 0o600)
	b.refused(t, exitUsage, "charge: duplicate rate", "rate", "set", bad)
}

func TestParseSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"5400", 5400}, {"90m", 5400}, {"1h30m", 5400}, {"0", 0},
		{"90:00", 5400}, {"01:30:00", 5400}, {"1-00", 86400}, {"1-02:03", 93780}, {"1-02:03:04", 93784},
		{"1.5s", -1}, {"-1h", -1}, {"1:60", -1}, {"2-24", -1}, {"1:2:3:4", -1}, {"", -1}, {"1d", -1}, {"x", -1},
		{"3653-00:00:00", -1}, {"99999999999999999999", -1},
	} {
		got, err := parseSeconds(tc.in)
		if (err != nil) != (tc.want < 0) || (err == nil && got != tc.want) {
			t.Errorf("parseSeconds(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
