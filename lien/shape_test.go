package lien_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// reads counts what the ledger reads through a store (countingStore):
// allocation records handed out, and the bytes of accounts' running sums.
type reads struct {
	allocations, sums atomic.Int64
}

// countingStore is a store whose transactions count what is read.
type countingStore struct {
	ledger.Store
	r *reads
}

func (s countingStore) View(ctx context.Context, fn func(ledger.Tx) error) error {
	return s.Store.View(ctx, func(tx ledger.Tx) error { return fn(countingTx{tx, s.r}) })
}

func (s countingStore) Update(ctx context.Context, fn func(ledger.Tx) error) error {
	return s.Store.Update(ctx, func(tx ledger.Tx) error { return fn(countingTx{tx, s.r}) })
}

type countingTx struct {
	ledger.Tx
	r *reads
}

func (t countingTx) Allocation(id uint64) (ledger.Allocation, bool, error) {
	a, ok, err := t.Tx.Allocation(id)
	if ok {
		t.r.allocations.Add(1)
	}
	return a, ok, err
}

func (t countingTx) AccountAllocations(account string) ([]ledger.Allocation, error) {
	as, err := t.Tx.AccountAllocations(account)
	t.r.allocations.Add(int64(len(as)))
	return as, err
}

func (t countingTx) LiveAllocations(account string, at time.Time) ([]ledger.Allocation, error) {
	as, err := t.Tx.LiveAllocations(account, at)
	t.r.allocations.Add(int64(len(as)))
	return as, err
}

func (t countingTx) ActiveAllocations(account string, at time.Time) ([]ledger.Allocation, error) {
	as, err := t.Tx.ActiveAllocations(account, at)
	t.r.allocations.Add(int64(len(as)))
	return as, err
}

func (t countingTx) UsedUpAllocations(account string, at time.Time, n int) ([]ledger.Allocation, error) {
	as, err := t.Tx.UsedUpAllocations(account, at, n)
	t.r.allocations.Add(int64(len(as)))
	return as, err
}

func (t countingTx) Allocations() ([]ledger.Allocation, error) {
	as, err := t.Tx.Allocations()
	t.r.allocations.Add(int64(len(as)))
	return as, err
}

func (t countingTx) AllocationAsOf(id, seq uint64) (ledger.Allocation, bool, error) {
	a, ok, err := t.Tx.AllocationAsOf(id, seq)
	if ok {
		t.r.allocations.Add(1)
	}
	return a, ok, err
}

func (t countingTx) Record(kind, key string) (ledger.Record, bool, error) {
	r, ok, err := t.Tx.Record(kind, key)
	if kind == "ledger.account" {
		t.r.sums.Add(int64(len(r.Value)))
	}
	return r, ok, err
}

// The audit asks the engine's transactions for the records kept as
// references to journal entries.
func (t countingTx) LienCarrier(id uint64) (uint64, bool, error) {
	if c, ok := t.Tx.(ledger.Carriers); ok {
		return c.LienCarrier(id)
	}
	return 0, false, nil
}

func (t countingTx) ChargeCarrier(id uint64) (uint64, bool, error) {
	if c, ok := t.Tx.(ledger.Carriers); ok {
		return c.ChargeCarrier(id)
	}
	return 0, false, nil
}

// usedBank is a site whose store counts what it reads in r, with chem.lab1
// split by HFS and n allocations of chem of 1 credit each, ending after
// lasting, all used up by one job's charge (1 processor for n seconds at
// the default rate), which it returns.
func usedBank(t *testing.T, n int64, lasting time.Duration) (*site, *reads, lien.ChargeResult) {
	base := bolttest.Open
	if strings.HasPrefix(t.Name(), onPostgres+"/") {
		base = pgstoretest.Open
	}
	r := &reads{}
	s := newSiteOn(t, func(tb testing.TB) ledger.Store { return countingStore{base(tb), r} })
	ctx := context.Background()
	policy := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.5"), AcceptSurplus: true}
	if _, err := s.ModifyNode(ctx, s.Req(), "chem.lab1", ledger.NodeChange{Policy: &policy}); err != nil {
		t.Fatal(err)
	}
	for range n {
		s.MustDeposit("chem", "1", s.Clock.Now().Add(lasting))
	}
	now := s.Clock.Now()
	if _, err := s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: job("old"), User: "amy", Request: withStart(request(1, n), now)}); err != nil {
		t.Fatal(err)
	}
	old := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: n, WallclockLimitSeconds: n, State: charge.Completed, Start: now}
	c, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("old"), Usage: old})
	if err != nil {
		t.Fatal(err)
	}
	return s, r, c
}

// TestEndedAllocationsLeaveTheHotPath: in an account whose 300 allocations
// that have ended were all used by a charge, a lien, a charge, a quote, a
// balance, an availability check, a preemption answer, a deposit, a
// withdrawal and a transfer each read the live allocation and the one
// they change, not the ended ones, nor a running sum for each (issue 41:
// every change read every allocation of the account); the figures stay
// exact, and the audit (at the end) finds the bank consistent.
func TestEndedAllocationsLeaveTheHotPath(t *testing.T) {
	const ended = 300
	s, r, _ := usedBank(t, ended, time.Hour)
	ctx := context.Background()
	live := s.MustDeposit("chem", "100000", s.Clock.Now().AddDate(1, 0, 0))
	s.Clock.Advance(2 * time.Hour)
	// The first change after they ended drops their charged sums.
	if _, err := s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("1"), Allocation: live}); err != nil {
		t.Fatal(err)
	}

	hotPathReads(t, s, r, live, func(string) int64 { return 12 }, fmt.Sprintf("1 live and %d that have ended", ended))
	// 300 + 100,000 + 1 deposited; 300 charged of the ended ones; 3,600
	// charged for the new job (2 processors, 1,800 s); 5 + 5 in and out,
	// 10 to bio.
	nb := s.MustBalance("chem")
	if want := dec("96391"); !nb.Amount.Equal(want) || len(nb.Allocations) != 1 || nb.Allocations[0].ID != live {
		t.Errorf("chem: amount %s, %d allocations listed; want %s in allocation %d alone", nb.Amount, len(nb.Allocations), want, live)
	}
	st, err := s.Statement(ctx, "chem", ledgertest.Epoch, s.Clock.Now().Add(time.Hour), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := dec("96391"); !st.Ending.Equal(want) {
		t.Errorf("statement: ending balance %s, want %s", st.Ending, want)
	}
}

// TestUsedUpAllocationsLeaveTheHotPath: in an account whose 300
// allocations not ended were all used up by a charge, a lien, a charge, a
// quote, an availability check, a preemption answer, a deposit, a
// withdrawal and a transfer each read the live allocation and the ones
// they change, not the used-up ones, nor a running sum for each (issue
// 41); the HFS pool still counts what the charge took of them until they
// end, a refund makes some usable again, balances now and at a past time
// stay exact, and the audit (at the end) finds the bank consistent.
func TestUsedUpAllocationsLeaveTheHotPath(t *testing.T) {
	const usedUp = 300
	s, r, oldCharge := usedBank(t, usedUp, 3*time.Hour)
	ctx := context.Background()
	live := s.MustDeposit("chem", "100000", s.Clock.Now().AddDate(1, 0, 0))
	pool := func(want string) {
		t.Helper()
		sh, err := s.Shares(ctx, "chem")
		if err != nil || !sh.Pool.Equal(dec(want)) {
			t.Errorf("chem's HFS pool: %s, %v; want %s", sh.Pool, err, want)
		}
	}
	// The live allocation and what the job took of the used-up ones.
	pool("100300")

	// A balance lists the first ledger.UsedUpListed used up besides.
	most := func(op string) int64 {
		if op == "balance" {
			return 12 + 2*ledger.UsedUpListed
		}
		return 12
	}
	hotPathReads(t, s, r, live, most, fmt.Sprintf("1 live and %d used up", usedUp))
	// 100,000 + 5 - 5 - 10 to bio - 3,600 charged for the new job (2
	// processors, 1,800 s) left; the pool adds what the charges took.
	if nb := s.MustBalance("chem"); !nb.Amount.Equal(dec("96390")) {
		t.Errorf("chem: amount %s, want 96390", nb.Amount)
	}
	pool("100290")
	// A refund gives 10 back to the used-up allocations: they count in
	// the amount, and the pool is as it was.
	if _, err := s.lb.Refund(ctx, s.Req(), lien.RefundSpec{Charge: oldCharge.Charge.ID, Amount: dec("10")}); err != nil {
		t.Fatal(err)
	}
	if nb := s.MustBalance("chem"); !nb.Amount.Equal(dec("96400")) {
		t.Errorf("chem after the refund: amount %s, want 96400", nb.Amount)
	}
	pool("100290")
	before := s.Clock.Now()
	// Once they have ended, the pool is the live allocation's.
	s.Clock.Advance(4 * time.Hour)
	pool("99990")
	if _, err := s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("1"), Allocation: live}); err != nil {
		t.Fatal(err)
	}
	pool("99991")
	if nb, err := s.BalanceAt(ctx, "chem", before); err != nil || !nb.Amount.Equal(dec("96400")) {
		t.Errorf("chem before they ended: amount %s, %v; want 96400", nb.Amount, err)
	}
}

// TestOverdraftOfUsedUpAllocation: a charge beyond what the account holds,
// with no lien, overdraws the first allocation in debit order, the one
// ending first, though it is used up and changes no longer read it with
// the others; with every allocation used up, a charge still overdraws
// one (it fails only when there is none).
func TestOverdraftOfUsedUpAllocation(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	now := s.Clock.Now()
	first := s.MustDeposit("chem", "100", now.Add(time.Hour))
	later := s.MustDeposit("chem", "50", now.Add(2*time.Hour))
	u := func(seconds int64) charge.Usage {
		return charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: seconds, WallclockLimitSeconds: seconds, State: charge.Completed, Start: now}
	}
	debits := func(id string, seconds int64) []ledger.Hold {
		t.Helper()
		c, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job(id), User: "amy", Usage: u(seconds)})
		if err != nil {
			t.Fatal(err)
		}
		return c.Charge.Debits
	}
	if d := debits("a", 100); len(d) != 1 || d[0].Allocation != first {
		t.Fatalf("debits %+v, want allocation %d alone", d, first)
	}
	// 50 from the later one, 10 overdrawn from the first, used up.
	d := debits("b", 60)
	if len(d) != 2 || d[0].Allocation != first || !d[0].Amount.Equal(dec("10")) || d[1].Allocation != later || !d[1].Amount.Equal(dec("50")) {
		t.Errorf("debits %+v, want 10 from allocation %d and 50 from %d", d, first, later)
	}
	// Both used up: the first takes it all.
	if _, err := s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("10"), Allocation: first}); err != nil {
		t.Fatal(err)
	}
	if d := debits("c", 5); len(d) != 1 || d[0].Allocation != first || !d[0].Amount.Equal(dec("5")) {
		t.Errorf("debits %+v, want 5 from allocation %d", d, first)
	}
}

// TestChargeAfterItsAllocationEnded: a job admitted against an allocation
// that ends while it runs is charged to that allocation first, as its
// lien held it (DESIGN section 3), though the allocation is no longer
// among those not ended that changes read; the charged sums drop it, and
// the audit (at the end) agrees.
func TestChargeAfterItsAllocationEnded(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	start := s.Clock.Now()
	first := s.MustDeposit("chem", "20000", start.Add(time.Hour))
	second := s.MustDeposit("chem", "10000", time.Time{})
	r, err := s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: job("long"), User: "amy", Request: withStart(request(1, 3*3600), start)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lien.Holds) != 1 || r.Lien.Holds[0].Allocation != first {
		t.Fatalf("the lien holds %+v, want allocation %d (ending first)", r.Lien.Holds, first)
	}
	s.Clock.Advance(2 * time.Hour)
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 7200, WallclockLimitSeconds: 3 * 3600, State: charge.Completed, Start: start}
	c, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("long"), Usage: u})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Charge.Debits) != 1 || c.Charge.Debits[0].Allocation != first || !c.Charge.Debits[0].Amount.Equal(dec("7200")) {
		t.Errorf("debits %+v, want 7200 from allocation %d", c.Charge.Debits, first)
	}
	nb := s.MustBalance("chem")
	if !nb.Amount.Equal(dec("10000")) || len(nb.Allocations) != 1 || nb.Allocations[0].ID != second {
		t.Errorf("chem: amount %s, allocations %+v; want 10000 in allocation %d alone", nb.Amount, nb.Allocations, second)
	}
	a, err := s.Allocation(ctx, first)
	if err != nil || !a.Amount.Equal(dec("12800")) {
		t.Errorf("allocation %d after the charge: %+v %v, want 12800 left", first, a, err)
	}
}

// TestUsedUpAfterItsAllocationEnded: an allocation that ended with a
// lien still holding the rest of it, used up when that lien is charged
// after the end, leaves a bank the audit passes, full or not. (The running
// sums drop an allocation's charged sums once it has ended; the audit
// compared what was set aside of it, used up, with everything its charges
// ever took, and found a problem in every audit after.)
func TestUsedUpAfterItsAllocationEnded(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	start := s.Clock.Now()
	ending := s.MustDeposit("chem", "100", start.Add(time.Hour))
	s.MustDeposit("chem", "1000", time.Time{})
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 40, WallclockLimitSeconds: 40, State: charge.Completed, Start: start}
	if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("early"), User: "amy", Usage: u}); err != nil {
		t.Fatal(err)
	}
	r, err := s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: job("late"), User: "amy", Request: withStart(request(1, 60), start)})
	if err != nil || len(r.Lien.Holds) != 1 || r.Lien.Holds[0].Allocation != ending {
		t.Fatalf("the lien: %+v %v, want it to hold the rest of allocation %d", r.Lien, err, ending)
	}
	s.Clock.Advance(2 * time.Hour)
	s.MustDeposit("chem", "1", time.Time{}) // a change after the end: the ended allocation's sums dropped
	u = charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 60, WallclockLimitSeconds: 60, State: charge.Completed, Start: start}
	if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("late"), Usage: u}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Allocation(ctx, ending); err != nil || !a.UsedUp() {
		t.Fatalf("allocation %d after the charge: %+v %v, want it used up", ending, a, err)
	}
	s.MustAudit()
	if rep, err := s.Audit(ctx, ledger.AuditOptions{}); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("audit: %v %v", rep.Problems, err)
	}
}

// TestAuditFindsUsedUpSumsAltered: what the running sums keep apart of
// used-up allocations is checked against the journal by the audit, full
// or not: a record of one that is wrong, the sums of their end that are
// wrong, and (full) a record of an allocation that is not used up.
func TestAuditFindsUsedUpSumsAltered(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	now := s.Clock.Now()
	spent := s.MustDeposit("chem", "30", now.Add(time.Hour))
	live := s.MustDeposit("chem", "1000", time.Time{})
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 30, WallclockLimitSeconds: 30, State: charge.Completed, Start: now}
	if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("a"), User: "amy", Usage: u}); err != nil {
		t.Fatal(err)
	}
	s.MustAudit()
	record := func(kind, key string) ledger.Record {
		t.Helper()
		var r ledger.Record
		if err := s.Store.View(ctx, func(tx ledger.Tx) error {
			var ok bool
			var err error
			if r, ok, err = tx.Record(kind, key); err == nil && !ok {
				t.Fatalf("no record %s/%s", kind, key)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(rs ...ledger.Record) {
		t.Helper()
		if err := s.Store.Update(ctx, func(tx ledger.Tx) error {
			for _, r := range rs {
				if err := tx.PutRecord(r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	key := func(id uint64) string { return fmt.Sprintf("%020d", id) }
	sums, kept := record("ledger.account", "chem"), record("ledger.used-up", key(spent))
	end := now.Add(time.Hour).UTC().Format(time.RFC3339Nano)
	if want := fmt.Sprintf(`"used_up":[{"end":%q,"charged":{"chem.lab1":"30"}}]`, end); !strings.Contains(string(sums.Value), want) {
		t.Fatalf("chem's running sums: %s, want them to hold %s", sums.Value, want)
	}
	altered := sums
	altered.Value = []byte(strings.Replace(string(sums.Value), `"chem.lab1":"30"}}]`, `"chem.lab1":"31"}}]`, 1))
	wrong := kept
	wrong.Value = []byte(strings.Replace(string(kept.Value), `"30"`, `"29"`, 1))
	stray := ledger.Record{Kind: "ledger.used-up", Key: key(live), Value: []byte(`{"account":"chem","charged":{"chem.lab1":"1"}}`)}
	put(altered, wrong, stray)
	for _, full := range []bool{false, true} {
		rep, err := s.Audit(ctx, ledger.AuditOptions{Full: full})
		if err != nil {
			t.Fatal(err)
		}
		wants := []string{
			fmt.Sprintf("account chem: the record of used-up allocation %d holds map[chem.lab1:29], the journal says its charges took map[chem.lab1:30]", spent),
			fmt.Sprintf("account chem: the sums of its used-up allocations ending %s are map[chem.lab1:31], the journal says their charges took map[chem.lab1:30]", end),
		}
		if full {
			wants = append(wants, fmt.Sprintf("account chem: allocation %d is not used up, yet a record keeps its charged sums apart", live))
		}
		for _, want := range wants {
			if !slices.Contains(rep.Problems, want) {
				t.Errorf("audit (full %v): %q, want %q among them", full, rep.Problems, want)
			}
		}
	}
	stray.Deleted = true
	put(sums, kept, stray)
}

// hotPathReads runs on s, whose store counts what it reads in r, a lien
// and a charge of a new job, a quote, a balance, an availability check, a
// preemption answer, a deposit into live, a withdrawal and a transfer,
// and checks that each read most(its name) allocations at the most (a
// handful: the live allocation, read again by each step that needs it,
// and the ones the change writes) and 2,000 bytes of running sums; the
// account has beside besides.
func hotPathReads(t *testing.T, s *site, r *reads, live uint64, most func(op string) int64, beside string) {
	t.Helper()
	ctx, now := context.Background(), s.Clock.Now()
	ops := []struct {
		name string
		op   func() error
	}{
		{"lien", func() error {
			_, err := s.lb.Place(ctx, s.Req(), lien.PlaceSpec{Job: job("new"), User: "amy", Request: withStart(request(2, 3600), now)})
			return err
		}},
		{"charge", func() error {
			u := charge.Usage{Resources: charge.Resources{Processors: 2}, WallclockSeconds: 1800, WallclockLimitSeconds: 3600, State: charge.Completed, Start: now}
			_, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("new"), Usage: u})
			return err
		}},
		{"quote", func() error {
			_, err := s.lb.Quote(ctx, lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: request(4, 3600)})
			return err
		}},
		{"balance", func() error { _, err := s.BalanceAt(ctx, "chem.lab1", time.Time{}); return err }},
		{"available", func() error { _, err := s.Available(ctx, "chem.lab1"); return err }},
		{"preempt", func() error { _, err := s.Preempt(ctx, "chem.lab1", "hpc1", dec("10")); return err }},
		{"deposit", func() error {
			_, err := s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("5"), Allocation: live})
			return err
		}},
		{"withdraw", func() error {
			_, err := s.Withdraw(ctx, s.Req(), ledger.WithdrawSpec{Account: "chem", Amount: dec("5")})
			return err
		}},
		{"transfer", func() error {
			_, err := s.Transfer(ctx, s.Req(), ledger.TransferSpec{From: "chem", To: "bio", Amount: dec("10")})
			return err
		}},
	}
	for _, o := range ops {
		r.allocations.Store(0)
		r.sums.Store(0)
		if err := o.op(); err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		if n := r.allocations.Load(); n > most(o.name) {
			t.Errorf("%s read %d allocations; the account has %s", o.name, n, beside)
		}
		if n := r.sums.Load(); n > 2000 {
			t.Errorf("%s read %d bytes of running sums", o.name, n)
		}
	}
}

// TestUsedUpAllocationRevivedByItsLimit: a credit limit given to a used-up
// allocation makes it usable again, what the charge took of it back with
// the other sums: a lien may take the credit, the HFS pool counts the
// credit besides what was taken, and taking the limit away again sets
// the allocation apart once more; the audit (at the end) agrees with each
// step.
func TestUsedUpAllocationRevivedByItsLimit(t *testing.T) {
	s, _, _ := usedBank(t, 1, 3*time.Hour)
	ctx := context.Background()
	spent := uint64(1)
	if a, err := s.Allocation(ctx, spent); err != nil || !a.UsedUp() {
		t.Fatalf("allocation %d: %+v, %v; want it used up", spent, a, err)
	}
	pool := func(want string) {
		t.Helper()
		if sh, err := s.Shares(ctx, "chem"); err != nil || !sh.Pool.Equal(dec(want)) {
			t.Errorf("chem's HFS pool: %s, %v; want %s", sh.Pool, err, want)
		}
	}
	pool("1")
	limit := func(v string) {
		t.Helper()
		l := dec(v)
		if _, err := s.ModifyAllocation(ctx, s.Req(), spent, ledger.AllocationChange{CreditLimit: &l}); err != nil {
			t.Fatal(err)
		}
		s.MustAudit()
	}
	limit("50")
	pool("51")
	if _, err := s.place("after", 1, 40); err != nil {
		t.Fatalf("a lien on the credit given: %v", err)
	}
	if _, err := s.lb.Release(ctx, s.Req(), job("after")); err != nil {
		t.Fatal(err)
	}
	limit("0")
	pool("1")
	if nb := s.MustBalance("chem"); !nb.Available.IsZero() {
		t.Errorf("chem's available with its one allocation used up again: %s", nb.Available)
	}
}
