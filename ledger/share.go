package ledger

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/hfs"
)

// HFS: an account's credits split among its projects (DESIGN section 4).
//
// The pool is what the account's active allocations could spend in all:
// their remaining amounts, credit limits, and what charges have taken from
// them. A node's demand is what its own charges took from those allocations
// plus what its active liens hold on them. A lien of x on p is granted iff
// x <= available(p), HFS's allocation of p were its demand unbounded, less
// its demand (and the machine's allocations can hold x; see Funds).
//
// Choice: an account whose tree carries no HFS policy at all (no quota,
// accept_surplus, limit or non_shared anywhere) is not split: its projects
// share the pool as in Gold, which is what a bank built before the centre
// configures fair share, or moved from Gold, expects. The first policy set
// in the tree turns HFS on for the whole account, with DESIGN's defaults for
// the other nodes (no quota = dynamic 0, no surplus from above).

// NodeShare is one node's part of its account.
type NodeShare struct {
	Name   string `json:"name"`
	Policy Policy `json:"policy"`
	// Quota is the node's own quota after step 1, Allocated its allocation
	// for the current demands (both zero when HFS is off).
	Quota     decimal.Decimal `json:"quota"`
	Allocated decimal.Decimal `json:"allocated"`
	// Used is what the node's own charges took from the active allocations,
	// Reserved what its liens hold on them: together, its demand.
	Used     decimal.Decimal `json:"used"`
	Reserved decimal.Decimal `json:"reserved"`
	// Available is DESIGN's available(p): what HFS would still give the
	// node on top of its demand. A lien must also fit the account's funds,
	// which may be less: surplus that another project borrowed is held by
	// its liens until they end. LienAvailable is the lesser, what a lien
	// on the node would get now (Ledger.Available).
	Available     decimal.Decimal `json:"available"`
	LienAvailable decimal.Decimal `json:"lien_available"`
	// Owned is what the node owns of the pool now (a group: what its
	// projects own), less than its policy's ownership when the pool
	// cannot cover every ownership and group non-shared; Reserve what its
	// group non-shared keeps for its subtree. Shortfall is what the pool
	// does not cover of its own ownership and group non-shared.
	Owned     decimal.Decimal `json:"owned"`
	Reserve   decimal.Decimal `json:"reserve"`
	Shortfall decimal.Decimal `json:"shortfall"`
	// InUse is the subtree's demand: what the charges and liens of the
	// node and those below it took and hold. Fed compares it with Owned:
	// "underfed" below, "overfed" above, "" when equal (with nothing owned
	// and nothing used too).
	InUse decimal.Decimal `json:"in_use"`
	Fed   string          `json:"fed,omitempty"`
	// The subtree's figures, the node's and its descendants' rolled up,
	// so that a group whose own are zero shows what its projects have:
	// SubtreeUsed and SubtreeReserved are sums, SubtreeQuota the node's
	// quota or, where its sub-projects' together are more (a group
	// without a quota of its own), theirs.
	SubtreeQuota    decimal.Decimal `json:"subtree_quota"`
	SubtreeUsed     decimal.Decimal `json:"subtree_used"`
	SubtreeReserved decimal.Decimal `json:"subtree_reserved"`
}

// AccountShares is an account's HFS split at one time.
type AccountShares struct {
	Account string    `json:"account"`
	At      time.Time `json:"at"`
	// HFS says whether the account is split (see the choice above).
	HFS      bool            `json:"hfs"`
	Pool     decimal.Decimal `json:"pool"`
	Leftover decimal.Decimal `json:"leftover"`
	// Owners says whether any node sets ownership, group non-shared or a
	// priority; then Preemption is the account's preemption order, Highest
	// and Lowest the highest- and lowest-ranked projects without
	// sub-projects (the first and last a preemption would spare).
	// Warnings say, by name, what the pool does not cover of the ownership
	// and group non-shared set (satisfied level by level from the top, so
	// the lowest levels are short first), and which nodes have a
	// non_shared above their own quota (it holds at most that).
	Owners     bool     `json:"owners"`
	Preemption string   `json:"preemption,omitempty"`
	Highest    string   `json:"highest,omitempty"`
	Lowest     string   `json:"lowest,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Nodes are the account and its projects, in name order.
	Nodes []NodeShare `json:"nodes"`
}

// hasPolicy reports whether a node carries any HFS setting that changes
// the split. Priority and the preemption order only say who is preempted
// first, which needs ownership set.
func (p Policy) hasPolicy() bool {
	return p.QuotaKind != QuotaNone || p.AcceptSurplus || p.Limit != nil || !p.NonShared.IsZero() ||
		!p.Ownership.IsZero() || !p.GroupNonShared.IsZero()
}

// shareState is everything HFS needs of an account at one time.
type shareState struct {
	nodes    []Node
	cached   *hfs.Plan
	hfsOn    bool
	pool     decimal.Decimal
	used     map[string]decimal.Decimal
	reserved map[string]decimal.Decimal
	funds    Funds // all active allocations, any machine
	// usedUpEnds are the ends after t of the used-up allocations the pool
	// counts: each changes the split when it comes.
	usedUpEnds []time.Time
}

// loadShares reads an account's state at time t; own's holds (a lien being
// placed again or extended) do not count. nodes are the account's if the
// caller has them (the plan cache carries them across changes that leave
// them as they were), nil to read them.
func loadShares(tx Tx, st *accountState, account string, t time.Time, own *Lien, nodes []Node) (*shareState, error) {
	if nodes == nil {
		var err error
		if nodes, err = tx.Subtree(account); err != nil {
			return nil, err
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no node named %s", ErrNotFound, Excerpt(account))
	}
	s := &shareState{nodes: nodes, pool: decimal.Zero, used: map[string]decimal.Decimal{}, reserved: map[string]decimal.Decimal{}}
	for _, n := range nodes {
		s.hfsOn = s.hfsOn || n.Policy.hasPolicy()
	}
	allocs, err := activeAndHeld(tx, st, account, t)
	if err != nil {
		return nil, err
	}
	active := map[uint64]bool{}
	for _, a := range allocs {
		active[a.ID] = true
		s.funds.Allocations = append(s.funds.Allocations, a)
		s.pool = s.pool.Add(a.Amount).Add(a.CreditLimit)
	}
	charged := st.Charged
	reserved, err := reservedByProject(tx, st, account, t, own)
	if err != nil {
		return nil, err
	}
	s.funds.Account, s.funds.Reserved = account, reserved.PerAllocation()
	for project, byAlloc := range charged {
		for id, v := range byAlloc {
			if active[id] {
				s.used[project] = s.used[project].Add(v)
				s.pool = s.pool.Add(v)
			}
		}
	}
	for project, byAlloc := range reserved {
		for id, v := range byAlloc {
			if active[id] {
				s.reserved[project] = s.reserved[project].Add(v)
			}
		}
	}
	for project, v := range st.usedUpAt(t) {
		s.used[project] = s.used[project].Add(v)
		s.pool = s.pool.Add(v)
	}
	for _, g := range st.UsedUp {
		if !g.End.IsZero() && g.End.After(t) {
			s.usedUpEnds = append(s.usedUpEnds, g.End)
		}
	}
	return s, nil
}

func rat(d decimal.Decimal) *big.Rat { return d.Rat() }

// ratOrNil is rat, or nil for zero: what hfs.Node's optional amounts take
// for none, without a big.Rat made for each of a large tree's nodes.
func ratOrNil(d decimal.Decimal) *big.Rat {
	if d.IsZero() {
		return nil
	}
	return d.Rat()
}

// plan builds (once) the HFS plan for the current demands.
func (s *shareState) plan(precision int32) (*hfs.Plan, error) {
	if s.cached != nil {
		return s.cached, nil
	}
	byName := map[string]*hfs.Node{}
	var root *hfs.Node
	for _, n := range s.nodes {
		hn := &hfs.Node{Name: n.Name, Demand: rat(s.used[n.Name].Add(s.reserved[n.Name])), AcceptSurplus: n.Policy.AcceptSurplus,
			NonShared: ratOrNil(n.Policy.NonShared), Ownership: ratOrNil(n.Policy.Ownership), GroupNonShared: ratOrNil(n.Policy.GroupNonShared),
			Priority: n.Policy.Priority}
		if n.Policy.Limit != nil {
			hn.Limit = rat(*n.Policy.Limit)
		}
		switch n.Policy.QuotaKind {
		case QuotaStatic:
			hn.Quota = hfs.Quota{Kind: hfs.Static, Value: ratOrNil(n.Policy.Quota)}
		case QuotaShares:
			hn.Quota = hfs.Quota{Kind: hfs.Shares, Value: ratOrNil(n.Policy.Quota)}
		case QuotaDynamic:
			hn.Quota = hfs.Quota{Kind: hfs.Dynamic, Value: ratOrNil(n.Policy.Quota)}
		}
		byName[n.Name] = hn
		if parent := byName[ParentOf(n.Name)]; parent != nil {
			parent.Children = append(parent.Children, hn)
		} else {
			root = hn // the account: Subtree lists it first
		}
	}
	unit := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil))
	p, err := hfs.NewPlan(rat(s.pool), unit, root)
	if err != nil {
		return nil, fmt.Errorf("%w: HFS tree of %s: %v", ErrInvalid, s.nodes[0].Name, err)
	}
	s.cached = p
	return p, nil
}

// available is what a new lien on node may take under HFS (the account's
// Available over all machines when HFS is off).
func (s *shareState) available(node string, precision int32) (decimal.Decimal, error) {
	if !s.hfsOn {
		return s.funds.Available(), nil
	}
	p, err := s.plan(precision)
	if err != nil {
		return decimal.Zero, err
	}
	a, err := p.Available(node)
	if err != nil {
		return decimal.Zero, fmt.Errorf("HFS availability of %s: %w", node, err)
	}
	return decimal.NewFromBigRat(a, precision), nil
}

// ShareAvailable is what a new lien on project may take under HFS now,
// leaving out own (the job's previous lien); limited is false when the
// account is not split. The caller also checks that the machine's
// allocations can hold the lien (Funds).
func (w *Writer) ShareAvailable(project string, own *Lien, precision int32) (available decimal.Decimal, limited bool, err error) {
	st, err := w.account(AccountOf(project))
	if err != nil {
		return decimal.Zero, false, err
	}
	return shareAvailable(w.tx, w.plans, st, project, own, w.now, precision)
}

// shareAvailable answers from the plan cache when it can (not for a lien
// being placed again: its own demand would have to come out) and keeps what
// it works out otherwise.
func shareAvailable(tx Tx, plans *planCache, st *accountState, project string, own *Lien, now time.Time, precision int32) (decimal.Decimal, bool, error) {
	account := AccountOf(project)
	cacheable := plans != nil && own == nil
	version := st.Version
	if cacheable {
		a, on, ok, err := plans.available(account, version, project, now)
		if err != nil || ok {
			return a, on, err
		}
	}
	var nodes []Node
	if cacheable {
		nodes = plans.nodes(account, version, now)
	}
	s, err := loadShares(tx, st, account, now, own, nodes)
	if err != nil {
		return decimal.Zero, false, err
	}
	if cacheable {
		if err := plans.store(tx, account, version, s, now, precision); err != nil {
			return decimal.Zero, false, err
		}
	}
	if !s.hfsOn {
		return decimal.Zero, false, nil
	}
	a, err := s.available(project, precision)
	return a, true, err
}

// Available is what a new lien on project may take now, across the
// account's machines: its HFS availability, capped by the account's funds
// (Gold's Available when HFS is off). A lien for one machine may find less,
// on the allocations usable there.
func (l *Ledger) Available(ctx context.Context, project string) (decimal.Decimal, error) {
	var a decimal.Decimal
	err := l.store.View(ctx, func(tx Tx) error {
		if _, err := GetNode(tx, project); err != nil {
			return err
		}
		now := l.Now()
		account := AccountOf(project)
		st, err := readAccountState(tx, account)
		if err != nil {
			return err
		}
		allocs, err := activeAndHeld(tx, st, account, now)
		if err != nil {
			return err
		}
		f := Funds{Account: account, Allocations: allocs}
		if f.Reserved, err = reservedAt(tx, st, account, now, nil); err != nil {
			return err
		}
		a = f.Available()
		share, limited, err := shareAvailable(tx, l.plans, st, project, nil, now, l.settings.Precision)
		if limited {
			a = decimal.Min(a, share)
		}
		return err
	})
	return a, err
}

// Shares reports an account's HFS split now, or with the quotas proposed
// in with: a dry run of the split, which changes and journals nothing, so
// that a manager sees what a new quota does before setting it. Each
// proposal is checked as ModifyNode checks a quota set alone, and refused
// in its words.
func (l *Ledger) Shares(ctx context.Context, account string, with ...QuotaChange) (AccountShares, error) {
	var out AccountShares
	err := l.store.View(ctx, func(tx Tx) error {
		now := l.Now()
		st, err := readAccountState(tx, AccountOf(account))
		if err != nil {
			return err
		}
		nodes, err := proposedTree(tx, st, account, now, with, l.settings.Precision)
		if err != nil {
			return err
		}
		s, err := loadShares(tx, st, account, now, nil, nodes)
		if err != nil {
			return err
		}
		if !s.nodes[0].IsAccount() {
			return fmt.Errorf("%w: %s is a project; HFS splits accounts", ErrInvalid, account)
		}
		p := l.settings.Precision
		out = AccountShares{Account: account, At: now, HFS: s.hfsOn, Pool: s.pool, Leftover: decimal.Zero}
		var result *hfs.Result
		var plan *hfs.Plan
		if s.hfsOn {
			if plan, err = s.plan(p); err != nil {
				return err
			}
			result = plan.Allocate()
			out.Leftover = decimal.NewFromBigRat(result.Leftover(), p)
		}
		inUse := s.inUse()
		for _, n := range s.nodes {
			ns := NodeShare{Name: n.Name, Policy: n.Policy, Quota: decimal.Zero, Allocated: decimal.Zero,
				Used: s.used[n.Name], Reserved: s.reserved[n.Name], InUse: inUse[n.Name],
				Owned: decimal.Zero, Reserve: decimal.Zero, Shortfall: decimal.Zero}
			if result != nil {
				ns.Quota = decimal.NewFromBigRat(result.Quota(n.Name), p)
				ns.Allocated = decimal.NewFromBigRat(result.Allocated(n.Name), p)
				ns.Owned = decimal.NewFromBigRat(result.Owned(n.Name), p)
				ns.Reserve = decimal.NewFromBigRat(result.Reserved(n.Name), p)
			}
			if ns.Available, err = s.available(n.Name, p); err != nil {
				return err
			}
			ns.LienAvailable = decimal.Min(ns.Available, s.funds.Available())
			out.Owners = out.Owners || !n.Policy.Ownership.IsZero() || !n.Policy.GroupNonShared.IsZero() || n.Policy.Priority != 0
			out.Nodes = append(out.Nodes, ns)
		}
		out.rollUp()
		if out.Owners && result != nil {
			out.describeOwners(s, plan.Rank())
		}
		if result != nil {
			out.warnNonShared(result, p)
		}
		return nil
	})
	return out, err
}

// proposedTree is the account's nodes with the quotas proposed set (nil
// for none proposed: loadShares reads them).
func proposedTree(tx Tx, st *accountState, account string, now time.Time, with []QuotaChange, precision int32) ([]Node, error) {
	if len(with) == 0 {
		return nil, nil
	}
	nodes, err := tx.Subtree(account)
	if err != nil {
		return nil, err
	}
	nodes = slices.Clone(nodes) // the store's may be shared
	for _, c := range with {
		i := slices.IndexFunc(nodes, func(n Node) bool { return n.Name == c.Node })
		if i < 0 {
			return nil, fmt.Errorf("%w: no node named %s in %s's tree", ErrNotFound, Excerpt(c.Node), account)
		}
		n := nodes[i]
		n.Policy.QuotaKind, n.Policy.Quota = c.Kind, c.Quota
		if err := checkPolicy(n.Name, n.Policy); err != nil {
			return nil, err
		}
		if err := checkOwnership(tx, n); err != nil {
			return nil, err
		}
		if err := nonSharedFits(tx, st, now, n, precision); err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	return nodes, nil
}

// Groups reports whether a project of the account has sub-projects: then
// the subtree figures say more than the nodes' own, and are shown.
func (s AccountShares) Groups() bool {
	for _, n := range s.Nodes {
		if depth := strings.Count(n.Name, "."); depth > 1 {
			return true
		}
	}
	return false
}

// rollUp sets each node's subtree figures. Nodes are in name order, so a
// node's descendants follow it, and in reverse a node's children come
// before it.
func (s *AccountShares) rollUp() {
	index := make(map[string]int, len(s.Nodes))
	for i, n := range s.Nodes {
		index[n.Name] = i
	}
	children := make([]decimal.Decimal, len(s.Nodes))
	for i := len(s.Nodes) - 1; i >= 0; i-- {
		n := &s.Nodes[i]
		n.SubtreeUsed = n.SubtreeUsed.Add(n.Used)
		n.SubtreeReserved = n.SubtreeReserved.Add(n.Reserved)
		n.SubtreeQuota = decimal.Max(n.Quota, children[i])
		if j, ok := index[ParentOf(n.Name)]; ok {
			p := &s.Nodes[j]
			p.SubtreeUsed = p.SubtreeUsed.Add(n.SubtreeUsed)
			p.SubtreeReserved = p.SubtreeReserved.Add(n.SubtreeReserved)
			children[j] = children[j].Add(n.SubtreeQuota)
		}
	}
}

// inUse is each node's subtree demand: its own and its descendants'
// charges and liens.
func (s *shareState) inUse() map[string]decimal.Decimal {
	out := map[string]decimal.Decimal{}
	for _, n := range s.nodes {
		d := s.used[n.Name].Add(s.reserved[n.Name])
		for a := n.Name; a != ""; a = ParentOf(a) {
			out[a] = out[a].Add(d)
		}
	}
	return out
}

// describeOwners fills in what the account's owners come to: each node's
// shortfall and fed state, the highest- and lowest-ranked leaves (rank:
// hfs.Plan.Rank's list), and warnings for what the pool does not cover.
func (a *AccountShares) describeOwners(s *shareState, rank []string) {
	a.Preemption = s.nodes[0].Policy.Preemption.String()
	set, carved := decimal.Zero, decimal.Zero
	var short []string
	for k := range a.Nodes {
		n := &a.Nodes[k]
		own := n.Owned
		for _, c := range a.Nodes {
			if ParentOf(c.Name) == n.Name {
				own = own.Sub(c.Owned)
			}
		}
		want := n.Policy.Ownership.Add(n.Policy.GroupNonShared)
		set, carved = set.Add(want), carved.Add(own).Add(n.Reserve)
		if n.Shortfall = want.Sub(own).Sub(n.Reserve); n.Shortfall.IsPositive() {
			short = append(short, fmt.Sprintf("%s %s of %s", n.Name, own.Add(n.Reserve), want))
		}
		switch c := n.InUse.Cmp(n.Owned); {
		case k == 0: // the account takes the pool: nothing to be fed by
		case c < 0:
			n.Fed = "underfed"
		case c > 0:
			n.Fed = "overfed"
		}
	}
	leaves := slices.DeleteFunc(slices.Clone(rank), func(name string) bool {
		return slices.ContainsFunc(s.nodes, func(c Node) bool { return ParentOf(c.Name) == name })
	})
	if len(leaves) > 0 {
		a.Highest, a.Lowest = leaves[0], leaves[len(leaves)-1]
	}
	if len(short) > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("ownership and group non-shared set in %s add up to %s; the pool (%s) and the limits cover %s: short %s",
			a.Account, set, a.Pool, carved, strings.Join(short, ", ")))
	}
}

// warnNonShared names the nodes whose non_shared is above their own quota,
// which bounds what it holds (hfs.ShortNonShared): where ownership and
// group non-shared take the pool first, the projects below are left short.
func (a *AccountShares) warnNonShared(result *hfs.Result, precision int32) {
	var short []string
	for _, s := range result.Shortfalls() {
		if s.Kind == hfs.ShortNonShared {
			short = append(short, fmt.Sprintf("%s %s of %s", s.Name, decimal.NewFromBigRat(s.Got, precision), decimal.NewFromBigRat(s.Set, precision)))
		}
	}
	if len(short) > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("non_shared set in %s is above the own quota, which bounds what it holds: short %s",
			a.Account, strings.Join(short, ", ")))
	}
}
