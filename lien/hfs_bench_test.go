package lien_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// BenchmarkAvailability is one HFS availability check for a project in an
// account of 1,000 nodes (10 groups of 99 projects, dynamic quotas, half
// of them accepting surplus, every tenth with a running lien), as the bank
// does it for every lien: reading the tree, demands and pool, and working
// out the plan.
func BenchmarkAvailability(b *testing.B) {
	s := newSite(b)
	s.MustNode("big")
	frac := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.1")}
	for g := range 10 {
		group := fmt.Sprintf("big.g%d", g)
		if _, err := s.CreateNode(s.Req(), ledger.NodeSpec{Name: group, Policy: frac}); err != nil {
			b.Fatal(err)
		}
		for p := range 99 {
			pol := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.01"), AcceptSurplus: p%2 == 0}
			if _, err := s.CreateNode(s.Req(), ledger.NodeSpec{Name: fmt.Sprintf("%s.p%d", group, p), Policy: pol, AnyUser: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	s.MustDeposit("big", "100000000", time.Time{})
	for g := range 10 {
		for p := 0; p < 99; p += 10 {
			if _, err := s.placeOn(fmt.Sprintf("big.g%d.p%d", g, p), fmt.Sprintf("j%d-%d", g, p), 100); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Available("big.g3.p42"); err != nil {
			b.Fatal(err)
		}
	}
}
