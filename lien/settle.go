package lien

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/decimals"
	"github.com/ingot-hpc/ingot/ledger"
)

// ChargeSpec reports a job's usage. With a lien, the job's project and user
// are the lien's; without one, Project (or the user's default) is charged.
type ChargeSpec struct {
	Job
	User    string       `json:"user,omitempty"`
	Project string       `json:"project,omitempty"`
	Usage   charge.Usage `json:"usage"`
	// Incremental charges a running job for what it used since the last
	// charge; the lien shrinks and stays. Otherwise the charge is final.
	Incremental bool `json:"incremental,omitempty"`
	// Reservation names the chargeable reservation the job ran in.
	Reservation string `json:"reservation,omitempty"`
	// Quote names the guaranteed quote a job without a lien is charged
	// at (as Gold's gcharge -q): its frozen prices, and one of its uses,
	// which the job's later charges share. A job with a lien is priced as
	// its lien was, and may name only the lien's quote.
	Quote uint64 `json:"quote,omitempty"`
}

// chargeDetail is what this package keeps in ledger.Charge.Detail.
type chargeDetail struct {
	Usage       charge.Usage       `json:"usage"`
	Reservation string             `json:"reservation,omitempty"`
	Quote       uint64             `json:"quote,omitempty"`
	Explanation charge.Explanation `json:"explanation"`
}

// ChargeResult answers a charge. How the charge was priced is in the
// charge's detail (ExplanationOf): the answer does not repeat it, since it
// is encoded, kept for retries and sent at every job.
type ChargeResult struct {
	Charge ledger.Charge `json:"charge"`
	// Lien is the job's lien after the charge (nil without one).
	Lien *ledger.Lien `json:"lien,omitempty"`
	// Overran is how far an incremental charge went beyond the lien.
	Overran decimal.Decimal `json:"overran"`
	// Released is what a final charge released of the lien.
	Released decimal.Decimal `json:"released"`
	// Home, for a job of a project homed at a peer bank, is where the
	// charge was made and the home bank's answer.
	Home *Forwarded `json:"home,omitempty"`
}

// ExplanationOf is how charge c, made by this package, was priced.
func ExplanationOf(c ledger.Charge) (charge.Explanation, error) {
	d, err := detailOf(c)
	return d.Explanation, err
}

// UsageOf is what the job of charge c, made by this package, used, as its
// charge reported it.
func UsageOf(c ledger.Charge) (charge.Usage, error) {
	d, err := detailOf(c)
	return d.Usage, err
}

func detailOf(c ledger.Charge) (chargeDetail, error) {
	var d chargeDetail
	if err := json.Unmarshal(c.Detail, &d); err != nil {
		return chargeDetail{}, fmt.Errorf("%w: charge %d detail: %v", ledger.ErrCorrupt, c.ID, err)
	}
	return d, nil
}

// Charge charges a job. It never fails for lack of funds (see the package
// documentation); a job is charged finally at most once.
func (b *Bank) Charge(ctx context.Context, req ledger.Request, spec ChargeSpec) (ChargeResult, error) {
	if err := spec.Job.check(); err != nil {
		return ChargeResult{}, err
	}
	do := func(w *ledger.Writer) (ChargeResult, error) {
		tx := w.Tx()
		charges, err := tx.JobCharges(spec.Machine, spec.ID)
		if err != nil {
			return ChargeResult{}, err
		}
		for _, c := range charges {
			if c.Final {
				return ChargeResult{}, fmt.Errorf("%w: job %s on %s (charge %d)", ErrAlreadyCharged, spec.ID, spec.Machine, c.ID)
			}
		}
		terms, err := b.chargeTerms(w, spec, charges)
		if err != nil {
			return ChargeResult{}, err
		}
		c, lien, usage := terms.charge, terms.lien, terms.usage
		priced, err := priceCharge(terms.pr, terms.pr.policy, chargeUsage(spec), spec.Reservation)
		if err != nil {
			return ChargeResult{}, fmt.Errorf("%w: charge for job %s: %v", ledger.ErrInvalid, spec.ID, err)
		}
		c.JobID, c.Machine, c.Final, c.Time = spec.ID, spec.Machine, !spec.Incremental, w.Now()
		if terms.home != nil {
			return ChargeResult{}, &HomedError{Home: *terms.home, Job: c.JobRef, Amount: priced.amount, Final: c.Final, detail: priced.detail}
		}
		rec := terms.quoteUse
		if spec.Reservation != "" {
			if rec != nil {
				return ChargeResult{}, fmt.Errorf("%w: charge for job %s names a reservation and a guaranteed quote: a job is one or the other", ledger.ErrInvalid, spec.ID)
			}
			if rec, err = recordJobInReservation(tx, spec.Reservation, spec.Machine, usage); err != nil {
				return ChargeResult{}, fmt.Errorf("%w: charge for job %s: %v", ledger.ErrInvalid, spec.ID, err)
			}
		}
		return b.settle(w, c, lien, rec, priced)
	}
	if err := b.declineHomed(ctx, spec.Job, spec.User, spec.Project, func(w *ledger.Writer) error {
		_, err := do(w)
		return err
	}); err != nil {
		return ChargeResult{}, err
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindCharge, spec, do)
}

// chargeTerms are what a job's charge is priced and made with: by its
// active lien (its project, user and pricing), or, for a job without one,
// by the user and project the charge names.
type chargeTerms struct {
	charge ledger.Charge // its project, account, user and lien
	lien   *ledger.Lien  // nil without an active lien
	pr     pricing
	usage  charge.Usage
	// quoteUse records the use of the guaranteed quote the charge named
	// (nil when it uses none, or the job used it already).
	quoteUse *ledger.Record
	// home is the home of a job's project homed at a peer bank: the
	// charge is the home bank's to make (HomedError).
	home *ledger.Home
}

// chargeUsage is the usage a charge is priced for: an incremental charge
// prices the job as still running.
func chargeUsage(spec ChargeSpec) charge.Usage {
	u := spec.Usage
	if spec.Incremental {
		u.State = charge.Running
	}
	return u
}

// chargeTerms works out how a job is charged; charges are its charges so
// far.
func (b *Bank) chargeTerms(w *ledger.Writer, spec ChargeSpec, charges []ledger.Charge) (chargeTerms, error) {
	tx := w.Tx()
	t := chargeTerms{usage: chargeUsage(spec)}
	cfg, err := b.pricingConfig(tx)
	if err != nil {
		return t, err
	}
	l, found, err := tx.JobLien(spec.Machine, spec.ID)
	if err != nil {
		return t, err
	}
	if found && l.State == ledger.LienActive {
		d, err := DetailOf(l)
		if err != nil {
			return t, err
		}
		// The job may still carry the project it asked for before a
		// fallback took it.
		if spec.Project != "" && spec.Project != l.Project && spec.Project != d.Requested {
			return t, fmt.Errorf("%w: charge for job %s names project %s, but its lien is on %s", ledger.ErrInvalid, spec.ID, spec.Project, l.Project)
		}
		if spec.Quote != 0 && spec.Quote != d.Quote {
			return t, fmt.Errorf("%w: charge for job %s names quote %d, but its lien (%d) is priced otherwise: it is charged as its lien was", ledger.ErrInvalid, spec.ID, spec.Quote, l.ID)
		}
		if t.pr, err = b.jobPricing(tx, cfg, l, d); err != nil {
			return t, err
		}
		t.lien = &l
		t.charge = ledger.Charge{JobRef: ledger.JobRef{Project: l.Project, Account: l.Account, User: l.User}, Lien: l.ID}
		return t, nil
	}
	if spec.User == "" {
		return t, fmt.Errorf("%w: charge for job %s: no active lien, so the charge must name the user", ledger.ErrInvalid, spec.ID)
	}
	p, err := resolve(tx, spec.Machine, spec.User, spec.Project, false)
	if err != nil {
		return t, fmt.Errorf("charge for job %s without a lien: %w", spec.ID, err)
	}
	// The job's charges use the quote once: a later charge under it does
	// not count again.
	reused := slices.ContainsFunc(charges, func(c ledger.Charge) bool {
		var d chargeDetail
		return json.Unmarshal(c.Detail, &d) == nil && d.Quote == spec.Quote
	})
	if t.pr, t.quoteUse, err = b.newJobPricing(w, cfg, p, spec.Quote, spec.Quote != 0 && reused); err != nil {
		return t, fmt.Errorf("charge for job %s: %w", spec.ID, err)
	}
	t.charge = ledger.Charge{JobRef: ledger.JobRef{Project: p.project.Name, Account: p.project.Account(), User: p.user.Name}}
	t.home = p.project.Home
	return t, nil
}

// pricedCharge is a charge's price and its detail, encoded as the charge
// keeps it.
type pricedCharge struct {
	amount charge.Amount
	detail []byte
}

// priceCharge prices usage under pr and encodes the charge's detail. An
// error means the usage cannot be priced or its detail not encoded (times
// JSON cannot hold): the caller refuses it as invalid input.
func priceCharge(pr pricing, policy charge.Policy, usage charge.Usage, reservation string) (pricedCharge, error) {
	amount, err := pr.rates.Price(policy, pr.shape, usage)
	if err != nil {
		return pricedCharge{}, err
	}
	detail, err := json.Marshal(chargeDetail{Usage: usage, Reservation: reservation, Quote: pr.quote, Explanation: amount.Explanation})
	if err != nil {
		return pricedCharge{}, fmt.Errorf("encode charge detail: %w", err)
	}
	return pricedCharge{amount: amount, detail: detail}, nil
}

// settle debits what p priced for charge c (its identity filled in),
// updates the lien and journals both, and rec if not nil, in one entry.
func (b *Bank) settle(w *ledger.Writer, c ledger.Charge, lien *ledger.Lien, rec *ledger.Record, p pricedCharge) (ChargeResult, error) {
	res, _, err := b.settleFrom(w, c, lien, rec, p)
	return res, err
}

// settleFrom is settle that also returns the allocation that took what the
// others could not cover (debit).
func (b *Bank) settleFrom(w *ledger.Writer, c ledger.Charge, lien *ledger.Lien, rec *ledger.Record, p pricedCharge) (ChargeResult, uint64, error) {
	amount := p.amount.Credits
	c, first, err := debit(w, c, lien, p)
	if err != nil {
		return ChargeResult{}, 0, err
	}
	if c.ID, err = w.Tx().NextChargeID(); err != nil {
		return ChargeResult{}, 0, err
	}
	res := ChargeResult{Overran: decimal.Zero, Released: decimal.Zero}
	if lien != nil {
		l := *lien
		l.Charged = decimals.Add(l.Charged, amount)
		if c.Final {
			res.Released = decimal.Max(decimals.Sub(l.Amount, amount), decimal.Zero)
			l.State = ledger.LienSettled
		} else {
			res.Overran = decimal.Max(decimals.Sub(amount, l.Amount), decimal.Zero)
			l.Holds = shrink(l.Holds, c.Debits, decimal.Min(amount, l.Amount))
			l.Amount = decimal.Max(decimals.Sub(l.Amount, amount), decimal.Zero)
		}
		res.Lien = &l
	}
	description := p.amount.Explanation.NoCharge
	if c.Overdrawn.IsPositive() {
		description = fmt.Sprintf("overdrawn by %s", c.Overdrawn)
	}
	if res.Overran.IsPositive() {
		description = fmt.Sprintf("incremental charge overran the lien by %s", res.Overran)
	}
	allocs, deltas, err := debitDeltas(w.Tx(), c)
	if err != nil {
		return ChargeResult{}, 0, err
	}
	if _, err = w.Move(ledger.Entry{Kind: ledger.KindCharge, Node: c.Project, Ref: c.JobID, Charge: &c, Lien: res.Lien, Record: rec, Description: description}, allocs, deltas); err != nil {
		return ChargeResult{}, 0, err
	}
	res.Charge = c
	return res, first, nil
}

// debit fills in charge c of p's amount: the allocations it is debited
// from (lien's first, if any), what it takes beyond their credit limits
// (Overdrawn), and its price's detail. first is the allocation that takes
// that overdraft, the first in debit order. It changes nothing: settle
// journals the charge, a reservation's dry run shows it.
func debit(w *ledger.Writer, c ledger.Charge, lien *ledger.Lien, p pricedCharge) (ledger.Charge, uint64, error) {
	amount := p.amount.Credits
	f, err := w.Funds(c.Account, c.Machine, lien)
	if err != nil {
		return c, 0, err
	}
	if amount.IsPositive() {
		if c.Debits, c.Overdrawn, err = f.Debit(amount); err != nil {
			return c, 0, fmt.Errorf("charge for job %s: %w", c.JobID, err)
		}
	} else {
		c.Debits, c.Overdrawn = []ledger.Hold{}, decimal.Zero
	}
	var first uint64
	if len(f.Allocations) > 0 {
		first = f.Allocations[0].ID
	}
	c.Amount, c.Refunded, c.Detail = amount, decimal.Zero, p.detail
	return c, first, nil
}

// shrink takes by off a lien's holds: first where the charge debited, then
// in hold order.
func shrink(holds, debits []ledger.Hold, by decimal.Decimal) []ledger.Hold {
	out := make([]ledger.Hold, len(holds))
	copy(out, holds)
	debited := map[uint64]decimal.Decimal{}
	for _, d := range debits {
		debited[d.Allocation] = decimals.Add(debited[d.Allocation], d.Amount)
	}
	for _, firstPass := range []bool{true, false} {
		for i := range out {
			if !by.IsPositive() {
				break
			}
			take := decimal.Min(out[i].Amount, by)
			if firstPass {
				take = decimal.Min(take, debited[out[i].Allocation])
			}
			out[i].Amount = decimals.Sub(out[i].Amount, take)
			by = decimals.Sub(by, take)
		}
	}
	kept := out[:0]
	for _, h := range out {
		if h.Amount.IsPositive() {
			kept = append(kept, h)
		}
	}
	return kept
}

// debitDeltas turns a charge's debits (negative) or refunds into allocation
// changes.
func debitDeltas(tx ledger.Tx, c ledger.Charge) ([]ledger.Allocation, []ledger.Delta, error) {
	return deltasOf(tx, c.Account, c.Debits, decimal.NewFromInt(-1))
}

func deltasOf(tx ledger.Tx, account string, holds []ledger.Hold, sign decimal.Decimal) ([]ledger.Allocation, []ledger.Delta, error) {
	var allocs []ledger.Allocation
	var deltas []ledger.Delta
	for _, h := range holds {
		a, ok, err := tx.Allocation(h.Allocation)
		if err != nil || !ok {
			return nil, nil, notFound(err, "no allocation %d", h.Allocation)
		}
		allocs = append(allocs, a)
		deltas = append(deltas, ledger.Delta{Allocation: h.Allocation, Account: account, Amount: h.Amount.Mul(sign), Deposited: decimal.Zero})
	}
	return allocs, deltas, nil
}

// RefundSpec returns credits of one charge (all that is left of it when
// Amount is zero).
type RefundSpec struct {
	Charge      uint64          `json:"charge"`
	Amount      decimal.Decimal `json:"amount"`
	Description string          `json:"description,omitempty"`
}

// JobRefundSpec returns credits of a job's charges, as Gold's staff refund
// (grefund -J): all that is left of them when Amount is zero.
type JobRefundSpec struct {
	Job
	Amount      decimal.Decimal `json:"amount"`
	Description string          `json:"description,omitempty"`
}

// Refund returns at most what a charge took, to the allocations it took it
// from, the last debited first.
func (b *Bank) Refund(ctx context.Context, req ledger.Request, spec RefundSpec) (ledger.Charge, error) {
	if err := b.checkRefund(spec.Amount); err != nil {
		return ledger.Charge{}, err
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRefund, spec, func(w *ledger.Writer) (ledger.Charge, error) {
		c, ok, err := w.Tx().Charge(spec.Charge)
		if err != nil || !ok {
			return ledger.Charge{}, notFound(err, "no charge %d", spec.Charge)
		}
		amount := spec.Amount
		if amount.IsZero() {
			amount = c.Amount.Sub(c.Refunded)
		}
		return refundCharge(w, c, amount, spec.Description)
	})
}

// JobRefund answers a refund by job: what it returned, and the charges
// it returned it from, as they are after it.
type JobRefund struct {
	Refunded decimal.Decimal `json:"refunded"`
	Charges  []ledger.Charge `json:"charges"`
	// Home, for a job of a project homed at a peer bank, is where the
	// refund was made and the home bank's answer.
	Home *Forwarded `json:"home,omitempty"`
}

// RefundJob returns at most what a job's charges took, from its newest
// charge back, each to the allocations it took it from: one journal entry
// per charge refunded.
func (b *Bank) RefundJob(ctx context.Context, req ledger.Request, spec JobRefundSpec) (JobRefund, error) {
	if err := spec.Job.check(); err != nil {
		return JobRefund{}, err
	}
	if err := b.checkRefund(spec.Amount); err != nil {
		return JobRefund{}, err
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRefund, spec, func(w *ledger.Writer) (JobRefund, error) {
		return refundJob(w, spec)
	})
}

// refundJob is RefundJob's change.
func refundJob(w *ledger.Writer, spec JobRefundSpec) (JobRefund, error) {
	charges, err := w.Tx().JobCharges(spec.Machine, spec.ID)
	if err != nil {
		return JobRefund{}, err
	}
	if len(charges) == 0 {
		return JobRefund{}, fmt.Errorf("%w: job %s on %s has no charges", ledger.ErrNotFound, spec.ID, spec.Machine)
	}
	charged, left := decimal.Zero, decimal.Zero
	for _, c := range charges {
		charged, left = charged.Add(c.Amount), left.Add(c.Amount.Sub(c.Refunded))
	}
	need := spec.Amount
	if need.IsZero() {
		need = left
	}
	if !need.IsPositive() || need.GreaterThan(left) {
		return JobRefund{}, fmt.Errorf("%w: job %s on %s was charged %s and %s is left to refund; %s cannot be refunded", ErrRefund, spec.ID, spec.Machine, charged, left, need)
	}
	out := JobRefund{Refunded: need}
	for i := len(charges) - 1; i >= 0 && need.IsPositive(); i-- {
		take := decimal.Min(need, charges[i].Amount.Sub(charges[i].Refunded))
		if !take.IsPositive() {
			continue
		}
		c, err := refundCharge(w, charges[i], take, spec.Description)
		if err != nil {
			return JobRefund{}, err
		}
		out.Charges, need = append(out.Charges, c), need.Sub(take)
	}
	return out, nil
}

// checkRefund refuses a negative amount, or one beyond the bank's
// precision; zero means all that is left.
func (b *Bank) checkRefund(amount decimal.Decimal) error {
	if amount.IsNegative() {
		return fmt.Errorf("%w: refund amount %s is negative", ledger.ErrInvalid, amount)
	}
	if !amount.IsZero() {
		if err := ledger.CheckAmount(amount, b.l.Settings().Precision); err != nil {
			return fmt.Errorf("refund: %w", err)
		}
	}
	return nil
}

// refundCharge returns amount of charge c to the allocations it debited,
// the last debited first, and journals it.
func refundCharge(w *ledger.Writer, c ledger.Charge, amount decimal.Decimal, description string) (ledger.Charge, error) {
	left := c.Amount.Sub(c.Refunded)
	if !amount.IsPositive() || amount.GreaterThan(left) {
		return ledger.Charge{}, fmt.Errorf("%w: charge %d took %s and %s was refunded already; %s cannot be refunded", ErrRefund, c.ID, c.Amount, c.Refunded, amount)
	}
	refunded := map[uint64]decimal.Decimal{}
	for _, r := range c.Refunds {
		refunded[r.Allocation] = refunded[r.Allocation].Add(r.Amount)
	}
	var back []ledger.Hold
	need := amount
	for i := len(c.Debits) - 1; i >= 0 && need.IsPositive(); i-- {
		d := c.Debits[i]
		room := d.Amount.Sub(refunded[d.Allocation])
		if room.IsPositive() {
			t := decimal.Min(room, need)
			back = append(back, ledger.Hold{Allocation: d.Allocation, Amount: t})
			refunded[d.Allocation] = refunded[d.Allocation].Add(t)
			need = need.Sub(t)
		}
	}
	c.Refunds = append(c.Refunds, back...)
	c.Refunded = c.Refunded.Add(amount)
	allocs, deltas, err := deltasOf(w.Tx(), c.Account, back, decimal.NewFromInt(1))
	if err != nil {
		return ledger.Charge{}, err
	}
	_, err = w.Move(ledger.Entry{Kind: ledger.KindRefund, Node: c.Project, Ref: c.JobID, Charge: &c, Description: description}, allocs, deltas)
	return c, err
}

// Charges lists a job's charges.
func (b *Bank) Charges(ctx context.Context, job Job) ([]ledger.Charge, error) {
	var out []ledger.Charge
	err := b.l.View(ctx, func(tx ledger.Tx) (err error) {
		out, err = tx.JobCharges(job.Machine, job.ID)
		return err
	})
	return out, err
}
