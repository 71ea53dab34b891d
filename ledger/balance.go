package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/shopspring/decimal"
)

// Balance is Gold's view of a set of allocations at one time.
type Balance struct {
	Amount      decimal.Decimal `json:"amount"`
	Reserved    decimal.Decimal `json:"reserved"`
	Balance     decimal.Decimal `json:"balance"`
	CreditLimit decimal.Decimal `json:"credit_limit"`
	Available   decimal.Decimal `json:"available"`
}

// NodeBalance is the balance of one node, with the allocations behind it.
type NodeBalance struct {
	Node string    `json:"node"`
	At   time.Time `json:"at"`
	// Seq is the last journal entry the figures include.
	Seq uint64 `json:"seq"`
	Balance
	// AccountAvailable is set, now, for a project whose HFS share lets a
	// lien take less than its account has: Available is then what a lien
	// on the project would get (its share), and this the account's figure.
	AccountAvailable *decimal.Decimal `json:"account_available,omitempty"`
	// Allocations are, in id order, the account's allocations that
	// existed at At and had not ended by then: those active, and the first
	// UpcomingListed of those yet to start, by start (every one in
	// BalanceWithUpcoming); only the active ones count in Balance. Of the
	// active ones used up (Allocation.UsedUp: nothing left to give, and
	// nothing in Balance unless a lien holds some of it) a balance now
	// lists those liens hold and the first UsedUpListed to end (every one
	// in BalanceWithUpcoming). Those that had ended are left out, however
	// many an account gathers: statements, the journal and a balance at a
	// time before their end show them.
	Allocations []AllocationStatus `json:"allocations"`
	// UpcomingLeftOut says that more allocations start later than
	// Allocations lists: what a balance shows coming is bounded, however
	// many an account has preset.
	UpcomingLeftOut bool `json:"upcoming_left_out,omitempty"`
	// UsedUpLeftOut says that more allocations are used up than
	// Allocations lists, however many an account has used up.
	UsedUpLeftOut bool `json:"used_up_left_out,omitempty"`
}

// UsedUpListed is how many of the allocations used up a balance lists:
// those that end first.
const UsedUpListed = 10

// UpcomingListed is how many of the allocations yet to start a balance
// lists: those that start next.
const UpcomingListed = 10

// AllocationStatus is an allocation as it stood at a time, with what liens
// held on it.
type AllocationStatus struct {
	Allocation
	Reserved decimal.Decimal `json:"reserved"`
	Active   bool            `json:"active"`
}

// sumBalances totals the allocations given (the caller picks the active
// ones) with what liens hold on them.
func sumBalances(allocs []Allocation, reserved map[uint64]decimal.Decimal) Balance {
	b := Balance{Amount: decimal.Zero, Reserved: decimal.Zero, CreditLimit: decimal.Zero}
	for _, a := range allocs {
		b.Amount = b.Amount.Add(a.Amount)
		b.Reserved = b.Reserved.Add(reserved[a.ID])
		b.CreditLimit = b.CreditLimit.Add(a.CreditLimit)
	}
	b.Balance = b.Amount.Sub(b.Reserved)
	b.Available = b.Balance.Add(b.CreditLimit)
	return b
}

// BalanceAt returns a node's balance at time at (the zero time: now). For a
// time in the past the amounts are those after the last journal entry made
// at or before it. A project draws on its account's allocations, so it shows
// its account's figures, except that now its Available is what a lien on it
// would get: its HFS share, where that is less (AccountAvailable keeps the
// account's). Past shares are not kept, so a past Available is the
// account's. Of the allocations yet to start it lists the first
// UpcomingListed.
func (l *Ledger) BalanceAt(ctx context.Context, name string, at time.Time) (NodeBalance, error) {
	return l.balanceAt(ctx, name, at, UpcomingListed)
}

// BalanceWithUpcoming is BalanceAt listing every allocation yet to start
// or used up.
func (l *Ledger) BalanceWithUpcoming(ctx context.Context, name string, at time.Time) (NodeBalance, error) {
	return l.balanceAt(ctx, name, at, -1)
}

// balanceAt is BalanceAt listing the first upcoming allocations yet to
// start (every one if upcoming < 0).
func (l *Ledger) balanceAt(ctx context.Context, name string, at time.Time, upcoming int) (NodeBalance, error) {
	now := l.Now()
	past := !at.IsZero() && at.Before(now)
	if !past {
		at = now
	}
	var nb NodeBalance
	err := l.view(ctx, func(tx Tx) error {
		if _, err := GetNode(tx, name); err != nil {
			return err
		}
		var allocs []Allocation
		var leftOut, usedUpLeftOut bool
		var reserved map[uint64]decimal.Decimal
		var seq uint64
		var st *accountState
		var err error
		account := AccountOf(name)
		if past {
			if seq, err = seqAtOrBefore(tx, at); err != nil {
				return err
			}
			if allocs, err = liveAsOf(tx, account, seq, at); err != nil {
				return err
			}
			allocs, leftOut = firstUpcoming(allocs, at, upcoming)
			reserved, err = reservedAsOf(tx, account, seq, at)
		} else {
			var head JournalHead
			if head, err = tx.Head(); err != nil {
				return err
			}
			seq = head.Seq
			if st, err = readAccountState(tx, account); err != nil {
				return err
			}
			if allocs, leftOut, usedUpLeftOut, err = liveNow(tx, st, account, at, upcoming); err != nil {
				return err
			}
			reserved, err = reservedAt(tx, st, account, at, nil)
		}
		if err != nil {
			return err
		}
		nb = NodeBalance{Node: name, At: at, Seq: seq, Allocations: make([]AllocationStatus, len(allocs)), UpcomingLeftOut: leftOut, UsedUpLeftOut: usedUpLeftOut}
		for i, a := range allocs {
			nb.Allocations[i] = AllocationStatus{Allocation: a, Reserved: reserved[a.ID], Active: a.ActiveAt(at)}
		}
		nb.Balance = sumBalances(activeAt(allocs, at), reserved)
		if past || name == account {
			return nil
		}
		share, limited, err := shareAvailable(tx, l.plans, st, name, nil, at, l.settings.Precision)
		if limited && share.LessThan(nb.Available) {
			accountAvailable := nb.Available
			nb.Available, nb.AccountAvailable = share, &accountAvailable
		}
		return err
	})
	return nb, err
}

// liveNow is, in id order, the account's allocations active now (st's
// state: those not used up and the used-up ones liens hold,
// activeAndHeld), the first upcoming of those yet to start and, of the
// other used-up ones, the UsedUpListed that end first (every one of both
// if upcoming < 0), read by the indexes: as many as it lists, however
// many are preset or used up; leftOut and usedUpLeftOut say it left some
// out.
func liveNow(tx Tx, st *accountState, account string, now time.Time, upcoming int) (allocs []Allocation, leftOut, usedUpLeftOut bool, err error) {
	if allocs, err = activeAndHeld(tx, st, account, now); err != nil {
		return nil, false, false, err
	}
	// oneMore is how many to read to know whether more than listed are
	// there (every one: -1).
	oneMore := func(listed int) int { return listed + min(listed+1, 1) }
	later, err := tx.UpcomingAllocations(account, now, oneMore(upcoming))
	if err != nil {
		return nil, false, false, err
	}
	if leftOut = upcoming >= 0 && len(later) > upcoming; leftOut {
		later = later[:upcoming]
	}
	usedUpN := -1
	if upcoming >= 0 {
		usedUpN = UsedUpListed
	}
	usedUp, err := tx.UsedUpAllocations(account, now, oneMore(usedUpN))
	if err != nil {
		return nil, false, false, err
	}
	if usedUpLeftOut = usedUpN >= 0 && len(usedUp) > usedUpN; usedUpLeftOut {
		usedUp = firstToEnd(usedUp, usedUpN)
	}
	allocs = append(allocs, later...)
	for _, a := range usedUp {
		if !slices.ContainsFunc(allocs, func(b Allocation) bool { return b.ID == a.ID }) {
			allocs = append(allocs, a)
		}
	}
	slices.SortFunc(allocs, func(a, b Allocation) int { return cmp.Compare(a.ID, b.ID) })
	return allocs, leftOut, usedUpLeftOut, nil
}

// firstToEnd is, of allocations, the n that end first (those with the
// same end by id).
func firstToEnd(allocs []Allocation, n int) []Allocation {
	allocs = slices.Clone(allocs)
	slices.SortFunc(allocs, func(a, b Allocation) int { return cmp.Or(compareEnds(a.End, b.End), cmp.Compare(a.ID, b.ID)) })
	return allocs[:n]
}

// firstUpcoming keeps, of allocations not ended by at (in id order), the
// active ones and the first upcoming of those yet to start, by start
// (every one if upcoming < 0); leftOut says it left some out.
func firstUpcoming(allocs []Allocation, at time.Time, upcoming int) (kept []Allocation, leftOut bool) {
	var later []Allocation
	for _, a := range allocs {
		if a.Start.After(at) {
			later = append(later, a)
		}
	}
	if upcoming < 0 || len(later) <= upcoming {
		return allocs, false
	}
	slices.SortFunc(later, func(a, b Allocation) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	cut := map[uint64]bool{}
	for _, a := range later[upcoming:] {
		cut[a.ID] = true
	}
	return slices.DeleteFunc(allocs, func(a Allocation) bool { return cut[a.ID] }), true
}

// Balances returns the balance of each account at time at, in name order,
// as BalanceAt.
func (l *Ledger) Balances(ctx context.Context, at time.Time) ([]NodeBalance, error) {
	return l.balances(ctx, at, UpcomingListed)
}

// BalancesWithUpcoming is Balances listing every allocation yet to start
// or used up.
func (l *Ledger) BalancesWithUpcoming(ctx context.Context, at time.Time) ([]NodeBalance, error) {
	return l.balances(ctx, at, -1)
}

func (l *Ledger) balances(ctx context.Context, at time.Time, upcoming int) ([]NodeBalance, error) {
	nodes, err := l.Nodes(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []NodeBalance
	for _, n := range nodes {
		if !n.IsAccount() {
			continue
		}
		b, err := l.balanceAt(ctx, n.Name, at, upcoming)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// currentAllocations is the account's allocations now, with the newest
// journal entry's number.
func currentAllocations(tx Tx, account string) (uint64, []Allocation, error) {
	head, err := tx.Head()
	if err != nil {
		return 0, nil, err
	}
	allocs, err := tx.AccountAllocations(account)
	return head.Seq, allocs, err
}

// allocationsAsOf is the account's allocations as they stood after entry seq.
func allocationsAsOf(tx Tx, account string, seq uint64) ([]Allocation, error) {
	last, current, err := currentAllocations(tx, account)
	if err != nil || last == seq {
		return current, err
	}
	var out []Allocation
	for _, a := range current {
		old, ok, err := tx.AllocationAsOf(a.ID, seq)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, old)
		}
	}
	return out, nil
}

// liveAsOf is the account's allocations that had not ended by at, as they
// stood after entry seq (made at or before at).
func liveAsOf(tx Tx, account string, seq uint64, at time.Time) ([]Allocation, error) {
	current, err := tx.LiveAllocations(account, at)
	if err != nil {
		return nil, err
	}
	var out []Allocation
	for _, a := range current {
		old, ok, err := tx.AllocationAsOf(a.ID, seq)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, old)
		}
	}
	return out, nil
}

// seqAtOrBefore is the last journal entry made at or before t (0 if none).
func seqAtOrBefore(tx Tx, t time.Time) (uint64, error) {
	if j, ok := tx.(*joinedTx); ok {
		return j.seqAtOrBefore(t)
	}
	return searchSeq(tx, 0, t)
}

// searchSeq is the last entry after entry after made at or before t
// (after if none). Entry times never decrease, so a binary search finds
// it.
func searchSeq(tx Tx, after uint64, t time.Time) (uint64, error) {
	head, err := tx.Head()
	if err != nil || head.Seq <= after {
		return after, err
	}
	var searchErr error
	n := sort.Search(int(head.Seq-after), func(i int) bool {
		seq := after + uint64(i) + 1
		e, ok, err := tx.Entry(seq)
		if err == nil && !ok {
			err = fmt.Errorf("%w: journal entry %d is missing", ErrCorrupt, seq)
		}
		if err != nil {
			searchErr = err
			return true
		}
		return e.Time.After(t)
	})
	return after + uint64(n), searchErr
}
