package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/decimals"
)

// DepositSpec is a deposit: into a new allocation (Allocation = 0) with the
// given terms, or a top-up of an existing allocation of the account.
type DepositSpec struct {
	Account     string          `json:"account"`
	Amount      decimal.Decimal `json:"amount"`
	Allocation  uint64          `json:"allocation,omitempty"`
	CreditLimit decimal.Decimal `json:"credit_limit"`
	// Start defaults to now; a zero End means no end. A time given must
	// not be before EarliestTime, and the allocation must not have ended.
	Start       time.Time `json:"start,omitzero"`
	End         time.Time `json:"end,omitzero"`
	Machine     string    `json:"machine,omitempty"`
	Description string    `json:"description,omitempty"`
}

// WithdrawSpec takes credits out of an account (or one of its allocations).
type WithdrawSpec struct {
	Account     string          `json:"account"`
	Amount      decimal.Decimal `json:"amount"`
	Allocation  uint64          `json:"allocation,omitempty"`
	Description string          `json:"description,omitempty"`
}

// TransferSpec moves credits from one account to another. Each piece keeps
// the start, end and machine of the allocation it came from.
type TransferSpec struct {
	From        string          `json:"from"`
	To          string          `json:"to"`
	Amount      decimal.Decimal `json:"amount"`
	Allocation  uint64          `json:"allocation,omitempty"`
	Description string          `json:"description,omitempty"`
}

// Receipt is the answer to a change of amounts: the journal entry and the
// new state of every allocation it changed.
type Receipt struct {
	Seq         uint64       `json:"seq"`
	Time        time.Time    `json:"time"`
	Deltas      []Delta      `json:"deltas"`
	Allocations []Allocation `json:"allocations"`
}

// Deposit adds credits to an account.
func (l *Ledger) Deposit(ctx context.Context, req Request, spec DepositSpec) (Receipt, error) {
	if err := l.checkDeposit(&spec); err != nil {
		return Receipt{}, err
	}
	return Mutate(ctx, l, req, KindDeposit, spec, func(w *Writer) (Receipt, error) { return deposit(w, spec) })
}

// DepositWithin is Deposit inside another package's change, so that what
// it records beside the deposit (a peer's transaction applied here) is
// journaled with it, all or nothing.
func (l *Ledger) DepositWithin(w *Writer, spec DepositSpec) (Receipt, error) {
	if err := l.checkDeposit(&spec); err != nil {
		return Receipt{}, err
	}
	return deposit(w, spec)
}

// deposit is a checked deposit's change.
func deposit(w *Writer, spec DepositSpec) (Receipt, error) {
	if _, err := activeAccount(w.tx, spec.Account, "deposit"); err != nil {
		return Receipt{}, err
	}
	var a Allocation
	var terms []AllocationTerms
	if spec.Allocation != 0 {
		var err error
		if a, err = accountAllocation(w.tx, spec.Account, spec.Allocation); err != nil {
			return Receipt{}, err
		}
		if err := checkNotEnded(a.AllocationTerms, true, w.now); err != nil {
			return Receipt{}, err
		}
	} else {
		if spec.Machine != "" {
			if err := activeMachine(w.tx, spec.Machine); err != nil {
				return Receipt{}, err
			}
		}
		id, err := w.tx.NextAllocationID()
		if err != nil {
			return Receipt{}, err
		}
		start := spec.Start
		if start.IsZero() {
			start = w.now
		}
		a.AllocationTerms = AllocationTerms{ID: id, Account: spec.Account, CreditLimit: spec.CreditLimit,
			Start: start, End: spec.End, Machine: spec.Machine, Description: spec.Description, Created: w.now}
		if err := checkNotEnded(a.AllocationTerms, false, w.now); err != nil {
			return Receipt{}, err
		}
		if !a.End.IsZero() && !a.End.After(a.Start) {
			return Receipt{}, fmt.Errorf("%w: deposit: end %s is not after start %s", ErrInvalid, a.End.Format(time.RFC3339), a.Start.Format(time.RFC3339))
		}
		terms = []AllocationTerms{a.AllocationTerms}
	}
	d := Delta{Allocation: a.ID, Account: a.Account, Amount: spec.Amount, Deposited: spec.Amount}
	return w.Move(Entry{Kind: KindDeposit, Node: spec.Account, Description: spec.Description, Terms: terms}, []Allocation{a}, []Delta{d})
}

func (l *Ledger) checkDeposit(spec *DepositSpec) error {
	// A new allocation may be of credit alone (Gold's gdeposit -L): its
	// amount is zero and its credit limit is not.
	creditOnly := spec.Amount.IsZero() && spec.Allocation == 0 && spec.CreditLimit.IsPositive()
	if err := CheckAmount(spec.Amount, l.settings.Precision); err != nil && !creditOnly {
		if spec.Amount.IsZero() {
			return fmt.Errorf("deposit: %w (an allocation of credit alone is a new one with a credit limit)", err)
		}
		return fmt.Errorf("deposit: %w", err)
	}
	if err := CheckCreditLimit(spec.CreditLimit, l.settings.Precision); err != nil {
		return fmt.Errorf("deposit: credit limit: %w", err)
	}
	if err := checkGiven("deposit: start", spec.Start); err != nil {
		return err
	}
	if err := checkGiven("deposit: end", spec.End); err != nil {
		return err
	}
	topUpTerms := !spec.CreditLimit.IsZero() || !spec.Start.IsZero() || !spec.End.IsZero() || spec.Machine != ""
	if spec.Allocation != 0 && topUpTerms {
		return fmt.Errorf("%w: deposit: a top-up of allocation %d keeps its terms; credit limit, start, end and machine are for a new allocation", ErrInvalid, spec.Allocation)
	}
	spec.Start, spec.End = stampOrZero(spec.Start), stampOrZero(spec.End)
	return nil
}

// checkNotEnded refuses a deposit into an allocation, topped up or new,
// that has ended by now. Its credits could never be spent, and the journal
// would keep them for good: such a deposit is a typo in a year rather
// than a grant.
func checkNotEnded(a AllocationTerms, topUp bool, now time.Time) error {
	if a.End.IsZero() || a.End.After(now) {
		return nil
	}
	which := "the new allocation"
	if topUp {
		which = fmt.Sprintf("allocation %d of %s", a.ID, a.Account)
	}
	return fmt.Errorf("%w: deposit: %s has already ended (end %s, now %s): its credits could never be used; a typo in the year?",
		ErrInvalid, which, a.End.Format(time.RFC3339), now.Format(time.RFC3339))
}

// Withdraw takes credits out of an account, in debit order, up to what is
// Available.
func (l *Ledger) Withdraw(ctx context.Context, req Request, spec WithdrawSpec) (Receipt, error) {
	if err := CheckAmount(spec.Amount, l.settings.Precision); err != nil {
		return Receipt{}, fmt.Errorf("withdraw: %w", err)
	}
	return Mutate(ctx, l, req, KindWithdraw, spec, func(w *Writer) (Receipt, error) {
		sources, deltas, err := w.takeFrom(spec.Account, spec.Allocation, spec.Amount, "withdraw")
		if err != nil {
			return Receipt{}, err
		}
		return w.Move(Entry{Kind: KindWithdraw, Node: spec.Account, Description: spec.Description}, sources, deltas)
	})
}

// Transfer moves credits from one account to another, up to what the
// source has Available. Each piece lands in an allocation of the destination
// with the same start, end and machine: an existing one with those terms is
// topped up, otherwise one is created.
func (l *Ledger) Transfer(ctx context.Context, req Request, spec TransferSpec) (Receipt, error) {
	if err := CheckAmount(spec.Amount, l.settings.Precision); err != nil {
		return Receipt{}, fmt.Errorf("transfer: %w", err)
	}
	if spec.From == spec.To {
		return Receipt{}, fmt.Errorf("%w: transfer from %s to itself", ErrInvalid, spec.From)
	}
	return Mutate(ctx, l, req, KindTransfer, spec, func(w *Writer) (Receipt, error) {
		if _, err := activeAccount(w.tx, spec.To, "transfer"); err != nil {
			return Receipt{}, err
		}
		sources, deltas, err := w.takeFrom(spec.From, spec.Allocation, spec.Amount, "transfer")
		if err != nil {
			return Receipt{}, err
		}
		// A piece lands in an allocation with its source's window: the
		// source is active, so is any with its window.
		targets, err := w.tx.ActiveAllocations(spec.To, w.now)
		if err != nil {
			return Receipt{}, err
		}
		var terms []AllocationTerms
		changed := slices.Clone(sources)
		usedUpRead := false
		for i, src := range sources {
			j := slices.IndexFunc(targets, func(t Allocation) bool { return sameWindow(t.AllocationTerms, src.AllocationTerms) })
			if j < 0 && !usedUpRead {
				// A used-up allocation of the window is topped up too:
				// read only when no other has it.
				usedUp, err := w.tx.UsedUpAllocations(spec.To, w.now, -1)
				if err != nil {
					return Receipt{}, err
				}
				targets, usedUpRead = append(targets, usedUp...), true
				j = slices.IndexFunc(targets, func(t Allocation) bool { return sameWindow(t.AllocationTerms, src.AllocationTerms) })
			}
			if j < 0 {
				id, err := w.tx.NextAllocationID()
				if err != nil {
					return Receipt{}, err
				}
				t := Allocation{AllocationTerms: AllocationTerms{ID: id, Account: spec.To, CreditLimit: decimal.Zero,
					Start: src.Start, End: src.End, Machine: src.Machine,
					Description: fmt.Sprintf("transfer from %s allocation %d", spec.From, src.ID), Created: w.now}}
				terms = append(terms, t.AllocationTerms)
				targets = append(targets, t)
				j = len(targets) - 1
			}
			in := deltas[i].Amount.Neg()
			deltas = append(deltas, Delta{Allocation: targets[j].ID, Account: spec.To, Amount: in, Deposited: in})
			changed = append(changed, targets[j])
		}
		return w.Move(Entry{Kind: KindTransfer, Node: spec.From, Ref: spec.To, Description: spec.Description, Terms: terms}, changed, deltas)
	})
}

func sameWindow(a, b AllocationTerms) bool {
	return a.Start.Equal(b.Start) && a.End.Equal(b.End) && a.Machine == b.Machine
}

// takeFrom chooses what to debit from an account's active allocations (or
// the one named) to take amount out: first what they hold beyond liens,
// then their credit limits, each pass in debit order. It refuses beyond
// Available.
func (w *Writer) takeFrom(account string, only uint64, amount decimal.Decimal, op string) ([]Allocation, []Delta, error) {
	if _, err := activeAccount(w.tx, account, op); err != nil {
		return nil, nil, err
	}
	usable := func(Allocation) bool { return true }
	if only != 0 {
		a, err := accountAllocation(w.tx, account, only)
		if err != nil {
			return nil, nil, err
		}
		if !a.ActiveAt(w.now) {
			return nil, nil, fmt.Errorf("%w: %s: allocation %d of %s is not active now", ErrInvalid, op, only, account)
		}
		usable = func(a Allocation) bool { return a.ID == only }
	}
	f, err := w.funds(account, usable, nil)
	if err != nil {
		return nil, nil, err
	}
	holds, err := f.Hold(amount)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	byID := map[uint64]Allocation{}
	for _, a := range f.Allocations {
		byID[a.ID] = a
	}
	sources := make([]Allocation, len(holds))
	deltas := make([]Delta, len(holds))
	for i, h := range holds {
		sources[i] = byID[h.Allocation]
		deltas[i] = Delta{Allocation: h.Allocation, Account: account, Amount: h.Amount.Neg(), Deposited: decimal.Zero}
	}
	return sources, deltas, nil
}

// move applies deltas to the allocations (listed in the same order as far
// as deltas go; an allocation may appear more than once), journals e and
// stores the new states.
func (w *Writer) Move(e Entry, allocs []Allocation, deltas []Delta) (Receipt, error) {
	byID := make(map[uint64]Allocation, len(allocs))
	var order []uint64
	for _, a := range allocs {
		if _, seen := byID[a.ID]; !seen {
			order = append(order, a.ID)
		}
		byID[a.ID] = a
	}
	for _, d := range deltas {
		a := byID[d.Allocation]
		a.Amount = decimals.Add(a.Amount, d.Amount)
		a.Deposited = decimals.Add(a.Deposited, d.Deposited)
		byID[d.Allocation] = a
	}
	changed := make([]Allocation, len(order))
	for i, id := range order {
		changed[i] = byID[id]
	}
	e.Deltas = deltas
	entry, err := w.Append(e, changed...)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Seq: entry.Seq, Time: entry.Time, Deltas: deltas, Allocations: changed}, nil
}

// DebitOrder sorts allocations in the order funds leave them: those in held
// first, then earliest end (no end last), machine-specific before
// any-machine, then lowest id.
func DebitOrder(allocs []Allocation, held map[uint64]bool) {
	slices.SortFunc(allocs, func(a, b Allocation) int {
		if held[a.ID] != held[b.ID] {
			if held[a.ID] {
				return -1
			}
			return 1
		}
		if c := compareEnds(a.End, b.End); c != 0 {
			return c
		}
		if (a.Machine == "") != (b.Machine == "") {
			if a.Machine != "" {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// compareEnds orders end times with the zero time (no end) last.
func compareEnds(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

func activeAccount(tx Tx, name, op string) (Node, error) {
	n, err := ActiveNode(tx, name)
	if err != nil {
		return Node{}, fmt.Errorf("%s: %w", op, err)
	}
	if !n.IsAccount() {
		return Node{}, fmt.Errorf("%w: %s: %s is a project of %s; only accounts hold allocations", ErrInvalid, op, name, n.Account())
	}
	return n, nil
}

func accountAllocation(tx Tx, account string, id uint64) (Allocation, error) {
	a, ok, err := tx.Allocation(id)
	if err != nil {
		return Allocation{}, err
	}
	if !ok || a.Account != account {
		return Allocation{}, fmt.Errorf("%w: account %s has no allocation %d", ErrNotFound, account, id)
	}
	return a, nil
}

func activeMachine(tx Tx, name string) error {
	m, ok, err := tx.Machine(name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: no machine named %s", ErrNotFound, Excerpt(name))
	}
	if !m.Active {
		return fmt.Errorf("%w: machine %q is deactivated", ErrInactive, name)
	}
	return nil
}

func activeAt(allocs []Allocation, t time.Time) []Allocation {
	var out []Allocation
	for _, a := range allocs {
		if a.ActiveAt(t) {
			out = append(out, a)
		}
	}
	return out
}

func stampOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return stamp(t)
}
