// Package slurmtest starts a real one-node Slurm cluster with accounting for
// a test, and stops it when the test ends: Start runs a munged, a MariaDB, a
// slurmdbd, a slurmctld and a slurmd of the test's own, in the foreground as
// child processes, with their configuration, state, sockets and logs in a
// temporary directory and every port chosen free on 127.0.0.1 at start, so
// that two runs, or a run and a leftover of another, do not clash.
//
// The cluster is Debian's Slurm 22.05 as docs/slurm-testing.md describes it:
// one node named after the host with a fixed number of CPUs (not the
// machine's: SlurmdParameters=config_overrides), one partition "debug" with
// no time limit, MUNGE authentication through the test's munged (AuthInfo
// for the cluster, AccountingStoragePass for slurmdbd: Slurm asks the default
// munged otherwise), and AccountingStorageEnforce on, so that a job needs an
// association: AddAccount and AddUser make them with sacctmgr.
//
// Slurm's commands run with Cluster.Env, which points SLURM_CONF at the
// cluster's slurm.conf; Run, Submit and WaitJob wrap the usual ones. Every
// command has a time limit, and every wait polls with a deadline.
//
// Slurm's daemons must run as root here (SlurmUser=root, and slurmd starts
// jobs as their users), so the package needs root, like CI. Jobs may be
// submitted as another local user (SubmitAs, with setpriv): the user must
// be in /etc/passwd for slurmd to start the job, so tests use Debian's
// nobody rather than create users.
//
// Stop, which the test's cleanup calls, cancels the jobs, stops the daemons
// in turn (SIGTERM, then SIGKILL to the process group), and then looks for
// anything the cluster started that outlived them: slurmstepd and the jobs'
// processes run in sessions of their own, outside the daemons' process
// groups, so every process the cluster starts carries a marker in its
// environment (or the cluster's directory in its command line), and Stop
// kills and reports what it finds.
//
// Without the binaries or without root, tests that call Start skip, except
// under INGOT_E2E=1, where they fail: CI must not pass by skipping.
package slurmtest
