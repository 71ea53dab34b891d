package hfs

import (
	"fmt"
	"math/big"
)

// Plan is an HFS tree ready for allocation: validated, its quotas (step 1)
// worked out for a pool, and the bottom-up pass of step 2 done for its
// current demands. Quotas do not depend on demands, and a node's
// bottom-up state depends only on its subtree, so a long-lived Plan takes
// demand changes cheaply: SetDemand redoes the path from the node to the
// root, O(depth·fan-out), and Available reads one path the same way.
//
// SetDemand must not run concurrently with any other method; the other
// methods only read and may run concurrently with each other. A Plan
// copies what it needs from the tree it was made from.
type Plan struct {
	total  num
	unit   *num // nil: exact, no rounding
	nodes  []planNode
	index  map[string]int
	states []levelState // step 2's bottom-up pass for the current demands
	owned  []num        // what each subtree owns (step 1)
}

// NewPlan validates a tree and prepares it for a pool of total credits. A
// nil unit means exact allocations; otherwise allocations are whole
// multiples of unit (the currency's smallest amount).
func NewPlan(total, unit *big.Rat, root *Node) (*Plan, error) {
	if total == nil {
		return nil, fmt.Errorf("%w: no pool", ErrInput)
	}
	if total.Sign() < 0 {
		return nil, fmt.Errorf("%w: pool %s", ErrNegative, total.RatString())
	}
	p := &Plan{total: ratNum(total)}
	if unit != nil {
		if unit.Sign() <= 0 {
			return nil, fmt.Errorf("%w: got %s", ErrUnit, unit.RatString())
		}
		u := ratNum(unit)
		if p.total.quo(u).floor() > maxUnits {
			return nil, fmt.Errorf("%w: pool %s, unit %s", ErrTooManyUnits, total.RatString(), unit.RatString())
		}
		p.unit = &u
	}
	var err error
	if p.nodes, p.index, err = flatten(root); err != nil {
		return nil, err
	}
	assignQuotas(p.nodes, p.total)
	p.owned = make([]num, len(p.nodes))
	for i := len(p.nodes) - 1; i >= 0; i-- {
		p.owned[i] = p.owned[i].add(p.nodes[i].owned)
		if parent := p.nodes[i].parent; parent >= 0 {
			p.owned[parent] = p.owned[parent].add(p.owned[i])
		}
	}
	p.bottomUp()
	return p, nil
}

// clone is a copy of the plan whose demands can be changed without
// touching p: what SetDemand writes (the nodes' demands, the states) is
// copied, the rest shared.
func (p *Plan) clone() *Plan {
	c := *p
	c.nodes = append([]planNode(nil), p.nodes...)
	c.states = append([]levelState(nil), p.states...)
	return &c
}

// Compute splits a pool of total credits over a tree: quotas, fair share
// and, when unit is set, remainders (see the package documentation).
func Compute(total, unit *big.Rat, root *Node) (*Result, error) {
	p, err := NewPlan(total, unit, root)
	if err != nil {
		return nil, err
	}
	return p.Allocate(), nil
}

func (p *Plan) bottomUp() {
	p.states = make([]levelState, len(p.nodes))
	w := newWorker(p.nodes)
	defer w.release()
	for i := len(p.nodes) - 1; i >= 0; i-- {
		p.redoLevel(i, w.sumChildren(i, p.states), w)
	}
}

// redoLevel recomputes node i's level, given the sums over its children,
// and records what it pushes to them.
func (p *Plan) redoLevel(i int, sums childSums, w *worker) {
	children := p.nodes[i].children
	pushes := w.nums(len(children))
	p.states[i] = w.level(i, p.nodes[i].demand, sums, levelView{states: p.states, replaced: -1}, pushes)
	for k, c := range children {
		p.states[c].push = pushes[k]
	}
}

// SetDemand changes a node's demand (nil: unbounded) and redoes the levels
// on its path to the root.
func (p *Plan) SetDemand(name string, demand *big.Rat) error {
	i, ok := p.index[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNode, name)
	}
	if demand != nil && demand.Sign() < 0 {
		return fmt.Errorf("%w: node %q demand %s", ErrNegative, name, demand.RatString())
	}
	p.setDemand(i, boundOrUnbounded(demand))
	return nil
}

// setDemand is SetDemand of node i.
func (p *Plan) setDemand(i int, demand bound) {
	p.nodes[i].demand = demand
	w := newWorker(p.nodes)
	defer w.release()
	old := p.states[i]
	p.redoLevel(i, old.children, w)
	for c := i; p.nodes[c].parent >= 0; c = p.nodes[c].parent {
		parent := p.nodes[c].parent
		oldParent := p.states[parent]
		p.redoLevel(parent, oldParent.children.replace(p.nodes[c].accept, &old, &p.states[c]), w)
		old = oldParent
	}
}

// Allocate finishes step 2 (the top-down pass) and runs step 3 when the
// plan has a unit.
func (p *Plan) Allocate() *Result {
	n := len(p.nodes)
	alloc := make([]num, n)
	pending := make([]num, n) // what came from above into each subtree
	w := newWorker(p.nodes)
	defer w.release()
	for i := range p.nodes {
		children := p.nodes[i].children
		shares := w.nums(len(children))
		self := w.handDown(i, pending[i], &p.states[i], func(k int) bound {
			child := &p.states[children[k]]
			return child.room.sub(child.push)
		}, shares)
		alloc[i] = p.states[i].alloc.add(self)
		for k, c := range children {
			pending[c] = p.states[c].push.add(shares[k])
		}
	}
	// What the root's limit cut off and the surplus the root passed up
	// are all that is left: every level hands on or passes up exactly what
	// it gathers. (Summing the allocations instead would cost a rational sum
	// over the whole tree, whose denominator grows with it.)
	leftover := p.total.sub(p.nodes[0].subtreeQuota).add(p.states[0].up)
	if p.unit != nil {
		units, unclaimed := round(p.nodes, alloc, *p.unit)
		for i, u := range units {
			alloc[i] = intNum(u).mul(*p.unit)
		}
		leftover = leftover.add(unclaimed)
	}
	held := make([]num, n)
	for i := range p.states {
		held[i] = p.states[i].held
	}
	return &Result{nodes: p.nodes, index: p.index, alloc: alloc, held: held, owned: p.owned, leftover: leftover}
}

// Available is what the named node could still be given on top of its
// demand: what it would be allocated were its demand unbounded, less its
// demand (DESIGN's available(p); for a tree of one node, the pool less the
// demand). A lien of x on the node is granted, by DESIGN's rule worked
// exactly, iff x <= Available. The node's demand must be bounded.
//
// The allocation is worked exactly (no rounding step); with a unit it is
// rounded down to the unit before the demand is subtracted. That is
// conservative against the rounded rule: rounding only ever adds whole
// units to an allocation rounded down, so a lien within this bound is
// granted by the rounded rule too, while the rounded rule may grant a unit
// or so more.
//
// It costs O(depth·fan-out): the node's path to the root is redone on the
// side with the demand unbounded, then walked down again.
func (p *Plan) Available(name string) (*big.Rat, error) {
	target, ok := p.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownNode, name)
	}
	demand := p.nodes[target].demand
	if demand.inf {
		return nil, fmt.Errorf("%w: %q", ErrUnboundedDemand, name)
	}

	// Up: the levels on the path, with the target's demand unbounded and
	// each level reading its path child's new state.
	type step struct {
		node   int
		view   levelView // the children as this level saw them
		state  levelState
		pushes []num
	}
	var path []*step
	w := newWorker(p.nodes)
	defer w.release()
	view := levelView{states: p.states, replaced: -1}
	sums := p.states[target].children
	for i := target; i >= 0; i = p.nodes[i].parent {
		d := p.nodes[i].demand
		if i == target {
			d = unbounded
		}
		s := &step{node: i, view: view, pushes: make([]num, len(p.nodes[i].children))}
		s.state = w.level(i, d, sums, view, s.pushes)
		path = append(path, s)
		if parent := p.nodes[i].parent; parent >= 0 {
			sums = p.states[parent].children.replace(p.nodes[i].accept, &p.states[i], &s.state)
		}
		view = levelView{states: p.states, replaced: i, with: &s.state}
	}

	// Down: hand what comes from above to the path child, level by level.
	var fromAbove num
	for j := len(path) - 1; ; j-- {
		s := path[j]
		children := p.nodes[s.node].children
		shares := w.nums(len(children))
		self := w.handDown(s.node, fromAbove, &s.state, func(k int) bound {
			return s.view.child(children[k]).room.sub(s.pushes[k])
		}, shares)
		if j == 0 {
			alloc := s.state.alloc.add(self)
			if p.unit != nil {
				alloc = intNum(alloc.floorQuo(*p.unit)).mul(*p.unit)
			}
			return alloc.sub(demand.v).rat(), nil
		}
		for k, c := range children {
			if c == path[j-1].node {
				fromAbove = s.pushes[k].add(shares[k])
			}
		}
	}
}

// Result is an allocation: every node's own quota (step 1), what it is
// allocated and what it holds back, and what is left over. The accessors
// return new values the caller may change, and nil for an unknown name.
type Result struct {
	nodes    []planNode
	index    map[string]int
	alloc    []num
	held     []num
	owned    []num
	leftover num
}

// Names lists the nodes in pre-order: the root first, a parent before its
// children, siblings in their given order.
func (r *Result) Names() []string {
	names := make([]string, len(r.nodes))
	for i := range r.nodes {
		names[i] = r.nodes[i].name
	}
	return names
}

// Quota is a node's own quota after step 1: its subtree quota less what its
// children's subtrees took.
func (r *Result) Quota(name string) *big.Rat {
	return r.lookup(name, func(i int) num { return r.nodes[i].ownQuota })
}

// Allocated is what a node itself is allocated.
func (r *Result) Allocated(name string) *big.Rat {
	return r.lookup(name, func(i int) num { return r.alloc[i] })
}

// Held is what a node keeps back: the unused own quota its non_shared
// holds, and what its group non-shared keeps in its subtree. It is
// neither allocated nor passed up, so not in Leftover either.
func (r *Result) Held(name string) *big.Rat {
	return r.lookup(name, func(i int) num { return r.held[i] })
}

// Owned is what a node owns of the pool: its ownership, a group's being
// its children's together. It is less than what is set when the pool, or
// a limit above the node, cannot cover every ownership and group
// non-shared (step 1 carves them top-down: a group's reserve, then what
// its children claim, scaled down together).
func (r *Result) Owned(name string) *big.Rat {
	return r.lookup(name, func(i int) num { return r.owned[i] })
}

// Reserved is what a node's group non-shared reserves of the pool: the
// value set, or less when the pool or a limit above cannot cover it.
func (r *Result) Reserved(name string) *big.Rat {
	return r.lookup(name, func(i int) num { return r.nodes[i].reserved })
}

// Leftover is the part of the pool nobody was allocated and nobody holds:
// pool = Σ Allocated + Σ Held + Leftover.
func (r *Result) Leftover() *big.Rat { return r.leftover.rat() }

func (r *Result) lookup(name string, value func(i int) num) *big.Rat {
	i, ok := r.index[name]
	if !ok {
		return nil
	}
	return value(i).rat()
}
