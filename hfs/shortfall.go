package hfs

import (
	"fmt"
	"math/big"
	"strings"
)

// The kinds of Shortfall.
const (
	// ShortCarve: the pool, or a limit on or above the node, does not
	// cover all of the node's own group non-shared and ownership.
	ShortCarve = "carve"
	// ShortNonShared: the node's non_shared is above its own quota, which
	// bounds what it holds.
	ShortNonShared = "non_shared"
)

// Shortfall is a node that step 1 leaves short of what its policy sets:
// of Set, it gets Got.
//
// ShortCarve: Set is the node's own group non-shared and ownership, Got
// what the carve gives it of them. Ownership and group non-shared are
// satisfied level by level from the top (quota.go's carveQuota), so when
// they add up to more than the pool the lowest levels are the short ones.
//
// ShortNonShared: Set is the node's non_shared, Got its own quota. A
// non_shared holds part of the node's own unused quota, never more, so
// above the own quota it holds at most the own quota; the rest is held
// nowhere and taken from nobody.
type Shortfall struct {
	Name     string
	Kind     string
	Set, Got *big.Rat
}

// Shortfalls lists the nodes short of what they set, carves first, each
// kind in pre-order.
func (r *Result) Shortfalls() []Shortfall {
	var out []Shortfall
	for i := range r.nodes {
		n := &r.nodes[i]
		set := n.reserve.add(n.ownership)
		if got := n.reserved.add(n.owned); got.cmp(set) < 0 {
			out = append(out, Shortfall{Name: n.name, Kind: ShortCarve, Set: set.rat(), Got: got.rat()})
		}
	}
	for i := range r.nodes {
		n := &r.nodes[i]
		if n.nonShared.cmp(n.ownQuota) > 0 {
			out = append(out, Shortfall{Name: n.name, Kind: ShortNonShared, Set: n.nonShared.rat(), Got: n.ownQuota.rat()})
		}
	}
	return out
}

// Warnings says by name which nodes Shortfalls lists, one line for each
// kind, none when there are none: what `ingot hfs compute` prints under
// "warnings".
func (r *Result) Warnings() []string {
	var carve, nonShared []string
	for _, s := range r.Shortfalls() {
		line := fmt.Sprintf("%s %s of %s", s.Name, FormatAmount(s.Got), FormatAmount(s.Set))
		if s.Kind == ShortCarve {
			carve = append(carve, line)
		} else {
			nonShared = append(nonShared, line)
		}
	}
	var out []string
	if len(carve) > 0 {
		var set, got num
		for i := range r.nodes {
			n := &r.nodes[i]
			set = set.add(n.reserve).add(n.ownership)
			got = got.add(n.reserved).add(n.owned)
		}
		out = append(out, fmt.Sprintf("ownership and group non-shared add up to %s; the pool and the limits cover %s, "+
			"satisfied level by level from the top: short %s", FormatAmount(set.readRat()), FormatAmount(got.readRat()), strings.Join(carve, ", ")))
	}
	if len(nonShared) > 0 {
		out = append(out, fmt.Sprintf("non_shared above the own quota, which bounds what it holds: short %s", strings.Join(nonShared, ", ")))
	}
	return out
}
