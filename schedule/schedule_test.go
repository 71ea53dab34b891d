package schedule_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/schedule"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// spent is what chem withdraws in each month (from 0), after the month's
// period is made; the server is stopped in months 4 and 5 (no period is
// made there, nothing is spent) and makes them in month 6.
var spent = []string{"200", "1000.5", "0", "700.01", "-", "-", "1234.56", "999.99", "0.01", "500", "1100", "10"}

// year runs a year of monthly periods of 1000 with carry-over 50% capped
// at 300 on the bank, with the runners given (one per server) at each
// month's first hour (the first server on a ledger opened again after
// the stop), and checks every figure against the rule worked out
// here: each period made once, the carry-over exact to the credit, the
// statement showing both, the audit clean (at the bank's cleanup).
func year(t *testing.T, b *ledgertest.Bank, runners []*schedule.Bank) {
	ctx := context.Background()
	b.MustNode("chem")
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	co, err := schedule.ParseCarryOver("50:300")
	if err != nil {
		t.Fatal(err)
	}
	s, err := runners[0].Add(ctx, b.Req(), schedule.Spec{Account: "chem", Amount: dec("1000"), Every: schedule.Month, Start: start, Count: 12, CarryOver: co})
	if err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(start.Sub(b.Clock.Now()))
	carry := decimal.Zero
	var carried []decimal.Decimal
	for m := range 12 {
		b.Clock.Advance(start.AddDate(0, m, 0).Add(time.Hour).Sub(b.Clock.Now()))
		if spent[m] == "-" {
			carry = co.Of(dec("1000").Add(carry), 2)
			carried = append(carried, carry)
			continue
		}
		if m == 6 {
			// The server starts again: a new ledger on the same store.
			l, err := ledger.Open(ctx, b.Store, ledger.WithClock(b.Clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			runners[0] = schedule.New(l)
		}
		var wg sync.WaitGroup
		made := make([][]schedule.Period, len(runners))
		for i, r := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if made[i], err = r.Run(ctx); err != nil {
					t.Errorf("month %d: run: %v", m, err)
				}
			}()
		}
		wg.Wait()
		allocs := map[uint64]bool{}
		for _, ps := range made {
			for _, p := range ps {
				allocs[p.Allocation] = true
			}
		}
		total := len(allocs)
		want := 1
		if m == 6 {
			want = 3 // the two missed and this one
		}
		if total != want {
			t.Fatalf("month %d: %d periods made, want %d: %+v", m, total, want, made)
		}
		nb := b.MustBalance("chem")
		if want := dec("1000").Add(carry); !nb.Amount.Equal(want) {
			t.Fatalf("month %d: chem has %s, want 1000 + carry-over %s", m, nb.Amount, carry)
		}
		if !dec(spent[m]).IsZero() {
			if _, err := b.Withdraw(ctx, b.Req(), ledger.WithdrawSpec{Account: "chem", Amount: dec(spent[m])}); err != nil {
				t.Fatalf("month %d: withdraw: %v", m, err)
			}
		}
		left := dec("1000").Add(carry).Sub(dec(spent[m]))
		carry = co.Of(left, 2)
		if m < 11 {
			carried = append(carried, carry)
		}
	}
	got, err := runners[0].Get(ctx, s.ID)
	if err != nil || got.Made != 12 || len(got.Allocations) != 12 {
		t.Fatalf("schedule after the year: %+v %v", got, err)
	}
	// Nothing more to make, by any server, ever.
	b.Clock.Advance(400 * 24 * time.Hour)
	for _, r := range runners {
		if ps, err := r.Run(ctx); err != nil || len(ps) != 0 {
			t.Errorf("a run after the last period made %+v, %v", ps, err)
		}
	}
	st, err := b.Statement(ctx, "chem", start, start.AddDate(1, 0, 0), false)
	if err != nil {
		t.Fatal(err)
	}
	var deposits, transfersIn, transfersOut int
	var in []decimal.Decimal
	for _, l := range st.CreditLines {
		switch l.Kind {
		case ledger.KindDeposit:
			deposits++
		case ledger.KindTransfer:
			transfersIn++
			in = append(in, l.Amount)
		}
	}
	for _, l := range st.DebitLines {
		if l.Kind == ledger.KindTransfer {
			transfersOut++
		}
	}
	var wantIn []decimal.Decimal
	for _, c := range carried {
		if !c.IsZero() {
			wantIn = append(wantIn, c)
		}
	}
	if deposits != 12 || transfersIn != len(wantIn) || transfersOut != len(wantIn) {
		t.Fatalf("statement: %d deposits, %d carry-overs in, %d out; want 12, %d, %d", deposits, transfersIn, transfersOut, len(wantIn), len(wantIn))
	}
	for i := range in {
		if !in[i].Equal(wantIn[i]) {
			t.Errorf("carry-over %d: %s, want %s", i, in[i], wantIn[i])
		}
	}
}

// TestYearOfMonths is the year on a bank file.
func TestYearOfMonths(t *testing.T) {
	b := ledgertest.NewBank(t, bolttest.Open)
	year(t, b, []*schedule.Bank{schedule.New(b.Ledger)})
}

// TestYearOfMonthsTwoServers is the year on one PostgreSQL bank with two
// servers running every boundary at once.
func TestYearOfMonthsTwoServers(t *testing.T) {
	url := pgtest.DB(t)
	b := ledgertest.NewBank(t, func(t testing.TB) ledger.Store { return pgstoretest.OpenURL(t, url) })
	store := pgstoretest.OpenURL(t, url)
	t.Cleanup(func() { store.Close() })
	other, err := ledger.Open(context.Background(), store, ledger.WithClock(b.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	year(t, b, []*schedule.Bank{schedule.New(b.Ledger), schedule.New(other)})
}

// TestDeactivatedAccountWaits: the periods of a deactivated account's
// schedule wait (an error each run) while the others' are made; once the
// account is active again its periods are made, in order.
func TestDeactivatedAccountWaits(t *testing.T) {
	ctx := context.Background()
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem", "bio")
	sb := schedule.New(b.Ledger)
	for _, a := range []string{"chem", "bio"} {
		if _, err := sb.Add(ctx, b.Req(), schedule.Spec{Account: a, Amount: dec("10"), Every: schedule.Month, Count: 3, CarryOver: schedule.CarryOver{All: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.DeactivateNode(ctx, b.Req(), "chem"); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(40 * 24 * time.Hour)
	made, err := sb.Run(ctx)
	if err == nil || len(made) != 2 || made[0].Account != "bio" {
		t.Fatalf("run with chem deactivated: %+v, %v", made, err)
	}
	if _, err := b.ReactivateNode(ctx, b.Req(), "chem"); err != nil {
		t.Fatal(err)
	}
	if made, err = sb.Run(ctx); err != nil || len(made) != 2 || made[0].Account != "chem" || made[1].Index != 2 {
		t.Fatalf("run with chem active again: %+v, %v", made, err)
	}
	if nb := b.MustBalance("chem"); !nb.Amount.Equal(dec("20")) {
		t.Errorf("chem has %s, want 20 (both periods, the first carried)", nb.Amount)
	}
}

func TestCarryOverRules(t *testing.T) {
	for _, c := range []struct{ rule, left, want string }{
		{"none", "500", "0"}, {"all", "500.55", "500.55"}, {"all", "-3", "0"},
		{"50", "333.33", "166.66"}, {"50:100", "333.33", "100"}, {"12.5%", "100.07", "12.50"}, {"100", "9", "9"},
	} {
		co, err := schedule.ParseCarryOver(c.rule)
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if got := co.Of(dec(c.left), 2); !got.Equal(dec(c.want)) {
			t.Errorf("%s of %s: %s, want %s", c.rule, c.left, got, c.want)
		}
	}
	for _, bad := range []string{"101", "-1", "half", "50:", "50:-2", "50:x"} {
		if _, err := schedule.ParseCarryOver(bad); err == nil {
			t.Errorf("carry-over %q accepted", bad)
		}
	}
}

// TestCarryOverLeavesWhatLiensHold: a job running across the boundary
// keeps what its lien holds on the old period's allocation: only the rest
// is carried, and the job's charge then takes the held credits from where
// they were, leaving the old allocation at zero, not overdrawn.
func TestCarryOverLeavesWhatLiensHold(t *testing.T) {
	ctx := context.Background()
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem", "chem.lab1")
	if _, err := b.AddMachine(ctx, b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddUser(ctx, b.Req(), ledger.UserSpec{Name: "amy", DefaultProject: "chem.lab1", Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	sb := schedule.New(b.Ledger)
	start := b.Clock.Now()
	if _, err := sb.Add(ctx, b.Req(), schedule.Spec{Account: "chem", Amount: dec("10000"), Every: schedule.Month, Start: start, Count: 2, CarryOver: schedule.CarryOver{All: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Run(ctx); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(start.AddDate(0, 1, 0).Add(-time.Hour).Sub(b.Clock.Now()))
	lb := lien.New(b.Ledger)
	job := lien.Job{Machine: "hpc1", ID: "across"}
	if _, err := lb.Place(ctx, b.Req(), lien.PlaceSpec{Job: job, User: "amy", Request: charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 7200}}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(61 * time.Minute)
	made, err := sb.Run(ctx)
	if err != nil || len(made) != 1 {
		t.Fatalf("second period: %+v %v", made, err)
	}
	first, _ := b.Allocation(ctx, made[0].Allocation-1)
	second, _ := b.Allocation(ctx, made[0].Allocation)
	if !second.Amount.Equal(dec("12800")) || !first.Amount.Equal(dec("7200")) {
		t.Fatalf("after the carry-over: first %s, second %s; want 7200 (held) and 12800", first.Amount, second.Amount)
	}
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 7200, WallclockLimitSeconds: 7200,
		Start: b.Clock.Now().Add(-61 * time.Minute), End: b.Clock.Now().Add(59 * time.Minute), State: charge.Completed}
	if _, err := lb.Charge(ctx, b.Req(), lien.ChargeSpec{Job: job, Usage: u}); err != nil {
		t.Fatal(err)
	}
	first, _ = b.Allocation(ctx, first.ID)
	if !first.Amount.IsZero() {
		t.Errorf("the old allocation after the job's charge: %s, want 0", first.Amount)
	}
}
