package hfs

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// benchTree is a complete tree with the given fan-out (an account's
// projects, their labs, ...) whose policies and demands are drawn as in
// randomTree, quotas by the given function.
func benchTree(size, fanout int, quota func(*rand.Rand) Quota) *Node {
	rng := rand.New(rand.NewPCG(7, 8))
	nodes := []*Node{{Name: "acct", Demand: randomDemand(rng)}}
	for k := 1; k < size; k++ {
		parent := nodes[(k-1)/fanout]
		n := randomNode(rng, fmt.Sprintf("%s.p%d", parent.Name, k%fanout), quota(rng), 10)
		parent.Children = append(parent.Children, n)
		nodes = append(nodes, n)
	}
	return nodes[0]
}

var benchSizes = []int{1_000, 100_000}

func BenchmarkCompute(b *testing.B) {
	total := big.NewRat(10_000_000, 1)
	for _, size := range benchSizes {
		for _, unit := range []*big.Rat{nil, big.NewRat(1, 100)} {
			b.Run(fmt.Sprintf("nodes=%d/unit=%s", size, unitName(unit)), func(b *testing.B) {
				root := benchTree(size, 10, randomQuota)
				for b.Loop() {
					if _, err := Compute(total, unit, root); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAvailable is the ledger's availability check in a 1,000-node
// account, on a Plan kept for the account: one Available on a deep node of
// a tree with fan-out 10, and on a leaf of a flat tree (1,000 projects
// under the account: one level of 1,000 candidates), with quotas of every
// kind drawn at random and with integer shares only. Mixed random quotas
// at one level have many different denominators, whose sums leave int64
// for big.Rat: the flat, mixed case is the slow one.
func BenchmarkAvailable(b *testing.B) {
	total := big.NewRat(10_000_000, 1)
	deep := benchTree(1_000, 10, randomQuota)
	flat := benchTree(1_000, 1_000, randomQuota)
	flatShares := benchTree(1_000, 1_000, integerShares)
	for _, shape := range []struct {
		name string
		root *Node
		node string
	}{
		{"fanout=10", deep, deep.Children[3].Children[4].Children[5].Name},
		{"flat", flat, flat.Children[500].Name},
		{"flat-shares", flatShares, flatShares.Children[500].Name},
	} {
		for _, unit := range []*big.Rat{nil, big.NewRat(1, 100)} {
			plan, err := NewPlan(total, unit, shape.root)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("nodes=1000/"+shape.name+"/unit="+unitName(unit), func(b *testing.B) {
				for b.Loop() {
					if _, err := plan.Available(shape.node); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSetDemand is what keeping that Plan up to date costs per lien or
// charge: one demand change on a deep node.
func BenchmarkSetDemand(b *testing.B) {
	root := benchTree(1_000, 10, randomQuota)
	leaf := root.Children[3].Children[4].Children[5].Name
	plan, err := NewPlan(big.NewRat(10_000_000, 1), big.NewRat(1, 100), root)
	if err != nil {
		b.Fatal(err)
	}
	demands := []*big.Rat{big.NewRat(1234, 100), big.NewRat(98765, 100)}
	b.Run("nodes=1000", func(b *testing.B) {
		k := 0
		for b.Loop() {
			k++
			if err := plan.SetDemand(leaf, demands[k%2]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func integerShares(rng *rand.Rand) Quota {
	return Quota{Kind: Shares, Value: big.NewRat(1+rng.Int64N(10), 1)}
}

func unitName(unit *big.Rat) string {
	if unit == nil {
		return "exact"
	}
	return unit.FloatString(2)
}

// BenchmarkPreempt is the preemption answer in an account of 1,000
// projects (10 groups of 99, shares, all accepting surplus; every tenth
// project owns 1,000 credits) whose pool of 1,000,000 credits is held
// wholly by 10,000 jobs of the projects that own nothing: an owner asks
// for 250, which takes three of them.
func BenchmarkPreempt(b *testing.B) {
	root := &Node{Name: "acct", Demand: new(big.Rat)}
	jobs := map[string][]Job{}
	var borrowers []*Node
	for g := range 10 {
		group := &Node{Name: fmt.Sprintf("acct.g%d", g), Quota: Quota{Kind: Shares, Value: big.NewRat(1, 1)}, AcceptSurplus: true, Demand: new(big.Rat)}
		root.Children = append(root.Children, group)
		for p := range 99 {
			n := &Node{Name: fmt.Sprintf("%s.p%d", group.Name, p), Quota: Quota{Kind: Shares, Value: big.NewRat(1, 1)}, AcceptSurplus: true, Demand: new(big.Rat)}
			if p%10 == 0 {
				n.Ownership = big.NewRat(1000, 1)
			} else {
				borrowers = append(borrowers, n)
			}
			group.Children = append(group.Children, n)
		}
	}
	held := big.NewRat(100, 1)
	for k := range 10_000 {
		n := borrowers[k%len(borrowers)]
		n.Demand = new(big.Rat).Add(n.Demand, held)
		jobs[n.Name] = append(jobs[n.Name], Job{Held: held})
	}
	plan, err := NewPlan(big.NewRat(1_000_000, 1), big.NewRat(1, 100), root)
	if err != nil {
		b.Fatal(err)
	}
	req := PreemptRequest{Node: "acct.g3.p40", Amount: big.NewRat(250, 1), Free: new(big.Rat), Jobs: jobs}
	b.Run("projects=1000/jobs=10000", func(b *testing.B) {
		for b.Loop() {
			got, err := plan.Preempt(req)
			if err != nil || got.Outcome != Preempt || len(got.Victims) != 3 {
				b.Fatalf("%+v, %v", got, err)
			}
		}
	})
}
