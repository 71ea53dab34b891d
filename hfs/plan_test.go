package hfs

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestAvailableMatchesCompute checks Available's path walk against a whole
// Compute with the node's demand unbounded: equal without a unit; with a
// unit, rounded down and never above what the rounded Compute gives.
func TestAvailableMatchesCompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for run := range 2000 {
		root := randomTree(rng, 1+rng.IntN(20))
		total := randomAmount(rng, 1000)
		unit := randomUnit(rng)
		var bounded []*Node
		walk(root, func(n *Node) {
			if n.Demand != nil {
				bounded = append(bounded, n)
			}
		})
		if len(bounded) == 0 {
			continue
		}
		p := bounded[rng.IntN(len(bounded))]
		plan, err := NewPlan(total, unit, root)
		if err != nil {
			t.Fatal(err)
		}
		got, err := plan.Available(p.Name)
		if err != nil {
			t.Fatal(err)
		}

		demand := p.Demand
		p.Demand = nil
		exact, err := Compute(total, nil, root)
		if err != nil {
			t.Fatal(err)
		}
		rounded, err := Compute(total, unit, root)
		if err != nil {
			t.Fatal(err)
		}
		p.Demand = demand

		want := exact.Allocated(p.Name)
		if unit != nil {
			want.SetInt64(ratNum(want).quo(ratNum(unit)).floor())
			want.Mul(want, unit)
		}
		want.Sub(want, demand)
		if unit != nil {
			ceiling := new(big.Rat).Sub(rounded.Allocated(p.Name), demand)
			if got.Cmp(ceiling) > 0 {
				t.Fatalf("run %d: %s: Available %s above the rounded allocation less demand %s", run, p.Name, got.RatString(), ceiling.RatString())
			}
		}
		if got.Cmp(want) != 0 {
			t.Fatalf("run %d: %s: Available %s, Compute says %s", run, p.Name, got.RatString(), want.RatString())
		}
	}
}

// TestSetDemandMatchesNewPlan changes demands one at a time on a long-lived
// Plan and checks each allocation against a Plan made afresh.
func TestSetDemandMatchesNewPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for run := range 300 {
		root := randomTree(rng, 1+rng.IntN(30))
		total := randomAmount(rng, 1000)
		unit := randomUnit(rng)
		var nodes []*Node
		walk(root, func(n *Node) { nodes = append(nodes, n) })
		plan, err := NewPlan(total, unit, root)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			n := nodes[rng.IntN(len(nodes))]
			n.Demand = randomDemand(rng)
			if err := plan.SetDemand(n.Name, n.Demand); err != nil {
				t.Fatal(err)
			}
			got := plan.Allocate()
			want, err := Compute(total, unit, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range want.Names() {
				if got.Allocated(name).Cmp(want.Allocated(name)) != 0 || got.Held(name).Cmp(want.Held(name)) != 0 {
					t.Fatalf("run %d: after SetDemand(%s): %s allocated %s held %s, fresh plan %s held %s", run, n.Name, name,
						got.Allocated(name).RatString(), got.Held(name).RatString(), want.Allocated(name).RatString(), want.Held(name).RatString())
				}
			}
			if got.Leftover().Cmp(want.Leftover()) != 0 {
				t.Fatalf("run %d: leftover %s, fresh plan %s", run, got.Leftover().RatString(), want.Leftover().RatString())
			}
		}
	}
}

func TestPlanErrors(t *testing.T) {
	root := &Node{Name: "acct", Demand: new(big.Rat), Children: []*Node{{Name: "acct.p"}}}
	plan, err := NewPlan(big.NewRat(10, 1), nil, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"Available unknown", second(plan.Available("nope")), ErrUnknownNode},
		{"Available unbounded", second(plan.Available("acct.p")), ErrUnboundedDemand},
		{"SetDemand unknown", plan.SetDemand("nope", nil), ErrUnknownNode},
		{"SetDemand negative", plan.SetDemand("acct", big.NewRat(-1, 1)), ErrNegative},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Fatalf("got %v, want %v", tc.err, tc.want)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// TestPlanConcurrentReads backs the Plan's promise that its reading methods
// may run concurrently (run it with -race).
func TestPlanConcurrentReads(t *testing.T) {
	root := benchTree(200, 5, randomQuota)
	plan, err := NewPlan(big.NewRat(1000, 1), big.NewRat(1, 100), root)
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Allocate()
	var names []string
	walk(root, func(n *Node) {
		if n.Demand != nil {
			names = append(names, n.Name)
		}
	})
	done := make(chan error)
	for g := range 4 {
		go func() {
			for _, name := range names[g:] {
				if _, err := plan.Available(name); err != nil {
					done <- err
					return
				}
			}
			if got := plan.Allocate(); got.Leftover().Cmp(want.Leftover()) != 0 {
				done <- errors.New("allocations differ")
				return
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
