package slurm

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/charge"
)

// Runs. A job that Slurm requeues (its user or an admin with `scontrol
// requeue`, a node failure, preemption) keeps its number and runs again;
// each run is charged for what it used, as a job of the bank's of its own:
// run 0 is the job's number ("4711"), run N after it "4711.rN". The prolog
// knows its run by the restart count; the epilog by the restart count too,
// less one when the run was requeued (Slurm raises the count before the
// epilog of the run it requeued); `sync` by the order of `sacct -D`'s
// records of the job, one a run. The three agree on every kind of requeue
// seen on Slurm 22.05 (docs/slurm-testing.md); the bank refuses a second
// final charge of a job, so a run is charged once whichever charges it.

// RunJobID is the bank's job id of run number run of Slurm job id.
func RunJobID(id string, run int64) string {
	if run == 0 {
		return id
	}
	return id + ".r" + strconv.FormatInt(run, 10)
}

// SplitRunJobID is the Slurm job id and the run number of the bank's job
// id bankID (run 0 for a job id of no run).
func SplitRunJobID(bankID string) (id string, run int64) {
	i := strings.LastIndex(bankID, ".r")
	if i < 0 {
		return bankID, 0
	}
	n, err := strconv.ParseInt(bankID[i+2:], 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != bankID[i+2:] {
		return bankID, 0
	}
	return bankID[:i], n
}

// Run is one run of a job, as `sacct -D -X` lists it.
type Run struct {
	AcctJob
	// Number is the run's number: 0 for the first.
	Number int64
	// Last says no later run of the job is listed: the job was not
	// requeued after this one (or not yet).
	Last bool
}

// BankJobID is the bank's job id of the run.
func (r Run) BankJobID() string { return RunJobID(r.ID, r.Number) }

// NumberRuns numbers the records of `sacct -D -X` (every record of each
// job listed: see SplitIncomplete) by job and database index, the order
// the runs happened in.
func NumberRuns(records []AcctJob) []Run {
	sorted := slices.Clone(records)
	slices.SortStableFunc(sorted, func(a, b AcctJob) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.DBIndex, b.DBIndex)
	})
	runs := make([]Run, len(sorted))
	for i, r := range sorted {
		runs[i] = Run{AcctJob: r}
		if i > 0 && sorted[i-1].ID == r.ID {
			runs[i].Number = runs[i-1].Number + 1
		}
		runs[i].Last = i == len(sorted)-1 || sorted[i+1].ID != r.ID
	}
	return runs
}

// Incomplete is the ids of the jobs of records (from `sacct -D -X -S
// since`) whose earlier runs may be missing: sacct lists a run only if it
// was active after since, and a job's run is submitted when its previous
// run ends, so a job whose first listed run was submitted before since may
// have had runs before it. They are asked again by id, without -S, so
// that their runs are numbered from the first.
func Incomplete(records []AcctJob, since time.Time) []string {
	first := map[string]AcctJob{}
	for _, r := range records {
		if f, ok := first[r.ID]; !ok || r.DBIndex < f.DBIndex {
			first[r.ID] = r
		}
	}
	var ids []string
	for id, f := range first {
		if f.Submit.IsZero() || f.Submit.Before(since) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// NodeFail is what a site charges for a run that a node failure ended:
// NodeFailCharge (the default) charges the time it ran, NodeFailFree
// nothing.
type NodeFail uint8

const (
	NodeFailCharge NodeFail = iota
	NodeFailFree
)

// ParseNodeFail reads "charge" or "free".
func ParseNodeFail(s string) (NodeFail, error) {
	switch s {
	case "charge", "":
		return NodeFailCharge, nil
	case "free":
		return NodeFailFree, nil
	}
	return 0, fmt.Errorf("slurm: node failures are %q: want charge or free", s)
}

// Settlement is what is owed for a run.
type Settlement uint8

const (
	// NotEnded: the run has not ended (running, pending), nothing yet.
	NotEnded Settlement = iota
	// Nothing: the run used nothing (cancelled or refused before it
	// started, elapsed 0): there is nothing to charge.
	Nothing
	// Free: the site charges nothing for how the run ended (a node
	// failure under NodeFailFree).
	Free
	// Owed: the run is charged in the state Settle returns.
	Owed
)

// Settle says what run owes and in which of the bank's exit states its
// charge is priced: Slurm's state, except a run that was requeued
// (REQUEUED, or any run after which the job ran again) is "requeued",
// which every policy charges, and a node failure is charged, as a failed
// run, or free, as nodeFail says. The charge policy then prices the state
// as it does any job's (a cancelled or preempted run under a SUCCESSFUL
// policy is charged nothing).
func (r Run) Settle(nodeFail NodeFail) (Settlement, charge.ExitState) {
	state, err := charge.ParseExitState(r.State)
	if r.State == "REQUEUED" {
		state, err = charge.Requeued, nil
	}
	switch {
	case err != nil || state == charge.Running || r.End.IsZero():
		return NotEnded, 0 // RUNNING, PENDING, SUSPENDED, REQUEUE_HOLD...
	case r.Start.IsZero() || r.Elapsed == 0 || r.TRES["cpu"] == 0:
		return Nothing, 0
	case state == charge.NodeFail && nodeFail == NodeFailFree:
		return Free, state
	case state == charge.NodeFail && !r.Last:
		return Owed, charge.Requeued
	case state == charge.NodeFail:
		return Owed, charge.Failed
	}
	return Owed, state
}

// EpilogRun is the run an EpilogSlurmctld runs for, and whether Slurm
// requeued it, from what squeue says of the job then: a requeued run's
// job is PENDING (or still COMPLETING, with its end the expected one of
// the next run, in the future), and its restart count is already the next
// run's.
func EpilogRun(q QueueJob, now time.Time) (run int64, requeued bool) {
	switch q.State {
	case "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED":
		requeued = true
	default:
		requeued = q.End.After(now)
	}
	run = q.Restarts
	if requeued && run > 0 {
		run--
	}
	return run, requeued
}

// NodeFailed reports whether the controller says the job's node failed
// (the epilog of a run a node failure ended: Reason=NodeDown).
func (q QueueJob) NodeFailed() bool {
	return q.Reason == "NodeDown" || q.Reason == "NodeFail"
}
