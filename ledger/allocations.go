package ledger

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"
)

// AllocationChange changes an allocation's terms; a nil field stays as it
// is. Its amounts move only by deposits, withdrawals, transfers, charges
// and refunds.
type AllocationChange struct {
	// CreditLimit is how far below zero the allocation may go (Gold's
	// gchalloc -L); zero takes its credit away.
	CreditLimit *decimal.Decimal `json:"credit_limit,omitempty"`
}

// ModifyAllocation changes the terms of allocation id. It is journaled
// with the allocation's new terms, which is all that the audit replays.
func (l *Ledger) ModifyAllocation(ctx context.Context, req Request, id uint64, change AllocationChange) (Allocation, error) {
	if change.CreditLimit == nil {
		return Allocation{}, fmt.Errorf("%w: allocation %d: nothing to change (give a credit limit)", ErrInvalid, id)
	}
	if err := CheckCreditLimit(*change.CreditLimit, l.settings.Precision); err != nil {
		return Allocation{}, fmt.Errorf("allocation %d: credit limit: %w", id, err)
	}
	content := struct {
		ID     uint64           `json:"allocation"`
		Change AllocationChange `json:"change"`
	}{id, change}
	return Mutate(ctx, l, req, KindAllocationModify, content, func(w *Writer) (Allocation, error) {
		a, ok, err := w.tx.Allocation(id)
		if err != nil || !ok {
			return Allocation{}, notFoundAllocation(err, id)
		}
		if _, err := activeAccount(w.tx, a.Account, "change allocation"); err != nil {
			return Allocation{}, err
		}
		description := fmt.Sprintf("credit limit %s, was %s", *change.CreditLimit, a.CreditLimit)
		a.CreditLimit = *change.CreditLimit
		_, err = w.Append(Entry{Kind: KindAllocationModify, Node: a.Account, Description: description, Terms: []AllocationTerms{a.AllocationTerms}}, a)
		return a, err
	})
}

// Allocation is allocation id as it is now.
func (l *Ledger) Allocation(ctx context.Context, id uint64) (Allocation, error) {
	var a Allocation
	err := l.store.View(ctx, func(tx Tx) error {
		var ok bool
		var err error
		a, ok, err = tx.Allocation(id)
		if err != nil || !ok {
			return notFoundAllocation(err, id)
		}
		return nil
	})
	return a, err
}

// AccountAllocations is every allocation of account, those that have
// ended too, in id order (a balance lists those that have not).
func (l *Ledger) AccountAllocations(ctx context.Context, account string) ([]Allocation, error) {
	var out []Allocation
	err := l.store.View(ctx, func(tx Tx) error {
		if _, err := GetNode(tx, account); err != nil {
			return err
		}
		var err error
		out, err = tx.AccountAllocations(AccountOf(account))
		return err
	})
	return out, err
}

func notFoundAllocation(err error, id uint64) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: no allocation %d", ErrNotFound, id)
}
