// Package slurm reads what Slurm's commands print, for ingot's Slurm
// hooks: the trackable resources (TRES) of a job, the lines of `sacct -P`,
// the associations of `sacctmgr -P show assoc`, and the jobs of `scontrol
// show job --json`. It is pure: it runs no command and imports nothing of
// ingot but package charge, whose Resources and ExitState a job becomes.
//
// Slurm's text is read strictly: a line with the wrong number of fields, a
// count that is not a whole number, or a time in no known form is an error
// naming the field, never a guess, because a guess would be a wrong
// charge. Fields that Slurm prints as "Unknown", "None" or "(null)" read as
// unset.
//
// Times without a zone (sacct's) are read in the location the caller
// gives: Slurm prints them in the controller's local time.
package slurm
