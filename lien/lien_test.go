package lien_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// site is a bank with one machine (32 cores a node), account chem with
// project chem.lab1, and user amy, a member of it; default rates (one
// credit per processor-second) unless a test sets others.
type site struct {
	*ledgertest.Bank
	lb *lien.Bank
	t  testing.TB
	// live is an allocation of chem that BenchmarkShape deposits into.
	live uint64
}

// newSite is the site on bbolt, or on PostgreSQL under TestOnPostgres.
func newSite(t testing.TB, opts ...ledger.Option) *site {
	if strings.HasPrefix(t.Name(), onPostgres+"/") {
		return newSiteOn(t, pgstoretest.Open, opts...)
	}
	return newSiteOn(t, bolttest.Open, opts...)
}

// newSiteOn is newSite on the stores open makes.
func newSiteOn(t testing.TB, open ledgertest.OpenStore, opts ...ledger.Option) *site {
	b := ledgertest.NewBank(t, open, opts...)
	s := &site{Bank: b, lb: lien.New(b.Ledger), t: t}
	b.MustNode("chem", "chem.lab1", "bio")
	if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32, MemoryMB: 128000, GPUs: 4}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddUser(context.Background(), b.Req(), ledger.UserSpec{Name: "amy", DefaultProject: "chem.lab1", Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func job(id string) lien.Job { return lien.Job{Machine: "hpc1", ID: id} }

// withStart is r starting at start.
func withStart(r charge.Request, start time.Time) charge.Request {
	r.Start = start
	return r
}

// request is procs processors for a wallclock limit of seconds.
func request(procs, seconds int64) charge.Request {
	return charge.Request{Resources: charge.Resources{Processors: procs}, WallclockLimitSeconds: seconds}
}

func (s *site) place(id string, procs, seconds int64) (lien.LienResult, error) {
	return s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job(id), User: "amy", Request: request(procs, seconds)})
}

func (s *site) mustPlace(id string, procs, seconds int64) lien.LienResult {
	s.t.Helper()
	r, err := s.place(id, procs, seconds)
	if err != nil {
		s.t.Fatalf("place lien %s: %v", id, err)
	}
	return r
}

// usage is a job of procs processors that ran seconds of its limit, ending
// in state, with cpu CPU-seconds, started at the clock's time.
func (s *site) usage(procs, seconds, limit, cpu int64, state charge.ExitState) charge.Usage {
	start := s.Clock.Now()
	return charge.Usage{Resources: charge.Resources{Processors: procs}, WallclockSeconds: seconds, WallclockLimitSeconds: limit,
		CPUSeconds: cpu, Start: start, End: start.Add(time.Duration(seconds) * time.Second), State: state}
}

func (s *site) mustCharge(spec lien.ChargeSpec) lien.ChargeResult {
	s.t.Helper()
	r, err := s.lb.Charge(context.Background(), s.Req(), spec)
	if err != nil {
		s.t.Fatalf("charge %s: %v", spec.ID, err)
	}
	return r
}

func wantAmount(t *testing.T, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(dec(want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func TestLienChangesReservedAndAvailable(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	r := s.mustPlace("1", 8, 3600) // 8 × 3600 = 28800
	wantAmount(t, "lien amount", r.Lien.Amount, "28800")
	if r.Project != "chem.lab1" || r.FellBack || !r.Lien.Expires.Equal(s.Clock.Now().Add(time.Hour+lien.DefaultGrace)) {
		t.Errorf("lien = %+v", r)
	}
	bal := s.MustBalance("chem")
	wantAmount(t, "reserved", bal.Reserved, "28800")
	wantAmount(t, "balance", bal.Balance.Balance, "71200")
	wantAmount(t, "available", bal.Available, "71200")
	// Placing again returns the same lien and holds nothing more.
	again := s.mustPlace("1", 8, 3600)
	if !again.Existing || again.Lien.ID != r.Lien.ID {
		t.Errorf("second placement = %+v", again)
	}
	wantAmount(t, "reserved after a repeated placement", s.MustBalance("chem").Reserved, "28800")
	// Replace re-prices.
	rep, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("1"), User: "amy", Request: request(4, 3600), Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "replaced lien", rep.Lien.Amount, "14400")
	wantAmount(t, "reserved after replace", s.MustBalance("chem").Reserved, "14400")
	// Release frees it.
	if _, err := s.lb.Release(context.Background(), s.Req(), job("1")); err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "reserved after release", s.MustBalance("chem").Reserved, "0")
	if _, err := s.lb.Release(context.Background(), s.Req(), job("1")); !errors.Is(err, lien.ErrNoLien) {
		t.Errorf("second release: %v", err)
	}
}

func TestExpiredLienStopsCountingAtOnce(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "10000", time.Time{})
	s.mustPlace("1", 1, 600) // expires after 600 s + 10 min grace
	wantAmount(t, "reserved", s.MustBalance("chem").Reserved, "600")
	s.Clock.Advance(20*time.Minute - time.Second)
	wantAmount(t, "reserved just before expiry", s.MustBalance("chem").Reserved, "600")
	s.Clock.Advance(time.Second)
	wantAmount(t, "reserved at expiry", s.MustBalance("chem").Reserved, "0")
	swept, err := s.lb.Sweep(context.Background(), s.Req())
	if err != nil || len(swept) != 1 || swept[0].State != ledger.LienExpired {
		t.Fatalf("sweep = %+v, %v", swept, err)
	}
	if swept, _ := s.lb.Sweep(context.Background(), s.Req()); len(swept) != 0 {
		t.Errorf("second sweep found %d", len(swept))
	}
}

func TestRefusalNamesProjectNeedAndAvailable(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000", time.Time{})
	before := s.JournalLen()
	_, err := s.place("big", 4, 3600)
	if !errors.Is(err, ledger.ErrInsufficientFunds) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"chem.lab1", "14400", "1000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %s", err, want)
		}
	}
	if s.JournalLen() != before {
		t.Error("a refused lien wrote to the journal")
	}
	wantAmount(t, "reserved", s.MustBalance("chem").Reserved, "0")
}

func TestFallbackTakesTheJob(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000", time.Time{})
	s.MustNode("chem.lab1-low")
	s.MustDeposit("bio", "50000", time.Time{})
	for _, tc := range []struct {
		name     string
		change   lien.ConfigChange
		fallback string
	}{
		{"global account", lien.ConfigChange{Fallback: ptr("bio")}, "bio"},
		{"machine", lien.ConfigChange{Scope: lien.Scope{Machine: "hpc1"}, Fallback: ptr("bio")}, "bio"},
		{"project suffix", lien.ConfigChange{Scope: lien.Scope{Project: "chem"}, Fallback: ptr("+-low")}, "chem.lab1-low"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.lb.ChangeConfig(context.Background(), s.Req(), tc.change); err != nil {
				t.Fatal(err)
			}
			r, err := s.place("fb-"+strings.ReplaceAll(tc.name, " ", "-"), 4, 600)
			if tc.fallback == "chem.lab1-low" {
				// chem.lab1-low draws on chem too, which cannot cover 2400.
				if !errors.Is(err, ledger.ErrInsufficientFunds) || !strings.Contains(err.Error(), "fallback") {
					t.Fatalf("fallback onto the same account: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Project != tc.fallback || !r.FellBack || r.Lien.Account != "bio" || r.Requested != "chem.lab1" {
				t.Errorf("lien = %+v", r)
			}
			// A scheduler that did not switch the job charges it under the
			// project it asked for: the charge still goes to the fallback.
			c, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job(r.Lien.JobID), Project: "chem.lab1", Usage: s.usage(4, 600, 600, 0, charge.Completed)})
			if err != nil || c.Charge.Project != tc.fallback || c.Charge.Account != "bio" {
				t.Errorf("charge under the requested project: %+v %v", c.Charge, err)
			}
		})
	}
}

// TestPoliciesMatchWorkedExamples charges the docs' job A (8 processors,
// 3600 s of a 7200 s limit, 14400 CPU-seconds) under two policies.
func TestPoliciesMatchWorkedExamples(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		state   charge.ExitState
		charged string
	}{
		{"DEBITSUCCESSFULWC", charge.Completed, "28800"},
		{"DEBITALLCPU", charge.Completed, "14400"},
		{"DEBITSUCCESSFULWC", charge.Cancelled, "0"},
		{"DEBITALLWC", charge.Cancelled, "28800"},
		{"DEBITALLPE", charge.Completed, "28800"},
		{"DEBITREQUESTEDWC", charge.Completed, "57600"},
	} {
		t.Run(tc.policy+"/"+tc.state.String(), func(t *testing.T) {
			s := newSite(t)
			s.MustDeposit("chem", "100000", time.Time{})
			p, err := charge.ParsePolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.lb.ChangeConfig(context.Background(), s.Req(), lien.ConfigChange{Scope: lien.Scope{Machine: "hpc1"}, Policy: &p}); err != nil {
				t.Fatal(err)
			}
			s.mustPlace("A", 8, 7200)
			r := s.mustCharge(lien.ChargeSpec{Job: job("A"), Usage: s.usage(8, 3600, 7200, 14400, tc.state)})
			wantAmount(t, "charge", r.Charge.Amount, tc.charged)
			bal := s.MustBalance("chem")
			wantAmount(t, "reserved after the final charge", bal.Reserved, "0")
			wantAmount(t, "amount", bal.Amount, dec("100000").Sub(dec(tc.charged)).String())
			if r.Lien == nil || r.Lien.State != ledger.LienSettled {
				t.Errorf("lien after the charge: %+v", r.Lien)
			}
		})
	}
}

func TestChargeNeverFailsForLackOfFunds(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000", time.Time{})
	s.mustPlace("1", 1, 900)
	r := s.mustCharge(lien.ChargeSpec{Job: job("1"), Usage: s.usage(4, 900, 900, 0, charge.Completed)}) // 3600 > 1000
	wantAmount(t, "charged", r.Charge.Amount, "3600")
	wantAmount(t, "overdrawn", r.Charge.Overdrawn, "2600")
	wantAmount(t, "amount", s.MustBalance("chem").Amount, "-2600")
	// Charging the same job finally again is refused.
	if _, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job("1"), User: "amy", Usage: s.usage(1, 1, 1, 0, charge.Completed)}); !errors.Is(err, lien.ErrAlreadyCharged) {
		t.Errorf("second final charge: %v", err)
	}
	// No allocation at all is the one reason a charge fails.
	if _, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job("2"), User: "amy", Project: "chem.lab1", Usage: s.usage(1, 1, 1, 0, charge.Completed)}); err != nil {
		t.Errorf("charge without a lien: %v", err)
	}
	s.MustNode("empty")
	if _, err := s.AddUser(context.Background(), s.Req(), ledger.UserSpec{Name: "eve", DefaultProject: "empty", Memberships: []ledger.Membership{{Node: "empty", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job("3"), User: "eve", Usage: s.usage(1, 1, 1, 0, charge.Completed)}); !errors.Is(err, ledger.ErrNoAllocation) {
		t.Errorf("charge with no allocation: %v", err)
	}
}

func TestIncrementalChargesShrinkTheLien(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	s.mustPlace("long", 10, 3600) // 36000
	r := s.mustCharge(lien.ChargeSpec{Job: job("long"), Incremental: true, Usage: s.usage(10, 1800, 3600, 0, charge.Running)})
	wantAmount(t, "first part", r.Charge.Amount, "18000")
	wantAmount(t, "lien left", r.Lien.Amount, "18000")
	wantAmount(t, "reserved", s.MustBalance("chem").Reserved, "18000")
	r = s.mustCharge(lien.ChargeSpec{Job: job("long"), Incremental: true, Usage: s.usage(10, 2400, 3600, 0, charge.Running)})
	wantAmount(t, "overran", r.Overran, "6000")
	wantAmount(t, "lien left after overrun", r.Lien.Amount, "0")
	r = s.mustCharge(lien.ChargeSpec{Job: job("long"), Usage: s.usage(10, 60, 3600, 0, charge.Completed)})
	wantAmount(t, "last part", r.Charge.Amount, "600")
	bal := s.MustBalance("chem")
	wantAmount(t, "amount", bal.Amount, "57400")
	wantAmount(t, "reserved", bal.Reserved, "0")
}

func TestRefund(t *testing.T) {
	s := newSite(t)
	now := s.Clock.Now()
	s.MustDeposit("chem", "500", now.Add(24*time.Hour))
	s.MustDeposit("chem", "5000", time.Time{})
	s.mustPlace("1", 1, 1000)
	r := s.mustCharge(lien.ChargeSpec{Job: job("1"), Usage: s.usage(1, 1000, 1000, 0, charge.Completed)})
	if len(r.Charge.Debits) != 2 {
		t.Fatalf("debits = %+v", r.Charge.Debits)
	}
	c, err := s.lb.Refund(context.Background(), s.Req(), lien.RefundSpec{Charge: r.Charge.ID, Amount: dec("600")})
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "refunded", c.Refunded, "600")
	bal := s.MustBalance("chem")
	// 500 from the first allocation and 500 from the second; the refund of
	// 600 returns 500 to the second (last debited) and 100 to the first.
	wantAmount(t, "first allocation", bal.Allocations[0].Amount, "100")
	wantAmount(t, "second allocation", bal.Allocations[1].Amount, "5000")
	if _, err := s.lb.Refund(context.Background(), s.Req(), lien.RefundSpec{Charge: r.Charge.ID, Amount: dec("400.01")}); !errors.Is(err, lien.ErrRefund) {
		t.Errorf("refund beyond the charge: %v", err)
	}
	if c, err = s.lb.Refund(context.Background(), s.Req(), lien.RefundSpec{Charge: r.Charge.ID}); err != nil || !c.Refunded.Equal(dec("1000")) {
		t.Errorf("refund of the rest: %+v %v", c, err)
	}
	wantAmount(t, "amount after full refund", s.MustBalance("chem").Amount, "5500")
}

// TestRefundJob refunds by job across its charges, newest first, as
// Gold's staff do (grefund -J): a part, then the rest; never more than
// was charged, and a job without charges is not found.
func TestRefundJob(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	s.mustPlace("long", 10, 3600)
	first := s.mustCharge(lien.ChargeSpec{Job: job("long"), Incremental: true, Usage: s.usage(10, 1800, 3600, 0, charge.Running)}) // 18000
	last := s.mustCharge(lien.ChargeSpec{Job: job("long"), Usage: s.usage(10, 60, 3600, 0, charge.Completed)})                     // 600
	refunded, err := s.lb.RefundJob(context.Background(), s.Req(), lien.JobRefundSpec{Job: job("long"), Amount: dec("1000")})
	if err != nil {
		t.Fatal(err)
	}
	if len(refunded.Charges) != 2 || refunded.Charges[0].ID != last.Charge.ID || refunded.Charges[1].ID != first.Charge.ID {
		t.Fatalf("refunded %+v; want the last charge then the first", refunded)
	}
	wantAmount(t, "refunded", refunded.Refunded, "1000")
	wantAmount(t, "last charge refunded", refunded.Charges[0].Refunded, "600")
	wantAmount(t, "first charge refunded", refunded.Charges[1].Refunded, "400")
	if _, err := s.lb.RefundJob(context.Background(), s.Req(), lien.JobRefundSpec{Job: job("long"), Amount: dec("17600.01")}); !errors.Is(err, lien.ErrRefund) {
		t.Errorf("refund beyond the charges: %v", err)
	}
	if refunded, err = s.lb.RefundJob(context.Background(), s.Req(), lien.JobRefundSpec{Job: job("long")}); err != nil || len(refunded.Charges) != 1 || !refunded.Refunded.Equal(dec("17600")) || !refunded.Charges[0].Refunded.Equal(dec("18000")) {
		t.Errorf("refund of the rest: %+v %v", refunded, err)
	}
	wantAmount(t, "amount after full refund", s.MustBalance("chem").Amount, "100000")
	if _, err := s.lb.RefundJob(context.Background(), s.Req(), lien.JobRefundSpec{Job: job("never")}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("job without charges: %v", err)
	}
}

// TestMoveEnd: a lien's end moved later keeps it holding past its old
// expiry; moved earlier, it stops holding once that end passes, with no
// sweep; past its end it cannot be moved again.
func TestMoveEnd(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	placed := s.mustPlace("m", 1, 600) // expires in 600 s + the grace
	later := placed.Lien.Expires.Add(time.Hour)
	if _, err := s.lb.MoveEnd(context.Background(), s.Req(), job("m"), later); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(placed.Lien.Expires.Sub(s.Clock.Now()) + time.Minute)
	wantAmount(t, "reserved past the old end", s.MustBalance("chem").Reserved, "600")
	l, err := s.lb.MoveEnd(context.Background(), s.Req(), job("m"), s.Clock.Now().Add(time.Second))
	if err != nil || !l.Expires.Equal(s.Clock.Now().Add(time.Second)) {
		t.Fatalf("moved earlier: %+v %v", l, err)
	}
	wantAmount(t, "reserved before the new end", s.MustBalance("chem").Reserved, "600")
	s.Clock.Advance(time.Second)
	wantAmount(t, "reserved at the new end", s.MustBalance("chem").Reserved, "0")
	if _, err := s.lb.MoveEnd(context.Background(), s.Req(), job("m"), later); !errors.Is(err, ledger.ErrInactive) {
		t.Errorf("moving an expired lien: %v", err)
	}
}

func TestRatesWithQOSAndNightDiscount(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	table := charge.DefaultRateTable()
	table.Rates = append(table.Rates, charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: "premium", Rate: dec("2")},
		charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: "*", Rate: dec("1")})
	table.TimeOfDay = []charge.TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: dec("0.5")}}
	if _, err := s.lb.SetRates(context.Background(), s.Req(), table); err != nil {
		t.Fatal(err)
	}
	// The clock is 09:00 UTC on a Monday. A 2-hour premium job now: 4 × 7200 × 2.
	req := request(4, 7200)
	req.QOS = "premium"
	q, err := s.lb.Quote(context.Background(), lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: req})
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "day premium quote", q.Amount.Credits, "57600")
	// The same job from 19:00: one hour of day, one of night: 4×3600×2 + 4×3600×2×0.5.
	req.Start = s.Clock.Now().Add(10 * time.Hour)
	q, _ = s.lb.Quote(context.Background(), lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: req})
	wantAmount(t, "evening premium quote", q.Amount.Credits, "43200")
	req.QOS = "nonsense-qos-but-wildcarded"
	if q, err = s.lb.Quote(context.Background(), lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: req}); err != nil || !q.Amount.Credits.Equal(dec("21600")) {
		t.Errorf("wildcard QOS quote: %+v %v", q.Amount.Credits, err)
	}
}

// TestNewRatesPriceTheNextJobs: liens and charges after a rate change are
// priced at the new rates.
func TestNewRatesPriceTheNextJobs(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "10000000", time.Time{})
	// Liens with a start of their own.
	place := func(id string) lien.LienResult {
		t.Helper()
		r, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job(id), User: "amy", Request: withStart(request(2, 3600), s.Clock.Now())})
		if err != nil {
			t.Fatalf("place lien %s: %v", id, err)
		}
		return r
	}
	place("1")
	place("2")
	c := s.mustCharge(lien.ChargeSpec{Job: job("1"), Usage: s.usage(2, 1800, 3600, 0, charge.Completed)})
	wantAmount(t, "charge at the old rates", c.Charge.Amount, "3600")
	expensive := charge.DefaultRateTable()
	expensive.Rates[0].Rate = dec("10")
	if _, err := s.lb.SetRates(context.Background(), s.Req(), expensive); err != nil {
		t.Fatal(err)
	}
	// Job 2's lien was priced at the old rates; its charge, at the new.
	c = s.mustCharge(lien.ChargeSpec{Job: job("2"), Usage: s.usage(2, 1800, 3600, 0, charge.Completed)})
	wantAmount(t, "charge at the new rates", c.Charge.Amount, "36000")
	r := place("3")
	wantAmount(t, "lien at the new rates", r.Lien.Amount, "72000")
	again := s.mustCharge(lien.ChargeSpec{Job: job("3"), Usage: s.usage(2, 1800, 3600, 0, charge.Completed)})
	wantAmount(t, "charge at the new rates", again.Charge.Amount, "36000")
	s.MustAudit()
}

func TestGuaranteedQuoteFreezesRates(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	q, err := s.lb.Guarantee(context.Background(), s.Req(), lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: request(2, 3600)}, s.Clock.Now().Add(time.Hour), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "quote", q.Amount.Credits, "7200")
	expensive := charge.DefaultRateTable()
	expensive.Rates[0].Rate = dec("10")
	if _, err := s.lb.SetRates(context.Background(), s.Req(), expensive); err != nil {
		t.Fatal(err)
	}
	r, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("q1"), User: "amy", Request: request(2, 3600), Quote: q.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "lien under the quote", r.Lien.Amount, "7200")
	// Re-placing the job's lien under its quote does not use the quote again.
	if r, err = s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("q1"), User: "amy", Request: request(2, 3600), Quote: q.ID, Replace: true}); err != nil {
		t.Fatalf("replace under the same quote: %v", err)
	}
	wantAmount(t, "replaced lien under the quote", r.Lien.Amount, "7200")
	c := s.mustCharge(lien.ChargeSpec{Job: job("q1"), Usage: s.usage(2, 1800, 3600, 0, charge.Completed)})
	wantAmount(t, "charge under the quote", c.Charge.Amount, "3600")
	if _, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("q2"), User: "amy", Request: request(2, 3600), Quote: q.ID}); !errors.Is(err, lien.ErrQuote) {
		t.Errorf("second use of a one-use quote: %v", err)
	}
	r = s.mustPlace("q3", 2, 3600)
	wantAmount(t, "lien at the new rates", r.Lien.Amount, "72000")
}

func TestExtend(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "10000", time.Time{})
	s.mustPlace("1", 1, 3600)
	r, err := s.lb.Extend(context.Background(), s.Req(), job("1"), 7200)
	if err != nil {
		t.Fatal(err)
	}
	wantAmount(t, "extended lien", r.Lien.Amount, "7200")
	if !r.Lien.Expires.Equal(s.Clock.Now().Add(2*time.Hour + lien.DefaultGrace)) {
		t.Errorf("expires = %s", r.Lien.Expires)
	}
	if _, err := s.lb.Extend(context.Background(), s.Req(), job("1"), 20000); !errors.Is(err, ledger.ErrInsufficientFunds) {
		t.Errorf("extension beyond funds: %v", err)
	}
	wantAmount(t, "reserved", s.MustBalance("chem").Reserved, "7200")
}

func TestReservationChargesIdleCycles(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	start := s.Clock.Now()
	if _, err := s.lb.AddReservation(context.Background(), s.Req(), lien.ReservationSpec{Name: "maint", Machine: "hpc1", Processors: 10, Start: start, End: start.Add(2 * time.Hour), User: "amy"}); err != nil {
		t.Fatal(err)
	}
	// A job of 4 processors runs inside it for the first 30 minutes.
	s.mustPlace("in", 4, 1800)
	s.Clock.Advance(30 * time.Minute)
	u := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 1800, WallclockLimitSeconds: 1800, Start: start, End: start.Add(30 * time.Minute), State: charge.Completed}
	s.mustCharge(lien.ChargeSpec{Job: job("in"), Usage: u, Reservation: "maint"})
	s.Clock.Advance(30 * time.Minute)
	// First hour: 10 × 3600 reserved, 4 × 1800 used: 28800 idle.
	f, err := s.lb.Flush(context.Background(), s.Req(), "maint", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if f.IdleSeconds != 28800 || f.Charge == nil {
		t.Fatalf("first flush = %+v", f)
	}
	wantAmount(t, "first idle charge", f.Charge.Charge.Amount, "28800")
	// Second hour, nothing ran but 2 processors of a running job for 600 s.
	s.Clock.Advance(90 * time.Minute) // past the end
	f, err = s.lb.Flush(context.Background(), s.Req(), "maint", 1200, true)
	if err != nil {
		t.Fatal(err)
	}
	if f.IdleSeconds != 36000-1200 || !f.Reservation.Ended {
		t.Fatalf("final flush = %+v", f)
	}
	// The job 7200, idle 28800 and 34800: 70800 in all.
	wantAmount(t, "amount", s.MustBalance("chem").Amount, "929200")
	if _, err := s.lb.Flush(context.Background(), s.Req(), "maint", 0, false); !errors.Is(err, lien.ErrReservation) {
		t.Errorf("flush after the end: %v", err)
	}
}

func TestBadInputRefusedAndNothingWritten(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	s.mustPlace("held", 1, 60)
	now := s.Clock.Now()
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"negative processors", func() error { _, err := s.place("x", -1, 60); return err }, ledger.ErrInvalid},
		{"absurd processors", func() error { _, err := s.place("x", 1e9, 60); return err }, ledger.ErrInvalid},
		{"negative wallclock", func() error { _, err := s.place("x", 1, -60); return err }, ledger.ErrInvalid},
		{"absurd wallclock", func() error { _, err := s.place("x", 1, 1e12); return err }, ledger.ErrInvalid},
		{"empty job id", func() error { _, err := s.place("", 1, 60); return err }, ledger.ErrInvalid},
		{"unknown user", func() error {
			_, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("x"), User: "nobody", Request: request(1, 60)})
			return err
		}, ledger.ErrNotFound},
		{"unknown machine", func() error {
			_, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: lien.Job{Machine: "nope", ID: "x"}, User: "amy", Request: request(1, 60)})
			return err
		}, ledger.ErrNotFound},
		{"not a member", func() error {
			_, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("x"), User: "amy", Project: "bio", Request: request(1, 60)})
			return err
		}, lien.ErrNotMember},
		{"charge with no lien and no project", func() error {
			_, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job("nolien"), Usage: s.usage(1, 60, 60, 0, charge.Completed)})
			return err
		}, ledger.ErrInvalid},
		{"end before start", func() error {
			u := s.usage(1, 60, 60, 0, charge.Completed)
			u.End = now.Add(-time.Hour)
			_, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job("held"), Usage: u})
			return err
		}, ledger.ErrInvalid},
		{"unknown QOS", func() error {
			table := charge.DefaultRateTable()
			table.Rates = append(table.Rates, charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: "premium", Rate: dec("2")})
			if _, err := s.lb.SetRates(context.Background(), s.Req(), table); err != nil {
				return err
			}
			r := request(1, 60)
			r.QOS = "platinum"
			_, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("x"), User: "amy", Request: r})
			return err
		}, ledger.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.JournalLen()
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.name != "unknown QOS" && s.JournalLen() != before {
				t.Error("a refused call wrote to the journal")
			}
		})
	}
	if _, err := charge.ParsePolicy("DEBITEVERYTHING"); err == nil {
		t.Error("unknown policy accepted")
	}
	wantAmount(t, "reserved", s.MustBalance("chem").Reserved, "60")
}

// TestConcurrentLiensStopAtFunds places 1,000 liens at once against a
// project that can cover exactly 100 of them.
func TestConcurrentLiensStopAtFunds(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "6000", time.Time{}) // 100 liens of 60
	ok, refused := ledgertest.Race(t, 1000, func(i int) error {
		_, err := s.place(fmt.Sprint("c", i), 1, 60)
		return err
	})
	if ok != 100 || refused != 900 {
		t.Errorf("%d liens placed, %d refused; want 100 and 900", ok, refused)
	}
	bal := s.MustBalance("chem")
	wantAmount(t, "reserved", bal.Reserved, "6000")
	wantAmount(t, "available", bal.Available, "0")
}

// TestChargeRetriedChargesOnce retries one charge 1,000 times, concurrently,
// with the same request id.
func TestChargeRetriedChargesOnce(t *testing.T) { chargeRetriedChargesOnce(t, newSite(t)) }

func chargeRetriedChargesOnce(t *testing.T, s *site) {
	s.MustDeposit("chem", "100000", time.Time{})
	s.mustPlace("r", 2, 600)
	req := ledger.Request{Actor: "sched", ID: "charge-r"}
	spec := lien.ChargeSpec{Job: job("r"), Usage: s.usage(2, 600, 600, 0, charge.Completed)}
	var wg sync.WaitGroup
	ids := make([]uint64, 1000)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.lb.Charge(context.Background(), req, spec)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = r.Charge.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("retries answered different charges: %d and %d", ids[0], id)
		}
	}
	wantAmount(t, "amount", s.MustBalance("chem").Amount, "98800")
	if cs, _ := s.lb.Charges(context.Background(), job("r")); len(cs) != 1 {
		t.Errorf("%d charges recorded", len(cs))
	}
}

func ptr[T any](v T) *T { return &v }

func TestRefusalWithMissingFallbackIsStillForFunds(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100", time.Time{})
	if _, err := s.lb.ChangeConfig(context.Background(), s.Req(), lien.ConfigChange{Fallback: ptr("+-gone")}); err != nil {
		t.Fatal(err)
	}
	_, err := s.place("1", 1, 3600)
	if !errors.Is(err, ledger.ErrInsufficientFunds) || !errors.Is(err, ledger.ErrNotFound) || !strings.Contains(err.Error(), "chem.lab1-gone") {
		t.Errorf("err = %v", err)
	}
}

func TestLienThatWouldBeExpiredIsRefused(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	r := request(1, 600)
	r.Start = s.Clock.Now().Add(-time.Hour) // 600 s + 10 min grace ended 40 minutes ago
	before := s.JournalLen()
	if _, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("late"), User: "amy", Request: r}); !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), "charge it instead") {
		t.Errorf("err = %v", err)
	}
	if s.JournalLen() != before {
		t.Error("the refused lien wrote to the journal")
	}
	r.Start = s.Clock.Now().Add(-15 * time.Minute) // still inside its limit and grace
	res, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("late"), User: "amy", Request: r})
	if err != nil || res.Requested != "chem.lab1" || res.Quote.Credits.IsZero() {
		t.Errorf("late but live lien: %+v %v", res, err)
	}
	again, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("late"), User: "amy", Request: r})
	if err != nil || !again.Existing || !again.Quote.Credits.Equal(res.Quote.Credits) {
		t.Errorf("repeated placement: %+v %v", again, err)
	}
}

func TestReservedAtAPastTime(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "10000", time.Time{})
	s.Clock.Advance(time.Minute)
	s.mustPlace("1", 2, 1000) // holds 2000
	placed := s.Clock.Now()
	s.Clock.Advance(time.Minute)
	if _, err := s.lb.Release(context.Background(), s.Req(), job("1")); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(time.Minute)
	for _, tc := range []struct {
		name     string
		at       time.Time
		reserved string
	}{
		{"before the lien", placed.Add(-30 * time.Second), "0"},
		{"while it held", placed.Add(30 * time.Second), "2000"},
		{"after its release", placed.Add(90 * time.Second), "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nb, err := s.BalanceAt(context.Background(), "chem", tc.at)
			if err != nil {
				t.Fatal(err)
			}
			wantAmount(t, "reserved", nb.Reserved, tc.reserved)
			wantAmount(t, "available", nb.Available, dec("10000").Sub(dec(tc.reserved)).String())
		})
	}
}

// TestNewRatesPriceAtOnce: the pricing paths keep the decoded rate table
// between jobs; a new table prices the next job, and the old one is not
// changed by pricing with it.
func TestNewRatesPriceAtOnce(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	for i, rate := range []string{"2", "3", "2"} {
		table := charge.DefaultRateTable()
		table.Rates[0].Rate = dec(rate)
		if _, err := s.lb.SetRates(context.Background(), s.Req(), table); err != nil {
			t.Fatal(err)
		}
		for j := range 2 { // the second job prices with the kept table
			r := s.mustPlace(fmt.Sprintf("r%d-%d", i, j), 1, 100)
			wantAmount(t, fmt.Sprintf("lien at rate %s", rate), r.Lien.Amount, dec(rate).Mul(dec("100")).String())
		}
	}
	if got, err := s.lb.Rates(context.Background()); err != nil || !got.Rates[0].Rate.Equal(dec("2")) {
		t.Errorf("rates after pricing: %+v %v", got.Rates, err)
	}
}

// TestNewPolicyChargesAtOnce: the pricing paths keep the decoded
// configuration between jobs; a policy changed between two charges applies
// to the second.
func TestNewPolicyChargesAtOnce(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	for i, tc := range []struct{ policy, charged string }{
		{"DEBITSUCCESSFULWC", "28800"}, {"DEBITALLCPU", "14400"}, {"DEBITSUCCESSFULWC", "28800"},
	} {
		p, err := charge.ParsePolicy(tc.policy)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.lb.ChangeConfig(context.Background(), s.Req(), lien.ConfigChange{Policy: &p}); err != nil {
			t.Fatal(err)
		}
		for j := range 2 { // the second job charges with the kept configuration
			id := fmt.Sprintf("p%d-%d", i, j)
			s.mustPlace(id, 8, 7200)
			r := s.mustCharge(lien.ChargeSpec{Job: job(id), Usage: s.usage(8, 3600, 7200, 14400, charge.Completed)})
			wantAmount(t, "charge under "+tc.policy, r.Charge.Amount, tc.charged)
		}
	}
}

// TestTimesPastYear9999AreRefused: a deposit or a lien whose times JSON
// cannot hold (past year 9999) is refused in its own call, with nothing
// written, and the bank goes on. The store encodes an allocation's record
// after the call, and on machines of four cores or more a request's answer
// (deferred values, which fail a whole group); this holds because the
// same times are encoded first in the call, in its request or its journal
// entry. The test runs both ways for the answer.
func TestTimesPastYear9999AreRefused(t *testing.T) { timesPastYear9999AreRefused(t, newSite(t)) }

func timesPastYear9999AreRefused(t *testing.T, s *site) {
	s.MustDeposit("chem", "1000000", time.Time{})
	entries := s.JournalLen()
	if _, err := s.Deposit(context.Background(), s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("100"), End: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("a deposit ending in year 10000 was accepted")
	}
	far := lien.PlaceSpec{Job: job("far"), User: "amy", Request: withStart(request(4, 24*3600), time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC))}
	if _, err := s.lb.Place(context.Background(), s.Req(), far); err == nil {
		t.Error("a lien expiring in year 10000 was placed")
	}
	if n := s.JournalLen(); n != entries {
		t.Errorf("the refusals wrote %d journal entries", n-entries)
	}
	s.MustDeposit("chem", "5", time.Time{})
	if _, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job("next"), User: "amy", Request: withStart(request(4, 3600), s.Clock.Now())}); err != nil {
		t.Fatalf("a lien after the refusals: %v", err)
	}
	s.MustAudit()
}

// TestQuoteSaysWhetherTheLienWouldBeGranted: a quote answers, besides the
// price, what the project has available and whether a lien placed now
// would be granted, on the project or on the fallback; placing the lien
// right after does what the quote said.
func TestQuoteSaysWhetherTheLienWouldBeGranted(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000", time.Time{})
	quote := func(procs, seconds int64) lien.QuoteResult {
		t.Helper()
		q, err := s.lb.Quote(context.Background(), lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: request(procs, seconds)})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	for _, tc := range []struct {
		name              string
		procs, seconds    int64
		setup             func()
		covered           bool
		fallback, refusal string
		available         string
	}{
		{name: "covered", procs: 1, seconds: 600, covered: true, available: "1000"},
		{name: "too big", procs: 4, seconds: 600, refusal: "project chem.lab1 needs 2400, 400 available", available: "400",
			setup: func() { s.mustPlace("holds-600", 1, 600) }},
		{name: "fallback", procs: 4, seconds: 600, covered: true, fallback: "bio", available: "400", setup: func() {
			s.MustDeposit("bio", "5000", time.Time{})
			if _, err := s.lb.ChangeConfig(context.Background(), s.Req(), lien.ConfigChange{Fallback: ptr("bio")}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "not even the fallback", procs: 10, seconds: 600, refusal: "project chem.lab1 needs 6000, 400 available; fallback: ledger: insufficient funds: project bio needs 6000", available: "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			q := quote(tc.procs, tc.seconds)
			if q.Covered != tc.covered || q.Fallback != tc.fallback || !strings.Contains(q.Refusal, tc.refusal) || (tc.refusal == "") != (q.Refusal == "") {
				t.Errorf("quote = covered %v, fallback %q, refusal %q; want %v, %q, %q", q.Covered, q.Fallback, q.Refusal, tc.covered, tc.fallback, tc.refusal)
			}
			wantAmount(t, "available", q.Available, tc.available)
			before := s.JournalLen()
			r, err := s.place("q-"+strings.ReplaceAll(tc.name, " ", "-"), tc.procs, tc.seconds)
			if (err == nil) != q.Covered || (err == nil && r.FellBack != (q.Fallback != "")) || (err != nil && err.Error() != "lien for job q-"+strings.ReplaceAll(tc.name, " ", "-")+": "+q.Refusal) {
				t.Errorf("the quote said covered %v, fallback %q, refusal %q; placing the lien gave %+v, %v", q.Covered, q.Fallback, q.Refusal, r, err)
			}
			if err == nil {
				if _, err := s.lb.Release(context.Background(), s.Req(), job(r.Lien.JobID)); err != nil {
					t.Fatal(err)
				}
			} else if s.JournalLen() != before {
				t.Error("a refused lien wrote to the journal")
			}
		})
	}
}

// TestRatesWrittenBeforeDigests: a rate table written before the ledger
// kept record digests is compared byte for byte with the one kept, so a
// table changed without a digest still prices the next job.
func TestRatesWrittenBeforeDigests(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	table := charge.DefaultRateTable()
	table.Rates[0].Rate = dec("2")
	if _, err := s.lb.SetRates(context.Background(), s.Req(), table); err != nil {
		t.Fatal(err)
	}
	s.mustPlace("new", 1, 100)
	// The digest dropped, and the table changed, as an earlier version
	// of ingot left them (and back, as the journal has it).
	for i, rate := range []string{"3", "2"} {
		table.Rates[0].Rate = dec(rate)
		raw, err := json.Marshal(table)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Store.Update(context.Background(), func(tx ledger.Tx) error {
			if err := tx.PutRecord(ledger.Record{Kind: "ledger.digest", Key: "config/rates", Deleted: true}); err != nil {
				return err
			}
			return tx.PutRecord(ledger.Record{Kind: "config", Key: "rates", Value: raw})
		})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 2 { // the second job prices with the kept table
			r := s.mustPlace(fmt.Sprintf("old%d-%d", i, j), 1, 100)
			wantAmount(t, "lien at rate "+rate, r.Lien.Amount, dec(rate).Mul(dec("100")).String())
		}
	}
}
