package lien

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// TestPricedAheadOnlyWhenTheSame: the writer takes a charge's price or a
// lien's quote made ahead only for the very same compiled table, policy
// and shape (and, for a quote, start), and no guaranteed quote; otherwise
// it prices again.
func TestPricedAheadOnlyWhenTheSame(t *testing.T) {
	table, err := charge.DefaultRateTable().Compile()
	if err != nil {
		t.Fatal(err)
	}
	other, err := charge.DefaultRateTable().Compile() // equal, but another compilation
	if err != nil {
		t.Fatal(err)
	}
	pr := pricing{rates: table, policy: charge.DebitSuccessfulWC, shape: charge.Shape{Cores: 32}}
	quoted := pr
	quoted.quote = 7
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	usage := charge.Usage{Resources: charge.Resources{Processors: 2}, WallclockSeconds: 10, WallclockLimitSeconds: 60, Start: start, State: charge.Completed}
	request := charge.Request{Resources: charge.Resources{Processors: 2}, WallclockLimitSeconds: 60, Start: start}
	// A price no pricing gives, so that its use shows.
	mark := charge.Amount{Credits: decimal.NewFromInt(-1)}
	charged := chargeAhead{pr: pr, priced: pricedCharge{amount: mark}, ok: true}
	spec := ChargeSpec{Usage: usage}
	quotedAhead := quoteAhead{pr: pr, request: request, amount: mark, ok: true}
	for _, tc := range []struct {
		what      string
		now       pricing
		start     time.Time
		usesAhead bool
	}{
		{"the same pricing", pr, start, true},
		{"an equal table compiled again", pricing{rates: other, policy: pr.policy, shape: pr.shape}, start, false},
		{"another policy", pricing{rates: table, policy: charge.DebitAllCPU, shape: pr.shape}, start, false},
		{"another shape", pricing{rates: table, policy: pr.policy, shape: charge.Shape{Cores: 64}}, start, false},
		{"a guaranteed quote's pricing", quoted, start, false},
	} {
		priced, err := charged.price(tc.now, spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if usedAhead := priced.amount.Credits.Equal(mark.Credits); usedAhead != tc.usesAhead {
			t.Errorf("charge, %s: price %s; the price made ahead used: %v, want %v", tc.what, priced.amount.Credits, usedAhead, tc.usesAhead)
		}
		got, err := quotedAhead.quote(tc.now, request)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if usedAhead := got.Credits.Equal(mark.Credits); usedAhead != tc.usesAhead {
			t.Errorf("quote, %s: %s; the quote made ahead used: %v, want %v", tc.what, got.Credits, usedAhead, tc.usesAhead)
		}
	}
	later := request
	later.Start = start.Add(time.Millisecond)
	if got, err := quotedAhead.quote(pr, later); err != nil || got.Credits.Equal(mark.Credits) {
		t.Errorf("a quote made ahead for another start was used: %s %v", got.Credits, err)
	}
	if got, err := (chargeAhead{}).price(pr, spec); err != nil || !got.amount.Credits.Equal(decimal.NewFromInt(20)) {
		t.Errorf("nothing priced ahead: %s %v; want 20 (2 processors × 10 s)", got.amount.Credits, err)
	}
	if got, err := (quoteAhead{}).quote(pr, request); err != nil || !got.Credits.Equal(decimal.NewFromInt(120)) {
		t.Errorf("nothing quoted ahead: %s %v; want 120 (2 processors × 60 s)", got.Credits, err)
	}
}

// TestChargeDetailMadeAheadIsTheWriters: a charge's detail made in the
// caller's goroutine is the one the writer would make for the same spec:
// its usage as priced (an incremental charge's as still running), its
// reservation and the price's explanation.
func TestChargeDetailMadeAheadIsTheWriters(t *testing.T) {
	table, err := charge.DefaultRateTable().Compile()
	if err != nil {
		t.Fatal(err)
	}
	pr := pricing{rates: table, policy: charge.DebitSuccessfulWC, shape: charge.Shape{Cores: 32}}
	b := Bank{priceAhead: true}
	keep(&b.last.charges, "hpc1", pr)
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	usage := charge.Usage{Resources: charge.Resources{Processors: 2}, WallclockSeconds: 10, WallclockLimitSeconds: 60, Start: start, State: charge.Completed}
	for _, spec := range []ChargeSpec{
		{Job: Job{Machine: "hpc1", ID: "1"}, Usage: usage},
		{Job: Job{Machine: "hpc1", ID: "2"}, Usage: usage, Incremental: true},
		{Job: Job{Machine: "hpc1", ID: "3"}, Usage: usage, Reservation: "night"},
	} {
		ahead := b.priceChargeAhead(spec)
		if !ahead.ok {
			t.Fatalf("job %s: nothing priced ahead", spec.ID)
		}
		writers, err := (chargeAhead{}).price(pr, spec)
		if err != nil {
			t.Fatal(err)
		}
		if string(ahead.priced.detail) != string(writers.detail) || !ahead.priced.amount.Credits.Equal(writers.amount.Credits) {
			t.Errorf("job %s: made ahead %s (%s), by the writer %s (%s)", spec.ID, ahead.priced.detail, ahead.priced.amount.Credits, writers.detail, writers.amount.Credits)
		}
		d, err := ExplanationOf(ledger.Charge{Detail: writers.detail})
		if err != nil || d.Subject != "charge" || len(d.Items) == 0 {
			t.Errorf("job %s: the detail %s does not explain the charge: %+v %v", spec.ID, writers.detail, d, err)
		}
	}
}

// TestLastPricingKeepsTheRatesPricing: the pricing kept for a machine is
// the newest the writer used with the rates in force, never a guaranteed
// quote's (which is one job's own).
func TestLastPricingKeepsTheRatesPricing(t *testing.T) {
	table, err := charge.DefaultRateTable().Compile()
	if err != nil {
		t.Fatal(err)
	}
	var last lastPricing
	pr := pricing{rates: table, policy: charge.DebitSuccessfulWC, shape: charge.Shape{Cores: 32}}
	keep(&last.charges, "hpc1", pr)
	if got, ok := guess(&last.charges, "hpc1"); !ok || got != pr {
		t.Fatalf("kept %+v %v, want %+v", got, ok, pr)
	}
	quoted := pr
	quoted.quote = 3
	keep(&last.charges, "hpc1", quoted)
	if got, _ := guess(&last.charges, "hpc1"); got != pr {
		t.Errorf("a guaranteed quote's pricing replaced the rates': %+v", got)
	}
	cpu := pr
	cpu.policy = charge.DebitAllCPU
	keep(&last.charges, "hpc1", cpu)
	if got, _ := guess(&last.charges, "hpc1"); got != cpu {
		t.Errorf("a changed pricing was not kept: %+v", got)
	}
	if _, ok := guess(&last.charges, "hpc2"); ok {
		t.Error("a machine never priced has a pricing")
	}
}

// TestPricingAheadSurvivesAPanic: a pricing that panics in the caller's
// goroutine prices nothing ahead (the writer prices again and turns the
// panic into the call's error) instead of ending the process.
func TestPricingAheadSurvivesAPanic(t *testing.T) {
	b := Bank{priceAhead: true}
	broken := pricing{policy: charge.DebitSuccessfulWC} // no table: pricing dereferences nil
	keep(&b.last.charges, "hpc1", broken)
	keep(&b.last.liens, placeKey{"hpc1", "amy", ""}, broken)
	job := Job{Machine: "hpc1", ID: "1"}
	if a := b.priceChargeAhead(ChargeSpec{Job: job, Usage: charge.Usage{WallclockSeconds: 10}}); a.ok {
		t.Errorf("a charge priced ahead with no table: %+v", a)
	}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	if a := b.quoteLienAhead(PlaceSpec{Job: job, User: "amy", Request: charge.Request{WallclockLimitSeconds: 60, Start: start}}); a.ok {
		t.Errorf("a lien quoted ahead with no table: %+v", a)
	}
}

// TestNoPricingAheadWhenOff: a bank that does not price ahead (a machine
// with few cores) leaves every price to the writer.
func TestNoPricingAheadWhenOff(t *testing.T) {
	table, err := charge.DefaultRateTable().Compile()
	if err != nil {
		t.Fatal(err)
	}
	pr := pricing{rates: table, policy: charge.DebitSuccessfulWC, shape: charge.Shape{Cores: 32}}
	var b Bank
	keep(&b.last.charges, "hpc1", pr)
	keep(&b.last.liens, placeKey{"hpc1", "amy", ""}, pr)
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	job := Job{Machine: "hpc1", ID: "1"}
	if a := b.priceChargeAhead(ChargeSpec{Job: job, Usage: charge.Usage{WallclockSeconds: 10, Start: start, State: charge.Completed}}); a.ok {
		t.Errorf("a charge priced ahead: %+v", a)
	}
	if a := b.quoteLienAhead(PlaceSpec{Job: job, User: "amy", Request: charge.Request{WallclockLimitSeconds: 60, Start: start}}); a.ok {
		t.Errorf("a lien quoted ahead: %+v", a)
	}
	b.priceAhead = true
	if a := b.priceChargeAhead(ChargeSpec{Job: job, Usage: charge.Usage{WallclockSeconds: 10, Start: start, State: charge.Completed}}); !a.ok {
		t.Error("turned on, the charge was not priced ahead")
	}
}
