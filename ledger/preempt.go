package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/hfs"
)

// Preemption: a project that owns credits (Policy.Ownership) takes them
// back from projects that borrowed them. The bank never releases a lien by
// itself: it names the jobs whose liens, once the scheduler has released
// them (requeueing or stopping the jobs), let the owner's lien through.
// The rules are package hfs's (Plan.Preempt), with a project's in-use its
// demand, its charges and liens: credits, unlike LSF's tokens, are spent,
// so what an owner's jobs were charged counts against what it owns.

// Victim is a running job a preemption names: the lien to release.
// Hidden marks one of a project the asker does not read (the server
// blanks all but Held).
type Victim struct {
	Machine string          `json:"machine,omitempty"`
	JobID   string          `json:"job_id,omitempty"`
	Project string          `json:"project,omitempty"`
	User    string          `json:"user,omitempty"`
	Lien    uint64          `json:"lien,omitempty"`
	Held    decimal.Decimal `json:"held"`
	Hidden  bool            `json:"hidden,omitempty"`
}

// Preemption answers what to preempt so that a lien of Amount on Project
// (on Machine; any machine when empty) fits. Outcome is hfs's: fits,
// beyond_share, not_underfed, no_victims, no_room or preempt; Victims are
// set with preempt, in the order chosen, the fewest needed. Free is what
// the lien finds of the account's funds now, Share what its HFS share
// gives (Available); Lacking what the funds lack. Underfed is the project
// or group whose unmet ownership, Deficit, lets it take credits back.
type Preemption struct {
	Project  string          `json:"project"`
	Machine  string          `json:"machine,omitempty"`
	Amount   decimal.Decimal `json:"amount"`
	Order    string          `json:"order"`
	Outcome  string          `json:"outcome"`
	Free     decimal.Decimal `json:"free"`
	Share    decimal.Decimal `json:"share"`
	Lacking  decimal.Decimal `json:"lacking"`
	Owned    decimal.Decimal `json:"owned"`
	InUse    decimal.Decimal `json:"in_use"`
	Underfed string          `json:"underfed,omitempty"`
	Deficit  decimal.Decimal `json:"deficit"`
	Victims  []Victim        `json:"victims"`
}

// Frees is what the victims' liens hold in all.
func (p Preemption) Frees() decimal.Decimal {
	sum := decimal.Zero
	for _, v := range p.Victims {
		sum = sum.Add(v.Held)
	}
	return sum
}

// Explain says in a sentence what the preemption found, and names the
// victims.
func (p Preemption) Explain() string {
	switch p.Outcome {
	case hfs.Fits.String():
		return fmt.Sprintf("a lien of %s on %s fits now: nothing to preempt", p.Amount, p.Project)
	case hfs.BeyondShare.String():
		return fmt.Sprintf("the account has the credits, but %s's HFS share gives it %s of %s: preemption only takes back what the pool lacks",
			p.Project, p.Share, p.Amount)
	case hfs.NotUnderfed.String():
		return fmt.Sprintf("%s owns %s and uses %s, and no group above it is underfed by the %s the account lacks: it takes nothing back",
			p.Project, p.Owned, p.InUse, p.Lacking)
	case hfs.NoVictims.String():
		return fmt.Sprintf("%s is underfed by %s, but no running job of an overfed project may be taken for it (none runs, or a branch at its limit has none)",
			p.Underfed, p.Deficit)
	case hfs.NoRoom.String():
		return fmt.Sprintf("%s is underfed by %s, but releasing every job that may be taken still leaves %s without room for %s (its HFS share or a limit)",
			p.Underfed, p.Deficit, p.Project, p.Amount)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is underfed by %s: preempt %d %s (%s) to free %s: ", p.Underfed, p.Deficit, len(p.Victims),
		map[bool]string{true: "job", false: "jobs"}[len(p.Victims) == 1], p.Order, p.Frees())
	hidden := 0
	for k, v := range p.Victims {
		if v.Hidden {
			hidden++
			continue
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "job %s on %s (%s, holds %s)", v.JobID, v.Machine, v.Project, v.Held)
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "and %d of projects you do not read", hidden)
	}
	return b.String()
}

// PreemptionError is a lien refused for lack of funds while preempting
// named jobs would let it through: it wraps ErrInsufficientFunds, and
// carries the answer for the scheduler.
type PreemptionError struct {
	Preemption Preemption
	Err        error // the refusal
}

func (e *PreemptionError) Error() string {
	return fmt.Sprintf("%v; %s", e.Err, e.Preemption.Explain())
}

func (e *PreemptionError) Unwrap() error { return e.Err }

// Preempt answers what to preempt so that a lien of amount on project, on
// machine (any machine when empty), fits now. It changes nothing.
func (l *Ledger) Preempt(ctx context.Context, project, machine string, amount decimal.Decimal) (Preemption, error) {
	if err := CheckAmount(amount, l.settings.Precision); err != nil {
		return Preemption{}, fmt.Errorf("preempt: %w", err)
	}
	var p Preemption
	err := l.Inspect(ctx, func(w *Writer) error {
		if _, err := ActiveNode(w.tx, project); err != nil {
			return err
		}
		if machine != "" {
			if err := activeMachine(w.tx, machine); err != nil {
				return err
			}
		}
		var err error
		p, err = w.Preempt(project, machine, amount, nil, l.settings.Precision)
		return err
	})
	return p, err
}

// Preempt is Ledger.Preempt inside a change; own (the job's previous lien,
// if any) does not count. On a machine it counts the allocations usable
// there; without one, every active allocation (as Ledger.Available).
func (w *Writer) Preempt(project, machine string, amount decimal.Decimal, own *Lien, precision int32) (Preemption, error) {
	account := AccountOf(project)
	out := Preemption{Project: project, Machine: machine, Amount: amount, Victims: []Victim{}}
	st, err := w.account(account)
	if err != nil {
		return out, err
	}
	s, err := loadShares(w.tx, st, account, w.now, own)
	if err != nil {
		return out, err
	}
	out.Order = s.nodes[0].Policy.Preemption.String()
	f := s.funds
	if machine != "" {
		f.Allocations = slices.DeleteFunc(slices.Clone(f.Allocations), func(a Allocation) bool { return a.Machine != "" && a.Machine != machine })
	}
	out.Free = decimal.Max(f.Available(), decimal.Zero)
	out.Lacking = decimal.Max(amount.Sub(out.Free), decimal.Zero)
	out.Share, out.Owned, out.InUse, out.Deficit = out.Free, decimal.Zero, decimal.Zero, decimal.Zero
	if s.hfsOn {
		if out.Share, err = s.available(project, precision); err != nil {
			return out, err
		}
	}
	if !slices.ContainsFunc(s.nodes, func(n Node) bool { return n.Policy.Ownership.IsPositive() }) {
		// Nobody owns anything, so nobody is underfed: the lien fits or
		// it does not (what hfs would say, without reading every lien).
		switch {
		case out.Lacking.IsPositive():
			out.Outcome = hfs.NotUnderfed.String()
		case out.Share.LessThan(amount):
			out.Outcome = hfs.BeyondShare.String()
		default:
			out.Outcome = hfs.Fits.String()
		}
		return out, nil
	}
	plan, err := s.plan(precision)
	if err != nil {
		return out, err
	}
	liens, jobs, err := preemptableJobs(w.tx, s, f, own, w.now)
	if err != nil {
		return out, err
	}
	got, err := plan.Preempt(hfs.PreemptRequest{Node: project, Amount: amount.Rat(), Free: out.Free.Rat(), Jobs: jobs,
		Usage: ratsOf(s.used), Order: s.nodes[0].Policy.Preemption.hfsOrder()})
	if err != nil {
		if errors.Is(err, hfs.ErrJobsAboveDemand) {
			return out, fmt.Errorf("%w: the liens of %s hold more than its running sums say: %v", ErrCorrupt, account, err)
		}
		return out, fmt.Errorf("preempt for %s: %w", project, err)
	}
	out.Outcome = got.Outcome.String()
	out.Owned, out.InUse = decimal.NewFromBigRat(got.Owned, precision), decimal.NewFromBigRat(got.InUse, precision)
	if got.Underfed != "" {
		out.Underfed, out.Deficit = got.Underfed, decimal.NewFromBigRat(got.Deficit, precision)
	}
	for _, k := range got.Victims {
		li := liens[k]
		out.Victims = append(out.Victims, Victim{Machine: li.Machine, JobID: li.JobID, Project: li.Project, User: li.User, Lien: li.ID,
			Held: decimal.NewFromBigRat(jobs[k].Held, precision)})
	}
	return out, nil
}

// preemptableJobs are the account's liens that hold credits now, but own,
// each node's newest first, and what each holds on the active allocations
// (its part of the demand) and on those of f (what its release frees).
func preemptableJobs(tx Tx, s *shareState, f Funds, own *Lien, now time.Time) ([]Lien, []hfs.Job, error) {
	all, err := tx.ActiveLiens(s.nodes[0].Name)
	if err != nil {
		return nil, nil, err
	}
	active, usable := map[uint64]bool{}, map[uint64]bool{}
	for _, a := range s.funds.Allocations {
		active[a.ID] = true
	}
	for _, a := range f.Allocations {
		usable[a.ID] = true
	}
	liens := slices.DeleteFunc(all, func(li Lien) bool { return !li.HoldsAt(now) || own != nil && li.ID == own.ID })
	slices.SortFunc(liens, func(a, b Lien) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	jobs := make([]hfs.Job, len(liens))
	for k, li := range liens {
		held, frees := decimal.Zero, decimal.Zero
		for _, h := range li.Holds {
			if active[h.Allocation] {
				held = held.Add(h.Amount)
			}
			if usable[h.Allocation] {
				frees = frees.Add(h.Amount)
			}
		}
		jobs[k] = hfs.Job{Node: li.Project, Held: held.Rat(), Frees: frees.Rat()}
	}
	return liens, jobs, nil
}

// ratsOf is amounts as package hfs takes them.
func ratsOf(m map[string]decimal.Decimal) map[string]*big.Rat {
	out := make(map[string]*big.Rat, len(m))
	for k, v := range m {
		out[k] = v.Rat()
	}
	return out
}
