package hfs

import "slices"

// claim is a candidate for surplus at one level of the tree: the node
// itself (child -1, weighted by its own quota) or its child number child
// (weighted by the child's subtree quota), never to be given more than room.
type claim struct {
	child  int
	weight num
	room   bound
	got    num
	level  bound // room/weight: the water level at which this claim is full
}

// share hands amount out among claims: first in proportion to weight among
// the claims with a positive weight, then evenly among the zero-weight
// claims, never giving a claim more than its room. It returns what nobody
// could take and the node's own share, and sets childShares[k] to child k's
// share (0 for a child without a claim). It reorders claims.
//
// This is HTCondor's loop "share in proportion to quota, repeat while
// someone was capped by demand" solved in one sorted pass: the loop's fixed
// point gives every claim min(room, λ·weight) for the one λ that spends the
// amount, and sorting by room/weight finds λ in O(n log n) instead of O(n²)
// rounds, with the same exact result.
func share(amount num, claims []claim, childShares []num) (rest, self num) {
	clear(childShares)
	// Partition: claims with room and weight, then with room and no weight.
	open := claims[:0]
	for _, c := range claims {
		if c.room.positive() {
			c.got = num{}
			open = append(open, c)
		}
	}
	weighted := 0
	for k := range open {
		if open[k].weight.sign() > 0 {
			open[weighted], open[k] = open[k], open[weighted]
			weighted++
		}
	}
	rest = fill(amount, open[:weighted], func(c *claim) num { return c.weight })
	rest = fill(rest, open[weighted:], func(*claim) num { return intNum(1) })
	for _, c := range open {
		if c.child < 0 {
			self = c.got
		} else {
			childShares[c.child] = c.got
		}
	}
	return rest, self
}

// fill water-fills amount into claims by weight and returns what is left.
func fill(amount num, claims []claim, weight func(*claim) num) num {
	if amount.sign() == 0 || len(claims) == 0 {
		return amount
	}
	var totalWeight num
	for k := range claims {
		c := &claims[k]
		totalWeight = totalWeight.add(weight(c))
		c.level = c.room
		if !c.room.inf {
			c.level = finite(c.room.v.quo(weight(c)))
		}
	}
	slices.SortFunc(claims, func(a, b claim) int { return a.level.cmp(b.level) })

	for k := range claims {
		c := &claims[k]
		// c is full below the water level amount/totalWeight iff
		// level·totalWeight <= amount.
		if !c.level.inf && c.level.v.mul(totalWeight).cmp(amount) <= 0 {
			c.got = c.room.v
			amount = amount.sub(c.room.v)
			totalWeight = totalWeight.sub(weight(c))
			continue
		}
		waterLevel := amount.quo(totalWeight)
		for j := k; j < len(claims); j++ {
			claims[j].got = waterLevel.mul(weight(&claims[j]))
		}
		return num{}
	}
	return amount
}
