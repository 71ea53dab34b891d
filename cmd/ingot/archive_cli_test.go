package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// yearOfHistory makes at path a bank of fourteen months of deposits and
// withdrawals from 2025-01-15 on, made with the clock of those months (so
// that the answers kept for them are past their retention today); the
// deposits are of extra credits more than those of another bank.
func yearOfHistory(t *testing.T, path string, extra int64) {
	t.Helper()
	store, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	yearOfHistoryIn(t, store, extra)
}

// yearOfHistoryIn makes yearOfHistory's bank in store.
func yearOfHistoryIn(t *testing.T, store ledger.Store, extra int64) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2025, 1, 15, 9, 0, 0, 0, time.UTC)
	if err := ledger.Init(ctx, store, ledger.Settings{Precision: 2}, ledger.Request{Actor: "test"}, now); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, store, ledger.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	req := func() ledger.Request { n++; return ledger.Request{Actor: "test", ID: fmt.Sprint("r", n)} }
	for _, name := range []string{"chem", "chem.lab1", "bio"} {
		if _, err := l.CreateNode(ctx, req(), ledger.NodeSpec{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	for month := range 14 {
		for day := range 20 {
			now = time.Date(2025, time.Month(1+month), 1+day, 10, 0, 0, 0, time.UTC)
			for _, account := range []string{"chem", "bio"} {
				if _, err := l.Deposit(ctx, req(), ledger.DepositSpec{Account: account, Amount: decimal.NewFromInt(int64(100+day) + extra)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.Withdraw(ctx, req(), ledger.WithdrawSpec{Account: "chem", Amount: decimal.RequireFromString("12.34")}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// archivedQueries are what TestArchiveThroughCLI asks of a bank before
// and after 2025 is archived.
var archivedQueries = [][]string{
	{"statement", "chem", "--start", "2025-01-01", "--end", "2026-01-01", "--json"},
	{"statement", "chem", "--start", "2025-06-01", "--end", "2026-03-01", "--json"},
	{"statement", "chem", "--start", "2026-01-01", "--end", "2026-03-01", "--json"},
	{"balance", "chem", "--at", "2025-06-10", "--json"},
	{"balance", "chem", "--at", "2026-02-10", "--json"},
	{"journal", "--node", "chem", "--last", "3", "--json"},
}

// answers are the bank's answers to archivedQueries.
func answers(b *cliBank) map[string]string {
	out := map[string]string{}
	for _, q := range archivedQueries {
		out[strings.Join(q, " ")] = b.ok(q...)
	}
	return out
}

// checkArchived checks the answers of a bank whose 2025 is in archive:
// those about 2025 exit 3 naming the archive without --archive, and every
// one is what it was before (want) with it.
func checkArchived(t *testing.T, b *cliBank, archive string, want map[string]string) {
	t.Helper()
	for _, q := range archivedQueries {
		name := strings.Join(q, " ")
		needs := strings.Contains(name, "2025")
		got, code := b.run(q...)
		switch {
		case needs && (code != exitNotFound || !strings.Contains(got, "--archive") || !strings.Contains(got, filepath.Base(archive))):
			t.Errorf("%s without the archive: exit %d\n%s", name, code, got)
		case !needs && (code != exitOK || got != want[name]):
			t.Errorf("%s without the archive: exit %d\n%s\nwant\n%s", name, code, got, want[name])
		}
		if got := b.ok(append([]string{"--archive", archive}, q...)...); got != want[name] {
			t.Errorf("%s with the archive:\n%s\nwant\n%s", name, got, want[name])
		}
	}
}

// TestArchiveThroughCLI: docs/operations.md's archiving, as an operator
// runs it: ingot archive moves 2025 into old.db and shrinks the bank's
// file; 2025's statement and balances then need --archive old.db, say so
// without it, and are those of the bank before with it; both files audit
// clean on their own; another bank's archive is refused.
func TestArchiveThroughCLI(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bank.db")
	yearOfHistory(t, path, 0)
	b := onFile(t, path)
	before := answers(b)
	size := fileSize(path)

	archive := filepath.Join(dir, "old.db")
	// Refused, with the bank and the directory left as they were.
	taken := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(taken, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"archive", archive}, exitUsage, "needs --before"},
		{[]string{"archive", "--before", "soonish", archive}, exitUsage, `time "soonish"`},
		{[]string{"archive", "--before", "2024-01-01", archive}, exitUsage, "no entry the bank keeps was made before"},
		{[]string{"archive", "--before", "2026-01-01", taken}, exitRefused, "taken.db exists"},
	} {
		if got, code := b.run(c.args...); code != c.code || !strings.Contains(got, c.says) {
			t.Errorf("ingot %s: exit %d\n%s\nwant exit %d saying %q", strings.Join(c.args, " "), code, got, c.code, c.says)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(raw) {
		t.Errorf("a refused archive changed the bank")
	}
	if _, err := os.Stat(archive); err == nil {
		t.Errorf("a refused archive left %s", archive)
	}
	if mine, _ := os.ReadFile(taken); string(mine) != "mine" {
		t.Errorf("a refused archive changed the file it was given: %q", mine)
	}

	// With a line of progress at every step's report (a step reports every
	// 10,000 entries and the copy at each batch's end), the copy's shows.
	t.Setenv("INGOT_PROGRESS_INTERVAL", "1ns")
	out := b.ok("archive", "--before", "2026-01-01T00:00:00Z", archive)
	t.Logf("%s", out)
	if !strings.Contains(out, "entries 1 to ") || !strings.Contains(out, "compacted from") ||
		!regexp.MustCompile(`(?m)^archive: copy: (\d+) of (\d+) journal entries \(100%\)`).MatchString(out) {
		t.Errorf("archive said:\n%s", out)
	}
	if after := fileSize(path); after >= size {
		t.Errorf("the bank's file is %d bytes after archiving, %d before", after, size)
	}
	b.ok("audit", "--full")
	b.ok("audit")
	if out := (&cliBank{t: t, global: []string{"--db", archive}}).ok("audit", "--full"); !strings.Contains(out, "audit: OK") {
		t.Errorf("the archive's audit:\n%s", out)
	}
	checkArchived(t, b, archive, before)

	other := filepath.Join(dir, "other.db")
	yearOfHistory(t, other, 1)
	(&cliBank{t: t, global: []string{"--db", other}}).ok("archive", "--before", "2026-01-01", filepath.Join(dir, "other-old.db"))
	if got, code := b.run("--archive", filepath.Join(dir, "other-old.db"), "statement", "chem", "--start", "2025-01-01"); code != exitUsage || !strings.Contains(got, "is not this bank's") {
		t.Errorf("another bank's archive: exit %d\n%s", code, got)
	}
	if _, err := os.Stat(archive + ".compact"); err == nil {
		t.Errorf("%s.compact left behind", archive)
	}
}
