package lien_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// BenchmarkAvailability is one HFS availability check for a project in an
// account of 1,000 nodes (10 groups of 99 projects, dynamic quotas, half
// of them accepting surplus, every tenth with a running lien), as the bank
// does it for every lien: reading the tree, demands and pool, and working
// out the plan.
func BenchmarkAvailability(b *testing.B) {
	s := newSite(b)
	s.bigAccount(b, "big", func(_, p int) ledger.Policy {
		if p < 0 {
			return ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.1")}
		}
		return ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.01"), AcceptSurplus: p%2 == 0}
	})
	s.MustDeposit("big", "100000000", time.Time{})
	for g := range 10 {
		for p := 0; p < 99; p += 10 {
			if _, err := s.placeOn(fmt.Sprintf("big.g%d.p%d", g, p), fmt.Sprintf("j%d-%d", g, p), 100); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Available(context.Background(), "big.g3.p42"); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A lien placed and released between checks: the writers keep the
	// cached plan current, so the check after them still hits. The writes
	// dominate each iteration; ns/check is the check alone.
	b.Run("check-after-lien", func(b *testing.B) {
		timeChecks(b, func(n int) {
			id := fmt.Sprint("w", n)
			if _, err := s.placeOn("big.g5.p7", id, 10); err != nil {
				b.Fatal(err)
			}
			if _, err := s.lb.Release(context.Background(), s.Req(), job(id)); err != nil {
				b.Fatal(err)
			}
		}, func() (decimal.Decimal, error) { return s.Available(context.Background(), "big.g3.p42") })
	})
	// A miss: a deposit drops the cached plan, and the check reads the tree
	// and plans it from storage.
	b.Run("rebuild", func(b *testing.B) {
		timeChecks(b, func(int) { s.MustDeposit("big", "1", time.Time{}) },
			func() (decimal.Decimal, error) { return s.Available(context.Background(), "big.g3.p42") })
	})
}

// bigAccount makes account name with 1,000 nodes: 10 groups, g0 to g9, of
// 99 projects each, p0 to p98, that admit any user; policy gives each its
// policy (a group's with project -1).
func (s *site) bigAccount(b *testing.B, name string, policy func(group, project int) ledger.Policy) {
	s.MustNode(name)
	for g := range 10 {
		group := fmt.Sprintf("%s.g%d", name, g)
		for p := -1; p < 99; p++ {
			spec := ledger.NodeSpec{Name: group, Policy: policy(g, p)}
			if p >= 0 {
				spec.Name, spec.AnyUser = fmt.Sprintf("%s.p%d", group, p), true
			}
			if _, err := s.CreateNode(context.Background(), s.Req(), spec); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// timeChecks runs change then check b.N times and reports the checks' mean
// time as ns/check.
func timeChecks(b *testing.B, change func(n int), check func() (decimal.Decimal, error)) {
	var checks time.Duration
	for n := range b.N {
		change(n)
		start := time.Now()
		if _, err := check(); err != nil {
			b.Fatal(err)
		}
		checks += time.Since(start)
	}
	b.ReportMetric(float64(checks.Nanoseconds())/float64(b.N), "ns/check")
}
