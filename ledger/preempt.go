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
//
// The account's plan and its liens come from the plan cache when it holds
// them at the account's version, as it does after the first preemption
// asked about the account: reading and decoding every active lien and
// node is most of the answer's cost otherwise.
func (w *Writer) Preempt(project, machine string, amount decimal.Decimal, own *Lien, precision int32) (Preemption, error) {
	account := AccountOf(project)
	q := preemptQuery{out: Preemption{Project: project, Machine: machine, Amount: amount, Victims: []Victim{},
		Share: decimal.Zero, Owned: decimal.Zero, InUse: decimal.Zero, Deficit: decimal.Zero}, precision: precision}
	root, err := GetNode(w.tx, account)
	if err != nil {
		return q.out, err
	}
	q.order = root.Policy.Preemption
	q.out.Order = q.order.String()
	active, err := w.activeAllocations(account)
	if err != nil {
		return q.out, err
	}
	q.active = active
	anywhere := !slices.ContainsFunc(q.active, func(a Allocation) bool { return !q.usable(a, machine) })

	// From the cache, the free credits are the pool less the demands
	// (remaining amounts and credit limits less what liens hold) when the
	// lien may use every active allocation.
	if own == nil && w.plans != nil && anywhere {
		version, err := w.accountVersion(account)
		if err != nil {
			return q.out, err
		}
		ok, err := w.plans.preempt(account, version, w.now, func(e *cachedPlan) error {
			q.setFree(e.free())
			return q.answer(e)
		})
		if ok || err != nil {
			return q.out, err
		}
	}
	st, err := w.account(account)
	if err != nil {
		return q.out, err
	}
	f := Funds{Account: account, Allocations: q.active}
	if f.Reserved, err = reservedAt(w.tx, st, account, w.now, own); err != nil {
		return q.out, err
	}
	f.Allocations = slices.DeleteFunc(slices.Clone(q.active), func(a Allocation) bool { return !q.usable(a, machine) })
	q.setFree(f.Available())
	var nodes []Node
	if own == nil && w.plans != nil {
		nodes = w.plans.nodes(account, st.Version, w.now)
	}
	s, err := loadShares(w.tx, st, account, w.now, own, nodes)
	if err != nil {
		return q.out, err
	}
	e := &cachedPlan{hfsOn: s.hfsOn, owners: hasOwners(s.nodes)}
	if s.hfsOn {
		if e.plan, err = s.plan(precision); err != nil {
			return q.out, err
		}
	}
	if e.owners && own == nil && w.plans != nil {
		e.jobs = w.plans.takeJobs(account, st.Version, w.now)
	}
	if e.owners && e.jobs == nil {
		liens, err := w.tx.ActiveLiens(account)
		if err != nil {
			return q.out, err
		}
		e.jobs = newAccountJobs(liens, q.active, own, w.now)
	}
	if err := q.answer(e); err != nil {
		return q.out, err
	}
	if own == nil && w.plans != nil {
		if err := w.plans.store(w.tx, account, st.Version, s, w.now, precision); err != nil {
			return q.out, err
		}
		w.plans.keepJobs(account, st.Version, e.jobs)
	}
	return q.out, nil
}

// hasOwners says whether a project of the nodes owns credits: only then
// may a lien take any back.
func hasOwners(nodes []Node) bool {
	return slices.ContainsFunc(nodes, func(n Node) bool { return n.Policy.Ownership.IsPositive() })
}

// preemptQuery is one preemption being answered: what Writer.Preempt
// read of the account, and the answer it fills in.
type preemptQuery struct {
	out       Preemption
	precision int32
	order     PreemptionOrder
	active    []Allocation
}

// setFree sets what the lien finds of the account's funds, and what they
// lack.
func (q *preemptQuery) setFree(available decimal.Decimal) {
	q.out.Free = decimal.Max(available, decimal.Zero)
	q.out.Lacking = decimal.Max(q.out.Amount.Sub(q.out.Free), decimal.Zero)
}

// usable says whether a lien on machine may hold credits of allocation a
// (any machine when machine is empty).
func (q *preemptQuery) usable(a Allocation, machine string) bool {
	return machine == "" || a.Machine == "" || a.Machine == machine
}

// answer works the preemption out on an account's plan (nil when HFS is
// off) and jobs (nil when nobody owns anything: nobody is underfed, and
// nothing need be read).
func (q *preemptQuery) answer(e *cachedPlan) error {
	out := &q.out
	out.Share = out.Free
	if e.hfsOn {
		a, err := e.plan.Available(out.Project)
		if err != nil {
			return fmt.Errorf("HFS availability of %s: %w", out.Project, err)
		}
		out.Share = decimal.NewFromBigRat(a, q.precision)
	}
	if !e.owners {
		switch {
		case out.Lacking.IsPositive():
			out.Outcome = hfs.NotUnderfed.String()
		case out.Share.LessThan(out.Amount):
			out.Outcome = hfs.BeyondShare.String()
		default:
			out.Outcome = hfs.Fits.String()
		}
		return nil
	}
	got, err := e.plan.Preempt(hfs.PreemptRequest{Node: out.Project, Amount: out.Amount.Rat(), Free: out.Free.Rat(),
		Jobs: e.jobs.freeing(q.active, func(a Allocation) bool { return q.usable(a, out.Machine) }), Order: q.order.hfsOrder()})
	if err != nil {
		if errors.Is(err, hfs.ErrJobsAboveDemand) {
			return fmt.Errorf("%w: the liens of %s hold more than its running sums say: %v", ErrCorrupt, AccountOf(out.Project), err)
		}
		return fmt.Errorf("preempt for %s: %w", out.Project, err)
	}
	out.Outcome = got.Outcome.String()
	out.Owned, out.InUse = decimal.NewFromBigRat(got.Owned, q.precision), decimal.NewFromBigRat(got.InUse, q.precision)
	if got.Underfed != "" {
		out.Underfed, out.Deficit = got.Underfed, decimal.NewFromBigRat(got.Deficit, q.precision)
	}
	for _, ref := range got.Victims {
		li := e.jobs.liens[ref.Node][ref.Index]
		out.Victims = append(out.Victims, Victim{Machine: li.Machine, JobID: li.JobID, Project: li.Project, User: li.User, Lien: li.ID,
			Held: decimal.NewFromBigRat(e.jobs.jobs[ref.Node][ref.Index].Held, q.precision)})
	}
	return nil
}

// accountJobs are an account's liens that hold credits now, by project,
// each project's newest first (they lose the least work), with what each
// holds of the demand (on the active allocations) in hfs's form. The plan
// cache keeps them current (add, remove) once a preemption asked for them.
type accountJobs struct {
	liens map[string][]Lien // without their Detail
	jobs  map[string][]hfs.Job
}

func newAccountJobs(liens []Lien, active []Allocation, own *Lien, now time.Time) *accountJobs {
	a := &accountJobs{liens: map[string][]Lien{}, jobs: map[string][]hfs.Job{}}
	counted := map[uint64]bool{}
	for _, al := range active {
		counted[al.ID] = true
	}
	for _, li := range liens {
		if li.HoldsAt(now) && (own == nil || li.ID != own.ID) {
			a.add(li, counted)
		}
	}
	return a
}

// add puts a lien among its project's, in order.
func (a *accountJobs) add(li Lien, counted map[uint64]bool) {
	li.Detail = nil
	held := decimal.Zero
	for _, h := range li.Holds {
		if counted[h.Allocation] {
			held = held.Add(h.Amount)
		}
	}
	liens := a.liens[li.Project]
	k, _ := slices.BinarySearchFunc(liens, li, func(x, y Lien) int {
		if c := y.Created.Compare(x.Created); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	a.liens[li.Project] = slices.Insert(liens, k, li)
	a.jobs[li.Project] = slices.Insert(a.jobs[li.Project], k, hfs.Job{Held: held.Rat()})
}

// remove takes a lien out, if it is there.
func (a *accountJobs) remove(li Lien) {
	liens := a.liens[li.Project]
	if k := slices.IndexFunc(liens, func(x Lien) bool { return x.ID == li.ID }); k >= 0 {
		a.liens[li.Project] = slices.Delete(liens, k, k+1)
		a.jobs[li.Project] = slices.Delete(a.jobs[li.Project], k, k+1)
	}
}

// freeing is the jobs with what releasing each frees for a lien that may
// use the allocations usable says: what it holds, unless some active
// allocation is not usable, when the holds there do not count.
func (a *accountJobs) freeing(active []Allocation, usable func(Allocation) bool) map[string][]hfs.Job {
	unusable := map[uint64]bool{}
	for _, al := range active {
		if !usable(al) {
			unusable[al.ID] = true
		}
	}
	if len(unusable) == 0 {
		return a.jobs
	}
	out := make(map[string][]hfs.Job, len(a.jobs))
	for project, jobs := range a.jobs {
		out[project] = slices.Clone(jobs)
		for k, li := range a.liens[project] {
			frees := jobs[k].Held
			for _, h := range li.Holds {
				if unusable[h.Allocation] {
					frees = new(big.Rat).Sub(frees, h.Amount.Rat())
				}
			}
			out[project][k].Frees = frees
		}
	}
	return out
}
