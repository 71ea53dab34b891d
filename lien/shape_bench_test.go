package lien_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
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
// costs the hot paths (issue 41): the same operations on two banks that
// differ in one dimension, which is 10 in the small one and 10,000 in the
// large one (users: 100,000), for each dimension of shapes. For each
// operation it times the large bank and reports, beside its rate, the
// small bank's rate measured in the same run just before (small_ops/s)
// and the cost ratio, large over small (x_small: the bar is 1.3), and the
// same of the process's CPU time an operation took (small_cpu_us/op,
// x_small_cpu), which a machine busy with other work moves less (on
// PostgreSQL it leaves out the server's):
//
//   - cycle: a job's lien and final charge on chem.lab1, each durable, 16
//     goroutines;
//   - deposit: a durable deposit into one of the live allocations, 16
//     goroutines;
//   - balance: the account's balance now (Ledger.BalanceAt), 1 goroutine;
//   - quote: the quote of a job on chem.lab1 (lien.Bank.Quote), 1
//     goroutine;
//   - preempt: the preemption answer for a lien on chem.lab1, 1 goroutine.
//
// On bbolt always; on PostgreSQL (a server of its own, no standby) under
// INGOT_E2E=1 or INGOT_BENCH_SHAPE_POSTGRES=1. INGOT_BENCH_SHAPE=NAME,...
// runs only the dimensions named.
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
	only := os.Getenv("INGOT_BENCH_SHAPE")
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
	for _, engine := range engines {
		b.Run(engine.name, func(b *testing.B) {
			open := engine.open(b)
			for _, shape := range shapes {
				if only != "" && !slices.Contains(strings.Split(only, ","), shape.name) {
					continue
				}
				small, large := shapeBank(b, open, shape.grow, 10), shapeBank(b, open, shape.grow, shape.large)
				for _, o := range ops {
					b.Run(fmt.Sprintf("%s/%s=%d", o.name, shape.name, shape.large), func(b *testing.B) {
						baseline, baselineCPU := ledgertest.CostOf(b, o.workers, func() { o.op(b, small) })
						cpu := ledgertest.Parallel(b, o.workers, func() { o.op(b, large) })
						rate := float64(b.N) / b.Elapsed().Seconds()
						b.ReportMetric(rate, "ops/s")
						b.ReportMetric(baseline, "small_ops/s")
						b.ReportMetric(baseline/rate, "x_small")
						b.ReportMetric(baselineCPU, "small_cpu_us/op")
						b.ReportMetric(cpu/baselineCPU, "x_small_cpu")
					})
				}
			}
		})
	}
}

// shapes are the dimensions BenchmarkShape grows: grow adds n of the
// dimension to a bank of shapeBank's, and large is n in the large bank.
var shapes = []struct {
	name  string
	large int
	grow  func(b *testing.B, s *site, n int)
}{
	// Allocations that ended an hour after they were made, each used up by
	// a charge before it ended (a centre that deposits per grant or month,
	// after a few years).
	{"allocations-ended", 10000, func(b *testing.B, s *site, n int) {
		deposits(b, s, n, ledger.DepositSpec{Amount: dec("1"), End: s.Clock.Now().Add(time.Hour)})
		useUp(b, s, "ended", n)
	}},
	// Allocations that start in a year (presetting, QBank's way).
	{"allocations-future", 10000, func(b *testing.B, s *site, n int) {
		start := s.Clock.Now().AddDate(1, 0, 0)
		deposits(b, s, n, ledger.DepositSpec{Amount: dec("1"), Start: start, End: start.AddDate(1, 0, 0)})
	}},
	// Allocations that have not ended, each used up by a charge.
	{"allocations-exhausted", 10000, func(b *testing.B, s *site, n int) {
		deposits(b, s, n, ledger.DepositSpec{Amount: dec("1"), End: s.Clock.Now().AddDate(10, 0, 0)})
		useUp(b, s, "exhausted", n)
	}},
	// Active liens of the account's jobs, on an allocation of their own.
	{"liens", 10000, func(b *testing.B, s *site, n int) {
		s.MustDeposit("chem", "1000000000000", s.Clock.Now().AddDate(10, 0, 0))
		parallel(b, n, func(i int) error {
			_, err := s.lb.Place(context.Background(), s.Req(), lien.PlaceSpec{Job: job(fmt.Sprint("running-", i)), User: "amy",
				Request: withStart(request(1, 86400), s.Clock.Now())})
			return err
		})
	}},
	// Projects in the account's HFS tree, a hundred under each of n/100
	// groups.
	{"projects", 10000, func(b *testing.B, s *site, n int) {
		groups := max(n/100, 1)
		policy := ledger.Policy{QuotaKind: ledger.QuotaShares, Quota: dec("1"), AcceptSurplus: true}
		parallel(b, groups, func(g int) error {
			_, err := s.CreateNode(context.Background(), s.Req(), ledger.NodeSpec{Name: fmt.Sprint("chem.g", g), Policy: policy})
			return err
		})
		parallel(b, n-groups, func(i int) error {
			_, err := s.CreateNode(context.Background(), s.Req(), ledger.NodeSpec{Name: fmt.Sprintf("chem.g%d.p%d", i%groups, i), Policy: policy})
			return err
		})
	}},
	// Users, each a member of chem.lab1.
	{"users", 100000, func(b *testing.B, s *site, n int) {
		parallel(b, n, func(i int) error {
			_, err := s.AddUser(context.Background(), s.Req(), ledger.UserSpec{Name: fmt.Sprint("u", i), DefaultProject: "chem.lab1",
				Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}})
			return err
		})
	}},
	{"machines", 10000, func(b *testing.B, s *site, n int) {
		parallel(b, n, func(i int) error {
			_, err := s.AddMachine(context.Background(), s.Req(), ledger.MachineSpec{Name: fmt.Sprint("m", i), Shape: ledger.Shape{Cores: 32}})
			return err
		})
	}},
	// Entries of the rate table: a multiplier for each of n QOS values.
	{"rates", 10000, func(b *testing.B, s *site, n int) {
		table := charge.DefaultRateTable()
		for i := range n {
			table.Rates = append(table.Rates, charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: fmt.Sprint("q", i), Rate: dec("2")})
		}
		if _, err := s.lb.SetRates(context.Background(), s.Req(), table); err != nil {
			b.Fatal(err)
		}
	}},
}

// shapeBank is a site whose account chem has 10 live allocations (ending
// in ten years, one of them site.live) and n of a dimension that grow
// adds; chem.lab1 has an HFS policy, so that its checks go through the
// plan.
func shapeBank(b *testing.B, open ledgertest.OpenStore, grow func(*testing.B, *site, int), n int) *site {
	s := newSiteOn(b, open)
	policy := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.5"), AcceptSurplus: true}
	if _, err := s.ModifyNode(context.Background(), s.Req(), "chem.lab1", ledger.NodeChange{Policy: &policy}); err != nil {
		b.Fatal(err)
	}
	grow(b, s, n)
	for range 10 {
		s.live = s.MustDeposit("chem", "1000000000000", s.Clock.Now().AddDate(10, 0, 0))
	}
	s.Clock.Advance(2 * time.Hour)
	return s
}

// deposits makes n deposits of spec into chem.
func deposits(b *testing.B, s *site, n int, spec ledger.DepositSpec) {
	spec.Account = "chem"
	parallel(b, n, func(int) error { _, err := s.Deposit(context.Background(), s.Req(), spec); return err })
}

// useUp has one job, id, take n credits: its charge debits every credit
// of the account's n allocations of 1 credit.
func useUp(b *testing.B, s *site, id string, n int) {
	ctx, now := context.Background(), s.Clock.Now()
	spec := lien.PlaceSpec{Job: job(id), User: "amy", Request: withStart(request(1, int64(n)), now)}
	if _, err := s.lb.Place(ctx, s.Req(), spec); err != nil {
		b.Fatal(err)
	}
	u := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: int64(n), WallclockLimitSeconds: int64(n), State: charge.Completed, Start: now}
	if _, err := s.lb.Charge(ctx, s.Req(), lien.ChargeSpec{Job: job(id), Usage: u}); err != nil {
		b.Fatal(err)
	}
}

// parallel runs do(0) to do(n-1) from 16 goroutines, as a busy bank
// takes its changes.
func parallel(b *testing.B, n int, do func(i int) error) {
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := do(i); err != nil {
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
}
