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
}

func (e *HomedError) Error() string {
	return fmt.Sprintf("job %s on %s: project %s is homed at %s: its liens and charges go there, through the server", e.Job.JobID, e.Job.Machine, e.Job.Project, e.Home)
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

// ForwardedCharge is the charge this bank answers its scheduler with once
// the home bank made the job's, with its price's explanation as any
// charge's detail has it.
func (e *HomedError) ForwardedCharge(now time.Time) (ledger.Charge, error) {
	detail, err := json.Marshal(chargeDetail{Explanation: e.Amount.Explanation})
	if err != nil {
		return ledger.Charge{}, fmt.Errorf("encode charge detail: %w", err)
	}
	return ledger.Charge{JobRef: e.Job, Amount: e.Amount.Credits, Debits: []ledger.Hold{}, Overdrawn: decimal.Zero, Refunded: decimal.Zero,
		Final: e.Final, Time: now, Detail: detail}, nil
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
