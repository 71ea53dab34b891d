package lien_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// BenchmarkShape (make bench-shape) measures what the shape of an account
// costs the hot paths (issue 41): the same operations on a bank whose
// account chem has 10 allocations and on one where it has 10,000, of which
// 9,990 have expired, each of those used by a charge (as a centre that
// deposits per grant or month finds after a few years). For each operation
// it times the large bank and reports, beside its rate, the small bank's
// rate measured in the same run just before (small_ops/s) and the cost
// ratio, large over small (x_small: the bar is 1.3):
//
//   - cycle: a job's lien and final charge, each durable, 16 goroutines;
//   - deposit: a durable deposit into one of the live allocations, 16
//     goroutines;
//   - balance: the account's balance now (Ledger.BalanceAt), 1 goroutine;
//   - quote: the quote of a job on chem.lab1 (lien.Bank.Quote), 1
//     goroutine;
//   - preempt: the preemption answer for a lien on chem.lab1, 1 goroutine.
//
// On bbolt always; on PostgreSQL (a server of its own, no standby) under
// INGOT_E2E=1 or INGOT_BENCH_SHAPE_POSTGRES=1.
func BenchmarkShape(b *testing.B) {
	engines := []struct {
		name string
		open func(b *testing.B) ledgertest.OpenStore
	}{{"bbolt", func(*testing.B) ledgertest.OpenStore { return bolttest.Open }}}
	if os.Getenv("INGOT_E2E") == "1" || os.Getenv("INGOT_BENCH_SHAPE_POSTGRES") == "1" {
		engines = append(engines, struct {
			name string
			open func(b *testing.B) ledgertest.OpenStore
		}{"postgres", func(b *testing.B) ledgertest.OpenStore {
			server := pgtest.Start(b)
			return func(tb testing.TB) ledger.Store { return pgstoretest.OpenURL(tb, server.NewDB(b)) }
		}})
	}
	for _, engine := range engines {
		b.Run(engine.name, func(b *testing.B) {
			open := engine.open(b)
			small, large := shapeBank(b, open, 0), shapeBank(b, open, 9990)
			var jobs atomic.Int64
			ops := []struct {
				name    string
				workers int
				op      func(b *testing.B, s *site)
			}{
				{"cycle", 16, func(b *testing.B, s *site) { cycleOn(b, s.lb, s.Clock.Now(), jobs.Add(1)) }},
				{"deposit", 16, func(b *testing.B, s *site) {
					if _, err := s.Deposit(context.Background(), s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("1"), Allocation: s.live}); err != nil {
						b.Fatal(err)
					}
				}},
				{"balance", 1, func(b *testing.B, s *site) {
					if nb, err := s.BalanceAt(context.Background(), "chem", time.Time{}); err != nil || !nb.Available.IsPositive() {
						b.Fatalf("balance: %+v, %v", nb.Balance, err)
					}
				}},
				{"quote", 1, func(b *testing.B, s *site) {
					q, err := s.lb.Quote(context.Background(), lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: request(4, 3600)})
					if err != nil || !q.Covered {
						b.Fatalf("quote: %+v, %v", q, err)
					}
				}},
				{"preempt", 1, func(b *testing.B, s *site) {
					if p, err := s.Preempt(context.Background(), "chem.lab1", "hpc1", dec("100")); err != nil || p.Outcome != "fits" {
						b.Fatalf("preempt: %+v, %v", p, err)
					}
				}},
			}
			for _, o := range ops {
				b.Run(fmt.Sprintf("%s/allocations=10000", o.name), func(b *testing.B) {
					baseline := ledgertest.RateOf(b, o.workers, func() { o.op(b, small) })
					ledgertest.Parallel(b, o.workers, func() { o.op(b, large) })
					rate := float64(b.N) / b.Elapsed().Seconds()
					b.ReportMetric(rate, "ops/s")
					b.ReportMetric(baseline, "small_ops/s")
					b.ReportMetric(baseline/rate, "x_small")
				})
			}
		})
	}
}

// shapeBank is a site whose account chem has 10 live allocations (ending
// in ten years, one of them site.live) and, before them, expired more
// allocations of 1 credit each, which one job's charge used up before they
// ended an hour after they were made. chem.lab1 has an HFS policy, so
// that its checks go through the plan.
func shapeBank(b *testing.B, open ledgertest.OpenStore, expired int) *site {
	s := newSiteOn(b, open)
	ctx := context.Background()
	policy := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.5"), AcceptSurplus: true}
	if _, err := s.ModifyNode(ctx, s.Req(), "chem.lab1", ledger.NodeChange{Policy: &policy}); err != nil {
		b.Fatal(err)
	}
	ended := s.Clock.Now().Add(time.Hour)
	const depositors = 16
	var wg sync.WaitGroup
	errs := make(chan error, depositors)
	for w := range depositors {
		wg.Go(func() {
			for k := w; k < expired; k += depositors {
				if _, err := s.Deposit(ctx, s.Req(), ledger.DepositSpec{Account: "chem", Amount: dec("1"), End: ended}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if expired > 0 {
		// One job uses them all: its charge debits each.
		now := s.Clock.Now()
		spec := lien.PlaceSpec{Job: job("old"), User: "amy", Request: withStart(request(1, int64(expired)), now)}
		if _, err := s.lb.Place(ctx, s.Req(), spec); err != nil {
			b.Fatal(err)
		}
		u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: int64(expired), WallclockLimitSeconds: int64(expired),
			State: charge.Completed, Start: now}
		if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job("old"), Usage: u}); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 {
		s.live = s.MustDeposit("chem", "1000000000000", s.Clock.Now().AddDate(10, 0, 0))
	}
	s.Clock.Advance(2 * time.Hour)
	return s
}
