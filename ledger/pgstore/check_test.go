package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// TestCheck: what the engine's check finds that PostgreSQL lets by, each
// damage made with SQL behind the store's back.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		sql  []string
		want string // "" for none
	}{
		{"sound", nil, ""},
		{"head behind the journal", []string{"UPDATE journal_head SET seq = seq - 1"}, "journal head: it names entry 5, and the newest entry is 6"},
		{"head's hash not the entry's", []string{"UPDATE journal_head SET hash = sha256('x')"}, "journal head: its hash"},
		{"an entry gone", []string{"DELETE FROM journal_nodes WHERE seq = 2", "DELETE FROM journal WHERE seq = 2"}, "journal: it holds 5 entries numbered 1 to 6"},
		{"counter behind", []string{"UPDATE counters SET value = 0 WHERE name = 'liens'"}, "counter liens is at 0, below the id 1 it gave"},
		{"lien not listed active", []string{"UPDATE liens SET active = false"}, "lien 1: it is listed as lien 1 of account chem, job j1 on hpc1, active false"},
		{"lien listed with another expiry", []string{"UPDATE liens SET expires_ns = expires_ns + 1"}, "lien 1: it is listed"},
		{"node under another name", []string{"UPDATE nodes SET name = 'chemx' WHERE name = 'chem'"}, "node chemx is stored as chem"},
		{"allocation under another account", []string{"UPDATE allocations SET account = 'bio'"}, "allocation 1 is listed under account bio, its record says chem"},
		{"constraint not validated", []string{"ALTER TABLE liens ADD CONSTRAINT positive CHECK (id > 0) NOT VALID"}, "constraint liens.positive is not validated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.DB(t)
			s := pgstoretest.OpenURL(t, url)
			defer s.Close()
			bank(t, s)
			pgtest.Exec(t, url, tc.sql...)
			problems, err := s.Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && len(problems) > 0 {
				t.Errorf("problems in a sound bank: %q", problems)
			}
			if tc.want != "" && (len(problems) == 0 || !strings.HasPrefix(problems[0], tc.want)) {
				t.Errorf("problems %q, want %q", problems, tc.want)
			}
		})
	}
}

// TestReferences: a finished lien and a charge are kept as references to
// the journal entry that carries them (no document), read back whole; the
// check finds a reference's columns that its entry contradicts, or an
// entry it names gone.
func TestReferences(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		sql  []string
		want string // "" for none
	}{
		{"sound", nil, ""},
		{"charge listed under another job", []string{"UPDATE charges SET job = 'j2'"}, "charge 1 is listed under job j2 on hpc1; the journal entry that carries it says charge 1 of job j1"},
		{"lien listed under another job", []string{"UPDATE liens SET job = 'j2'"}, "lien 1: it is listed as lien 1 of account chem, job j2"},
		{"the carrier gone", []string{"ALTER TABLE journal_nodes DROP CONSTRAINT journal_nodes_seq_fkey", "DELETE FROM journal WHERE seq = 7"}, "charge 1: it is kept as journal entry 7's, which the journal does not hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.DB(t)
			s := pgstoretest.OpenURL(t, url)
			defer s.Close()
			l := bank(t, s)
			u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 30, WallclockLimitSeconds: 60, State: charge.Completed, Start: ledgertest.Epoch}
			if _, err := lien.New(l).Charge(ctx, ledger.Request{Actor: "test", ID: "6"}, lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: "j1"}, Usage: u}); err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			var refs int
			err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM liens WHERE doc IS NULL AND carrier = 7)
				+ (SELECT count(*) FROM charges WHERE doc IS NULL AND carrier = 7)`).Scan(&refs)
			conn.Close(ctx)
			if err != nil || refs != 2 {
				t.Fatalf("%d of the lien and the charge are kept as references to entry 7, want both (%v)", refs, err)
			}
			if tc.want == "" {
				var got ledger.Charge
				err := l.View(ctx, func(tx ledger.Tx) error {
					cs, err := tx.JobCharges("hpc1", "j1")
					if err == nil && len(cs) == 1 {
						got = cs[0]
					}
					return err
				})
				if err != nil || got.ID != 1 || !got.Amount.Equal(ledgertest.Dec(t, "30")) || len(got.Detail) == 0 {
					t.Errorf("the charge read back: %+v, %v", got, err)
				}
			}
			pgtest.Exec(t, url, tc.sql...)
			problems, err := s.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && len(problems) > 0 {
				t.Errorf("problems in a sound bank: %q", problems)
			}
			if tc.want != "" && (len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), tc.want)) {
				t.Errorf("problems %q, want %q", problems, tc.want)
			}
		})
	}
}

// bank writes a bank of six entries to s: its start, an account, a
// machine, a user, a deposit and a lien of job j1.
func bank(t *testing.T, s ledger.Store) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	if err := ledger.Init(ctx, s, ledger.Settings{Precision: 2}, ledger.Request{Actor: "test"}, ledgertest.Epoch); err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return ledgertest.Epoch }
	l, err := ledger.Open(ctx, s, ledger.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	req := func(id string) ledger.Request { return ledger.Request{Actor: "test", ID: id} }
	steps := []func() error{
		func() error { _, err := l.CreateNode(ctx, req("1"), ledger.NodeSpec{Name: "chem"}); return err },
		func() error { _, err := l.AddMachine(ctx, req("2"), ledger.MachineSpec{Name: "hpc1"}); return err },
		func() error {
			_, err := l.AddUser(ctx, req("3"), ledger.UserSpec{Name: "amy", DefaultProject: "chem", Memberships: []ledger.Membership{{Node: "chem", Role: ledger.RoleMember}}})
			return err
		},
		func() error {
			_, err := l.Deposit(ctx, req("4"), ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(t, "1000")})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lien.New(l).Place(ctx, req("5"), lien.PlaceSpec{Job: lien.Job{Machine: "hpc1", ID: "j1"}, User: "amy",
		Request: charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 60}}); err != nil {
		t.Fatal(err)
	}
	return l
}
