// Package slurm reads what Slurm's commands and hooks hand ingot: the job
// description job_submit.lua passes on (Submission), a job as `squeue -O`
// prints it with fields no user writes (QueueJob), trackable resources
// (TRES), the lines of `sacct -P`, and the account tree of `sacctmgr -P
// show assoc`; and it maps Slurm accounts to the bank's nodes. It is pure:
// it runs no command, and of ingot it imports package charge, whose
// Request and Resources a job becomes, and ledger's Excerpt, which quotes
// input in its errors.
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
