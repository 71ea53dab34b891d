package lien_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// TestCachedAvailabilityIsExact runs random operations on an account split
// by HFS and, after each, checks every project's availability as the bank
// answers it (from its plan cache, kept current by the writers) against the
// same figure worked out from scratch (Shares, which never uses the cache,
// capped by the account's funds).
func TestCachedAvailabilityIsExact(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { cacheRun(t, seed) })
	}
}

func cacheRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := newSite(t)
	s.MustNode("geo")
	projects := []struct {
		name   string
		policy ledger.Policy
	}{
		{"geo.a", ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.4")}},
		{"geo.b", ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: dec("0.3"), AcceptSurplus: true}},
		{"geo.b.x", ledger.Policy{QuotaKind: ledger.QuotaShares, Quota: dec("2"), AcceptSurplus: true}},
		{"geo.b.y", ledger.Policy{QuotaKind: ledger.QuotaShares, Quota: dec("1")}},
		{"geo.c", ledger.Policy{QuotaKind: ledger.QuotaStatic, Quota: dec("2000"), AcceptSurplus: true, Limit: ptr(dec("2500"))}},
		{"geo.d", ledger.Policy{}}, // no quota, on purpose: HFS gives it nothing of its own
	}
	for _, p := range projects {
		spec := ledger.NodeSpec{Name: p.name, Policy: p.policy, AnyUser: true, NoQuota: p.policy.QuotaKind == ledger.QuotaNone}
		if _, err := s.CreateNode(context.Background(), s.Req(), spec); err != nil {
			t.Fatal(err)
		}
	}
	now := s.Clock.Now()
	s.MustDeposit("geo", "6000", now.Add(3*time.Hour))
	s.MustDeposit("geo", "4000", time.Time{})
	var jobs []string
	var charges []uint64
	check := func(step string) {
		t.Helper()
		shares, err := s.Shares(context.Background(), "geo")
		if err != nil {
			t.Fatal(err)
		}
		funds := s.MustBalance("geo").Available
		for _, n := range shares.Nodes {
			want := decimal.Min(n.Available, funds)
			got, err := s.Available(context.Background(), n.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(want) {
				t.Fatalf("after %s: %s available %s from the bank, %s worked out afresh", step, n.Name, got, want)
			}
		}
	}
	check("setup")
	place := func(i int) {
		p := projects[rng.IntN(len(projects))].name
		id := fmt.Sprint("j", i)
		if _, err := s.placeOn(p, id, 50+rng.Int64N(1500)); err == nil {
			jobs = append(jobs, id)
		}
	}
	for i := range 150 {
		step := ""
		switch op := rng.IntN(10); {
		case op < 3:
			step = "place"
			place(i)
		case op < 5 && len(jobs) > 0:
			step = "charge"
			id := jobs[rng.IntN(len(jobs))]
			state := charge.Completed
			r, err := s.lb.Charge(context.Background(), s.Req(), lien.ChargeSpec{Job: job(id), Incremental: rng.IntN(3) == 0, User: "amy", Project: "geo.d",
				Usage: charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: rng.Int64N(2000), State: state}})
			if err == nil {
				charges = append(charges, r.Charge.ID)
			}
		case op < 6 && len(jobs) > 0:
			step = "release or extend"
			id := jobs[rng.IntN(len(jobs))]
			if rng.IntN(2) == 0 {
				s.lb.Release(context.Background(), s.Req(), job(id))
			} else {
				s.lb.Extend(context.Background(), s.Req(), job(id), 2000+rng.Int64N(2000))
			}
		case op < 7 && len(charges) > 0:
			step = "refund"
			s.lb.Refund(context.Background(), s.Req(), lien.RefundSpec{Charge: charges[rng.IntN(len(charges))], Amount: dec("10")})
		case op < 8:
			step = "time"
			s.Clock.Advance(time.Duration(rng.IntN(40)) * time.Minute)
			if rng.IntN(2) == 0 {
				s.lb.Sweep(context.Background(), s.Req())
			}
		case op < 9:
			step = "concurrent places"
			var wg sync.WaitGroup
			for k := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.placeOn(projects[k%len(projects)].name, fmt.Sprintf("c%d-%d", i, k), 100+int64(k)*30)
				}()
			}
			wg.Wait()
		default:
			step = "deposit or policy"
			if rng.IntN(2) == 0 {
				s.MustDeposit("geo", "500", time.Time{})
			} else {
				pol := ledger.Policy{QuotaKind: ledger.QuotaDynamic, Quota: decimal.New(int64(rng.IntN(5)), -1), AcceptSurplus: rng.IntN(2) == 0}
				if _, err := s.ModifyNode(context.Background(), s.Req(), "geo.a", ledger.NodeChange{Policy: &pol}); err != nil {
					t.Fatal(err)
				}
			}
		}
		check(fmt.Sprintf("step %d (%s)", i, step))
	}
}
