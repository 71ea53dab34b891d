package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/slurm"
)

// slurmSite is a bank on a file for the Slurm hooks: machine hpc1, account
// chem with project chem.lab1 (amy's default), account bio, 1000 credits in
// chem; and a folder of fake Slurm commands first in PATH: squeue prints
// $FAKE_SQUEUE (a job), $FAKE_SQUEUE_IDS (-o %A) or $FAKE_SQUEUE_RUNNING
// (-t R), scontrol $FAKE_RESERVATIONS (show reservation) or appends its
// arguments to $FAKE_SCONTROL_LOG, sacct
// prints $FAKE_SACCT, sacctmgr $FAKE_ASSOC, $FAKE_LIMITS or $FAKE_USERS
// (and logs a modify in $FAKE_SCONTROL_LOG).
type slurmSite struct {
	*cliBank
	t   *testing.T
	dir string
	now time.Time
	// reason is squeue's Reason for the next job ("None" when empty).
	reason string
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
		"squeue":   "#!/bin/sh\ncase \"$*\" in *'-o %A'*) printf '%s\\n' \"$FAKE_SQUEUE_IDS\";; *'-t R '*) printf '%s\\n' \"$FAKE_SQUEUE_RUNNING\";; *) printf '%s\\n' \"$FAKE_SQUEUE\";; esac\n",
		"scontrol": "#!/bin/sh\ncase \"$*\" in *'show reservation'*) printf '%s\\n' \"$FAKE_RESERVATIONS\";; *'show assoc_mgr'*) printf '%s\\n' \"$FAKE_ASSOC_MGR\";; *) echo \"$@\" >> \"$FAKE_SCONTROL_LOG\";; esac\n",
		"sacct":    "#!/bin/sh\nprintf '%s\\n' \"$FAKE_SACCT\"\n",
		"sacctmgr": "#!/bin/sh\ncase \"$*\" in *modify*) echo sacctmgr \"$@\" >> \"$FAKE_SCONTROL_LOG\";; *assoc*format*) printf '%s\\n' \"$FAKE_ASSOC\";; *assoc*) printf '%s\\n' \"$FAKE_LIMITS\";; *) printf '%s\\n' \"$FAKE_USERS\";; esac\n",
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
		"cpu=1,node=1,billing=1", "N/A", "N/A", "N/A", "(null)", restarts, orDefault(s.reason, "None")}, "|")+"|")
}

// sacct sets what sacct -D prints: the header and these lines, each a
// record JobIDRaw|...|ExitCode|DBIndex|Submit of user amy in account lab1.
func (s *slurmSite) sacct(lines ...string) {
	s.t.Setenv("FAKE_SACCT", strings.Join(append([]string{slurm.SacctHeader()}, lines...), "\n"))
}

// record is one line of sacct -D: job id's run of cpus CPUs from start to
// end (minutes after now), in state, its database index db.
func (s *slurmSite) record(id string, db, cpus int, state string, start, end time.Duration) string {
	at := func(d time.Duration) string { return s.now.Add(d).Local().Format("2006-01-02T15:04:05") }
	elapsed := int64((end - start) / time.Second)
	return fmt.Sprintf("%s|hpc1|lab1|amy|debug|normal|billing=%d,cpu=%d,node=1|%d|5|%s|%s|%s|0:0|%d|%s", id, cpus, cpus, elapsed, at(start), at(end), state, db, at(start))
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
	// No account ((null), as Lua writes it) and no default project in the
	// bank: refused, saying so.
	s.ok("user", "add", "cy", "--member", "chem.lab1")
	if got := strings.TrimSpace(s.ok("slurm", "submit", "--user", "cy", "--machine", "hpc1", "--account", "(null)", "--time-limit", "1", "--min-cpus", "1")); !strings.HasPrefix(got, "refuse ") || !strings.Contains(got, "user cy has no default project") {
		t.Errorf("a job with no account and no default: %q", got)
	}
	if got := s.submit("--account", "lab1", "--time-limit", "1", "--min-cpus", "99999999999999999999"); !strings.HasPrefix(got, "refuse ") || !strings.Contains(got, "min_cpus") {
		t.Errorf("an absurd CPU count: %q", got)
	}
	before = s.entries()
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
	s.job("41", "0", "RUNNING", "5:00", "0:00", -2*time.Minute, 3*time.Minute)
	for range 2 {
		s.ok("slurm", "prolog")
	}
	var l ledger.Lien
	s.json(&l, "lien", "show", "41")
	if l.State != ledger.LienActive || !l.Amount.Equal(dec(t, "300")) || l.Project != "chem.lab1" || l.User != "amy" {
		t.Errorf("lien after the prolog = %+v", l)
	}
	// Requeued: Slurm raises the restart count, then runs the epilog of run
	// 0 with the job COMPLETING and its end the next run's expected one;
	// the epilog charges run 0 from its record in sacct -D (120 s), and
	// run 1 is a job of the bank's of its own, 41.r1.
	s.sacct(s.record("41", 7, 1, "REQUEUED", -2*time.Minute, 0))
	s.job("41", "1", "COMPLETING", "5:00", "0:00", 0, 5*time.Minute)
	s.ok("slurm", "epilog")
	s.json(&l, "lien", "show", "41")
	if l.State != ledger.LienSettled {
		t.Errorf("after a requeue the lien of run 0 is %s", l.State)
	}
	s.job("41", "1", "RUNNING", "5:00", "0:00", -time.Minute, 4*time.Minute)
	s.ok("slurm", "prolog")
	s.job("41", "1", "COMPLETING", "5:00", "1:40", -3*time.Minute, -80*time.Second)
	for range 2 {
		s.ok("slurm", "epilog")
	}
	for job, want := range map[string]string{"41": "120", "41.r1": "100"} {
		var charges []ledger.Charge
		s.json(&charges, "charge", "list", job)
		if len(charges) != 1 || !charges[0].Amount.Equal(dec(t, want)) {
			t.Fatalf("charges of job %s = %+v, want one of %s", job, charges, want)
		}
	}
	wantBalance(t, s.cliBank, "chem", "780", "0", "780")

	// A lien the project cannot cover: exit 4, and the reason on the job.
	s.job("42", "0", "RUNNING", "1-00:00:00", "0:00", 0, 24*time.Hour)
	s.refused(t, exitRefused, "needs 86400, 780 available", "slurm", "prolog")
	logged, _ := os.ReadFile(filepath.Join(s.dir, "scontrol.log"))
	if !strings.Contains(string(logged), "update job=42 comment=ingot: lien for job 42: insufficient funds: project chem.lab1 needs 86400, 780 available") {
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
	if epilog, _ := os.ReadFile(filepath.Join(dir, "ingot-epilog")); strings.Contains(string(epilog), "--node-fail") {
		t.Errorf("ingot-epilog with node failures charged (the default):\n%s", epilog)
	}
	s.ok(append(args, "--force", "--node-fail", "free")...)
	if epilog, _ := os.ReadFile(filepath.Join(dir, "ingot-epilog")); !strings.Contains(string(epilog), "slurm epilog --machine 'hpc1' --node-fail free 2>>") {
		t.Errorf("ingot-epilog with --node-fail free:\n%s", epilog)
	}
	s.refused(t, exitUsage, `node failures are "maybe"`, append(args, "--force", "--node-fail", "maybe")...)
	// The help says what --fail-open does, with no placeholder made of a
	// command's name.
	if help := s.ok("slurm", "setup", "--help"); !strings.Contains(help, "--fail-open  ") || strings.Contains(help, "--fail-open ingot") {
		t.Errorf("slurm setup --help:\n%s", help)
	}
	s.refused(t, exitUsage, "needs --machine", "slurm", "setup")
	pg := &cliBank{t: t, global: []string{"--store", "postgres://ingot:secret@db/bank"}}
	if out, code := pg.run("slurm", "setup", "--machine", "hpc1", "--write", t.TempDir()); code != exitUsage || !strings.Contains(out, "go through its server") {
		t.Errorf("setup for a bank in PostgreSQL: exit %d, %s", code, out)
	}
}

// TestSlurmSync: sync charges the ended jobs the bank has not charged,
// once however often it runs, and releases liens of jobs Slurm forgot.
func TestSlurmSync(t *testing.T) {
	s := newSlurmSite(t)
	at := func(d time.Duration) string { return s.now.Add(d).Local().Format("2006-01-02T15:04:05") }
	// Job 50 was liened, then its epilog never ran; 51 never reached the
	// bank at all (fail open); 52 is charged already; 53 still runs; 54 was
	// cancelled before it started; the lien of job 55 is of a job Slurm
	// no longer knows.
	s.job("50", "0", "RUNNING", "5:00", "0:00", -time.Minute, 4*time.Minute)
	s.ok("slurm", "prolog")
	s.job("52", "0", "RUNNING", "5:00", "0:00", -time.Minute, 4*time.Minute)
	s.ok("slurm", "prolog")
	s.job("52", "0", "COMPLETED", "5:00", "0:10", -time.Minute, -50*time.Second)
	s.ok("slurm", "epilog")
	s.job("55", "0", "RUNNING", "5:00", "0:00", -time.Minute, 4*time.Minute)
	s.ok("slurm", "prolog")
	t.Setenv("FAKE_SQUEUE_IDS", "53")
	t.Setenv("FAKE_SACCT", strings.Join([]string{slurm.SacctHeader(),
		"50|hpc1|lab1|amy|debug|normal|billing=1,cpu=1,node=1|30|5|" + at(-time.Minute) + "|" + at(-30*time.Second) + "|COMPLETED|0:0|1|" + at(-time.Minute),
		"51|hpc1|lab1|amy|debug|normal|billing=2,cpu=2,node=1|20|5|" + at(-time.Minute) + "|" + at(-40*time.Second) + "|FAILED|1:0|2|" + at(-time.Minute),
		"52|hpc1|lab1|amy|debug|normal|billing=1,cpu=1,node=1|10|5|" + at(-time.Minute) + "|" + at(-50*time.Second) + "|COMPLETED|0:0|3|" + at(-time.Minute),
		"53|hpc1|lab1|amy|debug|normal|billing=1,cpu=1,node=1|5|5|" + at(-time.Minute) + "|Unknown|RUNNING|0:0|4|" + at(-time.Minute),
		// Cancelled while pending: sacct gives it a start, but nothing allocated.
		"54|hpc1|lab1|amy|debug|normal||0|5|" + at(-time.Minute) + "|" + at(-time.Minute) + "|CANCELLED by 0|0:0|5|" + at(-time.Minute),
	}, "\n"))
	dry := s.ok("slurm", "sync", "--dry-run")
	for _, want := range []string{"would charge job 50 run 0 (COMPLETED, 30 s) to chem.lab1", "would charge job 51 run 0 (FAILED, 20 s)", "would release the lien of job 55"} {
		if !strings.Contains(dry, want) {
			t.Errorf("sync --dry-run does not say %q:\n%s", want, dry)
		}
	}
	if strings.Contains(dry, "job 52") || strings.Contains(dry, "job 53") || strings.Contains(dry, "job 54") {
		t.Errorf("sync --dry-run would touch a job it must leave:\n%s", dry)
	}
	before := s.entries()
	out := s.ok("slurm", "sync")
	for _, want := range []string{"charged job 50 run 0 (COMPLETED, 30 s): 30 to chem.lab1", "charged job 51 run 0 (FAILED, 20 s): 40 to chem.lab1", "released the lien of job 55 (300 on chem.lab1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync does not say %q:\n%s", want, out)
		}
	}
	// A line of progress at every run (INGOT_PROGRESS_INTERVAL): sync of a
	// long period shows it is alive; this one's last says all five.
	t.Setenv("INGOT_PROGRESS_INTERVAL", "1ns")
	if again := s.ok("slurm", "sync"); strings.TrimSpace(strings.Join(slices.DeleteFunc(strings.Split(again, "\n"), func(l string) bool {
		return strings.HasPrefix(l, "ingot slurm sync: ") && strings.Contains(l, " runs (")
	}), "\n")) != "" || !strings.Contains(again, "ingot slurm sync: 5 of 5 runs (100%)") {
		t.Errorf("a second sync changed something, or showed no progress:\n%s", again)
	}
	if after := s.entries(); after != before+3 {
		t.Errorf("sync wrote %d entries, want 3", after-before)
	}
	wantBalance(t, s.cliBank, "chem", "920", "0", "920")
}

// TestSlurmEveryRunCharged: each run of a requeued job is charged, under
// a job of the bank's of its own (4711, 4711.r1, ...), whether its epilog
// charges it from sacct -D or sync does when the epilog was lost; the
// epilog's and sync's charges of a run are one; a node failure is charged
// or free as --node-fail says; sync --report sets the charges against
// Slurm's usage; a run sync cannot settle is exit 1 and a metric.
func TestSlurmEveryRunCharged(t *testing.T) {
	s := newSlurmSite(t)
	t.Setenv("FAKE_SQUEUE_IDS", "")
	m := time.Minute
	runs := []string{s.record("60", 1, 1, "REQUEUED", -10*m, -8*m), s.record("60", 2, 2, "REQUEUED", -7*m, -5*m), s.record("60", 3, 1, "COMPLETED", -4*m, -3*m)}
	// Run 0 (1 CPU, 120 s), requeued: charged by its epilog.
	s.job("60", "0", "RUNNING", "5:00", "0:00", -10*m, -5*m)
	s.ok("slurm", "prolog")
	s.sacct(runs[0])
	s.job("60", "1", "COMPLETING", "5:00", "0:00", 0, 5*m) // the next run's expected times
	s.ok("slurm", "epilog")
	// Run 1 (2 CPUs, 120 s), requeued, its epilog could not read sacct:
	// its lien is released, sync charges it.
	s.job("60", "1", "RUNNING", "5:00", "0:00", -7*m, -2*m)
	s.ok("slurm", "prolog")
	s.sacct()
	s.job("60", "2", "COMPLETING", "5:00", "0:00", 0, 5*m)
	s.ok("slurm", "epilog")
	// Run 2 (60 s): its epilog was lost. A job whose node failed (61),
	// and one of an account the bank does not know (62).
	s.sacct(append(runs, s.record("61", 4, 1, "NODE_FAIL", -3*m, -2*m),
		"62|hpc1|nope|amy|debug|normal|billing=1,cpu=1,node=1|60|5|"+s.now.Add(-m).Local().Format("2006-01-02T15:04:05")+"|"+s.now.Local().Format("2006-01-02T15:04:05")+"|COMPLETED|0:0|5|"+s.now.Add(-m).Local().Format("2006-01-02T15:04:05"))...)
	metrics := filepath.Join(s.dir, "sync.prom")
	out, code := s.run("slurm", "sync", "--node-fail", "free", "--report", "--metrics-file", metrics)
	if code != exitError || !strings.Contains(out, "job 62 run 0: not settled") || !strings.Contains(out, "1 run(s) of jobs not settled") {
		t.Errorf("sync with a job it cannot charge: exit %d\n%s", code, out)
	}
	for _, want := range []string{"charged job 60 run 1 (REQUEUED, 120 s): 240 to chem.lab1", "charged job 60 run 2 (COMPLETED, 60 s): 60 to chem.lab1",
		"5 runs ended (sacct -D): 3 charged, 0 used nothing, 1 free by policy, 1 not settled",
		"Slurm's usage: 540 CPU-seconds (540 billing-seconds); the bank charged runs of 420 CPU-seconds, 420 credits"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "job 61") && strings.Contains(out, "charged job 61") {
		t.Errorf("a node failure was charged with --node-fail free:\n%s", out)
	}
	if raw, _ := os.ReadFile(metrics); !strings.Contains(string(raw), `ingot_slurm_unsettled_jobs{cluster="hpc1"} 1`) {
		t.Errorf("metrics file:\n%s", raw)
	}
	for job, want := range map[string]string{"60": "120", "60.r1": "240", "60.r2": "60"} {
		var charges []ledger.Charge
		s.json(&charges, "charge", "list", job)
		if len(charges) != 1 || !charges[0].Amount.Equal(dec(t, want)) {
			t.Errorf("charges of job %s = %+v, want one of %s", job, charges, want)
		}
	}
	// The node failure charged (the default), the account known: all settled.
	s.ok("account", "create", "nope")
	s.ok("deposit", "nope", "100")
	s.ok("user", "modify", "amy", "--member", "nope")
	out = s.ok("slurm", "sync", "--report", "--metrics-file", metrics)
	for _, want := range []string{"charged job 61 run 0 (NODE_FAIL, 60 s): 60 to chem.lab1", "charged job 62 run 0 (COMPLETED, 60 s)", "charged against Slurm's usage: equal"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync does not say %q:\n%s", want, out)
		}
	}
	if raw, _ := os.ReadFile(metrics); !strings.Contains(string(raw), `ingot_slurm_unsettled_jobs{cluster="hpc1"} 0`) {
		t.Errorf("metrics file:\n%s", raw)
	}
	if again := s.ok("slurm", "sync"); strings.TrimSpace(again) != "" {
		t.Errorf("a second sync changed something:\n%s", again)
	}
}

// TestSlurmImport: the associations become the bank's tree and users,
// and importing again changes only what Slurm gained.
func TestSlurmImport(t *testing.T) {
	s := newSlurmSite(t)
	t.Setenv("FAKE_ASSOC", "Cluster|Account|User|ParentName\nhpc1|root||\nhpc1|root|root|\nhpc1|chem||root\nhpc1|lab1||chem\nhpc1|lab2||chem\nhpc1|lab2|amy|\nhpc1|phys||root\nhpc1|phys|bob|\nhpc1|lab1|bob|")
	t.Setenv("FAKE_USERS", "User|Def Acct\namy|lab1\nbob|phys\nroot|root")
	dry := s.ok("slurm", "import", "--dry-run")
	for _, want := range []string{"would create project chem.lab2", "would create account phys", "would add user bob, member of chem.lab1, phys, default project phys", "would add to user amy memberships of chem.lab2"} {
		if !strings.Contains(dry, want) {
			t.Errorf("import --dry-run does not say %q:\n%s", want, dry)
		}
	}
	if strings.Contains(dry, "create account chem\n") || strings.Contains(dry, "project chem.lab1") {
		t.Errorf("import would create what exists:\n%s", dry)
	}
	s.ok("slurm", "import")
	if again := s.ok("slurm", "import"); strings.TrimSpace(again) != "" {
		t.Errorf("a second import changed something:\n%s", again)
	}
	var users []ledger.User
	s.json(&users, "user", "list")
	for _, u := range users {
		if u.Name == "bob" && (u.DefaultProject != "phys" || u.RoleIn("chem.lab1") != ledger.RoleMember) {
			t.Errorf("bob = %+v", u)
		}
		if u.Name == "amy" && (u.DefaultProject != "chem.lab1" || u.RoleIn("chem.lab2") != ledger.RoleMember) {
			t.Errorf("amy = %+v", u)
		}
	}
}

// TestEndState: how the epilog reads a job's end from what Slurm 22.05
// shows it (internal/slurmtest's samples: COMPLETING, and the wait status
// in $SLURM_JOB_EXIT_CODE, 768 for `exit 3`).
func TestEndState(t *testing.T) {
	for _, tc := range []struct {
		state, exit string
		used, limit int64
		want        charge.ExitState
		ran         bool
	}{
		{"COMPLETING", "0", 10, 300, charge.Completed, true},
		{"COMPLETING", "768", 10, 300, charge.Failed, true},
		{"COMPLETING", "0", 300, 300, charge.Timeout, true},
		{"COMPLETED", "0", 10, 300, charge.Completed, true},
		{"CANCELLED", "0", 10, 300, charge.Cancelled, true},
		{"OUT_OF_MEMORY", "0", 10, 300, charge.OutOfMemory, true},
		{"PENDING", "0", 0, 300, 0, false},
	} {
		if got, ran := slurm.EndState(tc.state, tc.exit, tc.used, tc.limit); got != tc.want || ran != tc.ran {
			t.Errorf("endState(%s, %s, %d, %d) = %v, %v; want %v, %v", tc.state, tc.exit, tc.used, tc.limit, got, ran, tc.want, tc.ran)
		}
	}
}

// TestSlurmSyncLimits: sync --limits stops Slurm taking jobs of an
// account with nothing available, lifts that when credits return, and
// leaves a limit the site set itself.
func TestSlurmSyncLimits(t *testing.T) {
	s := newSlurmSite(t)
	t.Setenv("FAKE_SACCT", slurm.SacctHeader())
	header := "Cluster|Account|User|Partition|Share|Priority|GrpJobs|GrpTRES|GrpSubmit|GrpWall|GrpTRESMins|MaxJobs|MaxTRES|MaxTRESPerNode|MaxSubmit|MaxWall|MaxTRESMins|QOS|Def QOS|GrpTRESRunMins"
	row := func(account, user, submit string) string {
		return strings.Join(append([]string{"hpc1", account, user, "", "1", "", "", "", submit}, make([]string, 11)...), "|")
	}
	limits := func(lab1, bio string) {
		t.Setenv("FAKE_LIMITS", strings.Join([]string{header, row("root", "", ""), row("chem", "", ""), row("lab1", "", lab1), row("lab1", "amy", ""), row("bio", "", bio), row("other", "", "0")}, "\n"))
	}
	logged := func() string {
		raw, _ := os.ReadFile(filepath.Join(s.dir, "scontrol.log"))
		os.Remove(filepath.Join(s.dir, "scontrol.log"))
		return string(raw)
	}
	// Each account's billing limit is what it used plus what it has left
	// (1000 credits: 16 billing-minutes at 60 credits each): as it is.
	mgr := func(lab1Used int) {
		line := func(account, limit string, used int) string {
			return fmt.Sprintf("ClusterName=hpc1 Account=%s UserName= Partition= ID=3 GrpTRESMins=cpu=N(0),mem=N(0),billing=%s(%d),fs/disk=N(0)", account, limit, used)
		}
		t.Setenv("FAKE_ASSOC_MGR", strings.Join([]string{"Current Association Manager state", "Association Records",
			line("root", "N", 0), line("chem", "16", 0), line("lab1", "16", lab1Used), line("bio", "0", 0),
			"ClusterName=hpc1 Account=lab1 UserName=amy(1000) Partition= ID=4 GrpTRESMins=cpu=N(0),billing=N(3)"}, "\n"))
	}
	mgr(0)
	// An account Slurm has and the bank lacks would run free when the
	// hooks fail open: closed, unless the site says it is free.
	t.Setenv("FAKE_LIMITS", strings.Join([]string{header, row("root", "", ""), row("chem", "", ""), row("lab1", "", ""), row("bio", "", "5"), row("other", "", "")}, "\n"))
	if out := s.ok("slurm", "sync", "--limits", "--free-accounts", "other"); strings.TrimSpace(out) != "" || logged() != "" {
		t.Errorf("sync --limits closed a free account: %q", out)
	}
	if out := s.ok("slurm", "sync", "--limits"); !strings.Contains(out, `set GrpSubmitJobs=0: Slurm account other takes no more jobs (account "other": the bank has no project of that name; --free-accounts lets it run)`) ||
		logged() != "sacctmgr -i modify account where name=other cluster=hpc1 set GrpSubmitJobs=0\n" {
		t.Errorf("sync --limits with an account the bank lacks: %q", out)
	}
	// chem (and so chem.lab1) has 1000; bio nothing; bio's limit of 5 is the site's.
	limits("", "5")
	if out := s.ok("slurm", "sync", "--limits"); strings.TrimSpace(out) != "" || logged() != "" {
		t.Errorf("sync --limits changed what it must leave: %q", out)
	}
	limits("", "")
	out := s.ok("slurm", "sync", "--limits")
	if !strings.Contains(out, "set GrpSubmitJobs=0: Slurm account bio takes no more jobs (bio: 0 available)") || strings.Contains(out, "lab1") {
		t.Errorf("sync --limits said:\n%s", out)
	}
	if got := logged(); got != "sacctmgr -i modify account where name=bio cluster=hpc1 set GrpSubmitJobs=0\n" {
		t.Errorf("sacctmgr was run with %q", got)
	}
	s.ok("deposit", "bio", "10")
	limits("", "0")
	if out := s.ok("slurm", "sync", "--limits"); !strings.Contains(out, "set GrpSubmitJobs=-1: Slurm account bio takes jobs again (bio: 10 available)") {
		t.Errorf("sync --limits said:\n%s", out)
	}
	// lab1 used 5 billing-minutes: its limit follows (5 + 16).
	mgr(5)
	limits("", "0")
	if out := s.ok("slurm", "sync", "--limits"); !strings.Contains(out, "set GrpTRESMins=billing=21: Slurm account lab1 takes at most 21 billing-minutes in all (5 used, chem.lab1: 1000 available at 60 a billing-minute)") ||
		strings.Contains(out, "account chem") {
		t.Errorf("sync --limits after lab1 used 5 minutes said:\n%s", out)
	}
}

// TestSlurmSyncReservations: sync registers a Slurm reservation of one
// account as a chargeable reservation and charges its idle time; one of
// two accounts, or of an account the bank does not know, is left.
func TestSlurmSyncReservations(t *testing.T) {
	s := newSlurmSite(t)
	t.Setenv("FAKE_SACCT", slurm.SacctHeader())
	at := func(d time.Duration) string { return s.now.Add(d).Local().Format("2006-01-02T15:04:05") }
	resv := func(name, accounts string) string {
		return "ReservationName=" + name + " StartTime=" + at(-10*time.Minute) + " EndTime=" + at(50*time.Minute) +
			" Duration=01:00:00 Nodes=vm NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=SPEC_NODES TRES=cpu=2 Users=amy Groups=(null) Accounts=" + accounts + " State=ACTIVE"
	}
	t.Setenv("FAKE_RESERVATIONS", strings.Join([]string{resv("r1", "lab1"), resv("r2", "lab1,bio"), resv("r3", "nope")}, "\n"))
	if out := s.ok("slurm", "sync", "--dry-run"); !strings.Contains(out, "would register reservation r1 (2 processors, lab1) charged to chem.lab1") || strings.Contains(out, "r2") {
		t.Errorf("sync --dry-run:\n%s", out)
	}
	out := s.ok("slurm", "sync")
	if !strings.Contains(out, "registered reservation r1 (2 processors, lab1) charged to chem.lab1") || !strings.Contains(out, "reservation r3: not registered") {
		t.Errorf("sync:\n%s", out)
	}
	var rs []struct {
		Name    string
		Charged decimal.Decimal
	}
	s.json(&rs, "reservation", "list")
	// Idle since its start, ten minutes before: 2 processors × 600 s, give
	// or take the seconds the test took.
	if len(rs) != 1 || rs[0].Name != "r1" || rs[0].Charged.LessThan(decimal.NewFromInt(1200)) || rs[0].Charged.GreaterThan(decimal.NewFromInt(1220)) {
		t.Errorf("reservations after sync: %+v", rs)
	}
}

// TestSlurmSubmitServerLine: the submit server reads job_submit.lua's line
// as `slurm submit` reads its flags, and gives the same verdicts.
func TestSlurmSubmitServerLine(t *testing.T) {
	s := newSlurmSite(t)
	job := "uid=0\tuser=amy\taccount=lab1\tmin-cpus=1\tnum-tasks=4294967294\tcpus-per-task=65534"
	var verdicts []string
	err := withTestBank(t, s.db, func(b bank) {
		sb := newSubmitter(b, "hpc1")
		for _, line := range []string{job + "\ttime-limit=10", job + "\ttime-limit=60", "account=lab1\ttime-limit=1", "uid=0\tbogus=1", "uid=0\taccount=nope\ttime-limit=1\tmin-cpus=1"} {
			verdicts = append(verdicts, sb.LineVerdict(context.Background(), line))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"accept", "refuse insufficient funds: project chem.lab1 needs 3600, 1000 available", "error slurm submit-server: the line names no uid or user",
		`error slurm submit-server: unknown field "bogus" (job_submit.lua of another ingot?)`, `refuse not found: account "nope": the bank has no project of that name`}
	for i := range want {
		if i >= len(verdicts) || !strings.HasPrefix(verdicts[i], want[i]) {
			t.Errorf("verdict %d = %q, want %q", i, verdicts[i], want[i])
		}
	}
}

// withTestBank runs fn on the bank in file db, as the commands see it.
func withTestBank(t *testing.T, db string, fn func(bank)) error {
	t.Helper()
	store, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		return err
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		store.Close()
		return err
	}
	defer l.Close()
	fn(bank{bankService: localBank{Ledger: l, Bank: lien.New(l)}})
	return nil
}
