package hfs

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
)

// Preemption, LSF's way with credits for tokens. A node's in-use is its
// subtree's demand; it is underfed by what it owns beyond that, overfed
// by what it uses beyond what it owns (Owned). A lien on a node that the
// pool's free credits cannot hold may take credits back from overfed
// subtrees when the node, or a group above it, is underfed by at least
// what the lien lacks. Which jobs, is Plan.Preempt.

// PreemptOrder says which overfed subtrees a preemption takes from first.
type PreemptOrder int

const (
	// TopDown takes from the subtrees furthest from the node first: those
	// that meet it highest in the tree (their common ancestor with it is
	// nearest the root).
	TopDown PreemptOrder = iota
	// BottomUp takes from the closest first: its siblings' subtrees, then
	// its parent's siblings', and so on.
	BottomUp
)

func (o PreemptOrder) String() string {
	switch o {
	case TopDown:
		return "top-down"
	case BottomUp:
		return "bottom-up"
	}
	return fmt.Sprintf("PreemptOrder(%d)", int(o))
}

// Job is a running job a preemption may name: what its lien holds of its
// node's demand, and what releasing it frees for the lien asked about
// (less than Held when some of it is on credits that lien could not use).
// A nil Frees is Held.
type Job struct {
	Held  *big.Rat
	Frees *big.Rat
}

// JobRef names a job of a PreemptRequest: the Index-th of Jobs[Node].
type JobRef struct {
	Node  string
	Index int
}

// PreemptRequest asks what to preempt so that a lien of Amount on Node
// fits. Free is what that lien could take of the pool now (the account's
// funds less what liens hold). Jobs are the running jobs by node, each
// node's in the order in which they are to be taken when all else is equal
// (the ledger gives the newest first: they lose the least work); they must
// hold no more than the node's demand. Every node's demand must be
// bounded.
type PreemptRequest struct {
	Node   string
	Amount *big.Rat
	Free   *big.Rat
	Jobs   map[string][]Job
	Order  PreemptOrder
}

// Outcome is what a preemption found.
type Outcome int

// The outcomes, in the order Preempt looks for them.
const (
	// Fits: the lien fits now; nothing to preempt.
	Fits Outcome = iota
	// BeyondShare: the pool has the credits but the node's HFS share does
	// not reach: preemption is for a pool without free credits.
	BeyondShare
	// NotUnderfed: neither the node nor a group above it is underfed by
	// what the lien lacks, so it takes nothing back.
	NotUnderfed
	// NoVictims: no job of an overfed subtree may be taken (none runs, or
	// a branch at its limit leaves none inside it).
	NoVictims
	// NoRoom: even with every job that may be taken released, the lien
	// would not fit (its HFS share, a limit).
	NoRoom
	// Preempt: releasing the Victims makes the lien fit.
	Preempt
)

func (o Outcome) String() string {
	switch o {
	case Fits:
		return "fits"
	case BeyondShare:
		return "beyond_share"
	case NotUnderfed:
		return "not_underfed"
	case NoVictims:
		return "no_victims"
	case NoRoom:
		return "no_room"
	case Preempt:
		return "preempt"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Preemption is the answer: the outcome, and with Preempt the jobs to
// release in the order chosen. Owned
// and InUse are the node's (its subtree's); Lacking is what the lien
// lacks of the free credits (Amount − Free, at least 0); Underfed the
// lowest node on the path from the node to the root whose unmet
// ownership, Deficit, covers it ("" and nil when none does).
type Preemption struct {
	Outcome      Outcome
	Victims      []JobRef
	Owned, InUse *big.Rat
	Lacking      *big.Rat
	Underfed     string
	Deficit      *big.Rat
}

// Preempt says which running jobs to release so that a lien of
// req.Amount on req.Node fits: both the pool's free credits and the
// node's HFS share (Available) must reach it, as for any lien. It changes
// nothing, and may run concurrently with Available.
//
// The rules (docs/hfs.md has the worked examples):
//   - Nothing is preempted while the free credits hold the lien: Fits if
//     the share reaches too, BeyondShare if not.
//   - The node, or a group above it, must be underfed by at least what the
//     lien lacks; the lowest such, u, justifies it. Victims come from
//     outside u's subtree.
//   - A branch on the node's path that has no room under its limit for
//     the lien cannot grow: victims come from inside the highest such
//     branch.
//   - A job may be taken only while every subtree from its node up to
//     (not including) the common ancestor with the requesting node is
//     overfed, counting the jobs already taken; a group's own jobs are
//     overfed while they hold anything (ownership is on leaves).
//   - Order: by distance (TopDown: the highest common ancestor first;
//     BottomUp: the lowest), then the lowest-ranked node first (Rank),
//     then, within a node, what a job frees and holds, largest first (so
//     that few jobs cover much), then the request's order.
//   - Fewest: the shortest run of that order that makes the lien fit,
//     then, from its first job on, every job whose release the rest makes
//     unneeded is dropped. No job named can be left out.
func (p *Plan) Preempt(req PreemptRequest) (*Preemption, error) {
	pp, err := p.newPreempter(req)
	if err != nil {
		return nil, err
	}
	return pp.run()
}

// preempter holds one Preempt's working state.
type preempter struct {
	plan   *Plan
	req    PreemptRequest
	target int
	amount num
	free   num
	// nodeJobs are each node's jobs as the request gives them; jobs those
	// of the nodes a sequence has reached (nodeJobs are read only then:
	// the answer costs what it takes from, not every job of the tree).
	nodeJobs [][]Job
	jobs     []preemptJob
	// inUse is each subtree's demand; released what the jobs taken so
	// far release of it.
	inUse    []num
	released []num
	// path is the target's path to the root, pathIndex each node's place
	// on it (-1 off it), meet each node's common ancestor with the target
	// as a place on the path.
	path      []int
	pathIndex []int
	meet      []int
	// work is a copy of the plan for trying releases on: the demands of
	// the nodes in changed are lowered to the values there.
	work    *Plan
	changed map[int]num
}

type preemptJob struct {
	node, index int // the index-th of node's jobs
	held, frees num
}

func (p *Plan) newPreempter(req PreemptRequest) (*preempter, error) {
	target, ok := p.index[req.Node]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownNode, req.Node)
	}
	if req.Amount == nil || req.Free == nil {
		return nil, fmt.Errorf("%w: a preemption needs an amount and the free credits", ErrInput)
	}
	if req.Amount.Sign() < 0 || req.Free.Sign() < 0 {
		return nil, fmt.Errorf("%w: amount %s, free %s", ErrNegative, req.Amount.RatString(), req.Free.RatString())
	}
	n := len(p.nodes)
	pp := &preempter{plan: p, req: req, target: target, amount: ratNum(req.Amount), free: ratNum(req.Free),
		inUse: make([]num, n), released: make([]num, n), pathIndex: make([]int, n), meet: make([]int, n)}
	for i := n - 1; i >= 0; i-- {
		d := p.nodes[i].demand
		if d.inf {
			return nil, fmt.Errorf("%w: %q (a preemption counts every demand)", ErrUnboundedDemand, p.nodes[i].name)
		}
		pp.inUse[i] = pp.inUse[i].add(d.v)
		if parent := p.nodes[i].parent; parent >= 0 {
			pp.inUse[parent] = pp.inUse[parent].add(pp.inUse[i])
		}
	}
	pp.nodeJobs = make([][]Job, n)
	for name, jobs := range req.Jobs {
		i, ok := p.index[name]
		if !ok {
			return nil, fmt.Errorf("%w: jobs of %q", ErrUnknownNode, name)
		}
		pp.nodeJobs[i] = jobs
	}
	for i := range pp.pathIndex {
		pp.pathIndex[i] = -1
	}
	for i := target; i >= 0; i = p.nodes[i].parent {
		pp.pathIndex[i] = len(pp.path)
		pp.path = append(pp.path, i)
	}
	for i := range p.nodes { // pre-order: a parent's meet is known first
		if pp.pathIndex[i] >= 0 {
			pp.meet[i] = pp.pathIndex[i]
		} else {
			pp.meet[i] = pp.meet[p.nodes[i].parent]
		}
	}
	return pp, nil
}

func (pp *preempter) run() (*Preemption, error) {
	out := &Preemption{Lacking: maxNum(pp.amount.sub(pp.free), num{}).rat(),
		Owned: pp.plan.owned[pp.target].rat(), InUse: pp.inUse[pp.target].rat()}
	shareFits, err := pp.shareFits(pp.plan)
	if err != nil {
		return nil, err
	}
	if pp.free.cmp(pp.amount) >= 0 {
		out.Outcome = Fits
		if !shareFits {
			out.Outcome = BeyondShare
		}
		return out, nil
	}

	// The lowest underfed node on the path that covers what is lacking,
	// and the highest branch with no room for the lien: victims meet the
	// path above the first and at or below the second.
	lacking := pp.amount.sub(pp.free)
	from := -1
	for k, i := range pp.path[:len(pp.path)-1] { // the root owns the whole pool
		if deficit := pp.plan.owned[i].sub(pp.inUse[i]); deficit.cmp(lacking) >= 0 {
			from, out.Underfed, out.Deficit = k, pp.plan.nodes[i].name, deficit.rat()
			break
		}
	}
	if from < 0 {
		out.Outcome = NotUnderfed
		return out, nil
	}
	to := len(pp.path) - 1
	for k := len(pp.path) - 1; k >= 0; k-- {
		i := pp.path[k]
		if n := &pp.plan.nodes[i]; !n.limit.inf && pp.inUse[i].add(pp.amount).cmp(n.limit.v) > 0 {
			to = k
			break
		}
	}

	seq := pp.newSequence(from, to)
	taken, err := pp.shortestRun(seq)
	if err != nil {
		return nil, err
	}
	if taken == nil {
		out.Outcome = NoRoom
		if len(seq.taken) == 0 {
			out.Outcome = NoVictims
		}
		return out, nil
	}
	if taken, err = pp.dropUnneeded(taken); err != nil {
		return nil, err
	}
	out.Outcome = Preempt
	for _, j := range taken {
		job := pp.jobs[j]
		out.Victims = append(out.Victims, JobRef{Node: pp.plan.nodes[job.node].name, Index: job.index})
	}
	return out, nil
}

// sequence is the jobs that may be taken, in the order of taking, made only
// as far as it is asked: the nodes that have candidates are put in order
// at once, each node's jobs read and sorted when it is reached.
type sequence struct {
	pp    *preempter
	nodes []int // in the order of taking
	next  int   // the next node of nodes
	queue []int // the jobs of the node being taken from, sorted
	taken []int
}

// newSequence orders the nodes whose jobs are candidates: those that meet
// the path at a place in (from, to].
func (pp *preempter) newSequence(from, to int) *sequence {
	seq := &sequence{pp: pp}
	for i, jobs := range pp.nodeJobs {
		if m := pp.meet[i]; len(jobs) > 0 && m > from && m <= to {
			seq.nodes = append(seq.nodes, i)
		}
	}
	rank := pp.plan.rankPlaces()
	slices.SortFunc(seq.nodes, func(a, b int) int {
		ma, mb := pp.meet[a], pp.meet[b]
		if pp.req.Order == BottomUp {
			ma, mb = mb, ma
		}
		if c := cmp.Compare(mb, ma); c != 0 { // the furthest first (top-down)
			return c
		}
		return cmp.Compare(rank[b], rank[a]) // the lowest-ranked first
	})
	return seq
}

// upTo is the first n jobs of the sequence, or all of it if it is
// shorter. A job is taken if its subtrees are still overfed with those
// before it taken; once a node's are not, its other jobs are not either.
func (seq *sequence) upTo(n int) ([]int, error) {
	pp := seq.pp
	for len(seq.taken) < n {
		if len(seq.queue) == 0 {
			if seq.next == len(seq.nodes) {
				break
			}
			queue, err := pp.readJobs(seq.nodes[seq.next])
			if err != nil {
				return nil, err
			}
			seq.queue = queue
			seq.next++
			continue
		}
		j := seq.queue[0]
		if !pp.overfed(pp.jobs[j].node) {
			seq.queue = nil
			continue
		}
		seq.queue = seq.queue[1:]
		seq.taken = append(seq.taken, j)
		pp.release(pp.jobs[j])
	}
	return seq.taken[:min(n, len(seq.taken))], nil
}

// readJobs reads node i's jobs into pp.jobs and returns them in the order
// of taking: what they free and hold, largest first (few jobs cover
// much), then the request's order.
func (pp *preempter) readJobs(i int) ([]int, error) {
	var held num
	first := len(pp.jobs)
	for k, j := range pp.nodeJobs[i] {
		if j.Held == nil || j.Held.Sign() < 0 || j.Frees != nil && j.Frees.Sign() < 0 {
			return nil, fmt.Errorf("%w: job %d of %q: held and frees must be given, not negative", ErrNegative, k, pp.plan.nodes[i].name)
		}
		job := preemptJob{node: i, index: k, held: ratNum(j.Held)}
		job.frees = job.held
		if j.Frees != nil {
			job.frees = ratNum(j.Frees)
		}
		held = held.add(job.held)
		if job.held.sign() > 0 || job.frees.sign() > 0 {
			pp.jobs = append(pp.jobs, job)
		}
	}
	if demand := pp.plan.nodes[i].demand.v; held.cmp(demand) > 0 {
		return nil, fmt.Errorf("%w: %q: its jobs hold %s, its demand is %s", ErrJobsAboveDemand, pp.plan.nodes[i].name,
			held.readRat().RatString(), demand.readRat().RatString())
	}
	queue := make([]int, len(pp.jobs)-first)
	for k := range queue {
		queue[k] = first + k
	}
	slices.SortFunc(queue, func(a, b int) int {
		ja, jb := &pp.jobs[a], &pp.jobs[b]
		if c := jb.frees.cmp(ja.frees); c != 0 {
			return c
		}
		if c := jb.held.cmp(ja.held); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return queue, nil
}

// overfed says whether a job of node i may be taken now: every subtree
// from i up to its common ancestor with the target uses more than it
// owns. A job of the common ancestor itself (a group's own job) is always
// overfed: a group owns nothing of its own.
func (pp *preempter) overfed(i int) bool {
	top := pp.path[pp.meet[i]]
	for ; i != top; i = pp.plan.nodes[i].parent {
		if pp.inUse[i].sub(pp.released[i]).cmp(pp.plan.owned[i]) <= 0 {
			return false
		}
	}
	return true
}

// release counts a job as taken in its node's subtree sums up to the
// root.
func (pp *preempter) release(job preemptJob) {
	for i := job.node; i >= 0; i = pp.plan.nodes[i].parent {
		pp.released[i] = pp.released[i].add(job.held)
	}
}

// fitsWith says whether the lien fits with the jobs taken released: the
// free credits hold it, every branch on the target's path stays within
// its limit with it, and the target's HFS share reaches it.
func (pp *preempter) fitsWith(taken []int) (bool, error) {
	frees := pp.free
	for _, j := range taken {
		frees = frees.add(pp.jobs[j].frees)
	}
	if frees.cmp(pp.amount) < 0 {
		return false, nil
	}
	for k, i := range pp.path {
		limit := pp.plan.nodes[i].limit
		if limit.inf {
			continue
		}
		use := pp.inUse[i].add(pp.amount)
		for _, j := range taken {
			if pp.meet[pp.jobs[j].node] <= k { // inside the branch
				use = use.sub(pp.jobs[j].held)
			}
		}
		if use.cmp(limit.v) > 0 {
			return false, nil
		}
	}
	return pp.shareFits(pp.workWith(taken))
}

// workWith is the working copy of the plan with the jobs taken released
// and no other: only the demands that differ from the last call's are
// set again.
func (pp *preempter) workWith(taken []int) *Plan {
	if pp.work == nil {
		pp.work, pp.changed = pp.plan.clone(), map[int]num{}
	}
	want := map[int]num{}
	for _, j := range taken {
		i := pp.jobs[j].node
		d, ok := want[i]
		if !ok {
			d = pp.plan.nodes[i].demand.v
		}
		want[i] = d.sub(pp.jobs[j].held)
	}
	for i := range pp.changed {
		if _, ok := want[i]; !ok {
			pp.work.setDemand(i, pp.plan.nodes[i].demand)
			delete(pp.changed, i)
		}
	}
	for i, d := range want {
		if now, ok := pp.changed[i]; !ok || now.cmp(d) != 0 {
			pp.work.setDemand(i, finite(d))
			pp.changed[i] = d
		}
	}
	return pp.work
}

// shareFits says whether the target's HFS share on plan reaches the lien.
func (pp *preempter) shareFits(plan *Plan) (bool, error) {
	a, err := plan.Available(pp.req.Node)
	if err != nil {
		return false, err
	}
	return ratNum(a).cmp(pp.amount) >= 0, nil
}

// shortestRun is the shortest start of the sequence that makes the lien
// fit, nil if none does. Releasing more never fits less, so it is found
// by galloping from the first start whose releases cover what the lien
// lacks (usually the answer), then halving: a few checks of the share,
// each on the nodes of that start alone.
func (pp *preempter) shortestRun(seq *sequence) ([]int, error) {
	lo, frees := 0, pp.free
	for frees.cmp(pp.amount) < 0 {
		taken, err := seq.upTo(lo + 1)
		if err != nil || len(taken) == lo {
			return nil, err
		}
		frees = frees.add(pp.jobs[taken[lo]].frees)
		lo++
	}
	// The first lo-1 do not fit; find hi such that the first hi do.
	lo--
	hi := -1
	for step := 1; hi < 0; step *= 2 {
		taken, err := seq.upTo(lo + step)
		if err != nil {
			return nil, err
		}
		fits, err := pp.fitsWith(taken)
		if err != nil {
			return nil, err
		}
		switch {
		case fits:
			hi = len(taken)
		case len(taken) < lo+step: // the whole sequence
			return nil, nil
		default:
			lo = len(taken)
		}
	}
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		fits, err := pp.fitsWith(seq.taken[:mid])
		if err != nil {
			return nil, err
		}
		if fits {
			hi = mid
		} else {
			lo = mid
		}
	}
	return seq.taken[:hi], nil
}

// dropUnneeded drops, from the first job on, each job without which the
// others still make the lien fit. Leaving a job out never makes another
// one untakeable (its subtrees only stay fuller), and once a job is
// needed, dropping others later keeps it needed.
func (pp *preempter) dropUnneeded(taken []int) ([]int, error) {
	kept := slices.Clone(taken)
	for k := 0; k < len(kept); {
		without := slices.Delete(slices.Clone(kept), k, k+1)
		fits, err := pp.fitsWith(without)
		if err != nil {
			return nil, err
		}
		if fits {
			kept = without
		} else {
			k++
		}
	}
	return kept, nil
}

// Rank lists the nodes from the highest-ranked to the lowest: among
// siblings, higher priority first, then the subtree with less in use (its
// demands: what it has consumed and holds), then name order; a group's
// children before the group itself (whose own jobs own nothing, so rank
// lowest in it). The highest leaf is the first leaf listed, the lowest
// the last: what a priority evaluated top-down picks at each level.
func (p *Plan) Rank() []string {
	places := p.rankPlaces()
	names := make([]string, len(p.nodes))
	for i, k := range places {
		names[k] = p.nodes[i].name
	}
	return names
}

// rankPlaces is each node's place in Rank's list. An unbounded demand
// counts as more than any bounded one.
func (p *Plan) rankPlaces() []int {
	n := len(p.nodes)
	inUse := make([]bound, n)
	for i := n - 1; i >= 0; i-- {
		inUse[i] = inUse[i].add(p.nodes[i].demand)
		if parent := p.nodes[i].parent; parent >= 0 {
			inUse[parent] = inUse[parent].add(inUse[i])
		}
	}
	places := make([]int, n)
	next := 0
	var visit func(i int)
	visit = func(i int) {
		children := slices.Clone(p.nodes[i].children)
		slices.SortFunc(children, func(a, b int) int {
			if c := cmp.Compare(p.nodes[b].priority, p.nodes[a].priority); c != 0 {
				return c
			}
			if c := inUse[a].cmp(inUse[b]); c != 0 {
				return c
			}
			return cmp.Compare(p.nodes[a].name, p.nodes[b].name)
		})
		for _, c := range children {
			visit(c)
		}
		places[i] = next
		next++
	}
	visit(0)
	return places
}
