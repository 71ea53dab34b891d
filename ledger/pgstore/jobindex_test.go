package pgstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// TestJobAndKindIndex: the upgrade to schema 5 lists the entries already
// there under their jobs and kinds; journal --job and --kind read them
// through the index; a full audit finds a job's entry missing from it, or
// listed under another job.
func TestJobAndKindIndex(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	s := pgstoretest.OpenURL(t, url)
	l := bank(t, s) // entries 1-5: chem, hpc1, amy, a deposit, j1's lien
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 30, WallclockLimitSeconds: 60, State: charge.Completed}
	if _, err := lien.New(l).Charge(ctx, ledger.Request{Actor: "test", ID: "6"}, lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: "j1"}, Usage: u}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// The bank as schema 4 left it: no jobs' or kinds' rows.
	pgtest.Exec(t, url, `DELETE FROM journal_nodes WHERE node LIKE 'job %' OR node LIKE 'kind %'`, `DELETE FROM schema_version WHERE version >= 5`)
	s = pgstoretest.OpenURL(t, url)
	l, err := ledger.Open(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seqs := func(f ledger.JournalFilter) []uint64 {
		t.Helper()
		es, err := l.Journal(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	if got := seqs(ledger.JournalFilter{Job: "j1"}); !slices.Equal(got, []uint64{6, 7}) {
		t.Errorf("journal of job j1 after the upgrade: entries %v, want 6 and 7", got)
	}
	if got := seqs(ledger.JournalFilter{Kinds: []ledger.Kind{ledger.KindDeposit, ledger.KindMachineAdd}}); !slices.Equal(got, []uint64{3, 5}) {
		t.Errorf("journal of deposits and machines after the upgrade: entries %v, want 3 and 5", got)
	}
	audit := func() []string {
		t.Helper()
		rep, err := l.Audit(ctx, ledger.AuditOptions{Full: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Problems
	}
	if problems := audit(); len(problems) > 0 {
		t.Fatalf("audit after the upgrade: %v", problems)
	}
	for _, damage := range []string{
		`DELETE FROM journal_nodes WHERE node = 'job j1' AND seq = 7`,
		`UPDATE journal_nodes SET node = 'job j2' WHERE node = 'job j1' AND seq = 7`,
	} {
		pgtest.Exec(t, url, damage)
		if problems := audit(); len(problems) != 1 || !strings.HasPrefix(problems[0], "journal index: the entries listed under jobs") {
			t.Errorf("audit after %s: %v", damage, problems)
		}
		pgtest.Exec(t, url, `DELETE FROM journal_nodes WHERE node LIKE 'job %' AND seq = 7`, `INSERT INTO journal_nodes VALUES ('job j1', 7)`)
	}
	if problems := audit(); len(problems) > 0 {
		t.Fatalf("audit with the index mended: %v", problems)
	}
}
