package hfs

import "sync"

// Step 2, fair share, runs in two passes.
//
// Bottom-up, each node's level: the node takes min(demand, own quota), then
// shares the surplus gathered from itself and its children's subtrees
// among itself and its accepting children (share), and passes up the rest.
// What the level hands a child subtree is not pushed down at once: it is
// recorded as the child's push.
//
// Top-down, every subtree's pushes (from its parent's level, and from
// above through its parent) are handed down in one go, by the same sharing
// rule over the rooms left after the node's own level. Handing out a then b
// from the same state gives exactly what handing out a+b gives
// (water-filling composes), and nothing else touches a subtree in between,
// so this is exactly HTCondor's eager recursion, for O(n) work instead of
// O(n·depth).
//
// A node's level depends only on its own subtree, so the bottom-up states
// are kept in the Plan: a changed demand redoes the levels on its path to
// the root only, and Available reads one path. A level needs three sums
// over the node's children; they are kept too, so that a level whose one
// changed child is known updates them in O(1) (childSums.replace).

// levelState is a node after its own level of the bottom-up pass.
type levelState struct {
	// alloc is what the node itself has: min(demand, own quota) plus its
	// share of the surplus gathered at its level.
	alloc num
	// unmet is demand minus alloc.
	unmet bound
	// held is the unused own quota that non_shared keeps back, and what
	// the group's reserve keeps in the subtree.
	held num
	// up is the surplus the subtree passes to its parent.
	up num
	// room is what the subtree can still take from above: its accepting
	// part's unmet demand, capped by its limit.
	room bound
	// push is what the parent's level handed this subtree.
	push num
	// children sums up the children's states.
	children childSums
}

// subtreeHeld is what non_shared holds back in the whole subtree.
func (s *levelState) subtreeHeld() num { return s.held.add(s.children.held) }

// childSums are the sums over a node's children that its level needs.
type childSums struct {
	up   num // Σ up
	held num // Σ subtree held
	// room is Σ room over the accepting children; unboundedRooms counts
	// those with unbounded room (so that one can be taken out again).
	room           num
	unboundedRooms int
}

func (w *worker) sumChildren(i int, states []levelState) childSums {
	var s childSums
	for _, c := range w.nodes[i].children {
		s = s.apply(w.nodes[c].accept, &states[c], num.add, 1)
	}
	return s
}

// replace is the sums with one child's state changed from old to new.
func (s childSums) replace(accept bool, old, new *levelState) childSums {
	return s.apply(accept, old, num.sub, -1).apply(accept, new, num.add, 1)
}

// apply adds one child's state to the sums (op num.add, count 1) or takes
// it out (num.sub, -1).
func (s childSums) apply(accept bool, c *levelState, op func(a, b num) num, count int) childSums {
	s.up = op(s.up, c.up)
	s.held = op(s.held, c.subtreeHeld())
	switch {
	case !accept:
	case c.room.inf:
		s.unboundedRooms += count
	default:
		s.room = op(s.room, c.room.v)
	}
	return s
}

func (s childSums) roomSum() bound {
	if s.unboundedRooms > 0 {
		return unbounded
	}
	return finite(s.room)
}

// levelView is what a level reads about a node's children: the Plan's
// states, except that one child may be replaced (the one on the path a
// changed demand travels up).
type levelView struct {
	states   []levelState
	replaced int // index of the replaced child, or -1
	with     *levelState
}

func (v levelView) child(c int) *levelState {
	if c == v.replaced {
		return v.with
	}
	return &v.states[c]
}

// worker runs levels and hand-downs over a Plan's nodes, with scratch
// space so that a pass allocates nothing per node. One goroutine each;
// workers are pooled, so that a wide tree's scratch space is not made
// again for every Available.
type worker struct {
	nodes  []planNode
	claims []claim
	buf    []num
}

var workers = sync.Pool{New: func() any { return new(worker) }}

func newWorker(nodes []planNode) *worker {
	w := workers.Get().(*worker)
	w.nodes = nodes
	return w
}

func (w *worker) release() {
	w.nodes = nil
	workers.Put(w)
}

// nums is a scratch slice of n nums, zeroed or not.
func (w *worker) nums(n int) []num {
	if cap(w.buf) < n {
		w.buf = make([]num, n)
	}
	return w.buf[:n]
}

// level runs node i's level for the given demand, with sums the sums over
// its children as v shows them, and returns its state; pushes[k] is set to
// what it hands its k-th child (0 for children that do not accept
// surplus).
func (w *worker) level(i int, demand bound, sums childSums, v levelView, pushes []num) levelState {
	n := &w.nodes[i]
	s := levelState{children: sums}
	s.alloc = demand.capped(n.ownQuota)
	s.unmet = demand.sub(s.alloc)
	unused := n.ownQuota.sub(s.alloc)
	s.held = minNum(unused, n.nonShared)
	gathered := unused.sub(s.held).add(sums.up)
	unmetBefore := s.unmet

	clear(pushes)
	s.up = gathered
	if !gathered.isZero() {
		claims := w.claimsAt(i, s.unmet, func(k int) bound { return v.child(n.children[k]).room })
		var self num
		s.up, self = share(gathered, claims, pushes)
		s.alloc = s.alloc.add(self)
		s.unmet = s.unmet.sub(self)
	}

	// What the level handed out (gathered - up) is what its accepting
	// part can no longer take.
	handed := gathered.sub(s.up)
	// The group's reserve keeps back what would leave the subtree: up to
	// the reserve, what nobody in it could take now waits for the
	// subtree's own demand.
	kept := minNum(s.up, n.reserved)
	s.held = s.held.add(kept)
	s.up = s.up.sub(kept)

	// Every level hands on or passes up exactly what it gathers, so the
	// subtree has its quota less what it holds back and passes up.
	subtreeAlloc := n.subtreeQuota.sub(s.subtreeHeld()).sub(s.up)
	s.room = unmetBefore.add(sums.roomSum()).sub(handed)
	s.room = s.room.min(n.limit.sub(subtreeAlloc))
	return s
}

// handDown shares amount, which came from above, among node i itself and
// its accepting children, over the rooms left after i's level: childRoom(k)
// is its k-th child's. It returns node i's own share and sets shares[k] to
// the k-th child's. It never leaves a rest: what came from above was at
// most i's room, which is at most what i and its accepting children can
// take.
func (w *worker) handDown(i int, amount num, s *levelState, childRoom func(k int) bound, shares []num) num {
	if amount.isZero() {
		clear(shares)
		return num{}
	}
	_, self := share(amount, w.claimsAt(i, s.unmet, childRoom), shares)
	return self
}

// claimsAt lists the candidates for surplus at node i's level: the node
// itself (weighted by its own quota) and each accepting child (weighted by
// its subtree quota) with room left.
func (w *worker) claimsAt(i int, selfRoom bound, childRoom func(k int) bound) []claim {
	n := &w.nodes[i]
	w.claims = append(w.claims[:0], claim{child: -1, weight: n.ownQuota, room: selfRoom})
	for k, c := range n.children {
		if room := childRoom(k); w.nodes[c].accept && room.positive() {
			w.claims = append(w.claims, claim{child: k, weight: w.nodes[c].subtreeQuota, room: room})
		}
	}
	return w.claims
}
