package lien

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// HomedError is the answer of Place and Charge for a job whose project is
// homed at a peer bank: nothing was held or charged here; the lien or
// charge is the home bank's to make, of Amount (this bank's credits) ×
// the home's rate ratio. The caller forwards it (traceback).
type HomedError struct {
	Home ledger.Home
	// Job is the job as this bank would have recorded it.
	Job ledger.JobRef
	// Amount is the price here, with its explanation.
	Amount charge.Amount
	// Expires is when the lien would have expired (a lien's only).
	Expires time.Time
	// Final says a charge is the job's last (a charge's only).
	Final bool
	// detail is a charge's detail as this package writes any charge's:
	// the job's usage and its price's explanation.
	detail json.RawMessage
}

func (e *HomedError) Error() string {
	return fmt.Sprintf("job %s on %s: project %s is homed at %s: its liens, charges, releases and refunds are made there", e.Job.JobID, e.Job.Machine, e.Job.Project, e.Home)
}

// Unwrap makes a HomedError an ErrHomed.
func (e *HomedError) Unwrap() error { return ErrHomed }

// ForwardedLien is the lien this bank answers its scheduler with once the
// home bank placed the job's: nothing is held here, and its detail is
// what this package writes for any lien, so that what reads a placement's
// answer (ingot lien place, the Slurm hooks) reads this one alike.
func (e *HomedError) ForwardedLien(now time.Time) (ledger.Lien, error) {
	detail, err := json.Marshal(Detail{Quoted: e.Amount.Credits})
	if err != nil {
		return ledger.Lien{}, fmt.Errorf("lien: encode detail: %w", err)
	}
	return ledger.Lien{JobRef: e.Job, Amount: e.Amount.Credits, Holds: []ledger.Hold{}, Charged: decimal.Zero, Created: now,
		Expires: e.Expires, State: ledger.LienActive, Detail: detail}, nil
}

// Forwarded says, in the answer to a job's operation that this bank
// forwarded to its project's home bank (traceback), where it was made
// and how the home bank answered.
type Forwarded struct {
	Peer        string          `json:"peer"`
	Project     string          `json:"project"`
	RateRatio   decimal.Decimal `json:"rate_ratio"`
	Transaction string          `json:"transaction"`
	// State is "done", or "pending" when the home bank could not be
	// reached and the operation was accepted within the project's credit
	// line: it is sent when the bank is back, and Answer is empty.
	State string `json:"state"`
	// Answer is the home bank's answer as it gave it: its amounts are in
	// the home bank's credits.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// back converts an amount of the home bank's credits into this bank's:
// ÷ the rate ratio, rounded to places.
func (f Forwarded) back(amount decimal.Decimal, places int32) decimal.Decimal {
	return amount.DivRound(f.RateRatio, places)
}

// ForwardedCharge is the charge this bank answers its scheduler with once
// the home bank made the job's (f), with the fields of any charge's
// answer, in this bank's credits: the amount is the job's price here, its
// detail the job's usage and the price's explanation; what the home bank
// overdrew, and its lien's figures after the charge, are the home bank's
// converted back (places: this bank's precision). Nothing was debited
// here, and no charge or lien of this bank's has an id for it: the home
// bank's ids are in f's answer.
func (e *HomedError) ForwardedCharge(now time.Time, f Forwarded, places int32) (ChargeResult, error) {
	r := ChargeResult{Charge: ledger.Charge{JobRef: e.Job, Amount: e.Amount.Credits, Debits: []ledger.Hold{}, Overdrawn: decimal.Zero, Refunded: decimal.Zero,
		Final: e.Final, Time: now, Detail: e.detail}, Overran: decimal.Zero, Released: decimal.Zero, Home: &f}
	if len(f.Answer) == 0 {
		return r, nil
	}
	var home ChargeResult
	if err := json.Unmarshal(f.Answer, &home); err != nil {
		return ChargeResult{}, fmt.Errorf("%w: home bank %s's answer to transaction %s: %v", ledger.ErrCorrupt, f.Peer, f.Transaction, err)
	}
	r.Charge.Overdrawn = f.back(home.Charge.Overdrawn, places)
	r.Overran, r.Released = f.back(home.Overran, places), f.back(home.Released, places)
	if home.Lien != nil {
		l := *home.Lien
		detail, err := json.Marshal(Detail{Quoted: f.back(l.Amount, places)})
		if err != nil {
			return ChargeResult{}, fmt.Errorf("lien: encode detail: %w", err)
		}
		l.ID, l.JobRef, l.Holds, l.Detail = 0, e.Job, []ledger.Hold{}, detail
		l.Amount, l.Charged = f.back(l.Amount, places), f.back(l.Charged, places)
		r.Lien = &l
	}
	return r, nil
}

// ForwardedRefund is the refund this bank answers with once the home bank
// made a job's (f): asked is the amount asked here, in this bank's
// credits; when it is zero (all that was left), what the home bank
// refunded converted back (places: this bank's precision), or zero while
// it has not answered. No charge of this bank's was refunded: the home
// bank's are in f's answer.
func ForwardedRefund(asked decimal.Decimal, f Forwarded, places int32) (JobRefund, error) {
	r := JobRefund{Refunded: asked, Charges: []ledger.Charge{}, Home: &f}
	if !asked.IsZero() || len(f.Answer) == 0 {
		return r, nil
	}
	var home JobRefund
	if err := json.Unmarshal(f.Answer, &home); err != nil {
		return JobRefund{}, fmt.Errorf("%w: home bank %s's answer to transaction %s: %v", ledger.ErrCorrupt, f.Peer, f.Transaction, err)
	}
	r.Refunded = f.back(home.Refunded, places)
	return r, nil
}

// The operations a peer bank asks of this one for the jobs of its
// projects homed here (traceback): amounts are in this bank's credits,
// the job's machine names the peer's ("PEER:MACHINE", so that no peer
// reaches another's jobs), and each runs within the change that records
// the peer's transaction.

// HoldFor places (or re-places) the lien of a peer's job: amount held on
// the project's account until expires, refused as any lien is when the
// project cannot cover it.
func (b *Bank) HoldFor(w *ledger.Writer, ref ledger.JobRef, amount decimal.Decimal, expires time.Time) (ledger.Lien, error) {
	if err := (Job{Machine: ref.Machine, ID: ref.JobID}).check(); err != nil {
		return ledger.Lien{}, err
	}
	if !expires.After(w.Now()) {
		return ledger.Lien{}, fmt.Errorf("%w: lien for job %s: it expires at %s, already past", ledger.ErrInvalid, ref.JobID, expires.Format(time.RFC3339))
	}
	node, err := ledger.ActiveNode(w.Tx(), ref.Project)
	if err != nil {
		return ledger.Lien{}, err
	}
	old, found, err := w.Tx().JobLien(ref.Machine, ref.JobID)
	if err != nil {
		return ledger.Lien{}, err
	}
	var own *ledger.Lien
	switch {
	case found && old.State == ledger.LienActive:
		own = &old
	case found && old.State == ledger.LienSettled:
		return ledger.Lien{}, fmt.Errorf("%w: job %s on %s was charged (lien %d)", ErrAlreadyCharged, ref.JobID, ref.Machine, old.ID)
	}
	holds, err := b.holdOn(w, node.Name, ref.Machine, amount, own)
	if err != nil {
		return ledger.Lien{}, fmt.Errorf("lien for job %s: %w", ref.JobID, err)
	}
	detail, err := json.Marshal(Detail{Quoted: amount})
	if err != nil {
		return ledger.Lien{}, fmt.Errorf("lien: encode detail: %w", err)
	}
	ref.Account = node.Account()
	l := ledger.Lien{JobRef: ref, Amount: amount, Holds: holds, Charged: decimal.Zero, Created: w.Now(), Expires: expires.UTC(), State: ledger.LienActive, Detail: detail}
	if own != nil {
		l.ID = own.ID
	} else if l.ID, err = w.Tx().NextLienID(); err != nil {
		return ledger.Lien{}, err
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindLienPlace, Node: node.Name, Ref: ref.JobID, Lien: &l})
	return l, err
}

// ChargeFor charges a peer's job amount: against its active lien, if it
// has one, else on the project ref names. As every charge, it never fails
// for lack of funds, and a job is charged finally once.
func (b *Bank) ChargeFor(w *ledger.Writer, ref ledger.JobRef, amount decimal.Decimal, final bool) (ChargeResult, error) {
	job := Job{Machine: ref.Machine, ID: ref.JobID}
	if err := job.check(); err != nil {
		return ChargeResult{}, err
	}
	if amount.IsNegative() {
		return ChargeResult{}, fmt.Errorf("%w: charge for job %s: amount %s is below 0", ledger.ErrInvalid, ref.JobID, amount)
	}
	tx := w.Tx()
	charges, err := tx.JobCharges(ref.Machine, ref.JobID)
	if err != nil {
		return ChargeResult{}, err
	}
	for _, c := range charges {
		if c.Final {
			return ChargeResult{}, fmt.Errorf("%w: job %s on %s (charge %d)", ErrAlreadyCharged, ref.JobID, ref.Machine, c.ID)
		}
	}
	c := ledger.Charge{JobRef: ref}
	var lien *ledger.Lien
	if l, found, err := tx.JobLien(ref.Machine, ref.JobID); err != nil {
		return ChargeResult{}, err
	} else if found && l.State == ledger.LienActive {
		if l.Project != ref.Project {
			return ChargeResult{}, fmt.Errorf("%w: charge for job %s names project %s, but its lien is on %s", ledger.ErrInvalid, ref.JobID, ref.Project, l.Project)
		}
		lien, c.JobRef, c.Lien = &l, l.JobRef, l.ID
	} else {
		node, err := ledger.ActiveNode(tx, ref.Project)
		if err != nil {
			return ChargeResult{}, err
		}
		c.Account = node.Account()
	}
	c.Final, c.Time = final, w.Now()
	detail, err := json.Marshal(chargeDetail{})
	if err != nil {
		return ChargeResult{}, fmt.Errorf("encode charge detail: %w", err)
	}
	return b.settle(w, c, lien, nil, pricedCharge{amount: charge.Amount{Credits: amount}, detail: detail})
}

// RefundFor returns amount (zero: all that is left) of a peer's job's
// charges, as RefundJob does a job's: each refund journaled as any is.
// The job's charges must be on the project ref names.
func (b *Bank) RefundFor(w *ledger.Writer, ref ledger.JobRef, amount decimal.Decimal, description string) (JobRefund, error) {
	spec := JobRefundSpec{Job: Job{Machine: ref.Machine, ID: ref.JobID}, Amount: amount, Description: description}
	if err := spec.Job.check(); err != nil {
		return JobRefund{}, err
	}
	if err := b.checkRefund(amount); err != nil {
		return JobRefund{}, err
	}
	charges, err := w.Tx().JobCharges(ref.Machine, ref.JobID)
	if err != nil {
		return JobRefund{}, err
	}
	for _, c := range charges {
		if c.Project != ref.Project {
			return JobRefund{}, fmt.Errorf("%w: refund of job %s names project %s, but its charge %d is on %s", ledger.ErrInvalid, ref.JobID, ref.Project, c.ID, c.Project)
		}
	}
	return refundJob(w, spec)
}

// ReleaseFor ends a peer's job's active lien without charging it.
func (b *Bank) ReleaseFor(w *ledger.Writer, job Job) (ledger.Lien, error) {
	if err := job.check(); err != nil {
		return ledger.Lien{}, err
	}
	return release(w, job)
}

// declineHomed answers the HomedError of a job without an active lien
// whose project is homed at a peer, by running do on a read-only
// transaction: a change that declines would still wait for a commit of
// its store's group, which for a group of refusals alone is an empty one.
// It answers nil for every other job, whose change then runs. The check
// and do share one read-only transaction.
func (b *Bank) declineHomed(ctx context.Context, job Job, user, project string, do func(w *ledger.Writer) error) error {
	var declined error
	err := b.l.Inspect(ctx, func(w *ledger.Writer) error {
		tx := w.Tx()
		if l, ok, err := tx.JobLien(job.Machine, job.ID); err != nil || ok && l.State == ledger.LienActive {
			return err
		}
		if p, err := resolve(tx, job.Machine, user, project, false); err != nil || p.project.Home == nil {
			return nil
		}
		declined = do(w)
		return nil
	})
	if err != nil {
		return err
	}
	if h, ok := errors.AsType[*HomedError](declined); ok {
		return h
	}
	return nil
}
