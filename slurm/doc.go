// Package slurm is ingot's side of Slurm. It reads what Slurm's commands
// and hooks hand ingot: the job description job_submit.lua passes on
// (Submission), a job as `squeue -O` prints it with fields no user writes
// (QueueJob), trackable resources (TRES), the lines of `sacct -P` and the
// runs of `sacct -D` (Run: each run of a requeued job is charged as a job
// of the bank's of its own, RunJobID), the account tree of `sacctmgr -P
// show assoc`, and the billing limits of `scontrol show assoc_mgr`; it maps
// Slurm accounts to the bank's nodes and the rate table to Slurm's billing
// (BillingOf).
//
// It also holds the logic of the hooks and of sync, behind a small API:
// the submit verdicts (Submitter), the prolog and epilog (Site.Prolog,
// Site.Epilog), and sync's settling of runs (Site.Runs, SettleRun, Report,
// WriteMetrics), limits (Site.Limits), forgotten liens and reservations.
// The bank is an interface (Bank, HookBank, SyncBank) and Slurm's commands
// a Run function, so that cmd/ingot's commands only fill them in, and the
// logic is tested with a fake bank and fake command output, without a
// process per case.
// Of ingot it imports charge, ledger and lien.
//
// Slurm's text is read strictly: a line with the wrong number of fields, a
// count that is not a whole number, or a time in no known form is an error
// naming the field, never a guess, because a guess would be a wrong
// charge. Fields that Slurm prints as "Unknown", "None", "N/A" or "(null)"
// read as unset, and so do Slurm's NO_VAL markers in a job description.
//
// Times without a zone are read in the location the caller gives: Slurm
// prints them in the controller's local time.
package slurm
