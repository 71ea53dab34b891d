package lien_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// condoSite is an account condo of 1000 credits: condo.chem owns 400,
// condo.phys owns 300, condo.general (shares 1, accepting surplus) owns
// nothing and borrows what they leave.
func condoSite(t *testing.T) *site {
	s := newSite(t)
	s.MustNode("condo")
	for _, p := range []ledger.NodeSpec{
		{Name: "condo.chem", Policy: ledger.Policy{Ownership: dec("400")}},
		{Name: "condo.phys", Policy: ledger.Policy{Ownership: dec("300"), Priority: 1}},
		{Name: "condo.general", Policy: ledger.Policy{QuotaKind: ledger.QuotaShares, Quota: dec("1"), AcceptSurplus: true}},
	} {
		p.AnyUser = true
		if _, err := s.CreateNode(context.Background(), s.Req(), p); err != nil {
			t.Fatal(err)
		}
	}
	s.MustDeposit("condo", "1000", time.Time{})
	return s
}

// TestRefusedLienNamesVictims: once the general pool holds the whole
// account, an owner's lien is refused naming the jobs to preempt, the
// fewest, largest first; once the scheduler released them it goes
// through. The bank releases nothing itself.
func TestRefusedLienNamesVictims(t *testing.T) {
	s := condoSite(t)
	for k, credits := range []int64{100, 100, 300, 100, 400} {
		if _, err := s.placeOn("condo.general", fmt.Sprint("g", k), credits); err != nil {
			t.Fatal(err)
		}
	}
	before := s.JournalLen()
	_, err := s.placeOn("condo.chem", "c1", 250)
	pe, ok := errors.AsType[*ledger.PreemptionError](err)
	if !ok || !errors.Is(err, ledger.ErrInsufficientFunds) {
		t.Fatalf("owner's lien: %v", err)
	}
	if got := pe.Preemption; got.Outcome != "preempt" || len(got.Victims) != 1 || got.Victims[0].JobID != "g4" || !got.Victims[0].Held.Equal(dec("400")) {
		t.Fatalf("preemption %+v", got)
	}
	if !strings.Contains(err.Error(), "condo.chem is underfed by 400: preempt 1 job (top-down) to free 400: job g4 on hpc1 (condo.general, holds 400)") {
		t.Errorf("message: %v", err)
	}
	if s.JournalLen() != before {
		t.Error("the refused lien wrote to the journal")
	}
	if l, err := s.lb.JobLien(context.Background(), job("g4")); err != nil || l.State != ledger.LienActive {
		t.Fatalf("the bank released the victim itself: %+v, %v", l, err)
	}
	if _, err := s.lb.Release(context.Background(), s.Req(), job("g4")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.placeOn("condo.chem", "c1", 250); err != nil {
		t.Fatalf("after the release: %v", err)
	}
	// general still borrows 600 of the 700 owned; phys takes back 300 of
	// it, the first job listed of the three of 100 (the newest).
	_, err = s.placeOn("condo.phys", "p1", 300)
	pe, ok = errors.AsType[*ledger.PreemptionError](err)
	if !ok || len(pe.Preemption.Victims) != 1 || pe.Preemption.Victims[0].JobID != "g2" {
		t.Fatalf("phys's lien: %v", err)
	}
}

// TestCachedPreemptionIsExact runs random operations on an account with
// owners and, after each, checks the bank's preemption answers (from its
// plan cache, kept current by the writers) against those of a ledger
// opened afresh on the same store, which works them out from storage.
func TestCachedPreemptionIsExact(t *testing.T) {
	// The cache is the ledger's, the same on every engine: on PostgreSQL,
	// slower, two runs do.
	seeds := uint64(8)
	if strings.HasPrefix(t.Name(), onPostgres+"/") {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { preemptCacheRun(t, seed) })
	}
}

func preemptCacheRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 31))
	s := condoSite(t)
	if _, err := s.AddMachine(context.Background(), s.Req(), ledger.MachineSpec{Name: "hpc2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Deposit(context.Background(), s.Req(), ledger.DepositSpec{Account: "condo", Amount: dec("200"), Machine: "hpc2"}); err != nil {
		t.Fatal(err)
	}
	projects := []string{"condo.chem", "condo.phys", "condo.general"}
	var jobs []string
	preempted := 0
	check := func(step string) {
		t.Helper()
		fresh, err := ledger.Open(context.Background(), s.Store, ledger.WithClock(s.Clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range projects {
			for _, machine := range []string{"", "hpc1", "hpc2"} {
				// Half the time, as much as the project may take back:
				// the free credits and its whole deficit, which names
				// many jobs.
				amount := dec(fmt.Sprint(10 + rng.IntN(150)))
				probe, err := fresh.Preempt(context.Background(), p, machine, amount)
				if err != nil {
					t.Fatal(err)
				}
				if most := probe.Free.Add(probe.Owned).Sub(probe.InUse); rng.IntN(2) == 0 && most.GreaterThan(probe.Free) {
					amount = most
				}
				got, err := s.Preempt(context.Background(), p, machine, amount)
				if err != nil {
					t.Fatal(err)
				}
				want, err := fresh.Preempt(context.Background(), p, machine, amount)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
					t.Fatalf("after %s: %s %s on %q:\nfrom the cache %s\nafresh         %s", step, p, amount, machine, g, w)
				}
				if got.Outcome == "preempt" {
					preempted++
				}

			}
		}
	}
	check("setup")
	for i := range 120 {
		step := ""
		switch op := rng.IntN(20); {
		case op < 13:
			step = "place"
			// Mostly the general pool, which borrows what the owners
			// leave: so that owners' liens find it full.
			p := projects[2]
			if rng.IntN(8) == 0 {
				p = projects[rng.IntN(2)]
			}
			id := fmt.Sprint("j", i)
			if _, err := s.placeOn(p, id, 10+rng.Int64N(60)); err == nil {
				jobs = append(jobs, id)
			}
		case op < 15 && len(jobs) > 0:
			step = "charge"
			s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job(jobs[rng.IntN(len(jobs))]), Incremental: rng.IntN(3) == 0,
				Usage: charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: rng.Int64N(30), State: charge.Completed}})
		case op < 17 && len(jobs) > 0:
			step = "release"
			s.lb.Release(context.Background(), s.Req(), job(jobs[rng.IntN(len(jobs))]))
		case op < 19:
			step = "time"
			s.Clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
		default:
			step = "deposit"
			s.MustDeposit("condo", "100", time.Time{})
			// The liens the dropped plan kept are carried to the next
			// one: changes made before the next answer must keep them
			// exact, or drop them.
			switch rng.IntN(4) {
			case 0:
				step = "deposit, withdrawal"
				if _, err := s.Withdraw(context.Background(), s.Req(), ledger.WithdrawSpec{Account: "condo", Amount: dec("50")}); err != nil {
					t.Fatal(err)
				}
			case 1:
				step = "deposit, lien"
				id := fmt.Sprint("j", i)
				if _, err := s.placeOn(projects[rng.IntN(len(projects))], id, 10+rng.Int64N(60)); err == nil {
					jobs = append(jobs, id)
				}
			case 2:
				if len(jobs) > 0 {
					step = "deposit, release"
					s.lb.Release(context.Background(), s.Req(), job(jobs[rng.IntN(len(jobs))]))
				}
			}
		}
		check(fmt.Sprintf("step %d (%s)", i, step))
	}
	if preempted < 30 {
		t.Fatalf("%d answers named jobs to preempt: too few to test the cache", preempted)
	}
}

// TestOwnersPolicyRefused: what the CLI has no flag for is refused by the
// ledger too, with a message and nothing written.
func TestOwnersPolicyRefused(t *testing.T) {
	s := condoSite(t)
	for _, c := range []struct {
		name, node string
		policy     ledger.Policy
		says       string
	}{
		{"ownership on an account", "condo", ledger.Policy{Ownership: dec("1")}, "an account takes its whole pool; ownership, group_non_shared and priority are for projects"},
		{"group non-shared on an account", "condo", ledger.Policy{GroupNonShared: dec("1")}, "an account takes its whole pool"},
		{"priority on an account", "condo", ledger.Policy{Priority: 1}, "an account takes its whole pool"},
		{"a project's preemption order", "condo.chem", ledger.Policy{Ownership: dec("400"), Preemption: ledger.PreemptBottomUp}, "the preemption order is the account's, not a project's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.JournalLen()
			_, err := s.ModifyNode(context.Background(), s.Req(), c.node, ledger.NodeChange{Policy: &c.policy})
			if !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("got %v, want it refused saying %q", err, c.says)
			}
			if s.JournalLen() != before {
				t.Error("the refused policy wrote to the journal")
			}
		})
	}
}
