// Package slurm holds the files `ingot slurm setup` installs into a Slurm
// cluster's configuration: job_submit.lua, which asks the bank for each
// job at submit, and the PrologSlurmctld and EpilogSlurmctld scripts,
// which place and charge the job's lien. They are text/template files,
// filled in with the site's settings (Settings); docs/slurm.md says what
// each does.
package slurm
