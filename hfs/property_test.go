package hfs

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// randomTree builds a tree of size nodes with every policy feature drawn at
// random: quota kinds, demands (some unbounded, some zero), accept_surplus,
// limits and non_shared.
func randomTree(rng *rand.Rand, size int) *Node {
	nodes := []*Node{{Name: "root", Demand: randomDemand(rng)}}
	if rng.IntN(5) == 0 {
		nodes[0].Limit = randomAmount(rng, 1000)
	}
	for k := 1; k < size; k++ {
		// Favour recent nodes as parents, so trees get deep as well as wide.
		parent := nodes[len(nodes)-1-rng.IntN(min(len(nodes), 4))]
		if rng.IntN(3) == 0 {
			parent = nodes[rng.IntN(len(nodes))]
		}
		n := randomNode(rng, fmt.Sprintf("%s.n%d", parent.Name, k), randomQuota(rng), 5)
		parent.Children = append(parent.Children, n)
		nodes = append(nodes, n)
	}
	return nodes[0]
}

// randomNode is a node with a random demand and accept_surplus, and, one
// time in oneIn each, a random limit and non_shared.
func randomNode(rng *rand.Rand, name string, q Quota, oneIn int) *Node {
	n := &Node{Name: name, Quota: q, Demand: randomDemand(rng), AcceptSurplus: rng.IntN(2) == 0}
	if rng.IntN(oneIn) == 0 {
		n.Limit = randomAmount(rng, 300)
	}
	if rng.IntN(oneIn) == 0 {
		n.NonShared = randomAmount(rng, 50)
	}
	return n
}

// randomAmount is a decimal with 2 places in 0..max.
func randomAmount(rng *rand.Rand, max int64) *big.Rat {
	return big.NewRat(rng.Int64N(max*100+1), 100)
}

func randomQuota(rng *rand.Rand) Quota {
	switch rng.IntN(4) {
	case 0:
		return Quota{Kind: Static, Value: randomAmount(rng, 100)}
	case 1:
		return Quota{Kind: Dynamic, Value: randomAmount(rng, 1)}
	case 2:
		return Quota{Kind: Shares, Value: big.NewRat(rng.Int64N(6), 1)}
	}
	return Quota{} // no quota: dynamic 0
}

func randomDemand(rng *rand.Rand) *big.Rat {
	switch rng.IntN(10) {
	case 0:
		return nil
	case 1, 2:
		return new(big.Rat)
	}
	return randomAmount(rng, 100)
}

func randomUnit(rng *rand.Rand) *big.Rat {
	return []*big.Rat{nil, big.NewRat(1, 100), big.NewRat(1, 2), big.NewRat(1, 1), big.NewRat(3, 1)}[rng.IntN(5)]
}

// TestProperties checks, on thousands of random trees, what must hold
// whatever the policy; checkInvariants lists it.
func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 5000 {
		root := randomTree(rng, 1+rng.IntN(25))
		total := randomAmount(rng, 1000)
		unit := randomUnit(rng)
		res := computeChecked(t, run, total, unit, root)
		if unit == nil {
			continue
		}
		exact, err := Compute(total, nil, root)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkRoundingOnlyAdds(unit, root, exact, res); err != nil {
			t.Fatalf("run %d (total %s, unit %v): %v", run, total.RatString(), unit, err)
		}
	}
}

// computeChecked computes a tree of a random run and fails the test unless
// checkInvariants holds.
func computeChecked(t *testing.T, run int, total, unit *big.Rat, root *Node) *Result {
	t.Helper()
	res, err := Compute(total, unit, root)
	if err != nil {
		t.Fatalf("run %d: %v", run, err)
	}
	if err := checkInvariants(total, unit, root, res); err != nil {
		t.Fatalf("run %d (total %s, unit %v): %v", run, total.RatString(), unit, err)
	}
	return res
}

// checkInvariants checks one result:
//   - quotas are >= 0 and sum to the pool (less the root's limit cut);
//   - allocations are >= 0, multiples of the unit when there is one, and
//     never above the node's own demand (surplus only ever fills unmet
//     demand);
//   - pool = Σ allocated + Σ held + leftover, all >= 0, so allocations never
//     sum above the pool;
//   - no subtree is allocated above its limit;
//   - a subtree that does not accept surplus is never allocated above its
//     subtree quota: everything above its own quota is surplus from below;
//   - work conservation: when more is left over than the root's limit cut,
//     without rounding, no node that surplus from the root can reach (a
//     chain of accepting nodes) still wants credits, unless a limit on the
//     chain is reached.
func checkInvariants(total, unit *big.Rat, root *Node, res *Result) error {
	sums := make(map[string]sums)
	if _, err := collect(root, res, sums); err != nil {
		return err
	}
	var quotaSum, allocSum big.Rat // allocSum: allocated + held
	for _, name := range res.Names() {
		quotaSum.Add(&quotaSum, res.Quota(name))
		allocSum.Add(&allocSum, res.Allocated(name))
		allocSum.Add(&allocSum, res.Held(name))
	}
	rootCut := new(big.Rat).Sub(total, &quotaSum)
	if rootCut.Sign() < 0 || root.Limit == nil && rootCut.Sign() != 0 {
		return fmt.Errorf("quotas sum to %s, pool %s", quotaSum.RatString(), total.RatString())
	}
	if res.Leftover().Sign() < 0 {
		return fmt.Errorf("leftover %s < 0", res.Leftover().RatString())
	}
	if accounted := new(big.Rat).Add(&allocSum, res.Leftover()); accounted.Cmp(total) != 0 {
		return fmt.Errorf("allocated + held + leftover = %s, pool %s", accounted.RatString(), total.RatString())
	}
	var err error
	walk(root, func(n *Node) {
		if err == nil {
			err = checkNode(n, n == root, unit, res, sums[n.Name])
		}
	})
	if err != nil || unit != nil {
		return err
	}
	if excess := new(big.Rat).Sub(res.Leftover(), rootCut); excess.Sign() > 0 {
		return checkNobodyWants(root, res, sums)
	}
	return nil
}

func checkNode(n *Node, isRoot bool, unit *big.Rat, res *Result, s sums) error {
	alloc := res.Allocated(n.Name)
	if alloc.Sign() < 0 || s.ownQuota.Sign() < 0 || res.Held(n.Name).Sign() < 0 {
		return fmt.Errorf("%s: negative: allocated %s, quota %s, held %s", n.Name, alloc.RatString(), s.ownQuota.RatString(), res.Held(n.Name).RatString())
	}
	if unit != nil && !new(big.Rat).Quo(alloc, unit).IsInt() {
		return fmt.Errorf("%s: allocated %s, not a multiple of %s", n.Name, alloc.RatString(), unit.RatString())
	}
	if n.Demand != nil && alloc.Cmp(n.Demand) > 0 {
		return fmt.Errorf("%s: allocated %s above demand %s", n.Name, alloc.RatString(), n.Demand.RatString())
	}
	if n.Limit != nil && s.alloc.Cmp(n.Limit) > 0 {
		return fmt.Errorf("%s: subtree allocated %s above limit %s", n.Name, s.alloc.RatString(), n.Limit.RatString())
	}
	if !isRoot && !n.AcceptSurplus && s.alloc.Cmp(s.quota) > 0 {
		return fmt.Errorf("%s: accepts no surplus, subtree allocated %s above subtree quota %s", n.Name, s.alloc.RatString(), s.quota.RatString())
	}
	return nil
}

// checkNobodyWants checks that the root and every node reachable through
// accepting nodes is satisfied or behind a limit that is reached.
func checkNobodyWants(root *Node, res *Result, s map[string]sums) error {
	if wants(root, res) {
		return fmt.Errorf("leftover %s while the root wants more", res.Leftover().RatString())
	}
	var visit func(n *Node) error
	visit = func(n *Node) error {
		if !n.AcceptSurplus || n.Limit != nil && s[n.Name].alloc.Cmp(n.Limit) == 0 {
			return nil
		}
		if wants(n, res) {
			return fmt.Errorf("leftover %s while %s (reachable) wants more", res.Leftover().RatString(), n.Name)
		}
		for _, c := range n.Children {
			if err := visit(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range root.Children {
		if err := visit(c); err != nil {
			return err
		}
	}
	return nil
}

func wants(n *Node, res *Result) bool {
	return n.Demand == nil || res.Allocated(n.Name).Cmp(n.Demand) < 0
}

// checkRoundingOnlyAdds checks that rounding takes nothing from anyone but
// the fraction below its unit: every node gets at least its exact
// allocation rounded down.
func checkRoundingOnlyAdds(unit *big.Rat, root *Node, exact, rounded *Result) error {
	var err error
	walk(root, func(n *Node) {
		floor := new(big.Rat).SetInt64(ratNum(exact.Allocated(n.Name)).quo(ratNum(unit)).floor())
		floor.Mul(floor, unit)
		if err == nil && rounded.Allocated(n.Name).Cmp(floor) < 0 {
			err = fmt.Errorf("%s: rounded allocation %s below exact %s rounded down", n.Name, rounded.Allocated(n.Name).RatString(), exact.Allocated(n.Name).RatString())
		}
	})
	return err
}

// sums is a node's own and subtree quota and allocation, from a Result.
type sums struct {
	ownQuota, quota, alloc *big.Rat
}

func collect(n *Node, res *Result, out map[string]sums) (sums, error) {
	own := res.Quota(n.Name)
	if own == nil || res.Allocated(n.Name) == nil || res.Held(n.Name) == nil {
		return sums{}, fmt.Errorf("%s: missing from the result", n.Name)
	}
	s := sums{ownQuota: own, quota: new(big.Rat).Set(own), alloc: new(big.Rat).Set(res.Allocated(n.Name))}
	for _, c := range n.Children {
		cs, err := collect(c, res, out)
		if err != nil {
			return sums{}, err
		}
		s.quota.Add(s.quota, cs.quota)
		s.alloc.Add(s.alloc, cs.alloc)
	}
	out[n.Name] = s
	return s, nil
}

func walk(n *Node, f func(*Node)) {
	f(n)
	for _, c := range n.Children {
		walk(c, f)
	}
}

// TestAvailableMatchesLienRule checks, without rounding, that Available is
// DESIGN's lien rule in closed form: a lien of x on p is granted (with p's
// demand raised by x, p is still allocated its demand) iff x <= Available(p).
// It tries x exactly at Available(p) and just above it.
func TestAvailableMatchesLienRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	epsilon := big.NewRat(1, 1000)
	for run := range 1000 {
		root := randomTree(rng, 1+rng.IntN(15))
		var names []*Node
		walk(root, func(n *Node) {
			if n.Demand != nil {
				names = append(names, n)
			}
		})
		if len(names) == 0 {
			continue
		}
		p := names[rng.IntN(len(names))]
		total := randomAmount(rng, 1000)
		plan, err := NewPlan(total, nil, root)
		if err != nil {
			t.Fatal(err)
		}
		avail, err := plan.Available(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if avail.Sign() < 0 {
			continue // p already holds more than it can be allocated
		}
		demand := p.Demand
		for _, x := range []*big.Rat{avail, new(big.Rat).Add(avail, epsilon)} {
			raised := new(big.Rat).Add(demand, x)
			p.Demand = raised
			res, err := Compute(total, nil, root)
			if err != nil {
				t.Fatal(err)
			}
			granted := res.Allocated(p.Name).Cmp(raised) >= 0
			if want := x.Cmp(avail) <= 0; granted != want {
				t.Fatalf("run %d: %s: lien %s granted=%v, Available %s", run, p.Name, x.RatString(), granted, avail.RatString())
			}
		}
		p.Demand = demand
	}
}

// TestOwnedProperties checks the same invariants on trees with ownership
// and group non-shared, and the carve's own: no node gets more of its
// ownership or reserve than it set, and what is carved never exceeds the
// pool; when the pool covers every carve, every node gets what it set.
func TestOwnedProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for run := range 3000 {
		root := randomOwnedTree(rng, 1+rng.IntN(25))
		total := randomAmount(rng, 1000)
		res := computeChecked(t, run, total, randomUnit(rng), root)
		carved, set := new(big.Rat), new(big.Rat)
		limited := false
		walk(root, func(n *Node) {
			limited = limited || n.Limit != nil
			own := res.Owned(n.Name)
			for _, c := range n.Children {
				own.Sub(own, res.Owned(c.Name))
			}
			for _, f := range []struct{ got, set *big.Rat }{{own, ratOrZero(n.Ownership)}, {res.Reserved(n.Name), ratOrZero(n.GroupNonShared)}} {
				if f.got.Sign() < 0 || f.got.Cmp(f.set) > 0 {
					t.Fatalf("run %d: %s: carved %s of %s", run, n.Name, f.got.RatString(), f.set.RatString())
				}
				carved.Add(carved, f.got)
				set.Add(set, f.set)
			}
		})
		if carved.Cmp(total) > 0 {
			t.Fatalf("run %d: carved %s of a pool of %s", run, carved.RatString(), total.RatString())
		}
		if !limited && set.Cmp(total) <= 0 && carved.Cmp(set) != 0 {
			t.Fatalf("run %d: carved %s of %s set, pool %s", run, carved.RatString(), set.RatString(), total.RatString())
		}
	}
}
