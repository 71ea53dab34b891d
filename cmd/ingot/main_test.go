package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// cliBank runs ingot in-process on one bank: a database file, or a server
// (remote_cli_test.go).
type cliBank struct {
	t  testing.TB
	db string
	// global are the flags that name the bank: --db, or --server and
	// --key-file.
	global []string
}

// onFile is the command line on the database file db, whatever the
// environment says of a server.
func onFile(t testing.TB, db string) *cliBank {
	t.Setenv("INGOT_SERVER", "")
	t.Setenv("INGOT_KEY_FILE", "")
	return &cliBank{t: t, db: db, global: []string{"--db", db}}
}

func newCLIBank(t testing.TB) *cliBank {
	b := onFile(t, filepath.Join(t.TempDir(), "bank.db"))
	b.ok("init")
	t.Cleanup(func() {
		if out, code := b.run("audit"); code != exitOK {
			t.Errorf("audit at cleanup exited %d:\n%s", code, out)
		}
	})
	return b
}

// run returns stdout+stderr and the exit code.
func (b *cliBank) run(args ...string) (string, int) {
	var out bytes.Buffer
	code := run(append(append([]string{"ingot"}, b.global...), args...), &out, &out)
	return out.String(), code
}

func (b *cliBank) ok(args ...string) string {
	b.t.Helper()
	out, code := b.run(args...)
	if code != exitOK {
		b.t.Fatalf("ingot %s exited %d:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func (b *cliBank) json(v any, args ...string) {
	b.t.Helper()
	out := b.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		b.t.Fatalf("ingot %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// refused checks that a command exits with code, says what it should, and
// writes nothing to the journal.
func (b *cliBank) refused(t *testing.T, code int, says string, args ...string) {
	t.Helper()
	before := b.entries()
	out, got := b.run(args...)
	if got != code || !strings.Contains(out, says) {
		t.Errorf("exit %d, output %q; want exit %d saying %q", got, out, code, says)
	}
	if after := b.entries(); after != before {
		t.Errorf("refused command wrote %d journal entries", after-before)
	}
}

func (b *cliBank) entries() int {
	b.t.Helper()
	var es []ledger.Entry
	b.json(&es, "journal")
	return len(es)
}

func dec(t *testing.T, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNewUserWalkthrough is the README's walkthrough: accounts, projects,
// two allocations with different ends, transfer, withdraw, balances now and
// earlier, a statement that adds up, and the audit.
func TestNewUserWalkthrough(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem", "-d", "Chemistry")
	b.ok("account", "create", "bio")
	b.ok("project", "create", "chem.lab1", "--quota", "dynamic:0.6")
	b.ok("project", "create", "chem.lab2", "--quota", "dynamic:0.4")
	b.ok("deposit", "chem", "1000", "--end", "now+30d", "-d", "first grant")
	b.ok("deposit", "chem", "500", "--end", "now+365d", "--credit-limit", "50")
	var before []ledger.NodeBalance
	b.json(&before, "balance", "chem")
	time.Sleep(10 * time.Millisecond) // so that --at can name a time between the changes
	mark := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(10 * time.Millisecond)
	b.ok("transfer", "chem", "bio", "1200")
	b.ok("withdraw", "bio", "100.50")

	var now []ledger.NodeBalance
	b.json(&now, "balance")
	want := map[string][2]string{"bio": {"1099.50", "1099.50"}, "chem": {"300", "350"}}
	if len(now) != 2 {
		t.Fatalf("balances = %+v", now)
	}
	for _, nb := range now {
		w := want[nb.Node]
		if !nb.Amount.Equal(dec(t, w[0])) || !nb.Available.Equal(dec(t, w[1])) {
			t.Errorf("%s: amount %s available %s, want %s %s", nb.Node, nb.Amount, nb.Available, w[0], w[1])
		}
	}
	// The transfer took the allocation ending first in full.
	var chem []ledger.NodeBalance
	b.json(&chem, "balance", "chem", "--allocations")
	if a := chem[0].Allocations; len(a) != 2 || !a[0].Amount.IsZero() || !a[1].Amount.Equal(dec(t, "300")) {
		t.Errorf("chem allocations after transfer: %+v", a)
	}
	var then []ledger.NodeBalance
	b.json(&then, "balance", "chem", "--at", mark)
	if !then[0].Amount.Equal(dec(t, "1500")) || !then[0].Amount.Equal(before[0].Amount) {
		t.Errorf("chem at %s: %s, want 1500", mark, then[0].Amount)
	}
	var st ledger.Statement
	b.json(&st, "statement", "chem")
	if !st.Beginning.Add(st.Credits).Sub(st.Debits).Equal(st.Ending) || !st.Ending.Equal(dec(t, "300")) || !st.Credits.Equal(dec(t, "1500")) {
		t.Errorf("statement does not add up: %+v", st)
	}
	// The table forms print the same figures.
	if out := b.ok("balance", "--parsable"); !strings.Contains(out, "chem|300.00|0.00|300.00|50.00|350.00") {
		t.Errorf("parsable balance:\n%s", out)
	}
	if out := b.ok("statement", "bio"); !strings.Contains(out, "Ending balance     1099.50") || !strings.Contains(out, "withdraw") {
		t.Errorf("statement table:\n%s", out)
	}
	if out := b.ok("statement", "bio", "--csv"); !strings.HasPrefix(out, "Field,Value\nAccount,bio\n") || !strings.Contains(out, "Ending balance,1099.50\n") ||
		!strings.Contains(out, "\ndebit,") || !strings.Contains(out, ",withdraw,1,100.50,") {
		t.Errorf("statement --csv:\n%s", out)
	}
	if out := b.ok("audit"); !strings.Contains(out, "audit: OK") {
		t.Errorf("audit output:\n%s", out)
	}
}

// TestRefusals checks that bad input exits with the documented code, says
// why, and writes nothing.
func TestRefusals(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("account", "create", "old")
	b.ok("account", "deactivate", "old")
	b.ok("project", "create", "chem.lab1")
	b.ok("deposit", "chem", "100")
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"zero amount", []string{"deposit", "chem", "0"}, exitUsage, "greater than zero"},
		{"negative amount", []string{"deposit", "chem", "-5"}, exitUsage, "plain decimal number"},
		{"not a number", []string{"deposit", "chem", "ten"}, exitUsage, "plain decimal number"},
		{"too many decimals", []string{"deposit", "chem", "1.005"}, exitUsage, "more than 2 decimal places"},
		{"unknown account", []string{"deposit", "nope", "5"}, exitNotFound, `no node named "nope"`},
		{"inactive account", []string{"deposit", "old", "5"}, exitRefused, "deactivated"},
		{"deposit to a project", []string{"deposit", "chem.lab1", "5"}, exitUsage, "only accounts hold allocations"},
		{"withdraw beyond available", []string{"withdraw", "chem", "100.01"}, exitRefused, "needs 100.01, 100 available"},
		{"transfer beyond available", []string{"transfer", "chem", "old", "500"}, exitRefused, "deactivated"},
		{"end before start", []string{"deposit", "chem", "5", "--start", "2027-01-02", "--end", "2027-01-01"}, exitUsage, "is not after start"},
		{"bad time", []string{"deposit", "chem", "5", "--end", "next tuesday"}, exitUsage, "use now, now-2h"},
		{"duplicate name", []string{"account", "create", "chem"}, exitRefused, "already exists"},
		{"bad characters", []string{"account", "create", "Chem!"}, exitUsage, "lowercase letters"},
		{"project as account", []string{"account", "create", "chem.x"}, exitUsage, "is a project name"},
		{"missing argument", []string{"deposit", "chem"}, exitUsage, "takes 2 argument(s)"},
		{"unknown flag", []string{"deposit", "chem", "5", "--bogus"}, exitUsage, "bogus"},
		{"json and parsable", []string{"balance", "--json", "--parsable"}, exitUsage, "exclude each other"},
		{"bad quota", []string{"project", "create", "chem.lab2", "--quota", "dynamic:1.5"}, exitUsage, "not a fraction"},
		{"reused request id", []string{"deposit", "chem", "7", "--request-id", "r1"}, exitRefused, "different content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "reused request id" {
				b.ok("deposit", "chem", "6", "--request-id", "r1")
			}
			b.refused(t, tc.code, tc.says, tc.args...)
		})
	}
}

func TestRetryWithRequestID(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	first := b.ok("deposit", "chem", "10", "--request-id", "grant-2026-1")
	again := b.ok("deposit", "chem", "10", "--request-id", "grant-2026-1")
	if first != again {
		t.Errorf("retry answered\n%s\nfirst answer was\n%s", again, first)
	}
	var nb []ledger.NodeBalance
	b.json(&nb, "balance", "chem")
	if !nb[0].Amount.Equal(dec(t, "10")) {
		t.Errorf("amount after a retried deposit = %s, want 10", nb[0].Amount)
	}
}

func TestBackupIsAuditedCopy(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "42")
	dest := filepath.Join(t.TempDir(), "copy.db")
	if out := b.ok("backup", dest); !strings.Contains(out, "audit OK") {
		t.Errorf("backup output: %s", out)
	}
	if _, code := b.run("backup", dest); code != exitRefused {
		t.Errorf("backup over an existing file exited %d, want %d", code, exitRefused)
	}
	copyBank := onFile(t, dest)
	var nb []ledger.NodeBalance
	copyBank.json(&nb, "balance", "chem")
	if !nb[0].Amount.Equal(dec(t, "42")) {
		t.Errorf("copy holds %s, want 42", nb[0].Amount)
	}
}

// TestCompactedBackup: a bank whose file has grown free pages is copied
// compacted, smaller, with the same balances and journal, audited.
func TestCompactedBackup(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	for range 60 {
		b.ok("deposit", "chem", "1")
	}
	dir := t.TempDir()
	plain, compacted := filepath.Join(dir, "plain.db"), filepath.Join(dir, "compacted.db")
	b.ok("backup", plain)
	if out := b.ok("backup", "--compact", compacted); !strings.Contains(out, "audit OK") {
		t.Fatalf("backup --compact: %s", out)
	}
	p, _ := os.Stat(plain)
	c, _ := os.Stat(compacted)
	if c.Size() >= p.Size() {
		t.Errorf("the compacted copy has %d bytes, the plain one %d", c.Size(), p.Size())
	}
	for _, args := range [][]string{{"balance", "-P"}, {"journal", "-P"}} {
		if got, want := onFile(t, compacted).ok(args...), onFile(t, plain).ok(args...); got != want {
			t.Errorf("%v differs:\n%s\nwant\n%s", args, got, want)
		}
	}
}

func TestUsersAndMachines(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	b.ok("user", "modify", "amy", "--manager", "chem")
	b.ok("machine", "add", "hpc1", "--cores", "64", "--memory-mb", "256000")
	b.ok("machine", "modify", "hpc1", "--gpus", "4")
	var users []ledger.User
	b.json(&users, "user", "list")
	if len(users) != 1 || users[0].RoleIn("chem.lab1") != ledger.RoleMember || users[0].RoleIn("chem") != ledger.RoleManager {
		t.Errorf("users = %+v", users)
	}
	var ms []ledger.Machine
	b.json(&ms, "machine", "list")
	if len(ms) != 1 || ms[0].Shape != (ledger.Shape{Cores: 64, MemoryMB: 256000, GPUs: 4}) {
		t.Errorf("machines = %+v", ms)
	}
	if out := b.ok("machine", "list", "--parsable"); !strings.Contains(out, "hpc1|yes|64|256000|4|") {
		t.Errorf("parsable machines:\n%s", out)
	}
}

func TestNoDatabase(t *testing.T) {
	var out bytes.Buffer
	t.Setenv("INGOT_DB", "")
	if code := run([]string{"ingot", "balance"}, &out, &out); code != exitUnavailable || !strings.Contains(out.String(), "--db") {
		t.Errorf("exit %d: %s", code, out.String())
	}
	out.Reset()
	missing := filepath.Join(t.TempDir(), "none.db")
	if code := run([]string{"ingot", "--db", missing, "balance"}, &out, &out); code != exitUnavailable || !strings.Contains(out.String(), "ingot init") {
		t.Errorf("exit %d: %s", code, out.String())
	}
}

func TestInterspersedFlags(t *testing.T) {
	app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	for _, tc := range []struct{ in, want string }{
		{"ingot deposit chem 100 --end 2027-01-01 -d x", "ingot deposit --end 2027-01-01 -d x chem 100"},
		{"ingot --json deposit chem 100", "ingot --json deposit chem 100"},
		{"ingot deposit chem -5", "ingot deposit chem -5"},
		{"ingot account create chem --any-user -d y", "ingot account create --any-user -d y chem"},
		{"ingot deposit chem 5 -- --end", "ingot deposit -- chem 5 --end"},
		{"ingot deposit chem -- -5", "ingot deposit -- chem -5"},
		{"ingot balance chem --at=now-1h", "ingot balance --at=now-1h chem"},
	} {
		if got := strings.Join(interspersed(app, strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestOutputEscapesControlCharacters: a description holding control
// characters (kept by a bank from before descriptions were checked on
// input, made here through the ledger, which takes a description as it is
// given) is shown escaped in tables and -P, so that it cannot forge a line
// in an operator's terminal or a field of -P.
func TestOutputEscapesControlCharacters(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	store, err := boltstore.Open(b.db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Deposit(context.Background(), ledger.Request{Actor: "test", ID: "before-the-check"},
		ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(10), Description: "grant\x1b[2K\rforged|field\nline"})
	if err := errors.Join(err, store.Close()); err != nil {
		t.Fatal(err)
	}
	for _, format := range [][]string{nil, {"-P"}} {
		out := b.ok(append([]string{"journal", "--kind", "deposit"}, format...)...)
		if strings.ContainsAny(out, "\x1b\r") || strings.Count(out, "\n") != 2 {
			t.Errorf("journal %v printed a control character raw:\n%q", format, out)
		}
		want := `grant\x1b[2K\rforged|field\nline`
		if format != nil {
			want = `grant\x1b[2K\rforged\x7cfield\nline`
		}
		if !strings.Contains(out, want) {
			t.Errorf("journal %v does not show the description escaped:\n%q", format, out)
		}
	}
}

// TestFlagsWinOverTheEnvironment: a flag on the command line, before or
// after the command's name, wins over the environment's variable, so a
// change never goes to the bank the environment names when the command
// line names another.
func TestFlagsWinOverTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	for _, db := range []string{a, b} {
		onFile(t, db).ok("init")
	}
	t.Setenv("INGOT_DB", a)
	for _, args := range [][]string{
		{"ingot", "--db", b, "account", "create", "before"},
		{"ingot", "account", "create", "--db", b, "after"},
		{"ingot", "account", "create", "envonly"},
	} {
		var out strings.Builder
		if code := run(args, &out, &out); code != exitOK {
			t.Fatalf("%q: exit %d\n%s", args, code, &out)
		}
	}
	names := func(db string) string {
		var nodes []ledger.Node
		onFile(t, db).json(&nodes, "account", "list")
		var got []string
		for _, n := range nodes {
			got = append(got, n.Name)
		}
		return strings.Join(got, ",")
	}
	// quote and charge have subcommands and an action: their flags too.
	t.Setenv("INGOT_DB", filepath.Join(dir, "missing.db"))
	var out strings.Builder
	if code := run([]string{"ingot", "--db", b, "quote", "--user", "nobody", "--procs", "1", "--wallclock", "1h"}, &out, &out); !strings.Contains(out.String(), "the bank has no machine") {
		t.Errorf("quote with --db before it did not read that bank: exit %d, %s", code, &out)
	}
	t.Setenv("INGOT_DB", a)
	if got := names(a); got != "envonly" {
		t.Errorf("the environment's bank holds %q, want envonly", got)
	}
	if got := names(b); got != "after,before" {
		t.Errorf("the command line's bank holds %q, want after,before", got)
	}
}
