package lien

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/hfs"
	"github.com/ingot-hpc/ingot/ledger"
)

// PlaceSpec asks for a lien: the job, who runs it, for which project (the
// user's default if empty), what it requests, and optionally the guaranteed
// quote it uses.
type PlaceSpec struct {
	Job
	User    string         `json:"user"`
	Project string         `json:"project,omitempty"`
	Request charge.Request `json:"request"`
	Quote   uint64         `json:"quote,omitempty"`
	// Replace re-prices an active lien of the job instead of returning it.
	Replace bool `json:"replace,omitempty"`
}

// Detail is what this package keeps in ledger.Lien.Detail: how the lien was
// priced and, after a fallback, which project the job asked for.
type Detail struct {
	Request charge.Request `json:"request"`
	Policy  charge.Policy  `json:"policy"`
	Quote   uint64         `json:"quote,omitempty"`
	// Requested is the project the job asked for when a fallback took it.
	Requested string `json:"requested_project,omitempty"`
	// Quoted is what the request was priced at (its itemised explanation
	// is in the placement's answer, not kept: a lien is written often).
	Quoted decimal.Decimal `json:"quoted"`
}

// LienResult answers a placement or extension.
type LienResult struct {
	Lien ledger.Lien `json:"lien"`
	// Project is the project actually used: the fallback, if one took the
	// job (FellBack), so that the scheduler can switch the job to it.
	Project  string `json:"project"`
	FellBack bool   `json:"fell_back"`
	// Requested is the project the job asked for.
	Requested string `json:"requested_project"`
	// Existing says the job already had this active lien; nothing changed.
	Existing bool          `json:"existing,omitempty"`
	Quote    charge.Amount `json:"quote"`
	// Home, for a job of a project homed at a peer bank, is where the
	// lien was placed and the home bank's answer (its lien, in its
	// credits).
	Home *Forwarded `json:"home,omitempty"`
}

// DetailOf decodes a lien's Detail.
func DetailOf(l ledger.Lien) (Detail, error) {
	var d Detail
	if err := json.Unmarshal(l.Detail, &d); err != nil {
		return d, fmt.Errorf("%w: lien %d detail: %v", ledger.ErrCorrupt, l.ID, err)
	}
	return d, nil
}

// resultOf is the answer about lien l priced as d says; quote is the
// priced amount with its explanation when it was just worked out.
func resultOf(l ledger.Lien, d Detail, quote *charge.Amount) LienResult {
	requested := d.Requested
	if requested == "" {
		requested = l.Project
	}
	r := LienResult{Lien: l, Project: l.Project, FellBack: d.Requested != "", Requested: requested, Existing: quote == nil}
	if quote != nil {
		r.Quote = *quote
	} else {
		r.Quote = charge.Amount{Credits: d.Quoted}
	}
	return r
}

// Place places (or re-places) the lien of a job.
func (b *Bank) Place(ctx context.Context, req ledger.Request, spec PlaceSpec) (LienResult, error) {
	if err := spec.Job.check(); err != nil {
		return LienResult{}, err
	}
	do := func(w *ledger.Writer) (LienResult, error) {
		tx := w.Tx()
		old, found, err := tx.JobLien(spec.Machine, spec.ID)
		if err != nil {
			return LienResult{}, err
		}
		var own *ledger.Lien
		if found && old.State == ledger.LienActive {
			if old.HoldsAt(w.Now()) && !spec.Replace {
				d, err := DetailOf(old)
				return resultOf(old, d, nil), err
			}
			own = &old
		}
		// A settled lien means the job ran and was charged; a released or
		// expired one may be followed by a new lien (a requeued job).
		if found && old.State == ledger.LienSettled {
			return LienResult{}, fmt.Errorf("%w: job %s on %s was charged (lien %d)", ErrAlreadyCharged, spec.ID, spec.Machine, old.ID)
		}
		cfg, err := b.pricingConfig(tx)
		if err != nil {
			return LienResult{}, err
		}
		p, err := resolve(tx, spec.Machine, spec.User, spec.Project, true)
		if err != nil {
			return LienResult{}, err
		}
		// A job's lien uses its quote once: re-placing it under the same
		// quote does not count again.
		reused := false
		if own != nil && spec.Quote != 0 {
			d, err := DetailOf(*own)
			if err != nil {
				return LienResult{}, err
			}
			reused = d.Quote == spec.Quote
		}
		pr, quoteRec, err := b.newJobPricing(w, cfg, p, spec.Quote, reused)
		if err != nil {
			return LienResult{}, err
		}
		request := withStart(spec.Request, w.Now())
		amount, err := pr.rates.Quote(pr.policy, pr.shape, request)
		if err != nil {
			return LienResult{}, fmt.Errorf("%w: lien for job %s: %v", ledger.ErrInvalid, spec.ID, err)
		}
		expires := request.Start.Add(time.Duration(request.WallclockLimitSeconds)*time.Second + time.Duration(cfg.GraceSeconds)*time.Second)
		if !expires.After(w.Now()) {
			return LienResult{}, fmt.Errorf("%w: lien for job %s: started %s with a limit of %ds, it would have expired at %s; charge it instead",
				ledger.ErrInvalid, spec.ID, request.Start.Format(time.RFC3339), request.WallclockLimitSeconds, expires.Format(time.RFC3339))
		}
		if h := p.project.Home; h != nil {
			ref := ledger.JobRef{JobID: spec.ID, Machine: spec.Machine, Project: p.project.Name, Account: p.project.Account(), User: p.user.Name}
			return LienResult{}, &HomedError{Home: *h, Job: ref, Amount: amount, Expires: expires}
		}
		project, holds, err := b.cover(w, cfg, p.project.Name, spec.Machine, amount.Credits, own)
		if err != nil {
			return LienResult{}, fmt.Errorf("lien for job %s: %w", spec.ID, err)
		}
		d := Detail{Request: request, Policy: pr.policy, Quote: pr.quote, Quoted: amount.Credits}
		if project != p.project.Name {
			d.Requested = p.project.Name
		}
		detail, err := json.Marshal(d)
		if err != nil {
			return LienResult{}, fmt.Errorf("lien: encode detail: %w", err)
		}
		l := ledger.Lien{JobRef: ledger.JobRef{JobID: spec.ID, Machine: spec.Machine, Project: project, Account: ledger.AccountOf(project), User: p.user.Name},
			Amount: amount.Credits, Holds: holds, Charged: decimal.Zero, Created: w.Now(), Expires: expires, State: ledger.LienActive, Detail: detail}
		if own != nil {
			l.ID = own.ID
		} else if l.ID, err = tx.NextLienID(); err != nil {
			return LienResult{}, err
		}
		if _, err := w.Append(ledger.Entry{Kind: ledger.KindLienPlace, Node: project, Ref: spec.ID, Lien: &l, Record: quoteRec}); err != nil {
			return LienResult{}, err
		}
		return resultOf(l, d, &amount), nil
	}
	if err := b.declineHomed(ctx, spec.Job, spec.User, spec.Project, func(w *ledger.Writer) error {
		_, err := do(w)
		return err
	}); err != nil {
		return LienResult{}, err
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindLienPlace, spec, do)
}

// newJobPricing is the pricing of a new lien, or of a charge without one:
// the rates in force, or the guaranteed quote named, which the job then
// uses once (the returned record counts the use) unless it used it
// already (reused).
func (b *Bank) newJobPricing(w *ledger.Writer, cfg Config, p who, quoteID uint64, reused bool) (pricing, *ledger.Record, error) {
	if quoteID == 0 {
		pr, err := b.pricing(w.Tx(), cfg, p)
		return pr, nil, err
	}
	q, err := loadQuote(w.Tx(), quoteID)
	if err != nil {
		return pricing{}, nil, err
	}
	if q.Machine != p.machine.Name || q.Project != p.project.Name {
		return pricing{}, nil, fmt.Errorf("%w: quote %d is for %s on %s", ErrQuote, quoteID, q.Project, q.Machine)
	}
	pr, err := quotePricing(q)
	if err != nil {
		return pricing{}, nil, err
	}
	if reused { // the job holds one of its uses; only expiry matters
		if !w.Now().Before(q.Expires) {
			return pricing{}, nil, fmt.Errorf("%w: quote %d expired at %s", ErrQuote, quoteID, q.Expires.Format(time.RFC3339))
		}
		return pr, nil, nil
	}
	if err := q.Use(w.Now()); err != nil {
		return pricing{}, nil, fmt.Errorf("%w: quote %d: %v", ErrQuote, quoteID, err)
	}
	rec, err := recordOf(recordQuote, quoteKey(q.ID), q)
	return pr, rec, err
}

// cover finds holds for amount on project, or else on its fallback. It
// returns the project that covers it.
func (b *Bank) cover(w *ledger.Writer, cfg Config, project, machine string, amount decimal.Decimal, own *ledger.Lien) (string, []ledger.Hold, error) {
	holds, firstErr := b.holdOn(w, project, machine, amount, own)
	if firstErr == nil || !errors.Is(firstErr, ledger.ErrInsufficientFunds) {
		return project, holds, firstErr
	}
	fallback := cfg.fallbackFor(project, machine)
	if fallback == "" || fallback == project {
		return "", nil, firstErr
	}
	if _, err := ledger.ActiveNode(w.Tx(), fallback); err != nil {
		return "", nil, fmt.Errorf("%w; fallback %s: %w", firstErr, fallback, err)
	}
	holds, err := b.holdOn(w, fallback, machine, amount, own)
	if err != nil {
		return "", nil, fmt.Errorf("%w; fallback: %w", firstErr, err)
	}
	return fallback, holds, nil
}

// holdOn chooses holds for amount on a project's account. The project must
// be able to take it under HFS, and the account's allocations usable on the
// machine must hold it. own (the job's previous lien, if any) does not count
// against it.
func (b *Bank) holdOn(w *ledger.Writer, project, machine string, amount decimal.Decimal, own *ledger.Lien) ([]ledger.Hold, error) {
	f, available, why, err := b.availableTo(w, project, machine, own)
	if err != nil {
		return nil, err
	}
	if amount.GreaterThan(available) {
		refused := fmt.Errorf("%w: project %s needs %s, %s available%s", ledger.ErrInsufficientFunds, project, amount, available, why)
		return nil, b.preemptionFor(w, refused, project, machine, amount, own)
	}
	return f.Hold(amount)
}

// preemptionFor is a refused lien's error, with what preemption would do
// for it where the account has owners: the jobs to release when that
// lets it through (a *ledger.PreemptionError), or why an underfed
// project's lien cannot take credits back. The bank releases nothing.
func (b *Bank) preemptionFor(w *ledger.Writer, refused error, project, machine string, amount decimal.Decimal, own *ledger.Lien) error {
	p, err := w.Preempt(project, machine, amount, own, b.l.Settings().Precision)
	switch {
	case err != nil:
		return fmt.Errorf("%w (what to preempt was not worked out: %v)", refused, err)
	case p.Outcome == hfs.Preempt.String():
		return &ledger.PreemptionError{Preemption: p, Err: refused}
	case p.Outcome == hfs.NoVictims.String() || p.Outcome == hfs.NoRoom.String():
		return fmt.Errorf("%w; %s", refused, p.Explain())
	}
	return refused
}

// availableTo is what a lien on project may take now on machine: the
// account's funds usable there (f), capped by the project's HFS share where
// the account is split (why then says so). own is as for holdOn.
func (b *Bank) availableTo(w *ledger.Writer, project, machine string, own *ledger.Lien) (f ledger.Funds, available decimal.Decimal, why string, err error) {
	account := ledger.AccountOf(project)
	if own != nil && own.Account != account {
		own = nil
	}
	if f, err = w.Funds(account, machine, own); err != nil {
		return f, available, "", err
	}
	share, limited, err := w.ShareAvailable(project, own, b.l.Settings().Precision)
	if err != nil {
		return f, available, "", err
	}
	available = f.Available()
	if limited && share.LessThan(available) {
		available = share
		why = fmt.Sprintf(" (its HFS share; %s has %s on %s)", account, f.Available(), machine)
	}
	return f, available, why, nil
}

// Extend raises the wallclock limit of a job's active lien: it is re-priced
// and must still be covered.
func (b *Bank) Extend(ctx context.Context, req ledger.Request, job Job, wallclockLimitSeconds int64) (LienResult, error) {
	if err := job.check(); err != nil {
		return LienResult{}, err
	}
	content := struct {
		Job
		Limit int64 `json:"wallclock_limit_seconds"`
	}{job, wallclockLimitSeconds}
	return ledger.Mutate(ctx, b.l, req, ledger.KindLienExtend, content, func(w *ledger.Writer) (LienResult, error) {
		l, d, err := activeLien(w, job)
		if err != nil {
			return LienResult{}, err
		}
		if wallclockLimitSeconds <= d.Request.WallclockLimitSeconds {
			return LienResult{}, fmt.Errorf("%w: extend job %s: new limit %ds is not above the current %ds", ledger.ErrInvalid, job.ID, wallclockLimitSeconds, d.Request.WallclockLimitSeconds)
		}
		cfg, err := b.pricingConfig(w.Tx())
		if err != nil {
			return LienResult{}, err
		}
		pr, err := b.jobPricing(w.Tx(), cfg, l, d)
		if err != nil {
			return LienResult{}, err
		}
		d.Request.WallclockLimitSeconds = wallclockLimitSeconds
		amount, err := pr.rates.Quote(pr.policy, pr.shape, d.Request)
		if err != nil {
			return LienResult{}, fmt.Errorf("%w: extend job %s: %v", ledger.ErrInvalid, job.ID, err)
		}
		// What incremental charges took is no longer held.
		hold := decimal.Max(amount.Credits.Sub(l.Charged), decimal.Zero)
		holds, err := b.holdOn(w, l.Project, l.Machine, hold, &l)
		if err != nil {
			return LienResult{}, fmt.Errorf("extend job %s: %w", job.ID, err)
		}
		d.Quoted = amount.Credits
		if l.Detail, err = json.Marshal(d); err != nil {
			return LienResult{}, fmt.Errorf("lien: encode detail: %w", err)
		}
		l.Amount, l.Holds = hold, holds
		l.Expires = d.Request.Start.Add(time.Duration(wallclockLimitSeconds)*time.Second + time.Duration(cfg.GraceSeconds)*time.Second)
		if _, err := w.Append(ledger.Entry{Kind: ledger.KindLienExtend, Node: l.Project, Ref: job.ID, Lien: &l}); err != nil {
			return LienResult{}, err
		}
		return resultOf(l, d, &amount), nil
	})
}

// MoveEnd moves the end of a job's active lien, as Gold's gchres -e did:
// later, for a job that runs longer at the price it was given, or
// earlier. A lien whose end passes holds nothing from that instant on.
// One past its end already cannot be moved: it has let its credits go,
// and a job that still runs needs a new lien.
func (b *Bank) MoveEnd(ctx context.Context, req ledger.Request, job Job, end time.Time) (ledger.Lien, error) {
	if err := job.check(); err != nil {
		return ledger.Lien{}, err
	}
	end = end.UTC()
	content := struct {
		Job
		End time.Time `json:"end"`
	}{job, end}
	return ledger.Mutate(ctx, b.l, req, ledger.KindLienModify, content, func(w *ledger.Writer) (ledger.Lien, error) {
		l, _, err := activeLien(w, job)
		if err != nil {
			return ledger.Lien{}, err
		}
		if !l.HoldsAt(w.Now()) {
			return ledger.Lien{}, fmt.Errorf("%w: the lien of job %s on %s expired at %s and holds nothing: place a new one",
				ledger.ErrInactive, job.ID, job.Machine, l.Expires.Format(time.RFC3339))
		}
		if !end.After(l.Created) {
			return ledger.Lien{}, fmt.Errorf("%w: the lien of job %s cannot end at %s, before it was placed (%s)",
				ledger.ErrInvalid, job.ID, end.Format(time.RFC3339), l.Created.Format(time.RFC3339))
		}
		description := fmt.Sprintf("end moved from %s to %s", l.Expires.Format(time.RFC3339), end.Format(time.RFC3339))
		l.Expires = end
		_, err = w.Append(ledger.Entry{Kind: ledger.KindLienModify, Node: l.Project, Ref: job.ID, Lien: &l, Description: description})
		return l, err
	})
}

// Release ends a job's active lien without charging it.
func (b *Bank) Release(ctx context.Context, req ledger.Request, job Job) (ledger.Lien, error) {
	if err := job.check(); err != nil {
		return ledger.Lien{}, err
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindLienRelease, job, func(w *ledger.Writer) (ledger.Lien, error) {
		return release(w, job)
	})
}

// release ends a job's active lien, within w.
func release(w *ledger.Writer, job Job) (ledger.Lien, error) {
	l, _, err := activeLien(w, job)
	if err != nil {
		return ledger.Lien{}, err
	}
	l.State = ledger.LienReleased
	_, err = w.Append(ledger.Entry{Kind: ledger.KindLienRelease, Node: l.Project, Ref: job.ID, Lien: &l})
	return l, err
}

// maxSweep bounds one sweep's transaction.
const maxSweep = 1000

// Sweep marks liens past their expiry as expired (they already stopped
// counting): one journal entry each, at most maxSweep per call.
func (b *Bank) Sweep(ctx context.Context, req ledger.Request) ([]ledger.Lien, error) {
	return ledger.Mutate(ctx, b.l, req, ledger.KindLienExpire, "sweep", func(w *ledger.Writer) ([]ledger.Lien, error) {
		expired, err := w.Tx().ExpiredLiens(w.Now(), maxSweep)
		if err != nil {
			return nil, err
		}
		for i := range expired {
			expired[i].State = ledger.LienExpired
			if _, err := w.Append(ledger.Entry{Kind: ledger.KindLienExpire, Node: expired[i].Project, Ref: expired[i].JobID, Lien: &expired[i]}); err != nil {
				return nil, err
			}
		}
		return expired, nil
	})
}

// activeLien returns a job's active lien and its detail.
func activeLien(w *ledger.Writer, job Job) (ledger.Lien, Detail, error) {
	l, ok, err := w.Tx().JobLien(job.Machine, job.ID)
	if err != nil {
		return l, Detail{}, err
	}
	if !ok || l.State != ledger.LienActive {
		return l, Detail{}, fmt.Errorf("%w: job %s on %s", ErrNoLien, job.ID, job.Machine)
	}
	d, err := DetailOf(l)
	return l, d, err
}

// jobPricing prices a job with a lien as the lien was priced: its guaranteed
// quote's table, or the rates in force under the lien's policy.
func (b *Bank) jobPricing(tx ledger.Tx, cfg Config, l ledger.Lien, d Detail) (pricing, error) {
	if d.Quote != 0 {
		q, err := loadQuote(tx, d.Quote)
		if err != nil {
			return pricing{}, err
		}
		return quotePricing(q)
	}
	m, ok, err := tx.Machine(l.Machine)
	if err != nil || !ok {
		return pricing{}, notFound(err, "no machine named %q", l.Machine)
	}
	t, err := b.pricingRates(tx)
	return pricing{rates: t, policy: d.Policy, shape: shapeOf(m)}, err
}

// Liens lists liens: the open ones (all, with all set), of a node's
// subtree when node is not empty. A lien is open until it is settled,
// released or swept; one past its end is listed as expired (asOf).
func (b *Bank) Liens(ctx context.Context, node string, all bool) ([]ledger.Lien, error) {
	var out []ledger.Lien
	now := b.l.Now()
	err := b.l.View(ctx, func(tx ledger.Tx) error {
		return tx.Liens(func(l ledger.Lien) (bool, error) {
			if (all || l.State == ledger.LienActive) && (node == "" || ledger.InSubtree(l.Project, node)) {
				out = append(out, asOf(l, now))
			}
			return true, nil
		})
	})
	return out, err
}

// JobLien returns the newest lien of a job, as it stands now (asOf).
func (b *Bank) JobLien(ctx context.Context, job Job) (ledger.Lien, error) {
	var l ledger.Lien
	err := b.l.View(ctx, func(tx ledger.Tx) error {
		var ok bool
		var err error
		l, ok, err = tx.JobLien(job.Machine, job.ID)
		if err == nil && !ok {
			err = NoLien(job)
		}
		return err
	})
	return asOf(l, b.l.Now()), err
}

// NoLien is the error of a job that has no lien.
func NoLien(job Job) error {
	return fmt.Errorf("%w: no lien for job %s on %s", ledger.ErrNotFound, job.ID, job.Machine)
}

// asOf is a lien as it stands at now: an active lien past its end is
// expired, as the next sweep will journal it, since it holds nothing
// from its end on. What is stored changes only with the sweep.
func asOf(l ledger.Lien, now time.Time) ledger.Lien {
	if l.State == ledger.LienActive && !l.HoldsAt(now) {
		l.State = ledger.LienExpired
	}
	return l
}
