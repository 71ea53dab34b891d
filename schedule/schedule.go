package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// recordKind is the kind of the records that hold schedules.
const recordKind = "schedule"

// Actor is who the changes Run makes are journaled as.
const Actor = "schedule"

// Spec is what a new schedule asks.
type Spec struct {
	Account     string          `json:"account"`
	Amount      decimal.Decimal `json:"amount"`
	Every       Every           `json:"every"`
	Start       time.Time       `json:"start"`
	Count       int             `json:"count,omitempty"`
	Until       time.Time       `json:"until,omitzero"`
	Machine     string          `json:"machine,omitempty"`
	CreditLimit decimal.Decimal `json:"credit_limit"`
	CarryOver   CarryOver       `json:"carry_over"`
}

// Schedule is a stored schedule with what it has made.
type Schedule struct {
	ID uint64 `json:"id"`
	Spec
	// Made is the number of periods made; Allocations their allocations,
	// in order.
	Made        int      `json:"made"`
	Allocations []uint64 `json:"allocations,omitempty"`
	Cancelled   bool     `json:"cancelled,omitempty"`
}

// Change is what Modify changes: the fields set. A change applies to the
// periods not yet made.
type Change struct {
	Amount      *decimal.Decimal `json:"amount,omitempty"`
	Count       *int             `json:"count,omitempty"`
	Until       *time.Time       `json:"until,omitempty"`
	CreditLimit *decimal.Decimal `json:"credit_limit,omitempty"`
	CarryOver   *CarryOver       `json:"carry_over,omitempty"`
}

// Apply is the spec with the fields ch sets changed (a count drops an
// end date, and the other way round).
func (s Spec) Apply(ch Change) Spec {
	if ch.Amount != nil {
		s.Amount = *ch.Amount
	}
	if ch.Count != nil {
		s.Count, s.Until = *ch.Count, time.Time{}
	}
	if ch.Until != nil {
		s.Until, s.Count = ch.Until.UTC(), 0
	}
	if ch.CreditLimit != nil {
		s.CreditLimit = *ch.CreditLimit
	}
	if ch.CarryOver != nil {
		s.CarryOver = *ch.CarryOver
	}
	return s
}

// Period is one period of a schedule, made or to come.
type Period struct {
	Schedule   uint64          `json:"schedule"`
	Account    string          `json:"account"`
	Index      int             `json:"period"`
	Start      time.Time       `json:"start"`
	End        time.Time       `json:"end"`
	Amount     decimal.Decimal `json:"amount"`
	Allocation uint64          `json:"allocation,omitempty"`
}

// Bank keeps schedules on a ledger.
type Bank struct {
	l *ledger.Ledger
}

// New is the schedules of l.
func New(l *ledger.Ledger) *Bank { return &Bank{l: l} }

func key(id uint64) string { return fmt.Sprintf("%020d", id) }

func recordOf(s Schedule) (*ledger.Record, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schedule: encode %d: %w", s.ID, err)
	}
	return &ledger.Record{Kind: recordKind, Key: key(s.ID), Value: b}, nil
}

func decode(r ledger.Record) (Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(r.Value, &s); err != nil {
		return Schedule{}, fmt.Errorf("%w: schedule record %s: %v", ledger.ErrCorrupt, r.Key, err)
	}
	return s, nil
}

func list(tx ledger.Tx) ([]Schedule, error) {
	recs, err := tx.Records(recordKind)
	if err != nil {
		return nil, err
	}
	out := make([]Schedule, 0, len(recs))
	for _, r := range recs {
		s, err := decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func get(tx ledger.Tx, id uint64) (Schedule, error) {
	r, ok, err := tx.Record(recordKind, key(id))
	if err != nil {
		return Schedule{}, err
	}
	if !ok {
		return Schedule{}, fmt.Errorf("%w: schedule %d", ledger.ErrNotFound, id)
	}
	return decode(r)
}

// put stores s and journals it.
func put(w *ledger.Writer, s Schedule, what string) error {
	rec, err := recordOf(s)
	if err != nil {
		return err
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Node: s.Account, Ref: "schedule " + strconv.FormatUint(s.ID, 10), Record: rec, Description: what})
	return err
}

func (b *Bank) check(s Spec) error {
	p := b.l.Settings().Precision
	if err := ledger.CheckAmount(s.Amount, p); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if err := ledger.CheckCreditLimit(s.CreditLimit, p); err != nil {
		return fmt.Errorf("schedule: credit limit: %w", err)
	}
	if _, err := s.Every.months(); err != nil {
		return err
	}
	switch {
	case s.Count < 0:
		return fmt.Errorf("%w: count %d must be positive", ErrInvalid, s.Count)
	case s.Count > 0 && !s.Until.IsZero():
		return fmt.Errorf("%w: a schedule ends after a count of periods or at a date, not both", ErrInvalid)
	case !s.Until.IsZero() && !s.Until.After(s.Start):
		return fmt.Errorf("%w: until %s is not after the start %s", ErrInvalid, s.Until.Format(time.RFC3339), s.Start.Format(time.RFC3339))
	case !s.CarryOver.Cap.IsZero() && ledger.CheckAmount(s.CarryOver.Cap, p) != nil:
		return fmt.Errorf("%w: carry-over cap %s has more than %d decimal places", ErrInvalid, s.CarryOver.Cap, p)
	}
	return nil
}

// Add stores a new schedule (start: now when zero). Its periods are made
// by Run.
func (b *Bank) Add(ctx context.Context, req ledger.Request, spec Spec) (Schedule, error) {
	if spec.Start.IsZero() {
		spec.Start = b.l.Now()
	}
	spec.Start, spec.Until = spec.Start.UTC(), spec.Until.UTC()
	if err := b.check(spec); err != nil {
		return Schedule{}, err
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, spec, func(w *ledger.Writer) (Schedule, error) {
		n, err := ledger.ActiveNode(w.Tx(), spec.Account)
		if err != nil {
			return Schedule{}, err
		}
		if !n.IsAccount() {
			return Schedule{}, fmt.Errorf("%w: %s is a project; allocations are an account's", ErrInvalid, spec.Account)
		}
		if spec.Machine != "" {
			if _, ok, err := machine(w.Tx(), spec.Machine); err != nil || !ok {
				return Schedule{}, fmt.Errorf("%w: machine %s: %v", ledger.ErrNotFound, spec.Machine, err)
			}
		}
		all, err := list(w.Tx())
		if err != nil {
			return Schedule{}, err
		}
		s := Schedule{ID: uint64(len(all)) + 1, Spec: spec}
		if len(all) > 0 {
			s.ID = all[len(all)-1].ID + 1
		}
		return s, put(w, s, "schedule added")
	})
}

func machine(tx ledger.Tx, name string) (ledger.Machine, bool, error) {
	ms, err := tx.Machines()
	if err != nil {
		return ledger.Machine{}, false, err
	}
	for _, m := range ms {
		if m.Name == name {
			return m, true, nil
		}
	}
	return ledger.Machine{}, false, nil
}

// List is every schedule, in id order.
func (b *Bank) List(ctx context.Context) ([]Schedule, error) {
	var out []Schedule
	err := b.l.View(ctx, func(tx ledger.Tx) (err error) {
		out, err = list(tx)
		return err
	})
	return out, err
}

// Get is one schedule.
func (b *Bank) Get(ctx context.Context, id uint64) (Schedule, error) {
	var s Schedule
	err := b.l.View(ctx, func(tx ledger.Tx) (err error) {
		s, err = get(tx, id)
		return err
	})
	return s, err
}

// Modify changes the periods of a schedule not yet made.
func (b *Bank) Modify(ctx context.Context, req ledger.Request, id uint64, ch Change) (Schedule, error) {
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, struct {
		ID uint64 `json:"id"`
		Change
	}{id, ch}, func(w *ledger.Writer) (Schedule, error) {
		s, err := get(w.Tx(), id)
		if err != nil {
			return Schedule{}, err
		}
		if s.Cancelled {
			return Schedule{}, fmt.Errorf("%w: schedule %d is cancelled", ErrInvalid, id)
		}
		s.Spec = s.Apply(ch)
		if err := b.check(s.Spec); err != nil {
			return Schedule{}, err
		}
		if n := s.Periods(); n >= 0 && n < s.Made {
			return Schedule{}, fmt.Errorf("%w: schedule %d has made %d periods already; it cannot end after %d", ErrInvalid, id, s.Made, n)
		}
		return s, put(w, s, "schedule modified")
	})
}

// Cancel stops a schedule: no period is made after; those made stay.
func (b *Bank) Cancel(ctx context.Context, req ledger.Request, id uint64) (Schedule, error) {
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, struct {
		Cancel uint64 `json:"cancel"`
	}{id}, func(w *ledger.Writer) (Schedule, error) {
		s, err := get(w.Tx(), id)
		if err != nil || s.Cancelled {
			return s, err
		}
		s.Cancelled = true
		return s, put(w, s, "schedule cancelled")
	})
}

// Upcoming are the periods of the schedules (of account, or all with "")
// that start after now and before until, in start order per schedule.
func (b *Bank) Upcoming(ctx context.Context, account string, until time.Time) ([]Period, error) {
	all, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Period
	for _, s := range all {
		if s.Cancelled || account != "" && s.Account != account {
			continue
		}
		for k := s.Made; s.Periods() < 0 || k < s.Periods(); k++ {
			start := s.PeriodStart(k)
			if !start.Before(until) {
				break
			}
			out = append(out, Period{Schedule: s.ID, Account: s.Account, Index: k + 1, Start: start, End: s.PeriodStart(k + 1), Amount: s.Amount})
		}
	}
	return out, nil
}

// Run makes every period due by now of every schedule, and returns those
// it made. A period another server made at the same moment may be
// returned by both (the second change is answered with the first's
// answer), but it is made once. A schedule whose period cannot be made
// (its account deactivated) waits, with an error for each, and the
// others go on: its periods are made, in order, once it can.
func (b *Bank) Run(ctx context.Context) ([]Period, error) {
	all, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	now := b.l.Now()
	var made []Period
	var errs []error
	for _, s := range all {
		for k := s.Made; !s.Cancelled && (s.Periods() < 0 || k < s.Periods()) && !s.PeriodStart(k).After(now); k++ {
			p, err := b.make(ctx, s.ID, k)
			if err != nil {
				errs = append(errs, fmt.Errorf("schedule %d period %d: %w", s.ID, k+1, err))
				break
			}
			if p != nil {
				made = append(made, *p)
			}
		}
	}
	return made, errors.Join(errs...)
}

// make makes period k of schedule id, if it is still to be made, in one
// change (see the package doc).
func (b *Bank) make(ctx context.Context, id uint64, k int) (*Period, error) {
	req := ledger.Request{Actor: Actor, ID: fmt.Sprintf("schedule/%d/%d", id, k+1)}
	content := struct {
		Schedule uint64 `json:"schedule"`
		Period   int    `json:"period"`
	}{id, k + 1}
	return ledger.Mutate(ctx, b.l, req, ledger.KindDeposit, content, func(w *ledger.Writer) (*Period, error) {
		s, err := get(w.Tx(), id)
		if err != nil {
			return nil, err
		}
		if s.Made != k || s.Cancelled {
			return nil, nil // made by another, or cancelled meanwhile
		}
		if _, err := ledger.ActiveNode(w.Tx(), s.Account); err != nil {
			return nil, err
		}
		p := Period{Schedule: id, Account: s.Account, Index: k + 1, Start: s.PeriodStart(k), End: s.PeriodStart(k + 1), Amount: s.Amount}
		aid, err := w.Tx().NextAllocationID()
		if err != nil {
			return nil, err
		}
		a := ledger.Allocation{AllocationTerms: ledger.AllocationTerms{ID: aid, Account: s.Account, CreditLimit: s.CreditLimit,
			Start: p.Start, End: p.End, Machine: s.Machine, Created: w.Now(),
			Description: fmt.Sprintf("schedule %d, period %d", id, k+1)}, Amount: decimal.Zero, Deposited: decimal.Zero}
		ref := "schedule " + strconv.FormatUint(id, 10)
		r, err := w.Move(ledger.Entry{Kind: ledger.KindDeposit, Node: s.Account, Ref: ref, Description: a.Description, Terms: []ledger.AllocationTerms{a.AllocationTerms}},
			[]ledger.Allocation{a}, []ledger.Delta{{Allocation: aid, Account: s.Account, Amount: s.Amount, Deposited: s.Amount}})
		if err != nil {
			return nil, err
		}
		if k > 0 {
			if err := b.carry(w, s, k, r.Allocations[0]); err != nil {
				return nil, err
			}
		}
		s.Made, s.Allocations, p.Allocation = k+1, append(s.Allocations, aid), aid
		return &p, put(w, s, fmt.Sprintf("schedule period %d made", k+1))
	})
}

// carry moves what the rule says of period k-1's leftover into next, the
// allocation of period k.
func (b *Bank) carry(w *ledger.Writer, s Schedule, k int, next ledger.Allocation) error {
	prev, ok, err := w.Tx().Allocation(s.Allocations[k-1])
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: allocation %d of schedule %d is missing", ledger.ErrCorrupt, s.Allocations[k-1], s.ID)
	}
	// What running jobs' liens hold on it is theirs to be charged, not
	// leftover.
	liens, err := w.Tx().ActiveLiens(s.Account)
	if err != nil {
		return err
	}
	left := prev.Amount
	for _, li := range liens {
		if !li.HoldsAt(w.Now()) {
			continue
		}
		for _, h := range li.Holds {
			if h.Allocation == prev.ID {
				left = left.Sub(h.Amount)
			}
		}
	}
	moved := s.CarryOver.Of(left, b.l.Settings().Precision)
	if moved.IsZero() {
		return nil
	}
	_, err = w.Move(ledger.Entry{Kind: ledger.KindTransfer, Node: s.Account, Ref: s.Account,
		Description: fmt.Sprintf("schedule %d: carry-over (%s) of period %d into period %d", s.ID, s.CarryOver, k, k+1)},
		[]ledger.Allocation{prev, next},
		[]ledger.Delta{{Allocation: prev.ID, Account: s.Account, Amount: moved.Neg(), Deposited: decimal.Zero},
			{Allocation: next.ID, Account: s.Account, Amount: moved, Deposited: moved}})
	return err
}
