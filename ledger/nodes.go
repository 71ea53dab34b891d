package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// NodeSpec is a node to create.
type NodeSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	AnyUser     bool   `json:"any_user,omitempty"`
	Policy      Policy `json:"policy"`
	// NoQuota makes a project without a quota in an account split by HFS
	// on purpose (it gets only the surplus it accepts); without it such a
	// project is refused (see CreateNode).
	NoQuota bool `json:"no_quota,omitempty"`
	// Home homes the project at a peer bank (Node.Home).
	Home *Home `json:"home,omitempty"`
}

// NodeChange lists what to modify in a node; nil fields stay as they are.
type NodeChange struct {
	Description *string `json:"description,omitempty"`
	AnyUser     *bool   `json:"any_user,omitempty"`
	Policy      *Policy `json:"policy,omitempty"`
}

// CreateNode creates an account (a name without dots) or a project under an
// existing active parent. In an account split by HFS (or that the new
// project's own policy would split), a project needs a quota, or NoQuota.
func (l *Ledger) CreateNode(ctx context.Context, req Request, spec NodeSpec) (Node, error) {
	if err := CheckNodeName(spec.Name); err != nil {
		return Node{}, err
	}
	if err := checkPolicy(spec.Name, spec.Policy); err != nil {
		return Node{}, err
	}
	if spec.NoQuota && spec.Policy.QuotaKind != QuotaNone {
		return Node{}, fmt.Errorf("%w: create %s: no_quota and a %s quota exclude each other", ErrInvalid, spec.Name, spec.Policy.QuotaKind)
	}
	return Mutate(ctx, l, req, KindNodeCreate, spec, func(w *Writer) (Node, error) {
		if _, ok, err := w.tx.Node(spec.Name); err != nil {
			return Node{}, err
		} else if ok {
			return Node{}, fmt.Errorf("%w: node %q", ErrExists, spec.Name)
		}
		if parent := ParentOf(spec.Name); parent != "" {
			if _, err := ActiveNode(w.tx, parent); err != nil {
				return Node{}, fmt.Errorf("create %s: parent: %w", spec.Name, err)
			}
			if err := checkNewQuota(w.tx, spec); err != nil {
				return Node{}, err
			}
		}
		if spec.Home != nil {
			if err := checkHome(w.tx, spec.Name, *spec.Home); err != nil {
				return Node{}, err
			}
		}
		n := Node{Name: spec.Name, Description: spec.Description, Active: true, AnyUser: spec.AnyUser, Policy: spec.Policy, Created: w.now, Home: spec.Home}
		if n.IsAccount() {
			var err error
			if n.Created, err = newAccountTime(w.tx, w.now); err != nil {
				return Node{}, err
			}
		}
		if err := checkOwnership(w.tx, n); err != nil {
			return Node{}, err
		}
		if err := checkNonShared(w, n, l.settings.Precision); err != nil {
			return Node{}, err
		}
		return n, putNode(w, KindNodeCreate, n)
	})
}

// newAccountTime is when an account made now is recorded as made: now, or
// just after the newest account if the clock has gone back to or before
// it (a clock stepped back). Accounts are then made in the order of their
// times, which is what numbers them for Gold's clients (NumberAccounts): a
// new account never takes an older one's number.
func newAccountTime(tx Tx, now time.Time) (time.Time, error) {
	nodes, err := tx.Nodes()
	if err != nil {
		return time.Time{}, err
	}
	for _, n := range nodes {
		if n.IsAccount() && !n.Created.Before(now) {
			now = n.Created.Add(time.Microsecond)
		}
	}
	return now, nil
}

// checkNewQuota refuses a new project without a quota in an account that
// HFS splits, unless spec.NoQuota says it is meant: HFS would give it
// nothing of its own, and its jobs would be refused however much the
// account holds, with nothing said when it was made.
func checkNewQuota(tx Tx, spec NodeSpec) error {
	if spec.Policy.QuotaKind != QuotaNone || spec.NoQuota || spec.Policy.Ownership.IsPositive() || spec.Policy.GroupNonShared.IsPositive() {
		return nil // a project that owns or reserves credits has some of its own
	}
	account := AccountOf(spec.Name)
	nodes, err := tx.Subtree(account)
	if err != nil {
		return err
	}
	if !spec.Policy.hasPolicy() && !slices.ContainsFunc(nodes, func(n Node) bool { return n.Policy.hasPolicy() }) {
		return nil
	}
	return fmt.Errorf("%w: create %s: %s splits its credits among its projects by HFS, and a project without a quota gets none of its own "+
		"(its jobs would be refused however much %s holds): give it a quota (--quota shares:1, static:CREDITS or dynamic:FRACTION), "+
		"or make it without one on purpose (--quota none; no_quota in the API)", ErrInvalid, spec.Name, account, account)
}

// ModifyNode changes a node's description, any-user flag or HFS policy. A
// deactivated node may be modified too: its HFS quota keeps counting until
// it is set to none.
func (l *Ledger) ModifyNode(ctx context.Context, req Request, name string, change NodeChange) (Node, error) {
	if change.Policy != nil {
		if err := checkPolicy(name, *change.Policy); err != nil {
			return Node{}, err
		}
	}
	return Mutate(ctx, l, req, KindNodeModify, struct {
		Name   string     `json:"name"`
		Change NodeChange `json:"change"`
	}{name, change}, func(w *Writer) (Node, error) {
		n, err := GetNode(w.tx, name)
		if err != nil {
			return Node{}, err
		}
		if change.Description != nil {
			n.Description = *change.Description
		}
		if change.AnyUser != nil {
			n.AnyUser = *change.AnyUser
		}
		if change.Policy != nil {
			n.Policy = *change.Policy
			if err := checkOwnership(w.tx, n); err != nil {
				return Node{}, err
			}
			if err := checkNonShared(w, n, l.settings.Precision); err != nil {
				return Node{}, err
			}
		}
		return n, putNode(w, KindNodeModify, n)
	})
}

// DeactivateNode stops a node and its subtree from taking part in any
// further change. Its history, balances and statements stay readable.
func (l *Ledger) DeactivateNode(ctx context.Context, req Request, name string) (Node, error) {
	return Mutate(ctx, l, req, KindNodeDeactivate, name, func(w *Writer) (Node, error) {
		n, err := ActiveNode(w.tx, name)
		if err != nil {
			return Node{}, err
		}
		n.Active = false
		return n, putNode(w, KindNodeDeactivate, n)
	})
}

// ReactivateNode makes a deactivated node usable again, with the nodes
// under it that were not deactivated on their own. A node inside a
// deactivated one is refused until that one is reactivated: it would stay
// unusable. Reactivating an active node changes nothing and journals
// nothing (asking for what is so already).
func (l *Ledger) ReactivateNode(ctx context.Context, req Request, name string) (Node, error) {
	if err := CheckNodeName(name); err != nil {
		return Node{}, err
	}
	return Mutate(ctx, l, req, KindNodeReactivate, name, func(w *Writer) (Node, error) {
		n, err := GetNode(w.tx, name)
		if err != nil {
			return Node{}, err
		}
		if parent := ParentOf(name); parent != "" {
			if _, err := ActiveNode(w.tx, parent); err != nil {
				return Node{}, fmt.Errorf("reactivate %s: parent: %w (reactivate it first)", name, err)
			}
		}
		if n.Active {
			return n, nil
		}
		n.Active = true
		return n, putNode(w, KindNodeReactivate, n)
	})
}

func putNode(w *Writer, kind Kind, n Node) error {
	if err := w.tx.PutNode(n); err != nil {
		return err
	}
	_, err := w.Append(Entry{Kind: kind, Node: n.Name, NodeState: &n})
	return err
}

// Node returns one node.
func (l *Ledger) Node(ctx context.Context, name string) (Node, error) {
	var n Node
	err := l.store.View(ctx, func(tx Tx) (err error) {
		n, err = GetNode(tx, name)
		return err
	})
	return n, err
}

// Nodes lists the nodes under prefix (a node and its subtree; "" for all),
// in name order.
func (l *Ledger) Nodes(ctx context.Context, prefix string) ([]Node, error) {
	var out []Node
	err := l.store.View(ctx, func(tx Tx) error {
		all, err := tx.Nodes()
		if err != nil {
			return err
		}
		for _, n := range all {
			if prefix == "" || InSubtree(n.Name, prefix) {
				out = append(out, n)
			}
		}
		return nil
	})
	return out, err
}

// InSubtree reports whether name is root or one of its descendants.
func InSubtree(name, root string) bool {
	return name == root || strings.HasPrefix(name, root+".")
}

// GetNode returns a node, active or not.
func GetNode(tx Tx, name string) (Node, error) {
	n, ok, err := tx.Node(name)
	if err != nil {
		return Node{}, err
	}
	if !ok {
		return Node{}, fmt.Errorf("%w: no node named %s", ErrNotFound, Excerpt(name))
	}
	return n, nil
}

// ActiveNode returns a node that, with all its ancestors, is active.
func ActiveNode(tx Tx, name string) (Node, error) {
	n, err := GetNode(tx, name)
	if err != nil {
		return Node{}, err
	}
	for cur := n; ; {
		if !cur.Active {
			if cur.Name == name {
				return Node{}, fmt.Errorf("%w: node %q is deactivated", ErrInactive, name)
			}
			return Node{}, fmt.Errorf("%w: node %q is inside deactivated %q", ErrInactive, name, cur.Name)
		}
		parent := ParentOf(cur.Name)
		if parent == "" {
			return n, nil
		}
		if cur, err = GetNode(tx, parent); err != nil {
			return Node{}, err
		}
	}
}

// checkPolicy refuses a policy that HFS could not use. An account is the
// root of its tree and takes the whole pool, so it carries no quota.
func checkPolicy(name string, p Policy) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: policy of %s: %s", ErrInvalid, name, fmt.Sprintf(format, args...))
	}
	switch p.QuotaKind {
	case QuotaNone:
		if !p.Quota.IsZero() {
			return bad("a quota value needs a kind (static, dynamic or shares)")
		}
	case QuotaStatic, QuotaShares:
		if p.Quota.IsNegative() {
			return bad("%s quota %s is negative", p.QuotaKind, p.Quota)
		}
	case QuotaDynamic:
		if p.Quota.IsNegative() || p.Quota.GreaterThan(decimal.NewFromInt(1)) {
			return bad("dynamic quota %s is not a fraction between 0 and 1", p.Quota)
		}
	default:
		return bad("unknown quota kind %s (static, dynamic or shares)", Excerpt(string(p.QuotaKind)))
	}
	if !strings.Contains(name, ".") && p.QuotaKind != QuotaNone {
		return bad("an account takes its whole pool; quotas are for projects")
	}
	if p.Limit != nil && p.Limit.IsNegative() {
		return bad("limit %s is negative", p.Limit)
	}
	if p.NonShared.IsNegative() {
		return bad("non_shared %s is negative", p.NonShared)
	}
	if p.QuotaKind == QuotaStatic && p.NonShared.GreaterThan(p.Quota) {
		return bad("non_shared %s is above the static quota %s", p.NonShared, p.Quota)
	}
	if p.Ownership.IsNegative() {
		return bad("ownership %s is negative", p.Ownership)
	}
	if p.GroupNonShared.IsNegative() {
		return bad("group_non_shared %s is negative", p.GroupNonShared)
	}
	if p.Priority < 0 || p.Priority > MaxPriority {
		return bad("priority %d is outside 0..%d", p.Priority, MaxPriority)
	}
	isAccount := !strings.Contains(name, ".")
	if isAccount && (!p.Ownership.IsZero() || !p.GroupNonShared.IsZero() || p.Priority != 0) {
		return bad("an account takes its whole pool; ownership, group_non_shared and priority are for projects")
	}
	switch p.Preemption {
	case "", PreemptTopDown, PreemptBottomUp:
	default:
		return bad("unknown preemption order %s (top-down or bottom-up)", Excerpt(string(p.Preemption)))
	}
	if !isAccount && p.Preemption != "" {
		return bad("the preemption order is the account's, not a project's")
	}
	return nil
}

// checkOwnership refuses what the tree makes of a node's new or changed
// policy when it cannot hold: ownership on a project with sub-projects (a
// group owns what its children own), a project made under one that owns
// credits, and ownership adding up above a limit in the subtree or above
// it (the subtree could never use what it owns).
func checkOwnership(tx Tx, n Node) error {
	nodes, err := tx.Subtree(n.Account())
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(nodes, func(m Node) bool { return m.Name == n.Name }); i >= 0 {
		nodes[i] = n
	} else {
		nodes = append(nodes, n)
		slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	}
	owned := map[string]decimal.Decimal{}
	for _, m := range nodes {
		if m.Policy.Ownership.IsZero() {
			continue
		}
		if child := slices.IndexFunc(nodes, func(c Node) bool { return ParentOf(c.Name) == m.Name }); child >= 0 {
			if m.Name == n.Name {
				return fmt.Errorf("%w: policy of %s: ownership is set on projects without sub-projects, and %s has %s: set it on them (a group owns what its projects own)",
					ErrInvalid, m.Name, m.Name, nodes[child].Name)
			}
			return fmt.Errorf("%w: create %s: %s owns %s credits, and ownership is for projects without sub-projects: set its ownership to 0 first and give it to the sub-projects",
				ErrInvalid, n.Name, m.Name, m.Policy.Ownership)
		}
		for a := m.Name; a != ""; a = ParentOf(a) {
			owned[a] = owned[a].Add(m.Policy.Ownership)
		}
	}
	for _, m := range nodes {
		if l := m.Policy.Limit; l != nil && owned[m.Name].GreaterThan(*l) {
			return fmt.Errorf("%w: policy of %s: the ownership in %s adds up to %s, above its limit %s: it could never use what it owns",
				ErrInvalid, n.Name, m.Name, owned[m.Name], l)
		}
	}
	return nil
}

// checkNonShared refuses a non_shared part above the node's own quota as
// HFS works it out now with the node's new policy (a static quota is
// checked without the tree, in checkPolicy), but for a project without
// sub-projects whose quota the carve squeezes: where ownership and group
// non-shared add up to more than the pool, they are satisfied level by
// level from the top and the projects below are left short (LSF's
// non-shared configuration, satisfied first). Such a project's non_shared
// may be above its quota, up to the quota it would have were nothing
// owned or reserved in the account; it then holds at most its own quota,
// and the account's split warns of it by name.
func checkNonShared(w *Writer, n Node, precision int32) error {
	if !n.Policy.nonSharedOnTree() {
		return nil
	}
	st, err := w.account(n.Account())
	if err != nil {
		return err
	}
	return nonSharedFits(w.tx, st, w.now, n, precision)
}

// nonSharedOnTree reports whether the policy's non_shared part is checked
// against the tree: it is set, and the quota is not static (checkPolicy
// checks it against a static one).
func (p Policy) nonSharedOnTree() bool { return p.NonShared.IsPositive() && p.QuotaKind != QuotaStatic }

// nonSharedFits is checkNonShared's check on the account's state st at
// time now (Shares' dry run makes it too, outside a change).
func nonSharedFits(tx Tx, st *accountState, now time.Time, n Node, precision int32) error {
	if !n.Policy.nonSharedOnTree() {
		return nil
	}
	s, err := loadShares(tx, st, n.Account(), now, nil, nil)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(s.nodes, func(m Node) bool { return m.Name == n.Name })
	if i < 0 {
		s.nodes = append(s.nodes, n)
		slices.SortFunc(s.nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	} else {
		s.nodes[i] = n
	}
	quota, err := s.quotaOf(n.Name, precision)
	if err != nil || !n.Policy.NonShared.GreaterThan(quota) {
		return err
	}
	refused := fmt.Errorf("%w: policy of %s: non_shared %s is above its quota, %s with the account's pool now", ErrInvalid, n.Name, n.Policy.NonShared, quota)
	if slices.ContainsFunc(s.nodes, func(m Node) bool { return ParentOf(m.Name) == n.Name }) {
		return refused
	}
	// The quota it would have with no carve at all.
	uncarved := &shareState{nodes: slices.Clone(s.nodes), pool: s.pool, used: s.used, reserved: s.reserved, funds: s.funds}
	for k := range uncarved.nodes {
		uncarved.nodes[k].Policy.Ownership, uncarved.nodes[k].Policy.GroupNonShared = decimal.Zero, decimal.Zero
	}
	whole, err := uncarved.quotaOf(n.Name, precision)
	if err != nil {
		return err
	}
	if n.Policy.NonShared.GreaterThan(whole) {
		return refused
	}
	return nil
}

// quotaOf is a node's own quota in the state's split.
func (s *shareState) quotaOf(name string, precision int32) (decimal.Decimal, error) {
	plan, err := s.plan(precision)
	if err != nil {
		return decimal.Zero, err
	}
	return decimal.NewFromBigRat(plan.Allocate().Quota(name), precision), nil
}

// AccountNumbers are the accounts' numbers, as Gold's clients name
// accounts (gdeposit -a 1): NumberAccounts of all the nodes.
func (l *Ledger) AccountNumbers(ctx context.Context) (map[string]uint64, error) {
	nodes, err := l.Nodes(ctx, "")
	if err != nil {
		return nil, err
	}
	return NumberAccounts(nodes), nil
}

// NumberAccounts numbers the accounts among nodes 1, 2, ... in the order
// they were made: by creation time, then name. Nothing deletes an account
// and a new one is made after the others, so an account keeps its number
// without one being stored (unless the bank's clock is set back between
// the making of two accounts).
func NumberAccounts(nodes []Node) map[string]uint64 {
	var accounts []Node
	for _, n := range nodes {
		if n.IsAccount() {
			accounts = append(accounts, n)
		}
	}
	slices.SortFunc(accounts, func(a, b Node) int { return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name)) })
	numbers := make(map[string]uint64, len(accounts))
	for i, n := range accounts {
		numbers[n.Name] = uint64(i + 1)
	}
	return numbers
}
