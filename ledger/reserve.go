package ledger

import (
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/decimals"
)

// ErrNoAllocation marks a charge or lien for which no allocation exists at
// all: nothing can be debited, not even into overdraft.
var ErrNoAllocation = fmt.Errorf("%w: no usable allocation", ErrInsufficientFunds)

// reservedAsOf is reservedAt for the bank as it stood after entry seq: it
// replays the liens journaled up to then, from the first entry or from the
// liens active at the boundary of the bank's archive (a journal scan:
// point-in-time queries are rare).
func reservedAsOf(tx Tx, account string, seq uint64, t time.Time) (map[uint64]decimal.Decimal, error) {
	liens := map[uint64]Lien{}
	from, active := startOfReserved(tx, seq)
	for _, l := range active {
		if l.Account == account {
			liens[l.ID] = l
		}
	}
	err := EachEntry(tx, from, seq, func(e Entry) (bool, error) {
		if e.Lien != nil && e.Lien.Account == account {
			liens[e.Lien.ID] = *e.Lien
		}
		return true, nil
	})
	reserved := map[uint64]decimal.Decimal{}
	for _, l := range liens {
		if l.HoldsAt(t) {
			for _, h := range l.Holds {
				reserved[h.Allocation] = reserved[h.Allocation].Add(h.Amount)
			}
		}
	}
	return reserved, err
}

// Funds is what an account can spend on one machine at one time: its usable
// allocations in debit order, and what other liens hold on each.
type Funds struct {
	Account     string
	Allocations []Allocation
	Reserved    map[uint64]decimal.Decimal
	// usedUp, if set, reads the used-up allocations usable here that
	// Allocations leave out (they give nothing): a debit beyond what the
	// others hold goes to the first allocation in debit order, which may
	// be one of them.
	usedUp func() ([]Allocation, error)
	// owned are the allocations the lien being charged holds, first in
	// debit order.
	owned map[uint64]bool
}

// Funds gathers the account's allocations usable on machine ("" = any
// machine only) now. own, if not nil, is the lien being placed again,
// extended or charged: its holds do not count as reserved, and the
// allocations it holds come first in debit order even if they have expired
// since (the job was admitted against them).
func (w *Writer) Funds(account, machine string, own *Lien) (Funds, error) {
	return w.funds(account, func(a Allocation) bool { return a.Machine == "" || a.Machine == machine }, own)
}

// funds is Funds over the active allocations that usable accepts.
func (w *Writer) funds(account string, usable func(Allocation) bool, own *Lien) (Funds, error) {
	held := map[uint64]bool{}
	if own != nil {
		for _, h := range own.Holds {
			held[h.Allocation] = true
		}
	}
	active, err := w.activeAllocations(account)
	if err != nil {
		return Funds{}, err
	}
	f := Funds{Account: account}
	listed := map[uint64]bool{}
	for _, a := range active {
		if held[a.ID] || usable(a) {
			f.Allocations = append(f.Allocations, a)
			listed[a.ID] = true
		}
	}
	// What own holds of allocations that have ended since, read alone.
	if own != nil {
		for _, h := range own.Holds {
			if listed[h.Allocation] {
				continue
			}
			a, ok, err := w.tx.Allocation(h.Allocation)
			if err != nil {
				return Funds{}, err
			}
			if ok && a.Account == account {
				f.Allocations = append(f.Allocations, a)
				listed[a.ID] = true
			}
		}
	}
	DebitOrder(f.Allocations, held)
	f.owned = held
	f.usedUp = func() ([]Allocation, error) {
		all, err := w.tx.UsedUpAllocations(account, w.now, -1)
		return slices.DeleteFunc(all, func(a Allocation) bool { return listed[a.ID] || !usable(a) }), err
	}
	st, err := w.account(account)
	if err != nil {
		return Funds{}, err
	}
	f.Reserved, err = reservedAt(w.tx, st, account, w.now, own)
	return f, err
}

// free is what allocation a holds beyond others' liens (may be negative).
func (f Funds) free(a Allocation) decimal.Decimal { return decimals.Sub(a.Amount, f.Reserved[a.ID]) }

// Available is Gold's Available over these allocations.
func (f Funds) Available() decimal.Decimal {
	total := decimal.Zero
	for _, a := range f.Allocations {
		total = decimals.Add(decimals.Add(total, f.free(a)), a.CreditLimit)
	}
	return total
}

// take splits amount over the allocations: first what each holds free,
// then its credit limit, each pass in debit order. It returns what is
// left when both passes are exhausted.
func (f Funds) take(amount decimal.Decimal) ([]Hold, decimal.Decimal) {
	// What is taken from each allocation, by its place in f.Allocations.
	taken := make([]decimal.Decimal, len(f.Allocations))
	need := amount
	for _, credit := range []bool{false, true} {
		for i, a := range f.Allocations {
			if !need.IsPositive() {
				break
			}
			room := f.free(a)
			if credit {
				room = decimals.Add(a.CreditLimit, decimal.Min(room, decimal.Zero))
			}
			if room.IsPositive() {
				t := decimal.Min(room, need)
				taken[i] = decimals.Add(taken[i], t)
				need = decimals.Sub(need, t)
			}
		}
	}
	var holds []Hold
	for i, a := range f.Allocations {
		if !taken[i].IsZero() {
			holds = append(holds, Hold{Allocation: a.ID, Amount: taken[i]})
		}
	}
	return holds, need
}

// Hold chooses where a lien of amount is held. It refuses (with
// ErrInsufficientFunds) anything beyond Available.
func (f Funds) Hold(amount decimal.Decimal) ([]Hold, error) {
	if available := f.Available(); amount.GreaterThan(available) {
		return nil, fmt.Errorf("%w: %s needs %s, %s available", ErrInsufficientFunds, f.Account, amount, available)
	}
	holds, _ := f.take(amount)
	return holds, nil
}

// Debit chooses where a charge of amount comes from, like Hold, but never
// refuses for lack of funds: what the allocations cannot cover is debited
// from the first one in debit order, driving it below its credit limit,
// and returned as overdrawn. It fails only when there is no allocation.
func (f Funds) Debit(amount decimal.Decimal) (debits []Hold, overdrawn decimal.Decimal, err error) {
	debits, overdrawn = f.take(amount)
	if overdrawn.IsPositive() || len(f.Allocations) == 0 {
		first, err := f.first()
		if err != nil || !overdrawn.IsPositive() {
			return debits, overdrawn, err
		}
		i := 0
		for i < len(debits) && debits[i].Allocation != first {
			i++
		}
		if i == len(debits) {
			debits = append([]Hold{{Allocation: first, Amount: decimal.Zero}}, debits...)
			i = 0
		}
		debits[i].Amount = decimals.Add(debits[i].Amount, overdrawn)
	}
	return debits, overdrawn, nil
}

// first is the id of the first allocation in debit order, the used-up
// ones among them; ErrNoAllocation if there is none.
func (f Funds) first() (uint64, error) {
	var held bool
	if len(f.Allocations) > 0 {
		// Allocations are in debit order, those own holds first: one of
		// those is first whatever the used-up ones.
		held = f.owned[f.Allocations[0].ID]
	}
	candidates := f.Allocations[:min(len(f.Allocations), 1)]
	if !held && f.usedUp != nil {
		more, err := f.usedUp()
		if err != nil {
			return 0, err
		}
		candidates = append(slices.Clone(candidates), more...)
		DebitOrder(candidates, nil)
	}
	if len(candidates) == 0 {
		return 0, fmt.Errorf("%w: account %s has no active allocation for this machine", ErrNoAllocation, f.Account)
	}
	return candidates[0].ID, nil
}

// startOfReserved is where a replay of the liens up to entry seq starts,
// and the liens active there: the first entry, or a boundary the bank's
// archive left.
func startOfReserved(tx Tx, seq uint64) (from uint64, active []Lien) {
	if j, ok := tx.(*joinedTx); ok {
		return j.startOfReserved(seq)
	}
	return 1, nil
}
