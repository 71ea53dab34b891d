package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/hfs"
)

// Settings are fixed when a bank is created.
type Settings struct {
	// Precision is the number of decimal places every stored amount is
	// rounded to (half-even).
	Precision int32 `json:"precision"`
}

// DefaultPrecision is the currency precision of a new bank.
const DefaultPrecision = 2

// QuotaKind says how a node's quota is expressed (DESIGN section 4).
type QuotaKind string

// The quota kinds. The empty kind means no quota, which HFS treats as
// dynamic 0.
const (
	QuotaNone    QuotaKind = ""
	QuotaStatic  QuotaKind = "static"
	QuotaDynamic QuotaKind = "dynamic"
	QuotaShares  QuotaKind = "shares"
)

// Policy is a node's HFS policy: how much of its parent's credits it is
// entitled to and how it lends and borrows surplus. The fields after
// NonShared came later: a record without them (an older bank's) has none
// of them set, and they are left out when not set, so that such a record
// reads and encodes as it was.
type Policy struct {
	QuotaKind     QuotaKind        `json:"quota_kind,omitempty"`
	Quota         decimal.Decimal  `json:"quota"`
	AcceptSurplus bool             `json:"accept_surplus,omitempty"`
	Limit         *decimal.Decimal `json:"limit,omitempty"`
	NonShared     decimal.Decimal  `json:"non_shared"`
	// Ownership is what a leaf project owns of its account's pool (LSF's
	// OWNERSHIP): carved out before quotas split the rest, lent to others
	// while the project does not use it, taken back by preemption. A
	// project with sub-projects owns what they own.
	Ownership decimal.Decimal `json:"ownership,omitzero"`
	// GroupNonShared is what a project reserves of the pool for its
	// subtree's own demand, never lent outside it (LSF's NON_SHARED of a
	// group).
	GroupNonShared decimal.Decimal `json:"group_non_shared,omitzero"`
	// Priority ranks a project among its siblings, 0..MaxPriority, higher
	// first: a preemption takes from the lowest first.
	Priority int `json:"priority,omitzero"`
	// Preemption is an account's preemption order (projects have none).
	Preemption PreemptionOrder `json:"preemption,omitzero"`
}

// QuotaText writes the policy's quota as the command line takes it
// ("dynamic:0.6", "fixed:1000"), or "none".
func (p Policy) QuotaText() string {
	if p.QuotaKind == QuotaNone {
		return "none"
	}
	return fmt.Sprintf("%s:%s", p.QuotaKind, p.Quota)
}

// MaxPriority is the highest priority a project may have; 0, the
// default, is the lowest.
const MaxPriority = hfs.MaxPriority

// PreemptionOrder says which overfed projects a preemption in an account
// takes from first.
type PreemptionOrder string

// The preemption orders; the empty one is TopDown.
const (
	// PreemptTopDown takes from the projects furthest away in the tree
	// first (LSF's default).
	PreemptTopDown PreemptionOrder = "top-down"
	// PreemptBottomUp takes from the closest first.
	PreemptBottomUp PreemptionOrder = "bottom-up"
)

// hfsOrder is the order as package hfs has it.
func (o PreemptionOrder) hfsOrder() hfs.PreemptOrder {
	if o == PreemptBottomUp {
		return hfs.BottomUp
	}
	return hfs.TopDown
}

// String is the order's name, top-down when none is set.
func (o PreemptionOrder) String() string {
	if o == "" {
		return string(PreemptTopDown)
	}
	return string(o)
}

// Node is an account (top level) or a project (below an account).
type Node struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Active      bool   `json:"active"`
	// AnyUser admits liens and charges by users who are not members.
	AnyUser bool      `json:"any_user,omitempty"`
	Policy  Policy    `json:"policy"`
	Created time.Time `json:"created"`
	// Home, on a project homed at a peer bank, is where its liens and
	// charges are forwarded (traceback); nil for a project of this bank.
	Home *Home `json:"home,omitempty"`
}

// RecordPeer is the kind of the records of the peer banks (package peer
// keeps them), by name: what a Home names.
const RecordPeer = "peer"

// Home is the project of a peer bank that a project of this bank is homed
// at: its liens, charges and releases are forwarded there, each amount in
// this bank's credits multiplied by RateRatio (the peer's credits for one
// of this bank's). While the peer cannot be reached, the peer's away
// policy says what this bank accepts (package peer); CreditLine, if set,
// is the project's own tighter limit: what may be pending with the peer
// for the home project, in the peer's credits (zero: refuse then).
type Home struct {
	Peer       string           `json:"peer"`
	Project    string           `json:"project"`
	RateRatio  decimal.Decimal  `json:"rate_ratio"`
	CreditLine *decimal.Decimal `json:"credit_line,omitempty"`
}

// String is PEER:PROJECT.
func (h Home) String() string { return h.Peer + ":" + h.Project }

// checkHome refuses a home that is not a peer's project at a positive
// ratio, or that names a peer this bank does not know.
func checkHome(tx Tx, name string, h Home) error {
	if !strings.Contains(name, ".") {
		return fmt.Errorf("%w: %s: only a project may be homed at a peer, not an account", ErrInvalid, name)
	}
	if h.Peer == "" || h.Project == "" {
		return fmt.Errorf("%w: %s: home %q: want PEER:PROJECT", ErrInvalid, name, h.String())
	}
	if !h.RateRatio.IsPositive() {
		return fmt.Errorf("%w: %s: home at %s needs a rate ratio above 0, not %s", ErrInvalid, name, h, h.RateRatio)
	}
	if h.CreditLine != nil && h.CreditLine.IsNegative() {
		return fmt.Errorf("%w: %s: credit line %s is below 0", ErrInvalid, name, h.CreditLine)
	}
	if _, ok, err := tx.Record(RecordPeer, h.Peer); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: %s: home at %s: no peer named %q (ingot peer add)", ErrNotFound, name, h, h.Peer)
	}
	return nil
}

// IsAccount reports whether the node is top level, and so holds allocations.
func (n Node) IsAccount() bool { return !strings.Contains(n.Name, ".") }

// Account is the name of the account the node belongs to.
func (n Node) Account() string { return AccountOf(n.Name) }

// AccountOf is the top-level component of a node name.
func AccountOf(name string) string {
	account, _, _ := strings.Cut(name, ".")
	return account
}

// ParentOf is the name of a node's parent, or "" for an account.
func ParentOf(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// Role is a user's role in a project.
type Role string

// The roles a membership can carry.
const (
	RoleMember  Role = "member"
	RoleManager Role = "manager"
)

// Membership makes a user a member or manager of a node and its subtree.
type Membership struct {
	Node string `json:"node"`
	Role Role   `json:"role"`
}

// User is a person who runs jobs.
type User struct {
	Name           string       `json:"name"`
	Description    string       `json:"description,omitempty"`
	DefaultProject string       `json:"default_project,omitempty"`
	Memberships    []Membership `json:"memberships,omitempty"`
	Active         bool         `json:"active"`
	Created        time.Time    `json:"created"`
}

// Shape is the size of one node of a machine; zero means not known. The PE
// and BLOCKED charge policies need it.
type Shape struct {
	Cores    int64 `json:"cores,omitempty"`
	MemoryMB int64 `json:"memory_mb,omitempty"`
	GPUs     int64 `json:"gpus,omitempty"`
}

// Machine is a cluster.
type Machine struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Shape       Shape     `json:"shape"`
	Active      bool      `json:"active"`
	Created     time.Time `json:"created"`
}

// AllocationTerms are what an allocation is apart from its amounts: set when
// it is created, changed only by an explicit modification.
type AllocationTerms struct {
	ID          uint64          `json:"id"`
	Account     string          `json:"account"`
	CreditLimit decimal.Decimal `json:"credit_limit"`
	Start       time.Time       `json:"start"`
	// End is exclusive; zero means the allocation never expires.
	End         time.Time `json:"end,omitzero"`
	Machine     string    `json:"machine,omitempty"`
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
}

// Allocation is an account's credit with a validity window.
type Allocation struct {
	AllocationTerms
	// Amount is what remains; it goes negative when a charge overdraws.
	Amount decimal.Decimal `json:"amount"`
	// Deposited is the sum of all deposits into the allocation.
	Deposited decimal.Decimal `json:"deposited"`
}

// UsedUp reports whether the allocation has nothing left to give: no
// amount and no credit limit. Such an allocation adds nothing to what an
// account can spend, so the hot paths do not read it (Tx.ActiveAllocations
// leaves it out); what charges took of it still counts in the account's
// HFS pool until it ends (accountState.UsedUp). A deposit, a refund or a
// credit limit raised makes it usable again.
func (a Allocation) UsedUp() bool { return a.Amount.IsZero() && a.CreditLimit.IsZero() }

// ActiveAt reports whether the allocation counts at time t.
func (a AllocationTerms) ActiveAt(t time.Time) bool {
	return !t.Before(a.Start) && (a.End.IsZero() || t.Before(a.End))
}
