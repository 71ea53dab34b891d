package slurmtest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the samples in testdata/ from this run")

// hookScript records what slurmctld gives its prolog and epilog: the
// environment, and the job as scontrol shows it meanwhile, in files named
// after the context, job, restart count and time (a requeued job's epilog
// runs twice with one restart count). Slurm gives the script no PATH (sh
// has a default) and no SLURM_CONF; the script runs in slurmctld's
// directory, the cluster's.
const hookScript = `#!/bin/sh
f=%s/$SLURM_SCRIPT_CONTEXT.$SLURM_JOB_ID.$SLURM_JOB_RESTART_COUNT.$(date +%%s%%N)
env | sort >"$f.tmp"
SLURM_CONF=$(pwd)/slurm.conf scontrol -o show job "$SLURM_JOB_ID" >"$f.job" 2>&1
mv "$f.tmp" "$f.env"
`

// jobSubmitLua refuses a job whose comment is "refuse" and marks the others
// with the time limit it saw, so that the test sees the hook both ways.
const jobSubmitLua = `function slurm_job_submit(job_desc, part_list, submit_uid)
  if job_desc.comment == "refuse" then
    slurm.user_msg("refused by the test's job_submit.lua")
    return slurm.ESLURM_ACCOUNTING_POLICY
  end
  job_desc.comment = "time_limit=" .. tostring(job_desc.time_limit)
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
`

// hookRun is one run of the prolog or epilog: its environment and the
// output of scontrol show job.
type hookRun struct {
	name string // file name, without .env
	env  map[string]string
	job  string
}

// hookRuns returns the runs of context ("prolog_slurmctld" or
// "epilog_slurmctld") for job, oldest first.
func hookRuns(t *testing.T, dir, context, job string) []hookRun {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, context+"."+job+".*.env"))
	if err != nil {
		t.Fatal(err)
	}
	// The names end in the time: sorted by restart count, then time.
	sort.Strings(files)
	var runs []hookRun
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			env[k] = v
		}
		name := strings.TrimSuffix(f, ".env")
		job, err := os.ReadFile(name + ".job")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, hookRun{name: name, env: env, job: strings.TrimSpace(string(job))})
	}
	return runs
}

// waitHookRuns waits until job has had n runs of context.
func waitHookRuns(t *testing.T, dir, context, job string, n int) {
	t.Helper()
	err := poll(fmt.Sprintf("%d runs of %s for job %s", n, context, job), time.Minute, func() error {
		if runs := hookRuns(t, dir, context, job); len(runs) < n {
			return fmt.Errorf("%d so far", len(runs))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitRunTime waits until job has run for at least d, so that its
// epilog's and sacct's times are not all zero.
func waitRunTime(t *testing.T, c *Cluster, job string, d time.Duration) {
	t.Helper()
	err := poll(fmt.Sprintf("job %s to run for %v", job, d), time.Minute, func() error {
		out, err := c.Run("scontrol", "-o", "show", "job", job)
		if err != nil {
			return err
		}
		var h, m, s time.Duration
		state, runTime := field(out, "JobState"), field(out, "RunTime")
		if _, err := fmt.Sscanf(runTime, "%d:%d:%d", &h, &m, &s); err != nil {
			return fmt.Errorf("RunTime=%q: %w", runTime, err)
		}
		if state != "RUNNING" || h*time.Hour+m*time.Minute+s*time.Second < d {
			return fmt.Errorf("it is %s for %s", state, runTime)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// field returns the value of key in a line of scontrol -o show job (values
// without spaces only: Comment may have some).
func field(line, key string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(key) + `=(\S*)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestClusterRunsJobs runs jobs of every kind ingot's Slurm integration
// meets on a real cluster, and checks what the prolog, the epilog and sacct
// see of them; -update saves what they saw in testdata/.
func TestClusterRunsJobs(t *testing.T) {
	Require(t)
	hooks := t.TempDir()
	script := filepath.Join(hooks, "hook.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(hookScript, hooks)), 0o755); err != nil {
		t.Fatal(err)
	}
	lua := filepath.Join(hooks, "job_submit.lua")
	if err := os.WriteFile(lua, []byte(jobSubmitLua), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Start(t, Options{
		PrologSlurmctld: script,
		EpilogSlurmctld: script,
		JobSubmitLua:    lua,
		GPUs:            1,
		CPUs:            4,
		MemoryMB:        1000,
	})

	for _, err := range []error{
		c.AddAccount("acct", ""),
		c.AddAccount("sub", "acct"),
		c.AddUser("root", "acct", ""),
		c.AddUser("nobody", "sub", "sub"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	submit := func(args ...string) string {
		t.Helper()
		id, err := c.Submit(args...)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	jobs := map[string]string{
		"batch":  submit("-A", "acct", "-t", "1", "-n", "1", "--wrap", "sleep 1"),
		"gpu":    submit("-A", "acct", "--gres=gpu:1", "--mem=100", "--wrap", "echo $CUDA_VISIBLE_DEVICES"),
		"failed": submit("-A", "acct", "-t", "1", "--wrap", "exit 3"),
	}
	id, err := c.SubmitAs("nobody", "-t", "1", "--wrap", "id -un")
	if err != nil {
		t.Fatal(err)
	}
	jobs["nobody"] = id
	if _, err := c.Run("srun", "-A", "acct", "-n1", "true"); err != nil {
		t.Fatal(err)
	}
	// srun does not print the job's id: sacct has it, once slurmctld has
	// sent it the job.
	err = poll("the srun job in sacct", time.Minute, func() error {
		out, err := c.Run("sacct", "-a", "-X", "-n", "-P", "--name=true", "-o", "JobID")
		if jobs["srun"] = strings.TrimSpace(out); err == nil && jobs["srun"] == "" {
			err = fmt.Errorf("not yet")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	_, err = c.Submit("-A", "acct", "--comment=refuse", "--wrap", "true")
	if err == nil || !strings.Contains(err.Error(), "refused by the test's job_submit.lua") {
		t.Errorf("a job the Lua hook refuses: sbatch says %v, want the hook's message", err)
	}
	_, err = c.SubmitAs("nobody", "-A", "acct", "--wrap", "true")
	if err == nil || !strings.Contains(err.Error(), "Invalid account") {
		t.Errorf("a job in an account its user is not in: sbatch says %v, want Invalid account", err)
	}

	// A job cancelled while it waits: does the epilog run for it?
	jobs["pending"] = submit("-A", "acct", "--hold", "--wrap", "true")
	if _, err := c.WaitJob(jobs["pending"], time.Minute, "PENDING"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run("scancel", jobs["pending"]); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"batch", "gpu", "nobody", "srun"} {
		if _, err := c.WaitJob(jobs[name], time.Minute, "COMPLETED"); err != nil {
			t.Fatalf("%s job: %v", name, err)
		}
	}
	// The job sees its fake GPU as a real one.
	out, err := os.ReadFile(filepath.Join(c.JobDir, "slurm-"+jobs["gpu"]+".out"))
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("GPU job: CUDA_VISIBLE_DEVICES is %q (%v), want 0", out, err)
	}
	if _, err := c.WaitJob(jobs["failed"], time.Minute, "FAILED"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitJob(jobs["pending"], time.Minute, "CANCELLED"); err != nil {
		t.Fatal(err)
	}

	// A requeued job: prolog, epilog of the run requeued, prolog again,
	// epilog of the run cancelled.
	requeued := submit("-A", "acct", "-t", "2", "--wrap", "sleep 60")
	jobs["requeue"] = requeued
	waitRunTime(t, c, requeued, 2*time.Second)
	if _, err := c.Run("scontrol", "requeue", requeued); err != nil {
		t.Fatal(err)
	}
	waitHookRuns(t, hooks, "epilog_slurmctld", requeued, 1)
	if _, err := c.WaitJob(requeued, time.Minute, "PENDING"); err != nil {
		t.Fatal(err)
	}
	// Slurm lets a requeued job start again two minutes later: sooner
	// here, but not within the second slurmd revoked the credential of
	// its last run (before the epilog), or slurmd refuses it ("Job
	// credential revoked") and the job fails.
	// The reason is the scheduler's, set at its next pass: None until
	// then.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status, err := c.Run("scontrol", "-o", "show", "job", requeued)
		if err != nil {
			t.Fatal(err)
		}
		r := field(status, "Reason")
		if r == "BeginTime" && field(status, "JobState") == "PENDING" {
			break
		}
		if r != "None" || time.Now().After(deadline) {
			t.Fatalf("a requeued job waits with reason %q, want BeginTime: %s", r, status)
		}
	}
	if _, err := c.Run("scontrol", "update", "jobid="+requeued, "starttime=now+2"); err != nil {
		t.Fatal(err)
	}
	waitRunTime(t, c, requeued, 2*time.Second)
	if _, err := c.Run("scancel", requeued); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitJob(requeued, time.Minute, "CANCELLED"); err != nil {
		t.Fatal(err)
	}

	prologs, epilogs := map[string][]hookRun{}, map[string][]hookRun{}
	for name, id := range jobs {
		prologs[name] = hookRuns(t, hooks, "prolog_slurmctld", id)
		epilogs[name] = hookRuns(t, hooks, "epilog_slurmctld", id)
	}
	t.Run("hooks", func(t *testing.T) {
		checkHooks(t, c, jobs, prologs, epilogs)
	})
	t.Run("sacct", func(t *testing.T) {
		checkSacct(t, c, jobs)
	})
	if *update {
		saveSamples(t, c, jobs, prologs, epilogs)
	}

	begin := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(begin).Round(time.Millisecond))
	if left, err := c.processes(); err != nil || len(left) > 0 {
		t.Errorf("after Stop, processes of the cluster: %v (%v)", left, err)
	}
}

// Variables every run of the prolog and the epilog has (spec/slurm.md),
// and those of the epilog only.
var (
	hookVars = []string{"SLURM_JOB_ID", "SLURM_JOB_ACCOUNT", "SLURM_JOB_USER", "SLURM_JOB_UID",
		"SLURM_JOB_PARTITION", "SLURM_JOB_NUM_NODES", "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_NODELIST",
		"SLURM_JOB_NAME", "SLURM_JOB_RESTART_COUNT", "SLURM_CLUSTER_NAME", "SLURM_SCRIPT_CONTEXT"}
	epilogVars = []string{"SLURM_JOB_EXIT_CODE", "SLURM_JOB_EXIT_CODE2", "SLURM_JOB_DERIVED_EC"}
)

func checkHooks(t *testing.T, c *Cluster, jobs map[string]string, prologs, epilogs map[string][]hookRun) {
	// The runs each job has: the pending job none, the requeued one two
	// of each.
	for name := range jobs {
		want := 1
		switch name {
		case "pending":
			want = 0
		case "requeue":
			want = 2
		}
		if len(prologs[name]) != want || len(epilogs[name]) != want {
			t.Errorf("%s job: %d prolog and %d epilog runs, want %d of each", name, len(prologs[name]), len(epilogs[name]), want)
		}
	}
	if t.Failed() {
		return
	}
	for name, id := range jobs {
		for _, run := range append(slices.Clone(prologs[name]), epilogs[name]...) {
			want := slices.Clone(hookVars)
			if run.env["SLURM_SCRIPT_CONTEXT"] == "epilog_slurmctld" {
				want = append(want, epilogVars...)
			}
			for _, v := range want {
				if _, ok := run.env[v]; !ok {
					t.Errorf("%s: no %s", run.name, v)
				}
			}
			user, account := "root", "acct"
			if name == "nobody" {
				user, account = "nobody", "sub"
			}
			for k, v := range map[string]string{"SLURM_JOB_ID": id, "SLURM_CLUSTER_NAME": c.Name,
				"SLURM_JOB_USER": user, "SLURM_JOB_ACCOUNT": account, "SLURM_JOB_PARTITION": "debug",
				"SLURM_JOB_NODELIST": c.Node} {
				if run.env[k] != v {
					t.Errorf("%s: %s=%q, want %q", run.name, k, run.env[k], v)
				}
			}
			// SLURM_CONF would point Slurm's commands at the cluster.
			for _, v := range []string{"PATH", "SLURM_CONF"} {
				if _, ok := run.env[v]; ok {
					t.Errorf("%s: %s is set, unlike what docs/slurm-testing.md says", run.name, v)
				}
			}
			if field(run.job, "JobId") != id {
				t.Errorf("%s: scontrol show job says %q", run.name, run.job)
			}
		}
	}

	// What scontrol show job tells each: the state (never the end state
	// in the epilog), the time limit (UNLIMITED without -t: the
	// partition's), the TRES (GPUs as gres/gpu), what the Lua hook set.
	for _, tc := range []struct {
		name, key, prolog, epilog string
	}{
		{"batch", "JobState", "CONFIGURING", "COMPLETING"},
		{"failed", "JobState", "CONFIGURING", "COMPLETING"},
		{"failed", "ExitCode", "0:0", "3:0"},
		{"batch", "TimeLimit", "00:01:00", "00:01:00"},
		{"batch", "TRES", "cpu=1,node=1,billing=1", "cpu=1,node=1,billing=1"},
		// Memory is no TRES of a job where it is not consumable
		// (CR_Core): --mem shows as MinMemoryNode only.
		{"gpu", "TRES", "cpu=1,node=1,billing=1,gres/gpu=1", "cpu=1,node=1,billing=1,gres/gpu=1"},
		{"gpu", "MinMemoryNode", "100M", "100M"},
		{"srun", "BatchFlag", "0", "0"},
		{"batch", "BatchFlag", "1", "1"},
		{"batch", "Comment", "time_limit=1", "time_limit=1"},
		{"srun", "Comment", "time_limit=4294967294", "time_limit=4294967294"},
	} {
		if got := field(prologs[tc.name][0].job, tc.key); got != tc.prolog {
			t.Errorf("%s job's prolog: %s=%q, want %q", tc.name, tc.key, got, tc.prolog)
		}
		if got := field(epilogs[tc.name][0].job, tc.key); got != tc.epilog {
			t.Errorf("%s job's epilog: %s=%q, want %q", tc.name, tc.key, got, tc.epilog)
		}
	}
	// Without -t, the time limit is the partition's, INFINITE, which
	// scontrol shows as UNLIMITED for a job the main scheduler started,
	// but as 365 days for one the backfill scheduler started (Scheduler=):
	// which one does is a matter of timing.
	for _, name := range []string{"srun", "gpu"} {
		for _, run := range []hookRun{prologs[name][0], epilogs[name][0]} {
			if got := field(run.job, "TimeLimit"); got != "UNLIMITED" && got != "365-00:00:00" {
				t.Errorf("%s: TimeLimit=%q, want UNLIMITED or 365-00:00:00", run.name, got)
			}
		}
	}
	// The epilog tells how the job ended by its exit code alone: the raw
	// wait status and Slurm's "code:signal".
	for name, want := range map[string][2]string{"batch": {"0", "0:0"}, "failed": {"768", "3:0"}} {
		env := epilogs[name][0].env
		if env["SLURM_JOB_EXIT_CODE"] != want[0] || env["SLURM_JOB_EXIT_CODE2"] != want[1] {
			t.Errorf("%s job's epilog: SLURM_JOB_EXIT_CODE=%q SLURM_JOB_EXIT_CODE2=%q, want %q and %q",
				name, env["SLURM_JOB_EXIT_CODE"], env["SLURM_JOB_EXIT_CODE2"], want[0], want[1])
		}
	}

	// The requeue raises the restart count before the epilog of the run
	// it ends: prologs see 0 then 1, epilogs 1 and 1.
	var restarts []string
	for _, runs := range [][]hookRun{prologs["requeue"], epilogs["requeue"]} {
		for _, run := range runs {
			restarts = append(restarts, run.env["SLURM_JOB_RESTART_COUNT"]+"/"+field(run.job, "Restarts"))
		}
	}
	if want := []string{"0/0", "1/1", "1/1", "1/1"}; !slices.Equal(restarts, want) {
		t.Errorf("requeued job: restart counts (environment/scontrol) of prologs then epilogs %v, want %v", restarts, want)
	}
}

func checkSacct(t *testing.T, c *Cluster, jobs map[string]string) {
	want := map[string][]string{}
	for _, tc := range []struct {
		name, state, exit, user, account, tres string
	}{
		{"batch", "COMPLETED", "0:0", "root", "acct", "billing=1,cpu=1,node=1"},
		{"srun", "COMPLETED", "0:0", "root", "acct", "billing=1,cpu=1,node=1"},
		{"gpu", "COMPLETED", "0:0", "root", "acct", "billing=1,cpu=1,gres/gpu=1,node=1"},
		{"failed", "FAILED", "3:0", "root", "acct", "billing=1,cpu=1,node=1"},
		{"nobody", "COMPLETED", "0:0", "nobody", "sub", "billing=1,cpu=1,node=1"},
		{"pending", "CANCELLED by 0", "0:0", "root", "acct", ""},
		{"requeue", "CANCELLED by 0", "0:0", "root", "acct", "billing=1,cpu=1,node=1"},
	} {
		want[jobs[tc.name]] = []string{tc.name, tc.state, tc.exit, tc.user, tc.account, tc.tres, "debug", "normal"}
	}
	// slurmctld sends the jobs' ends to slurmdbd on its own time: sacct
	// has them a moment after scontrol.
	var got map[string][]string
	err := poll("sacct to have the jobs' ends", time.Minute, func() error {
		rows, err := c.Sacct("-j", jobIDs(jobs))
		if err != nil {
			return err
		}
		got = map[string][]string{}
		for _, r := range rows {
			got[r["JobID"]] = []string{want[r["JobID"]][0], r["State"], r["ExitCode"], r["User"], r["Account"], r["AllocTRES"], r["Partition"], r["QOS"]}
		}
		for id, w := range want {
			if !slices.Equal(got[id], w) {
				return fmt.Errorf("job %s: name, State, ExitCode, User, Account, AllocTRES, Partition, QOS %q, want %q", id, got[id], w)
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("%d jobs, want %d (no refused job)", len(got), len(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without -j or -s, sacct lists the jobs eligible at some time since
	// midnight: not the held job, which never was.
	rows, err := c.Sacct()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r["JobID"] == jobs["pending"] {
			t.Errorf("sacct without -j lists the job cancelled while held: %v", r)
		}
	}
	// With -D, the requeued run too.
	rows, err = c.Sacct("-D", "-j", jobs["requeue"])
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, r := range rows {
		states = append(states, r["State"])
	}
	if want := []string{"REQUEUED", "CANCELLED by 0"}; !slices.Equal(states, want) {
		t.Errorf("requeued job: sacct -D states %q, want %q", states, want)
	}
}

// jobIDs is the ids of jobs, for sacct -j.
func jobIDs(jobs map[string]string) string {
	var ids []string
	for _, id := range jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// saveSamples writes what the hooks and sacct saw to testdata/, as
// testdata/README.md describes.
func saveSamples(t *testing.T, c *Cluster, jobs map[string]string, prologs, epilogs map[string][]hookRun) {
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join("testdata", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	for name := range jobs {
		for prefix, runs := range map[string][]hookRun{"prolog": prologs[name], "epilog": epilogs[name]} {
			for i, run := range runs {
				base := prefix + "-" + name
				if len(runs) > 1 {
					base += fmt.Sprintf("-%d", i+1)
				}
				data, err := os.ReadFile(run.name + ".env")
				if err != nil {
					t.Fatal(err)
				}
				write(base+".env", string(data))
				write(base+".job", run.job+"\n")
			}
		}
	}
	for name, args := range map[string][]string{
		"sacct.txt":            {"sacct", "-a", "-X", "-P", "-o", strings.Join(SacctFields, ","), "-j", jobIDs(jobs)},
		"sacct-duplicates.txt": {"sacct", "-a", "-X", "-D", "-P", "-o", strings.Join(SacctFields, ","), "-j", jobIDs(jobs)},
		"sacct.json":           {"sacct", "-a", "-X", "--json", "-j", jobIDs(jobs)},
		"assoc.txt":            {"sacctmgr", "-P", "show", "assoc"},
		"assoc-tree.txt":       {"sacctmgr", "-P", "show", "assoc", "format=Cluster,Account,User,ParentName,Share,QOS,DefaultQOS"},
		"users.txt":            {"sacctmgr", "-P", "show", "user"},
	} {
		out, err := c.Run(args[0], args[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		write(name, out)
	}
	var ids []string
	for name, id := range jobs {
		ids = append(ids, name+"="+id)
	}
	sort.Strings(ids)
	write("jobs.txt", strings.Join(ids, "\n")+"\n")
}
