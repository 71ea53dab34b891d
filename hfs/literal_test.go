package hfs

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// literal is a slow, word-for-word reading of DESIGN section 4 steps 1 and
// 2 (exact, no rounding), the way HTCondor's GroupEntry code runs them:
// recursive, surplus pushed down at once, "share in proportion to quota and
// repeat while someone is capped". Compute gets there differently (flat
// arrays, one sorted water-fill per level, pushes deferred to one top-down
// pass); TestComputeMatchesLiteral checks both give the same exact numbers.
type literal struct {
	subtreeQuota, ownQuota, alloc, held map[*Node]*big.Rat
	// reserved and owned are what a node got of its own group non-shared
	// and ownership.
	reserved, owned map[*Node]*big.Rat
}

func literalCompute(total *big.Rat, root *Node) *literal {
	l := &literal{
		subtreeQuota: map[*Node]*big.Rat{},
		ownQuota:     map[*Node]*big.Rat{},
		alloc:        map[*Node]*big.Rat{},
		held:         map[*Node]*big.Rat{},
		reserved:     map[*Node]*big.Rat{},
		owned:        map[*Node]*big.Rat{},
	}
	q := new(big.Rat).Set(total)
	if root.Limit != nil && q.Cmp(root.Limit) > 0 {
		q.Set(root.Limit)
	}
	l.quotas(root, q)
	l.fairshare(root)
	return l
}

// ownClaim is what a node's own ownership and group non-shared add up to.
func ownClaim(n *Node) *big.Rat {
	return new(big.Rat).Add(ratOrZero(n.Ownership), ratOrZero(n.GroupNonShared))
}

func minRat(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) <= 0 {
		return new(big.Rat).Set(a)
	}
	return new(big.Rat).Set(b)
}

func (l *literal) quotas(n *Node, subtreeQuota *big.Rat) {
	l.subtreeQuota[n] = subtreeQuota
	// The carve, top-down and level by level: the node's reserve, its
	// ownership, then the own claims (group non-shared and ownership) of
	// its children, then of their children, and so on down; a level that
	// does not fit in what is left gets it in proportion to its claims,
	// and the levels below it nothing.
	q := new(big.Rat).Set(subtreeQuota)
	l.reserved[n] = minRat(ratOrZero(n.GroupNonShared), q)
	q.Sub(q, l.reserved[n])
	l.owned[n] = minRat(ratOrZero(n.Ownership), q)
	q.Sub(q, l.owned[n])
	granted := map[*Node]*big.Rat{}
	for level := n.Children; len(level) > 0; {
		claims := new(big.Rat)
		for _, m := range level {
			claims.Add(claims, ownClaim(m))
		}
		fraction := new(big.Rat).Set(one)
		if claims.Cmp(q) > 0 {
			fraction.Quo(q, claims)
		}
		var next []*Node
		for _, m := range level {
			granted[m] = new(big.Rat).Mul(ownClaim(m), fraction)
			q.Sub(q, granted[m])
			next = append(next, m.Children...)
		}
		level = next
	}
	sum := map[QuotaKind]*big.Rat{Static: new(big.Rat), Dynamic: new(big.Rat), Shares: new(big.Rat)}
	for _, c := range n.Children {
		sum[c.Quota.Kind].Add(sum[c.Quota.Kind], ratOrZero(c.Quota.Value))
	}
	sa := sum[Static]
	if sa.Cmp(q) > 0 {
		sa = q
	}
	da := new(big.Rat).Sub(q, sa)
	divisor := sum[Dynamic]
	if divisor.Cmp(one) < 0 {
		divisor = one
	}
	rest := new(big.Rat).Sub(da, new(big.Rat).Quo(new(big.Rat).Mul(da, sum[Dynamic]), divisor))
	own := new(big.Rat).Set(subtreeQuota)
	for _, c := range n.Children {
		v := ratOrZero(c.Quota.Value)
		cq := new(big.Rat)
		switch c.Quota.Kind {
		case Static:
			if sum[Static].Sign() > 0 {
				cq.Quo(cq.Mul(v, sa), sum[Static])
			}
		case Dynamic:
			cq.Quo(cq.Mul(v, da), divisor)
		case Shares:
			if sum[Shares].Sign() > 0 {
				cq.Quo(cq.Mul(v, rest), sum[Shares])
			}
		}
		walk(c, func(m *Node) { cq.Add(cq, granted[m]) })
		if c.Limit != nil && cq.Cmp(c.Limit) > 0 {
			cq.Set(c.Limit)
		}
		own.Sub(own, cq)
		l.quotas(c, cq)
	}
	l.ownQuota[n] = own
}

// fairshare returns the surplus n's subtree passes up.
func (l *literal) fairshare(n *Node) *big.Rat {
	own := l.ownQuota[n]
	a := new(big.Rat).Set(own)
	if n.Demand != nil && n.Demand.Cmp(own) < 0 {
		a.Set(n.Demand)
	}
	l.alloc[n] = a
	unused := new(big.Rat).Sub(own, a)
	held := new(big.Rat).Set(ratOrZero(n.NonShared))
	if held.Cmp(unused) > 0 {
		held.Set(unused)
	}
	l.held[n] = held
	surplus := new(big.Rat).Sub(unused, held)
	for _, c := range n.Children {
		surplus.Add(surplus, l.fairshare(c))
	}
	// What nobody at this level takes leaves the subtree, but what the
	// group's reserve keeps.
	up := l.allocateSurplus(n, surplus)
	kept := minRat(up, l.reserved[n])
	held.Add(held, kept)
	return up.Sub(up, kept)
}

// room is what n's subtree can still take from above, nil if unbounded.
func (l *literal) room(n *Node) *big.Rat {
	r := l.unmet(n)
	for _, c := range n.Children {
		if !c.AcceptSurplus {
			continue
		}
		cr := l.room(c)
		if r == nil || cr == nil {
			r = nil
		} else {
			r.Add(r, cr)
		}
	}
	if n.Limit != nil {
		headroom := new(big.Rat).Sub(n.Limit, l.subtreeAlloc(n))
		if r == nil || r.Cmp(headroom) > 0 {
			r = headroom
		}
	}
	return r
}

func (l *literal) unmet(n *Node) *big.Rat {
	if n.Demand == nil {
		return nil
	}
	return new(big.Rat).Sub(n.Demand, l.alloc[n])
}

func (l *literal) subtreeAlloc(n *Node) *big.Rat {
	s := new(big.Rat).Set(l.alloc[n])
	for _, c := range n.Children {
		s.Add(s, l.subtreeAlloc(c))
	}
	return s
}

// allocateSurplus shares surplus among n and its accepting children and
// returns what nobody took.
func (l *literal) allocateSurplus(n *Node, surplus *big.Rat) *big.Rat {
	type candidate struct {
		node   *Node
		self   bool
		weight *big.Rat
		got    *big.Rat
	}
	cands := []*candidate{{node: n, self: true, weight: l.ownQuota[n], got: new(big.Rat)}}
	for _, c := range n.Children {
		if c.AcceptSurplus {
			cands = append(cands, &candidate{node: c, weight: l.subtreeQuota[c], got: new(big.Rat)})
		}
	}
	roomOf := func(c *candidate) *big.Rat {
		var r *big.Rat
		if c.self {
			r = l.unmet(n)
		} else {
			r = l.room(c.node)
		}
		if r != nil {
			r.Sub(r, c.got)
		}
		return r
	}
	// Round after round: share what is left in proportion to weight among
	// those with room (weight 1 each among zero-quota ones once no
	// positive-quota candidate has room), capping each at its room.
	for surplus.Sign() > 0 {
		var open []*candidate
		for _, zeroQuota := range []bool{false, true} {
			for _, c := range cands {
				r := roomOf(c)
				if (r == nil || r.Sign() > 0) && (c.weight.Sign() == 0) == zeroQuota {
					open = append(open, c)
				}
			}
			if len(open) > 0 {
				break
			}
		}
		if len(open) == 0 {
			break
		}
		weight := func(c *candidate) *big.Rat {
			if c.weight.Sign() == 0 {
				return one
			}
			return c.weight
		}
		z := new(big.Rat)
		for _, c := range open {
			z.Add(z, weight(c))
		}
		round := new(big.Rat).Set(surplus)
		for _, c := range open {
			give := new(big.Rat).Quo(new(big.Rat).Mul(round, weight(c)), z)
			if r := roomOf(c); r != nil && give.Cmp(r) > 0 {
				give = r
			}
			c.got.Add(c.got, give)
			surplus.Sub(surplus, give)
		}
	}
	for _, c := range cands {
		if c.got.Sign() == 0 {
			continue
		}
		if c.self {
			l.alloc[n].Add(l.alloc[n], c.got)
		} else if rest := l.allocateSurplus(c.node, c.got); rest.Sign() != 0 {
			panic("literal: a child could not take what fitted its room")
		}
	}
	return surplus
}

var one = big.NewRat(1, 1)

func ratOrZero(r *big.Rat) *big.Rat {
	if r == nil {
		return new(big.Rat)
	}
	return r
}

func TestComputeMatchesLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for run := range 2000 {
		root := randomTree(rng, 1+rng.IntN(20))
		total := randomAmount(rng, 1000)
		compareWithLiteral(t, run, total, root)
	}
}

// TestOwnedMatchesLiteral is TestComputeMatchesLiteral on trees with
// ownership and group non-shared: the carve and the reserve's hold as
// docs/hfs.md words them, against Compute. Ownership is drawn large, so
// that pools are often short of it.
func TestOwnedMatchesLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for run := range 2000 {
		compareWithLiteral(t, run, randomAmount(rng, 1000), randomOwnedTree(rng, 1+rng.IntN(20)))
	}
}

func compareWithLiteral(t *testing.T, run int, total *big.Rat, root *Node) {
	t.Helper()
	res, err := Compute(total, nil, root)
	if err != nil {
		t.Fatal(err)
	}
	want := literalCompute(total, root)
	walk(root, func(n *Node) {
		if got := res.Quota(n.Name); got.Cmp(want.ownQuota[n]) != 0 {
			t.Fatalf("run %d: %s: quota %s, literal reading %s", run, n.Name, got.RatString(), want.ownQuota[n].RatString())
		}
		if got := res.Allocated(n.Name); got.Cmp(want.alloc[n]) != 0 {
			t.Fatalf("run %d: %s: allocated %s, literal reading %s", run, n.Name, got.RatString(), want.alloc[n].RatString())
		}
		if got := res.Held(n.Name); got.Cmp(want.held[n]) != 0 {
			t.Fatalf("run %d: %s: held %s, literal reading %s", run, n.Name, got.RatString(), want.held[n].RatString())
		}
		if got := res.Reserved(n.Name); got.Cmp(want.reserved[n]) != 0 {
			t.Fatalf("run %d: %s: reserved %s, literal reading %s", run, n.Name, got.RatString(), want.reserved[n].RatString())
		}
		owned := new(big.Rat)
		walk(n, func(m *Node) { owned.Add(owned, want.owned[m]) })
		if got := res.Owned(n.Name); got.Cmp(owned) != 0 {
			t.Fatalf("run %d: %s: owned %s, literal reading %s", run, n.Name, got.RatString(), owned.RatString())
		}
	})
}
