package hfs

import (
	"cmp"
	"slices"
)

// maxUnits bounds every count of rounding units: the pool must not hold
// more, and demands and limits saturate at it, so that two counts add up
// without overflowing an int64. An unbounded demand or an absent limit is
// maxUnits.
const maxUnits = 1 << 62

// rounding holds step 3's state, in counts of whole rounding units.
type rounding struct {
	nodes []planNode
	unit  num
	// units is what each node itself is allocated.
	units []int64
	// wantUnits is each node's demand, rounded down.
	wantUnits []int64
	// subtreeUnits is what a subtree is allocated in all.
	subtreeUnits []int64
	// canTake is what a subtree can still take from above: its accepting
	// part's unmet demand, capped by its limit.
	canTake []int64
	// up is the recovered fraction a subtree passes to its parent.
	up []num
}

// round is step 3: every exact allocation from step 2 is rounded down to
// the unit, and the recovered fractions are handed back out in whole units,
// bottom-up. It returns each node's allocation in units, and the recovered
// amount that reached the root unclaimed.
func round(nodes []planNode, alloc []num, unit num) (units []int64, unclaimed num) {
	n := len(nodes)
	r := &rounding{
		nodes:        nodes,
		unit:         unit,
		units:        make([]int64, n),
		wantUnits:    make([]int64, n),
		subtreeUnits: make([]int64, n),
		canTake:      make([]int64, n),
		up:           make([]num, n),
	}
	for i := n - 1; i >= 0; i-- {
		r.units[i] = r.floorUnits(finite(alloc[i]))
		r.wantUnits[i] = r.floorUnits(nodes[i].demand)
		r.up[i] = alloc[i].sub(r.amount(r.units[i]))
		for _, c := range nodes[i].children {
			r.up[i] = r.up[i].add(r.up[c])
		}
		if recovered := r.floorUnits(finite(r.up[i])); recovered > 0 {
			handed := r.handOut(i, recovered)
			r.up[i] = r.up[i].sub(r.amount(handed))
		}
		r.summarise(i)
	}
	return r.units, r.up[0]
}

// floorUnits is x in whole units, rounded down and saturated at maxUnits.
func (r *rounding) floorUnits(x bound) int64 {
	if x.inf {
		return maxUnits
	}
	return min(x.v.floorQuo(r.unit), maxUnits)
}

func (r *rounding) amount(units int64) num {
	return intNum(units).mul(r.unit)
}

func (r *rounding) summarise(i int) {
	n := &r.nodes[i]
	r.subtreeUnits[i] = r.units[i]
	r.canTake[i] = r.wantUnits[i] - r.units[i]
	for _, c := range n.children {
		r.subtreeUnits[i] += r.subtreeUnits[c] // <= the pool's units
		if r.nodes[c].accept {
			r.canTake[i] = min(r.canTake[i]+r.canTake[c], maxUnits)
		}
	}
	r.canTake[i] = min(r.canTake[i], r.floorUnits(n.limit)-r.subtreeUnits[i])
}

// unitClaim is a candidate for whole units at one level of the tree.
type unitClaim struct {
	node   int
	weight num   // own quota for the node itself, subtree quota for a child
	room   int64 // units it can still take
	got    int64
}

// handOut gives up to units whole units to node i and its accepting
// children, round-robin, and returns how many it gave. A child's units are
// handed on down its subtree at once, by the same rule.
func (r *rounding) handOut(i int, units int64) int64 {
	n := &r.nodes[i]
	claims := []unitClaim{{node: i, weight: n.ownQuota, room: r.wantUnits[i] - r.units[i]}}
	for _, c := range n.children {
		if r.nodes[c].accept && r.canTake[c] > 0 {
			claims = append(claims, unitClaim{node: c, weight: r.nodes[c].subtreeQuota, room: r.canTake[c]})
		}
	}
	// Larger quota first, then larger unmet demand, then name order.
	slices.SortFunc(claims, func(a, b unitClaim) int {
		if c := b.weight.cmp(a.weight); c != 0 {
			return c
		}
		if c := cmp.Compare(b.room, a.room); c != 0 {
			return c
		}
		return cmp.Compare(r.nodes[a.node].name, r.nodes[b.node].name)
	})
	handed := roundRobin(units, claims)
	for _, c := range claims {
		switch {
		case c.got == 0:
		case c.node == i:
			r.units[i] += c.got
		default:
			// Never leaves a rest: canTake is at most what the child
			// and its accepting children can take.
			r.handOut(c.node, c.got)
			r.subtreeUnits[c.node] += c.got
			r.canTake[c.node] -= c.got
		}
	}
	return handed
}

// roundRobin deals units out over claims in order, in passes that give each
// claim with room at most max(1, units/claims with room), and returns how
// many it dealt.
func roundRobin(units int64, claims []unitClaim) int64 {
	handed := int64(0)
	for units > 0 {
		withRoom := int64(0)
		for _, c := range claims {
			if c.room > 0 {
				withRoom++
			}
		}
		if withRoom == 0 {
			break
		}
		perPass := max(1, units/withRoom)
		for k := range claims {
			c := &claims[k]
			g := min(perPass, c.room, units)
			c.got += g
			c.room -= g
			units -= g
			handed += g
		}
	}
	return handed
}
