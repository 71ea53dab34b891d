package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// slurmSite is a bank on a file for the Slurm hooks: machine hpc1, account
// chem with project chem.lab1 (amy's default), account bio, 1000 credits in
// chem; and a folder of fake Slurm commands first in PATH: squeue prints
// $FAKE_SQUEUE, scontrol appends its arguments to $FAKE_SCONTROL_LOG.
type slurmSite struct {
	*cliBank
	t   *testing.T
	dir string
	now time.Time
}

func newSlurmSite(t *testing.T) *slurmSite {
	b := newCLIBank(t)
	for _, args := range [][]string{
		{"machine", "add", "hpc1", "--cores", "2"}, {"account", "create", "chem"}, {"project", "create", "chem.lab1"},
		{"account", "create", "bio"}, {"user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1"},
		{"deposit", "chem", "1000"},
	} {
		b.ok(args...)
	}
	dir := t.TempDir()
	for name, script := range map[string]string{
		"squeue":   "#!/bin/sh\nprintf '%s\\n' \"$FAKE_SQUEUE\"\n",
		"scontrol": "#!/bin/sh\necho \"$@\" >> \"$FAKE_SCONTROL_LOG\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	t.Setenv("FAKE_SCONTROL_LOG", filepath.Join(dir, "scontrol.log"))
	t.Setenv("SLURM_CLUSTER_NAME", "hpc1")
	return &slurmSite{cliBank: b, t: t, dir: dir, now: time.Now().Truncate(time.Second)}
}

// job sets the hook's environment and what squeue says of job id: run by
// amy in Slurm account lab1, 1 CPU for limit (Slurm's time), in state,
// from start to end (Slurm's local times, from minutes after now).
func (s *slurmSite) job(id, restarts, state, limit, used string, start, end time.Duration) {
	s.t.Setenv("SLURM_JOB_ID", id)
	s.t.Setenv("SLURM_JOB_USER", "amy")
	s.t.Setenv("SLURM_JOB_RESTART_COUNT", restarts)
	at := func(d time.Duration) string { return s.now.Add(d).Local().Format("2006-01-02T15:04:05") }
	s.t.Setenv("FAKE_SQUEUE", strings.Join([]string{id, "amy", "lab1", "debug", "normal", state, limit, at(start), at(end), used, "1", "1", "1",
		"cpu=1,node=1,billing=1", "N/A", "N/A", "N/A"}, "|")+"|")
}

func (s *slurmSite) submit(args ...string) string {
	s.t.Helper()
	return strings.TrimSpace(s.ok(append([]string{"slurm", "submit", "--user", "amy", "--machine", "hpc1"}, args...)...))
}

// TestSlurmSubmitVerdicts: the submit hook's one line, for each thing the
// bank can say of a job.
func TestSlurmSubmitVerdicts(t *testing.T) {
	s := newSlurmSite(t)
	before := s.entries()
	job := []string{"--account", "lab1", "--min-cpus", "1", "--num-tasks", "4294967294", "--cpus-per-task", "65534", "--min-memory", "18446744073709551616"}
	if got := s.submit(append(job, "--time-limit", "10")...); got != "accept" {
		t.Errorf("a job chem.lab1 covers: %q", got)
	}
	if got := s.submit(append(job, "--time-limit", "60")...); got != "refuse insufficient funds: project chem.lab1 needs 3600, 1000 available" {
		t.Errorf("a job chem.lab1 cannot cover: %q", got)
	}
	if got := s.submit("--account", "nope", "--time-limit", "1", "--min-cpus", "1"); !strings.HasPrefix(got, "refuse ") || !strings.Contains(got, `account "nope": the bank has no project of that name`) {
		t.Errorf("an account the bank does not know: %q", got)
	}
	if got := s.submit("--time-limit", "4294967295", "--min-cpus", "1"); !strings.HasPrefix(got, "refuse the job has no time limit") {
		t.Errorf("an UNLIMITED job: %q", got)
	}
	if after := s.entries(); after != before {
		t.Errorf("submit verdicts wrote %d journal entries", after-before)
	}
	s.ok("deposit", "bio", "100000")
	s.ok("policy", "fallback", "bio")
	if got := s.submit(append(job, "--time-limit", "60")...); got != "account bio" {
		t.Errorf("a job the fallback takes: %q", got)
	}
	down := &cliBank{t: t, global: []string{"--server", "http://127.0.0.1:1", "--key-file", filepath.Join(s.dir, "none.key")}}
	if out, code := down.run(append([]string{"slurm", "submit", "--user", "amy", "--machine", "hpc1", "--time-limit", "10"}, job...)...); code != exitOK || !strings.HasPrefix(out, "error ") {
		t.Errorf("the bank cannot be asked: exit %d, %q", code, out)
	}
}

// TestSlurmPrologAndEpilog: the prolog places a job's lien and the epilog
// charges it, each idempotent when Slurm runs it again; a requeued run's
// lien is released and the next run charged: the job is charged once.
func TestSlurmPrologAndEpilog(t *testing.T) {
	s := newSlurmSite(t)
	s.job("41", "0", "RUNNING", "5:00", "0:00", 0, 5*time.Minute)
	for range 2 {
		s.ok("slurm", "prolog")
	}
	var l ledger.Lien
	s.json(&l, "lien", "show", "41")
	if l.State != ledger.LienActive || !l.Amount.Equal(dec(t, "300")) || l.Project != "chem.lab1" || l.User != "amy" {
		t.Errorf("lien after the prolog = %+v", l)
	}
	// Requeued: the epilog of run 0 releases its lien; run 1 places another.
	s.job("41", "0", "PENDING", "5:00", "0:00", 2*time.Minute, 7*time.Minute)
	s.ok("slurm", "epilog")
	s.json(&l, "lien", "show", "41")
	if l.State != ledger.LienReleased {
		t.Errorf("after a requeue the lien is %s", l.State)
	}
	s.job("41", "1", "RUNNING", "5:00", "0:00", 2*time.Minute, 7*time.Minute)
	s.ok("slurm", "prolog")
	s.job("41", "1", "COMPLETED", "5:00", "1:40", 2*time.Minute, 3*time.Minute+40*time.Second)
	for range 2 {
		s.ok("slurm", "epilog")
	}
	var charges []ledger.Charge
	s.json(&charges, "charge", "list", "41")
	if len(charges) != 1 || !charges[0].Amount.Equal(dec(t, "100")) {
		t.Fatalf("charges of job 41 = %+v", charges)
	}
	wantBalance(t, s.cliBank, "chem", "900", "0", "900")

	// A lien the project cannot cover: exit 4, and the reason on the job.
	s.job("42", "0", "RUNNING", "1-00:00:00", "0:00", 0, 24*time.Hour)
	s.refused(t, exitRefused, "needs 86400, 900 available", "slurm", "prolog")
	logged, _ := os.ReadFile(filepath.Join(s.dir, "scontrol.log"))
	if !strings.Contains(string(logged), "update job=42 comment=ingot: lien for job 42: insufficient funds: project chem.lab1 needs 86400, 900 available") {
		t.Errorf("scontrol was run with %q", logged)
	}
	// A job whose user is not the one the controller names is refused.
	s.job("43", "0", "RUNNING", "5:00", "0:00", 0, 5*time.Minute)
	t.Setenv("SLURM_JOB_USER", "bob")
	s.refused(t, exitError, "$SLURM_JOB_USER is bob, squeue says amy", "slurm", "prolog")
}

func TestSlurmSetup(t *testing.T) {
	s := newSlurmSite(t)
	dir := t.TempDir()
	args := []string{"slurm", "setup", "--machine", "hpc1", "--write", dir, "--ingot", "/usr/bin/ingot", "--log", "/var/log/slurm/ingot.log"}
	out := s.ok(args...)
	if !strings.Contains(out, "PrologSlurmctld="+filepath.Join(dir, "ingot-prolog")) || !strings.Contains(out, "JobSubmitPlugins=lua") {
		t.Errorf("setup printed:\n%s", out)
	}
	lua, _ := os.ReadFile(filepath.Join(dir, "job_submit.lua"))
	prolog, _ := os.ReadFile(filepath.Join(dir, "ingot-prolog"))
	if !strings.Contains(string(lua), `local ingot = "'/usr/bin/ingot' '--db' '`+s.db+`'"`) || !strings.Contains(string(lua), `local machine = "hpc1"`) {
		t.Errorf("job_submit.lua:\n%s", lua)
	}
	if !strings.Contains(string(prolog), "slurm prolog --machine 'hpc1' 2>>'/var/log/slurm/ingot.log'") || !strings.Contains(string(prolog), "PATH='"+s.dir+":") {
		t.Errorf("ingot-prolog:\n%s", prolog)
	}
	if info, err := os.Stat(filepath.Join(dir, "ingot-epilog")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("ingot-epilog: %v %v", info, err)
	}
	s.refused(t, exitRefused, "job_submit.lua exists (--force replaces it)", args...)
	s.ok(append(args, "--force")...)
	s.refused(t, exitUsage, "needs --machine", "slurm", "setup")
}
