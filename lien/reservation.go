package lien

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// Reservation is a chargeable reservation: processors of a machine set
// aside for [Start, End), whose idle processor-seconds are charged to
// Project at each flush and at the end. Jobs that run inside it are charged
// to their own projects as usual, and name it so that their processor-
// seconds are not counted idle.
type Reservation struct {
	// ReservationSpec is what was asked, with the project resolved.
	ReservationSpec
	// Flushed is the time up to which idle time has been charged.
	Flushed time.Time       `json:"flushed"`
	Charged decimal.Decimal `json:"charged"`
	Flushes int             `json:"flushes"`
	Ended   bool            `json:"ended"`
	// Spans are the charged jobs' runs inside the reservation that end after
	// Flushed; older ones have been counted.
	Spans []Span `json:"spans,omitempty"`
}

// Span is a job's run inside a reservation.
type Span struct {
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Processors int64     `json:"processors"`
}

// ReservationSpec is a reservation to add.
type ReservationSpec struct {
	Name       string    `json:"name"`
	Machine    string    `json:"machine"`
	Processors int64     `json:"processors"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Project    string    `json:"project,omitempty"`
	User       string    `json:"user"`
}

// AddReservation registers a chargeable reservation.
func (b *Bank) AddReservation(ctx context.Context, req ledger.Request, spec ReservationSpec) (Reservation, error) {
	if err := ledger.CheckMachineName(spec.Name); err != nil {
		return Reservation{}, fmt.Errorf("reservation name: %w", err)
	}
	if spec.Processors <= 0 || spec.Processors > charge.MaxCount {
		return Reservation{}, fmt.Errorf("%w: reservation %s: processors %d must be 1 to %d", ledger.ErrInvalid, spec.Name, spec.Processors, charge.MaxCount)
	}
	if !spec.End.After(spec.Start) || spec.End.Sub(spec.Start) > charge.MaxSeconds*time.Second {
		return Reservation{}, fmt.Errorf("%w: reservation %s: end must be after start, and within ten years of it", ledger.ErrInvalid, spec.Name)
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, spec, func(w *ledger.Writer) (Reservation, error) {
		if _, ok, err := w.Tx().Record(recordReservation, spec.Name); err != nil {
			return Reservation{}, err
		} else if ok {
			return Reservation{}, fmt.Errorf("%w: reservation %q", ledger.ErrExists, spec.Name)
		}
		p, err := resolve(w.Tx(), spec.Machine, spec.User, spec.Project, true)
		if err != nil {
			return Reservation{}, fmt.Errorf("reservation %s: %w", spec.Name, err)
		}
		spec.Start, spec.End, spec.Project, spec.User = spec.Start.UTC(), spec.End.UTC(), p.project.Name, p.user.Name
		r := Reservation{ReservationSpec: spec, Flushed: spec.Start, Charged: decimal.Zero}
		rec, err := recordOf(recordReservation, r.Name, r)
		if err != nil {
			return Reservation{}, err
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Node: r.Project, Ref: r.Name, Record: rec, Description: "reservation added"})
		return r, err
	})
}

// Reservations lists the reservations.
func (b *Bank) Reservations(ctx context.Context) ([]Reservation, error) {
	var out []Reservation
	err := b.l.View(ctx, func(tx ledger.Tx) (err error) {
		out, err = allRecords[Reservation](tx, recordReservation)
		return err
	})
	return out, err
}

// FlushResult answers a flush: the reservation after it and the idle charge
// (nil when nothing was due).
type FlushResult struct {
	Reservation Reservation   `json:"reservation"`
	Charge      *ChargeResult `json:"charge,omitempty"`
	IdleSeconds int64         `json:"idle_processor_seconds"`
	// DryRun says that nothing was charged or recorded: the result is what
	// a flush would do now (FlushDryRun), its charge without an id.
	DryRun bool `json:"dry_run,omitempty"`
	// Warning says that the idle charge takes the account past its credit
	// limit: a charge is never refused for lack of funds (the reservation
	// was used, or kept idle, already), so the allocation first in debit
	// order goes below its credit limit by what the others could not
	// cover, which the charge's Overdrawn gives.
	Warning string `json:"warning,omitempty"`
}

// Flush charges the reservation's idle processor-seconds from its last flush
// to now (or its end). running is what jobs still running inside it used in
// that interval, as the scheduler reports it; charged jobs are counted from
// their usage. end also closes the reservation.
func (b *Bank) Flush(ctx context.Context, req ledger.Request, name string, running int64, end bool) (FlushResult, error) {
	if running < 0 || running > charge.MaxCPUSeconds {
		return FlushResult{}, fmt.Errorf("%w: running processor-seconds %d out of range", ledger.ErrInvalid, running)
	}
	content := struct {
		Name    string `json:"name"`
		Running int64  `json:"running"`
		End     bool   `json:"end"`
	}{name, running, end}
	kind := ledger.KindCharge
	return ledger.Mutate(ctx, b.l, req, kind, content, func(w *ledger.Writer) (FlushResult, error) {
		return b.flush(w, name, running, end, false)
	})
}

// FlushDryRun is what Flush would do now, with the same arguments, done on
// a read-only transaction: the idle processor-seconds, the charge with the
// allocations it would debit, and the warning of an overdraft. Nothing is
// charged, journaled or recorded.
func (b *Bank) FlushDryRun(ctx context.Context, name string, running int64, end bool) (FlushResult, error) {
	if running < 0 || running > charge.MaxCPUSeconds {
		return FlushResult{}, fmt.Errorf("%w: running processor-seconds %d out of range", ledger.ErrInvalid, running)
	}
	var res FlushResult
	err := b.l.Inspect(ctx, func(w *ledger.Writer) (err error) {
		res, err = b.flush(w, name, running, end, true)
		return err
	})
	return res, err
}

// flush is Flush's change, or with dry its dry run, which journals nothing.
func (b *Bank) flush(w *ledger.Writer, name string, running int64, end, dry bool) (FlushResult, error) {
	var r Reservation
	ok, err := loadRecord(w.Tx(), recordReservation, name, &r)
	if err != nil {
		return FlushResult{}, err
	}
	if !ok || r.Ended {
		return FlushResult{}, fmt.Errorf("%w: %q is unknown or ended", ErrReservation, name)
	}
	to := w.Now().Truncate(time.Second)
	if to.After(r.End) {
		to = r.End
	}
	if end {
		r.Ended = true
	}
	from := r.Flushed
	res := FlushResult{DryRun: dry}
	if to.After(from) {
		seconds := int64(to.Sub(from) / time.Second)
		used := running
		for _, s := range r.Spans {
			used += s.Processors * overlapSeconds(s.Start, s.End, from, to)
		}
		idle := max(r.Processors*seconds-used, 0)
		res.IdleSeconds = idle
		r.Flushed, r.Flushes = to, r.Flushes+1
		r.Spans = keepSpans(r.Spans, to)
		if idle > 0 {
			cr, first, err := b.chargeIdle(w, &r, from, seconds, idle, dry)
			if err != nil {
				return FlushResult{}, err
			}
			res.Charge = &cr
			res.Reservation = r
			res.Warning = b.overdraftWarning(r, cr.Charge, first, dry)
			return res, nil
		}
	}
	res.Reservation = r
	if dry {
		return res, nil
	}
	rec, err := recordOf(recordReservation, r.Name, r)
	if err != nil {
		return FlushResult{}, err
	}
	_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Node: r.Project, Ref: r.Name, Record: rec, Description: "reservation flushed, nothing idle"})
	return res, err
}

// overdraftWarning is the warning of a flush whose idle charge c took (or,
// in a dry run, would take) the account past its credit limit, "" if it
// did not; first is the allocation that took what the others could not.
func (b *Bank) overdraftWarning(r Reservation, c ledger.Charge, first uint64, dry bool) string {
	if !c.Overdrawn.IsPositive() {
		return ""
	}
	p := b.l.Settings().Precision
	verb := "overdrew"
	if dry {
		verb = "would overdraw"
	}
	return fmt.Sprintf("reservation %s: the idle charge of %s %s %s past its credit limit: %s more than its allocations on %s hold with their credit limits, "+
		"debited from allocation %d", r.Name, c.Amount.StringFixed(p), verb, c.Account, c.Overdrawn.StringFixed(p), r.Machine, first)
}

// chargeIdle prices idle processor-seconds as a job of the reservation's
// processors over the interval under DEBITALLCPU, its CPU time being the
// idle time: the rate table (multipliers, time-of-day windows) applies as to
// any job. It records the reservation in the same entry; with dry it
// journals nothing, and the charge has no id. first is the allocation that
// takes what the others cannot cover (debit).
func (b *Bank) chargeIdle(w *ledger.Writer, r *Reservation, from time.Time, seconds, idle int64, dry bool) (res ChargeResult, first uint64, err error) {
	tx := w.Tx()
	cfg, err := b.pricingConfig(tx)
	if err != nil {
		return ChargeResult{}, 0, err
	}
	p, err := resolve(tx, r.Machine, r.User, r.Project, false)
	if err != nil {
		return ChargeResult{}, 0, err
	}
	pr, err := b.pricing(tx, cfg, p)
	if err != nil {
		return ChargeResult{}, 0, err
	}
	usage := charge.Usage{Resources: charge.Resources{Processors: r.Processors}, WallclockSeconds: seconds, CPUSeconds: idle,
		Start: from, End: from.Add(time.Duration(seconds) * time.Second), State: charge.Completed}
	priced, err := priceCharge(pr, charge.DebitAllCPU, usage, r.Name)
	if err != nil {
		return ChargeResult{}, 0, fmt.Errorf("%w: idle charge of reservation %s: %v", ledger.ErrInvalid, r.Name, err)
	}
	r.Charged = r.Charged.Add(priced.amount.Credits)
	c := ledger.Charge{JobRef: ledger.JobRef{JobID: fmt.Sprintf("reservation/%s/%d", r.Name, r.Flushes), Machine: r.Machine,
		Project: p.project.Name, Account: p.project.Account(), User: p.user.Name}, Final: true, Time: w.Now()}
	if dry {
		c, first, err := debit(w, c, nil, priced)
		return ChargeResult{Charge: c, Overran: decimal.Zero, Released: decimal.Zero}, first, err
	}
	rec, err := recordOf(recordReservation, r.Name, *r)
	if err != nil {
		return ChargeResult{}, 0, err
	}
	return b.settleFrom(w, c, nil, rec, priced)
}

// recordJobInReservation adds a charged job's run to its reservation, so
// that flushes do not count it idle.
func recordJobInReservation(tx ledger.Tx, name, machine string, u charge.Usage) (*ledger.Record, error) {
	var r Reservation
	ok, err := loadRecord(tx, recordReservation, name, &r)
	if err != nil {
		return nil, err
	}
	if !ok || r.Machine != machine {
		return nil, fmt.Errorf("%w: no reservation %q on %s", ErrReservation, name, machine)
	}
	if u.Start.IsZero() {
		return nil, fmt.Errorf("%w: a job inside reservation %s must report its start", ledger.ErrInvalid, name)
	}
	end := u.End
	if end.IsZero() {
		end = u.Start.Add(time.Duration(u.WallclockSeconds) * time.Second)
	}
	if end.After(r.Flushed) {
		start := u.Start
		if start.Before(r.Flushed) {
			start = r.Flushed // what came before was flushed already
		}
		r.Spans = append(r.Spans, Span{Start: start, End: end, Processors: u.Processors})
	}
	return recordOf(recordReservation, r.Name, r)
}

// overlapSeconds is how long [s1, e1) and [s2, e2) overlap.
func overlapSeconds(s1, e1, s2, e2 time.Time) int64 {
	start, end := s1, e1
	if s2.After(start) {
		start = s2
	}
	if e2.Before(end) {
		end = e2
	}
	if !end.After(start) {
		return 0
	}
	return int64(end.Sub(start) / time.Second)
}

func keepSpans(spans []Span, flushed time.Time) []Span {
	var out []Span
	for _, s := range spans {
		if s.End.After(flushed) {
			out = append(out, s)
		}
	}
	return out
}
