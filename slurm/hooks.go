package slurm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// HookBank is what the prolog and epilog ask of the bank beyond Bank.
type HookBank interface {
	Bank
	Place(ctx context.Context, req ledger.Request, spec lien.PlaceSpec) (lien.LienResult, error)
	Release(ctx context.Context, req ledger.Request, job lien.Job) (ledger.Lien, error)
	Reservations(ctx context.Context) ([]lien.Reservation, error)
}

// Hook is one run of PrologSlurmctld or EpilogSlurmctld: the job Slurm
// runs it for, the run, and what squeue says of the job.
type Hook struct {
	Name   string // "prolog" or "epilog"
	JobID  string // Slurm's $SLURM_JOB_ID
	Run    int64
	Queued QueueJob
}

// ReadHook reads job id as squeue lists it, with fields no user writes;
// envUser ($SLURM_JOB_USER, the controller's own word) must agree with it.
func (s *Site) ReadHook(ctx context.Context, name, id, envUser string) (Hook, error) {
	h := Hook{Name: name, JobID: id}
	out, err := s.Run(ctx, "squeue", "-h", "-t", "all", "-j", id, "-O", QueueFormat())
	if err != nil {
		return h, err
	}
	// For the first task of a job array, whose number is also the array's,
	// squeue lists every task: the job is the line of its own number.
	jobs, err := ParseQueueJobs(out, time.Local)
	if err != nil {
		return h, err
	}
	i := slices.IndexFunc(jobs, func(q QueueJob) bool { return q.ID == id })
	if i < 0 {
		return h, fmt.Errorf("slurm: squeue does not list job %s", id)
	}
	h.Queued = jobs[i]
	if envUser != "" && envUser != h.Queued.User {
		return h, fmt.Errorf("slurm: job %s: $SLURM_JOB_USER is %s, squeue says %s", id, envUser, h.Queued.User)
	}
	return h, nil
}

// HookError is err as a hook returns it: naming the hook, the job and the
// run, and keeping what err is.
func HookError(h Hook, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("slurm %s: job %s run %d: %w", h.Name, h.JobID, h.Run, err)
}

// logf writes one line of a hook's log: it names the hook, the job and the
// run, since the hooks of many jobs append to one file.
func (s *Site) logf(h Hook, format string, a ...any) {
	fmt.Fprintf(s.Log, "ingot slurm %s: job %s run %d: %s\n", h.Name, h.JobID, h.Run, fmt.Sprintf(format, a...))
}

func (s *Site) hookBank() HookBank { return s.Bank.(HookBank) }

func (s *Site) job(h Hook) lien.Job {
	return lien.Job{Machine: s.Machine, ID: RunJobID(h.JobID, h.Run)}
}

// Prolog places the lien of the run about to start: its number is the
// job's restart count (squeue's; Slurm's environment says the same here).
// Site.Bank must be a HookBank.
func (s *Site) Prolog(ctx context.Context, h *Hook) error {
	q := h.Queued
	h.Run = q.Restarts
	spec := lien.PlaceSpec{Job: s.job(*h), User: q.User,
		Request: charge.Request{Resources: q.Resources(), WallclockLimitSeconds: q.TimeLimit, Start: q.Start}}
	var err error
	if spec.Project, err = Project(ctx, s.Bank, q.Account); err != nil {
		return err
	}
	if q.TimeLimit == 0 {
		return fmt.Errorf("%w: job %s has no time limit: its lien cannot be priced", ledger.ErrInvalid, h.JobID)
	}
	r, err := s.hookBank().Place(ctx, s.Request(s.RequestID(h.JobID, h.Run, "lien")), spec)
	if err == nil {
		s.logf(*h, "lien %d of %s on %s", r.Lien.ID, r.Lien.Amount, r.Project)
	}
	return err
}

// PrologOutcome is what the prolog returns after Prolog (or opening the
// bank) ended in err: a refusal holds the job (Slurm requeues a job whose
// PrologSlurmctld fails) with the reason in its comment; a bank that
// cannot be asked holds it too, or with failOpen lets it run without a
// lien.
func (s *Site) PrologOutcome(ctx context.Context, h Hook, err error, failOpen bool) error {
	switch {
	case err == nil:
		return nil
	case s.Refused(err):
		why := "ingot: " + BankWords(s.Message(err))
		if len(why) > 200 {
			why = why[:200]
		}
		if _, cerr := s.Run(ctx, "scontrol", "update", "job="+h.JobID, "comment="+why); cerr != nil {
			s.logf(h, "%v", cerr)
		}
	case failOpen:
		s.logf(h, "runs without a lien (--fail-open): %s", s.Message(err))
		return nil
	}
	return HookError(h, err)
}

// Epilog settles the run that ended: the run Slurm requeued, from its
// record in `sacct -D` (what squeue shows then is the next run's), or the
// run that ended, from squeue, exitCode being $SLURM_JOB_EXIT_CODE. Site.Bank
// must be a HookBank.
func (s *Site) Epilog(ctx context.Context, h *Hook, exitCode string) error {
	q := h.Queued
	run, requeued := EpilogRun(q, time.Now())
	h.Run = run
	if requeued {
		return s.epilogRequeued(ctx, *h)
	}
	used := q.Used
	if !q.Start.IsZero() && q.End.After(q.Start) {
		used = int64(q.End.Sub(q.Start) / time.Second)
	}
	state, ran := EndState(q.State, exitCode, used, q.TimeLimit)
	if ran && q.NodeFailed() {
		// A node failure: charged as a failed run, or free.
		state = charge.Failed
		if s.NodeFail == NodeFailFree {
			s.logf(*h, "its node failed: not charged (--node-fail free)")
			ran = false
		}
	}
	if !ran {
		// Ended before it started, or free: nothing to charge; a lien
		// placed for this run is released.
		return s.release(ctx, *h)
	}
	project, err := Project(ctx, s.Bank, q.Account)
	if err != nil {
		return err
	}
	spec := lien.ChargeSpec{Job: s.job(*h), User: q.User, Project: project, Usage: charge.Usage{Resources: q.Resources(),
		WallclockSeconds: used, WallclockLimitSeconds: q.TimeLimit, Start: q.Start, End: q.End, State: state}}
	if spec.Reservation, err = s.chargeableReservation(ctx, q.Reservation); err != nil {
		return err
	}
	r, err := s.Bank.Charge(ctx, s.Request(s.RequestID(h.JobID, h.Run, "charge")), spec)
	if errors.Is(err, lien.ErrAlreadyCharged) {
		return nil // an epilog run again after its charge went through under another id, or sync's
	}
	if err == nil {
		s.logf(*h, "charged %s to %s (%s, %d s)", r.Charge.Amount, r.Charge.Project, state, used)
	}
	return err
}

// epilogRequeued settles a run Slurm requeued from its own record in
// `sacct -D`, as sync would, with Slurm's state for it (REQUEUED,
// NODE_FAIL, PREEMPTED); when slurmdbd cannot say (down, or the record not
// there yet) its lien is released and the next sync charges it.
func (s *Site) epilogRequeued(ctx context.Context, h Hook) error {
	runs, err := s.Runs(ctx, "-j", h.JobID)
	if err == nil {
		for _, r := range runs {
			if r.ID != h.JobID || r.Number != h.Run {
				continue
			}
			if settle, _ := r.Settle(s.NodeFail); settle == NotEnded {
				break
			}
			res, err := s.SettleRun(ctx, r, false)
			if err != nil {
				return err
			}
			if res.Charge != nil {
				s.logf(h, "requeued: charged %s to %s (%s, %d s)", res.Charge.Amount, res.Charge.Project, res.State, r.Elapsed)
				return nil
			}
			if res.Problem != "" {
				return errors.New(res.Problem)
			}
			return s.release(ctx, h)
		}
		err = fmt.Errorf("sacct -D does not list the run yet")
	}
	s.logf(h, "requeued: left to `ingot slurm sync`: %s", s.Message(err))
	return s.release(ctx, h)
}

// release releases the lien of the hook's run, if it has one.
func (s *Site) release(ctx context.Context, h Hook) error {
	_, err := s.hookBank().Release(ctx, s.Request(s.RequestID(h.JobID, h.Run, "release")), s.job(h))
	if err != nil && s.NotFound(err) {
		return nil
	}
	return err
}

// chargeableReservation is name, if the bank charges it (`slurm sync`
// registered it), so that the job's time in it is not charged as idle; ""
// for a reservation the bank does not know.
func (s *Site) chargeableReservation(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	rs, err := s.hookBank().Reservations(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range rs {
		if r.Name == name && !r.Ended {
			return name, nil
		}
	}
	return "", nil
}

// EndState is how a job ended, in the bank's terms, and whether it ran at
// all. While its epilog runs, Slurm 22.05 shows a job COMPLETING whatever
// ended it, with exit code 0 for a cancelled job as for a finished one:
// then a non-zero exit code ($SLURM_JOB_EXIT_CODE, a wait status) is a
// failure, a run that used its whole limit a timeout, and anything else
// completed. Slurm's own state is used where squeue gives it.
func EndState(slurmState, exitCode string, used, limit int64) (charge.ExitState, bool) {
	switch slurmState {
	case "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED":
		return 0, false
	case "COMPLETING", "RUNNING":
		switch {
		case exitCode != "0" && exitCode != "":
			return charge.Failed, true
		case limit > 0 && used >= limit:
			return charge.Timeout, true
		}
		return charge.Completed, true
	}
	s, err := charge.ParseExitState(slurmState)
	if err != nil {
		return charge.Failed, true
	}
	return s, true
}
