package slurm

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// SyncBank is what sync asks of the bank beyond the hooks.
type SyncBank interface {
	HookBank
	Liens(ctx context.Context, node string, all bool) ([]ledger.Lien, error)
	AddReservation(ctx context.Context, req ledger.Request, spec lien.ReservationSpec) (lien.Reservation, error)
	Flush(ctx context.Context, req ledger.Request, name string, running int64, end bool) (lien.FlushResult, error)
}

func (s *Site) syncBank() SyncBank { return s.Bank.(SyncBank) }

// ReleaseForgotten releases the active liens on the site's machine of
// jobs Slurm does not know any more (known: the job ids sacct and squeue
// list; a lien of run N of a job is the job's). Site.Bank must be a
// SyncBank.
func (s *Site) ReleaseForgotten(ctx context.Context, known []string, dry bool) error {
	liens, err := s.syncBank().Liens(ctx, "", false)
	if err != nil {
		return err
	}
	for _, l := range liens {
		if id, _ := SplitRunJobID(l.JobID); l.Machine != s.Machine || slices.Contains(known, id) {
			continue
		}
		if dry {
			fmt.Fprintf(s.Out, "would release the lien of job %s: Slurm no longer knows the job\n", l.JobID)
			continue
		}
		job := lien.Job{Machine: s.Machine, ID: l.JobID}
		if _, err := s.syncBank().Release(ctx, s.Request(fmt.Sprintf("slurm:%s:%s:%d:sync:release", s.Machine, l.JobID, l.ID)), job); err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "released the lien of job %s (%s on %s): Slurm no longer knows the job\n", l.JobID, l.Amount, l.Project)
	}
	return nil
}

// Reservations registers each Slurm reservation that is for one account
// the bank knows, and has a user to charge as, as a chargeable reservation
// (its CPUs, times, the account's project, its first user), and charges the
// idle processor-seconds of those registered since their last flush: what
// the jobs running in them used is subtracted (jobs that ended were
// charged with the reservation named, and count already). A reservation
// past its end, or that Slurm no longer has (deleted), is closed. newID
// is a new request id (a flush is not a retry of the last one). Site.Bank
// must be a SyncBank.
func (s *Site) Reservations(ctx context.Context, newID func() string, dry bool) error {
	b := s.syncBank()
	out, err := s.Run(ctx, "scontrol", "-o", "show", "reservation")
	if err != nil {
		return err
	}
	slurmRs, err := ParseReservations(out, time.Local)
	if err != nil {
		return err
	}
	registered, err := b.Reservations(ctx)
	if err != nil {
		return err
	}
	known, inSlurm := map[string]bool{}, map[string]bool{}
	for _, r := range registered {
		known[r.Name] = true
	}
	now := time.Now()
	for _, sr := range slurmRs {
		inSlurm[sr.Name] = true
		account := sr.ChargeAccount()
		if known[sr.Name] || account == "" || len(sr.Users) == 0 || !sr.End.After(now) {
			continue
		}
		project, err := Project(ctx, b, account)
		if err != nil {
			fmt.Fprintf(s.Out, "reservation %s: not registered: %s\n", sr.Name, BankWords(s.Message(err)))
			continue
		}
		spec := lien.ReservationSpec{Name: sr.Name, Machine: s.Machine, Processors: sr.CPUs, Start: sr.Start, End: sr.End, Project: project, User: sr.Users[0]}
		if dry {
			fmt.Fprintf(s.Out, "would register reservation %s (%d processors, %s) charged to %s\n", sr.Name, sr.CPUs, account, project)
			continue
		}
		r, err := b.AddReservation(ctx, s.Request(fmt.Sprintf("slurm:%s:reservation:%s", s.Machine, sr.Name)), spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "registered reservation %s (%d processors, %s) charged to %s\n", r.Name, r.Processors, account, r.Project)
		registered = append(registered, r)
	}
	if dry {
		return nil
	}
	running, err := s.Run(ctx, "squeue", "-h", "-t", "R", "-O", QueueFormat())
	if err != nil {
		return err
	}
	jobs, err := ParseQueueJobs(running, time.Local)
	if err != nil {
		return err
	}
	for _, r := range registered {
		if r.Ended || r.Machine != s.Machine || r.Start.After(now) {
			continue
		}
		var used int64
		for _, j := range jobs {
			if j.Reservation == r.Name {
				from := j.Start
				if r.Flushed.After(from) {
					from = r.Flushed
				}
				used += j.CPUs * max(0, int64(now.Sub(from)/time.Second))
			}
		}
		res, err := b.Flush(ctx, s.Request(newID()), r.Name, used, !r.End.After(now) || !inSlurm[r.Name])
		if err != nil {
			return err
		}
		if res.Charge != nil {
			fmt.Fprintf(s.Out, "charged reservation %s %d idle processor-seconds: %s to %s\n", r.Name, res.IdleSeconds, res.Charge.Charge.Amount, r.Project)
		}
	}
	return nil
}
