package hfs

import (
	"fmt"
	"math/big"
)

// QuotaKind says how a node's quota is derived from its parent's.
type QuotaKind int

// The zero QuotaKind is Dynamic, so the zero Quota is "dynamic 0": a node
// with no quota gets nothing of its own and lives on surplus.
const (
	// Dynamic is a fraction 0..1 of what the parent's static children leave.
	Dynamic QuotaKind = iota
	// Static is an absolute amount of credits.
	Static
	// Shares is a weight among the share siblings, which split what the
	// static and dynamic siblings leave.
	Shares
)

func (k QuotaKind) String() string {
	switch k {
	case Dynamic:
		return "dynamic"
	case Static:
		return "static"
	case Shares:
		return "shares"
	}
	return fmt.Sprintf("QuotaKind(%d)", int(k))
}

// Quota is a node's claim on its parent's quota. A nil Value means 0.
type Quota struct {
	Kind  QuotaKind
	Value *big.Rat
}

// Node is one node of an HFS tree: the root is the account, which takes the
// whole pool; the others are its projects.
type Node struct {
	Name  string
	Quota Quota
	// Demand is what the node itself wants (its charges and liens). nil
	// means unbounded: the node takes everything it is offered, which is how
	// the ledger asks how much a project could get.
	Demand *big.Rat
	// AcceptSurplus lets the node receive surplus from above. Every node
	// receives surplus from below regardless.
	AcceptSurplus bool
	// Limit caps what the node's subtree may be allocated; nil means none.
	Limit *big.Rat
	// NonShared is the part of the node's own quota it never lends out as
	// surplus; nil means 0.
	NonShared *big.Rat
	// Ownership is what the node owns (LSF's OWNERSHIP; leaves only, a
	// group owns what its children own): carved out of the pool before
	// quotas split the rest, lent as surplus while the node does not use
	// it, and taken back by preemption (Plan.Preempt). nil means none.
	Ownership *big.Rat
	// GroupNonShared is what the node reserves for its subtree's own
	// demand (LSF's NON_SHARED of a group): carved out of the pool before
	// quotas split the rest, after the ancestors' reserves, and never lent
	// outside the subtree. nil means none.
	GroupNonShared *big.Rat
	// Priority ranks the node among its siblings, 0..MaxPriority, higher
	// first: a preemption takes from the lowest-ranked first (Plan.Rank).
	Priority int
	Children []*Node
}

// MaxPriority is the highest priority a node may have; 0 is the lowest
// and the default.
const MaxPriority = 1000

// planNode is a validated Node in a flat, pre-order array: every node's
// descendants come after it, so a reverse scan is bottom-up and a forward
// scan top-down, with no recursion.
type planNode struct {
	name      string
	parent    int // -1 for the root
	children  []int
	kind      QuotaKind
	value     num
	accept    bool
	limit     bound // unbounded: no limit
	nonShared num
	ownership num
	reserve   num // group non-shared, as set
	priority  int
	demand    bound // changed by Plan.SetDemand

	// Step 1 results.
	subtreeQuota num
	ownQuota     num
	// carve is what ownership and group non-shared claim in the subtree,
	// as set; owned and reserved what the node itself got of its own
	// ownership and reserve (less when the pool is short).
	carve    num
	owned    num
	reserved num
}

// flatten validates the tree and lays it out in pre-order.
func flatten(root *Node) ([]planNode, map[string]int, error) {
	if root == nil {
		return nil, nil, ErrNilNode
	}
	if v := root.Quota.Value; v != nil && v.Sign() != 0 {
		return nil, nil, fmt.Errorf("%w: root %q has quota %s %s", ErrRootQuota, root.Name, root.Quota.Kind, v.RatString())
	}
	// First the order and the checks, so that a cycle (which shows as a
	// duplicate name) stops the walk and the nodes are made in one piece.
	f := flattener{index: make(map[string]int)}
	if err := f.walk(root, -1); err != nil {
		return nil, nil, err
	}
	nodes := make([]planNode, len(f.order))
	children := make([]int, len(f.order)-1) // every node but the root is a child
	for i, n := range f.order {
		nodes[i] = planNode{
			name:      n.Name,
			parent:    f.parents[i],
			children:  children[:0:len(n.Children)],
			kind:      n.Quota.Kind,
			value:     numOrZero(n.Quota.Value),
			accept:    n.AcceptSurplus,
			limit:     boundOrUnbounded(n.Limit),
			nonShared: numOrZero(n.NonShared),
			ownership: numOrZero(n.Ownership),
			reserve:   numOrZero(n.GroupNonShared),
			priority:  n.Priority,
			demand:    boundOrUnbounded(n.Demand),
		}
		children = children[len(n.Children):]
		if p := f.parents[i]; p >= 0 {
			nodes[p].children = append(nodes[p].children, i)
		}
	}
	return nodes, f.index, nil
}

type flattener struct {
	order   []*Node
	parents []int
	index   map[string]int
}

func (f *flattener) walk(n *Node, parent int) error {
	if n == nil {
		return fmt.Errorf("%w: a child of %q", ErrNilNode, f.order[parent].Name)
	}
	if err := validate(n); err != nil {
		return err
	}
	i := len(f.order)
	if f.index[n.Name] = i; len(f.index) != i+1 {
		return fmt.Errorf("%w: %q", ErrDuplicateName, n.Name)
	}
	f.order = append(f.order, n)
	f.parents = append(f.parents, parent)
	for _, c := range n.Children {
		if err := f.walk(c, i); err != nil {
			return err
		}
	}
	return nil
}

func validate(n *Node) error {
	if n.Name == "" {
		return ErrEmptyName
	}
	v := n.Quota.Value
	switch n.Quota.Kind {
	case Dynamic:
		if v != nil && (v.Sign() < 0 || v.Num().Cmp(v.Denom()) > 0) {
			return fmt.Errorf("%w: node %q dynamic quota %s", ErrDynamicRange, n.Name, v.RatString())
		}
	case Static, Shares:
		if v != nil && v.Sign() < 0 {
			return fmt.Errorf("%w: node %q %s quota %s", ErrNegative, n.Name, n.Quota.Kind, v.RatString())
		}
	default:
		return fmt.Errorf("%w: node %q: %s", ErrQuotaKind, n.Name, n.Quota.Kind)
	}
	for _, f := range []struct {
		what  string
		value *big.Rat
	}{{"demand", n.Demand}, {"limit", n.Limit}, {"non_shared", n.NonShared}, {"ownership", n.Ownership}, {"group_non_shared", n.GroupNonShared}} {
		if f.value != nil && f.value.Sign() < 0 {
			return fmt.Errorf("%w: node %q %s %s", ErrNegative, n.Name, f.what, f.value.RatString())
		}
	}
	if n.Ownership != nil && n.Ownership.Sign() != 0 && len(n.Children) > 0 {
		return fmt.Errorf("%w: node %q owns %s and has %d children", ErrGroupOwnership, n.Name, n.Ownership.RatString(), len(n.Children))
	}
	if n.Priority < 0 || n.Priority > MaxPriority {
		return fmt.Errorf("%w: node %q priority %d", ErrPriorityRange, n.Name, n.Priority)
	}
	return nil
}

func numOrZero(r *big.Rat) num {
	if r == nil {
		return num{}
	}
	return ratNum(r)
}

func boundOrUnbounded(r *big.Rat) bound {
	if r == nil {
		return unbounded
	}
	return finite(ratNum(r))
}
