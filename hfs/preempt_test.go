package hfs

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// lsfTree is LSF's example tree with credits for tokens: root → {A, P4},
// A → {B, P3}, B → {P1, P2}; P1 owns 2, P3 1 (so B owns 2, A 3); every
// node accepts surplus, so that what an owner leaves is lent; the
// in-use (demands) are given, and limits on B and A when limited.
func lsfTree(inUse [4]int64, limited bool) *Node {
	leaf := func(name string, owns, used int64) *Node {
		return &Node{Name: name, Ownership: big.NewRat(owns, 1), Demand: big.NewRat(used, 1), AcceptSurplus: true}
	}
	b := &Node{Name: "B", Demand: new(big.Rat), AcceptSurplus: true, Children: []*Node{leaf("P1", 2, inUse[0]), leaf("P2", 0, inUse[1])}}
	a := &Node{Name: "A", Demand: new(big.Rat), AcceptSurplus: true, Children: []*Node{b, leaf("P3", 1, inUse[2])}}
	if limited {
		b.Limit, a.Limit = big.NewRat(2, 1), big.NewRat(3, 1)
	}
	return &Node{Name: "root", Demand: new(big.Rat), Children: []*Node{a, leaf("P4", 0, inUse[3])}}
}

// unitJobs are jobs of 1 credit each making up every leaf's demand.
func unitJobs(inUse [4]int64) map[string][]Job {
	jobs := map[string][]Job{}
	for k, used := range inUse {
		for range used {
			node := fmt.Sprintf("P%d", k+1)
			jobs[node] = append(jobs[node], Job{Held: big.NewRat(1, 1)})
		}
	}
	return jobs
}

// TestPreemptLSFExamples runs LSF's six examples: a pool of 4 held wholly
// by liens, a project asking for 1.
func TestPreemptLSFExamples(t *testing.T) {
	for _, c := range []struct {
		name    string
		inUse   [4]int64
		limited bool
		order   PreemptOrder
		asks    string
		want    Outcome
		victim  string // the node of the one job taken
	}{
		{"top-down/P1 preempts P4, not P2", [4]int64{0, 2, 0, 2}, false, TopDown, "P1", Preempt, "P4"},
		{"top-down/P2 preempts P4 for A's unmet ownership", [4]int64{2, 0, 0, 2}, false, TopDown, "P2", Preempt, "P4"},
		{"limits/P1 preempts only P2 inside B", [4]int64{0, 2, 0, 2}, true, TopDown, "P1", Preempt, "P2"},
		{"limits/P2 cannot preempt", [4]int64{2, 0, 0, 2}, true, TopDown, "P2", NoVictims, ""},
		{"bottom-up/P1 preempts P2, its own subtree first", [4]int64{0, 2, 0, 2}, false, BottomUp, "P1", Preempt, "P2"},
		{"bottom-up/P2 preempts P4 for A's unmet ownership", [4]int64{2, 0, 0, 2}, false, BottomUp, "P2", Preempt, "P4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := NewPlan(big.NewRat(4, 1), big.NewRat(1, 100), lsfTree(c.inUse, c.limited))
			if err != nil {
				t.Fatal(err)
			}
			jobs := unitJobs(c.inUse)
			got, err := plan.Preempt(PreemptRequest{Node: c.asks, Amount: big.NewRat(1, 1), Free: new(big.Rat), Jobs: jobs, Order: c.order})
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != c.want {
				t.Fatalf("outcome %s, want %s", got.Outcome, c.want)
			}
			if c.want != Preempt {
				return
			}
			if len(got.Victims) != 1 || got.Victims[0].Node != c.victim {
				t.Fatalf("victims %v, want one job of %s", got.Victims, c.victim)
			}
		})
	}
}

// TestPreemptOutcomes: what Preempt says when it names nobody.
func TestPreemptOutcomes(t *testing.T) {
	inUse := [4]int64{0, 2, 0, 2}
	for _, c := range []struct {
		name   string
		asks   string
		amount int64
		free   int64
		want   Outcome
	}{
		{"the free credits hold it", "P1", 1, 1, Fits},
		{"free credits beyond the share", "P2", 3, 3, BeyondShare},
		{"not underfed", "P4", 1, 0, NotUnderfed},
		{"more than the deficit", "P1", 3, 0, NotUnderfed},
		{"the deficit covers what the free credits lack", "P1", 3, 1, Preempt},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := NewPlan(big.NewRat(4, 1), nil, lsfTree(inUse, false))
			if err != nil {
				t.Fatal(err)
			}
			got, err := plan.Preempt(PreemptRequest{Node: c.asks, Amount: big.NewRat(c.amount, 1), Free: big.NewRat(c.free, 1), Jobs: unitJobs(inUse)})
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != c.want {
				t.Fatalf("outcome %s, want %s", got.Outcome, c.want)
			}
		})
	}
}

// TestPreemptFewest: within a node the largest job goes first, and a job
// the later ones make unneeded is dropped.
func TestPreemptFewest(t *testing.T) {
	root := &Node{Name: "r", Demand: new(big.Rat), Children: []*Node{
		{Name: "r.owner", Ownership: big.NewRat(100, 1), Demand: new(big.Rat)},
		{Name: "r.far", Priority: 1, AcceptSurplus: true, Demand: big.NewRat(70, 1), Children: []*Node{
			{Name: "r.far.x", AcceptSurplus: true, Demand: big.NewRat(50, 1)},
		}},
		{Name: "r.pool", AcceptSurplus: true, Demand: big.NewRat(0, 1)},
	}}
	jobs := map[string][]Job{
		"r.far":   {{Held: big.NewRat(20, 1)}, {Held: big.NewRat(50, 1)}},
		"r.far.x": {{Held: big.NewRat(10, 1)}, {Held: big.NewRat(40, 1)}},
	}
	far := func(k int) JobRef { return JobRef{Node: "r.far", Index: k} }
	farX := func(k int) JobRef { return JobRef{Node: "r.far.x", Index: k} }
	plan, err := NewPlan(big.NewRat(120, 1), nil, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		amount int64
		want   []JobRef
	}{
		// r.far's own jobs rank below its child's, the larger first: its
		// 50 covers 40.
		{40, []JobRef{far(1)}},
		// 50 + 20 of r.far's own, then r.far.x's 40: with it, r.far's 20
		// is not needed.
		{85, []JobRef{far(1), farX(1)}},
		{100, []JobRef{far(1), far(0), farX(1)}},
	} {
		t.Run(fmt.Sprint(c.amount), func(t *testing.T) {
			got, err := plan.Preempt(PreemptRequest{Node: "r.owner", Amount: big.NewRat(c.amount, 1), Free: new(big.Rat), Jobs: jobs})
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != Preempt || !slices.Equal(got.Victims, c.want) {
				t.Fatalf("%s %v, want %v", got.Outcome, got.Victims, c.want)
			}
		})
	}
}

// TestPreemptRefuses: requests Preempt cannot answer.
func TestPreemptRefuses(t *testing.T) {
	plan, err := NewPlan(big.NewRat(4, 1), nil, lsfTree([4]int64{0, 2, 0, 2}, false))
	if err != nil {
		t.Fatal(err)
	}
	one := big.NewRat(1, 1)
	for _, c := range []struct {
		name string
		req  PreemptRequest
		want error
	}{
		{"unknown node", PreemptRequest{Node: "P9", Amount: one, Free: one}, ErrUnknownNode},
		{"job of an unknown node", PreemptRequest{Node: "P1", Amount: one, Free: one, Jobs: map[string][]Job{"P9": {{Held: one}}}}, ErrUnknownNode},
		{"negative amount", PreemptRequest{Node: "P1", Amount: big.NewRat(-1, 1), Free: one}, ErrNegative},
		{"jobs above demand", PreemptRequest{Node: "P1", Amount: one, Free: new(big.Rat), Jobs: map[string][]Job{"P2": {{Held: big.NewRat(3, 1)}}}}, ErrJobsAboveDemand},
		{"negative job", PreemptRequest{Node: "P1", Amount: one, Free: new(big.Rat), Jobs: map[string][]Job{"P2": {{Held: big.NewRat(-1, 1)}}}}, ErrNegative},
		{"no amount", PreemptRequest{Node: "P1", Free: one}, ErrInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := plan.Preempt(c.req); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	unbounded := lsfTree([4]int64{0, 2, 0, 2}, false)
	unbounded.Children[1].Demand = nil
	plan, err = NewPlan(big.NewRat(4, 1), nil, unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Preempt(PreemptRequest{Node: "P1", Amount: one, Free: one}); !errors.Is(err, ErrUnboundedDemand) {
		t.Fatalf("unbounded demand: %v", err)
	}
}

// TestRank: priority first, then less in use, then name; a group's
// children before the group.
func TestRank(t *testing.T) {
	for _, c := range []struct {
		name    string
		xDemand int64
		want    []string
	}{
		{"names break ties", 0, []string{"r.b", "r.a.y", "r.a.x", "r.a", "r.c", "r"}},
		{"more in use ranks lower", 5, []string{"r.b", "r.c", "r.a.y", "r.a.x", "r.a", "r"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			zero := new(big.Rat)
			root := &Node{Name: "r", Demand: zero, Children: []*Node{
				{Name: "r.a", Demand: zero, Children: []*Node{{Name: "r.a.x", Demand: big.NewRat(c.xDemand, 1)}, {Name: "r.a.y", Priority: 2, Demand: zero}}},
				{Name: "r.b", Priority: 1, Demand: zero},
				{Name: "r.c", Demand: zero},
			}}
			plan, err := NewPlan(big.NewRat(1, 1), nil, root)
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.Rank(); !slices.Equal(got, c.want) {
				t.Fatalf("%v, want %v", got, c.want)
			}
		})
	}
}

// TestPreemptProperties checks, on random trees with ownership, limits
// and priorities and random jobs, what every answer must keep:
//   - Fits and BeyondShare exactly when the free credits hold the lien;
//   - with Preempt: every job named is of a subtree that is overfed up to
//     where it meets the requesting node when it is taken (the jobs named
//     before it taken), never one of that node's own subtree;
//   - releasing the jobs named makes the lien fit (free credits and a
//     fresh plan's Available), and no branch on the node's path is then
//     above its limit with the lien;
//   - leaving any one of them out does not.
func TestPreemptProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	preempted := 0
	outcomes := map[Outcome]int{}
	defer func() { t.Log(outcomes) }()
	for run := range 3000 {
		root := randomOwnedTree(rng, 2+rng.IntN(20))
		total := randomAmount(rng, 1000)
		unit := randomUnit(rng)
		plan, err := NewPlan(total, unit, root)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []*Node
		walk(root, func(n *Node) { nodes = append(nodes, n) })
		jobs := randomJobs(rng, nodes)
		// Mostly an owner or a node under a group with owners, which may
		// be underfed; sometimes any node.
		target := nodes[rng.IntN(len(nodes))]
		if owners := ownersOf(nodes); len(owners) > 0 && rng.IntN(4) != 0 {
			target = owners[rng.IntN(len(owners))]
		}
		req := PreemptRequest{Node: target.Name, Amount: randomAmount(rng, 100), Free: randomAmount(rng, 20), Jobs: jobs, Order: PreemptOrder(rng.IntN(2))}
		got, err := plan.Preempt(req)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		outcomes[got.Outcome]++
		if free := req.Free.Cmp(req.Amount) >= 0; free != (got.Outcome == Fits || got.Outcome == BeyondShare) {
			t.Fatalf("run %d: free %s, amount %s: %s", run, req.Free.RatString(), req.Amount.RatString(), got.Outcome)
		}
		if got.Outcome != Preempt {
			continue
		}
		preempted++
		if err := checkVictims(root, plan, req, got.Victims); err != nil {
			t.Fatalf("run %d: %s asks %s (free %s, %s): victims %v: %v", run, req.Node, req.Amount.RatString(), req.Free.RatString(), req.Order, got.Victims, err)
		}
	}
	if preempted < 300 {
		t.Fatalf("only %d of the runs preempted: the random trees do not test it", preempted)
	}
}

// randomOwnedTree is randomTree with ownership on a third of the leaves,
// group non-shared on a tenth of the groups and random priorities; every
// demand bounded, as a bank's are.
func randomOwnedTree(rng *rand.Rand, size int) *Node {
	root := randomTree(rng, size)
	walk(root, func(n *Node) {
		if n.Demand == nil {
			n.Demand = randomAmount(rng, 100)
		}
		if len(n.Children) == 0 && rng.IntN(3) == 0 {
			n.Ownership = randomAmount(rng, 300)
		}
		if len(n.Children) > 0 && n != root && rng.IntN(10) == 0 {
			n.GroupNonShared = randomAmount(rng, 100)
		}
		n.Priority = rng.IntN(3)
	})
	return root
}

// ownersOf lists the nodes that own something, and their siblings (whose
// group may be underfed).
func ownersOf(nodes []*Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		if slices.ContainsFunc(n.Children, func(c *Node) bool { return c.Ownership != nil }) {
			out = append(out, n.Children...)
		}
	}
	return out
}

// randomJobs splits part of every node's demand into jobs of random size;
// some free less than they hold.
func randomJobs(rng *rand.Rand, nodes []*Node) map[string][]Job {
	jobs := map[string][]Job{}
	for _, n := range nodes {
		left := new(big.Rat).Set(n.Demand)
		for left.Sign() > 0 && rng.IntN(4) != 0 {
			held := randomAmount(rng, 40)
			if held.Cmp(left) > 0 {
				held.Set(left)
			}
			left.Sub(left, held)
			j := Job{Held: held}
			if rng.IntN(5) == 0 {
				j.Frees = new(big.Rat).Quo(held, big.NewRat(2, 1))
			}
			jobs[n.Name] = append(jobs[n.Name], j)
		}
	}
	return jobs
}

// checkVictims checks an answer against the rules, on its own reading of
// the tree.
func checkVictims(root *Node, plan *Plan, req PreemptRequest, victims []JobRef) error {
	parent := map[string]*Node{}
	byName := map[string]*Node{}
	walk(root, func(n *Node) {
		byName[n.Name] = n
		for _, c := range n.Children {
			parent[c.Name] = n
		}
	})
	released := map[string]*big.Rat{} // per node, own
	inUse := func(n *Node) *big.Rat {
		sum := new(big.Rat)
		walk(n, func(m *Node) {
			sum.Add(sum, m.Demand)
			if r := released[m.Name]; r != nil {
				sum.Sub(sum, r)
			}
		})
		return sum
	}
	res, err := Compute(plan.total.rat(), nil, root)
	if err != nil {
		return err
	}
	ancestors := map[string]bool{}
	for n := byName[req.Node]; n != nil; n = parent[n.Name] {
		ancestors[n.Name] = true
	}
	for _, ref := range victims {
		job := req.Jobs[ref.Node][ref.Index]
		v := byName[ref.Node]
		if underRequester(v, byName[req.Node], parent) {
			return fmt.Errorf("job %v, inside the requesting node", ref)
		}
		for n := v; !ancestors[n.Name]; n = parent[n.Name] {
			if inUse(n).Cmp(res.Owned(n.Name)) <= 0 {
				return fmt.Errorf("job %v: %s uses %s, owns %s: not overfed", ref, n.Name, inUse(n).RatString(), res.Owned(n.Name).RatString())
			}
		}
		if released[ref.Node] == nil {
			released[ref.Node] = new(big.Rat)
		}
		released[ref.Node].Add(released[ref.Node], job.Held)
	}
	if err := fitsAfter(root, plan, req, victims, byName); err != nil {
		return err
	}
	for k := range victims {
		without := slices.Delete(slices.Clone(victims), k, k+1)
		if fitsAfter(root, plan, req, without, byName) == nil {
			return fmt.Errorf("the lien fits without job %v", victims[k])
		}
	}
	return nil
}

func underRequester(v, requester *Node, parent map[string]*Node) bool {
	for n := v; n != nil; n = parent[n.Name] {
		if n == requester {
			return true
		}
	}
	return false
}

// fitsAfter says (nil) whether the lien fits once the jobs are released:
// free credits, a fresh plan's Available, and no branch above its limit
// with the lien placed.
func fitsAfter(root *Node, plan *Plan, req PreemptRequest, victims []JobRef, byName map[string]*Node) error {
	saved := map[string]*big.Rat{}
	free := new(big.Rat).Set(req.Free)
	for _, ref := range victims {
		j := req.Jobs[ref.Node][ref.Index]
		n := byName[ref.Node]
		if saved[n.Name] == nil {
			saved[n.Name] = n.Demand
			n.Demand = new(big.Rat).Set(n.Demand)
		}
		n.Demand.Sub(n.Demand, j.Held)
		frees := j.Frees
		if frees == nil {
			frees = j.Held
		}
		free.Add(free, frees)
	}
	defer func() {
		for name, d := range saved {
			byName[name].Demand = d
		}
	}()
	if free.Cmp(req.Amount) < 0 {
		return fmt.Errorf("free %s after release, lien %s", free.RatString(), req.Amount.RatString())
	}
	var unit *big.Rat
	if plan.unit != nil {
		unit = plan.unit.rat()
	}
	fresh, err := NewPlan(plan.total.rat(), unit, root)
	if err != nil {
		return err
	}
	a, err := fresh.Available(req.Node)
	if err != nil {
		return err
	}
	if a.Cmp(req.Amount) < 0 {
		return fmt.Errorf("available %s after release, lien %s", a.RatString(), req.Amount.RatString())
	}
	target := byName[req.Node]
	target.Demand = new(big.Rat).Add(target.Demand, req.Amount)
	defer func(d *big.Rat) { target.Demand = new(big.Rat).Sub(d, req.Amount) }(target.Demand)
	for n := target; n != nil; n = parentOf(root, n) {
		sum := new(big.Rat)
		walk(n, func(m *Node) { sum.Add(sum, m.Demand) })
		if n.Limit != nil && sum.Cmp(n.Limit) > 0 {
			return fmt.Errorf("%s uses %s with the lien, above its limit %s", n.Name, sum.RatString(), n.Limit.RatString())
		}
	}
	return nil
}

// parentOf is n's parent in the tree, nil for the root.
func parentOf(root, n *Node) *Node {
	var parent *Node
	walk(root, func(m *Node) {
		if slices.Contains(m.Children, n) {
			parent = m
		}
	})
	return parent
}
