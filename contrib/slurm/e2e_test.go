package slurm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/slurmtest"
	"github.com/ingot-hpc/ingot/ledger"
)

// TestSlurmEndToEnd installs the hooks as docs/slurm.md says on a real
// one-node Slurm (internal/slurmtest), against a real `ingot serve`, and
// runs jobs through them: quoted at submit, liened at start, charged at
// the end, with the audit clean after each step. Then it stops the bank
// and checks fail closed, fail open, `slurm sync` settling the job whose
// epilog could not reach the bank, and Slurm's own limit set by `sync
// --limits` refusing an exhausted account's job while the bank is down. A
// Slurm reservation is registered and its idle time charged on the way.
func TestSlurmEndToEnd(t *testing.T) {
	slurmtest.Require(t)
	e := newEndToEnd(t)
	c := e.cluster

	// A job with credits runs and is charged its real elapsed time.
	job := e.submit("-A", "lab1", "-t", "2", "-n", "1", "--wrap", "sleep 2")
	e.waitEnded(job, "COMPLETED")
	ch := e.charge(job)
	if elapsed := e.elapsed(job); !ch.Amount.Equal(decimal.NewFromInt(elapsed)) || ch.Project != "chem.lab1" || ch.User != "root" {
		t.Errorf("job %s ran %d s: charge %+v", job, elapsed, ch)
	}
	e.audit("a job charged")

	// One the project cannot cover is refused at submit with the bank's words.
	out, err := c.Run("sbatch", "-A", "lab1", "-t", "1000", "-n", "1", "--wrap", "true")
	if err == nil || !strings.Contains(err.Error(), "ingot: insufficient funds: project chem.lab1 needs 60000") {
		t.Errorf("a job chem.lab1 cannot cover: %q %v", out, err)
	}

	// An exhausted project's job runs under the fallback account.
	e.ingot("policy", "fallback", "bio", "--project", "phys")
	job = e.submit("-A", "phys", "-t", "1", "-n", "1", "--wrap", "sleep 1")
	e.waitEnded(job, "COMPLETED")
	if ch := e.charge(job); ch.Account != "bio" {
		t.Errorf("a job of exhausted phys: charged to %s, want bio (the fallback)", ch.Account)
	}
	if rows, _ := c.Sacct("-j", job); len(rows) != 1 || rows[0]["Account"] != "bio" {
		t.Errorf("Slurm runs the fallback's job under %v, want account bio", rows)
	}

	// A GPU job is priced with the GPU rate: its lien holds 60 s of a CPU
	// and of a GPU at 5 credits a second.
	job = e.submit("-A", "lab1", "-t", "1", "-n", "1", "--gres=gpu:1", "--wrap", "sleep 1")
	e.waitEnded(job, "COMPLETED")
	var l ledger.Lien
	e.ingotJSON(&l, "lien", "show", job, "--machine", c.Name)
	if !l.Amount.Equal(decimal.NewFromInt(360)) {
		t.Errorf("the GPU job's lien is %s, want 360 (60 s × (1 + 5))", l.Amount)
	}
	if ch := e.charge(job); !ch.Amount.Equal(decimal.NewFromInt(6 * e.elapsed(job))) {
		t.Errorf("the GPU job's charge is %s for %d s", ch.Amount, e.elapsed(job))
	}

	// A job array: each task is a job of its own number ($SLURM_JOB_ID),
	// liened and charged once; sync, which reads sacct's and squeue's own
	// numbers, finds nothing left to do for them.
	array := e.submit("--array=1-2", "-A", "lab1", "-t", "1", "-n", "1", "--wrap", "sleep 1")
	var tasks []string
	e.waitFor("array "+array+"'s tasks to end", func() bool {
		out, err := c.Run("sacct", "-X", "-n", "-P", "-j", array, "-o", "JobIDRaw,State")
		tasks = nil
		for _, line := range strings.Fields(out) {
			raw, state, _ := strings.Cut(line, "|")
			if state != "COMPLETED" {
				return false
			}
			tasks = append(tasks, raw)
		}
		return err == nil && len(tasks) == 2
	})
	for _, task := range tasks {
		e.charge(task)
	}
	if out := e.ingot("slurm", "sync", "--machine", c.Name); strings.TrimSpace(out) != "" {
		t.Errorf("sync after a job array:\n%s", out)
	}

	// A failing job is charged as the policy says: DEBITSUCCESSFULWC
	// charges a job that ran to its own end, exit code aside.
	job = e.submit("-A", "lab1", "-t", "1", "-n", "1", "--wrap", "sleep 1; exit 3")
	e.waitEnded(job, "FAILED")
	ch = e.charge(job)
	var detail struct{ Usage struct{ State string } }
	if err := json.Unmarshal(ch.Detail, &detail); err != nil || detail.Usage.State != "failed" || !ch.Amount.Equal(decimal.NewFromInt(e.elapsed(job))) {
		t.Errorf("the failed job's charge: %s in state %q, %v", ch.Amount, detail.Usage.State, err)
	}

	// A job cancelled before it starts leaves no lien.
	job = e.submit("-A", "lab1", "-t", "1", "-n", "1", "--begin", "now+1hour", "--wrap", "true")
	if _, err := c.Run("scancel", job); err != nil {
		t.Fatal(err)
	}
	e.waitEnded(job, "CANCELLED")
	if out, err := e.try("lien", "show", job, "--machine", c.Name); err == nil {
		t.Errorf("a job cancelled before it started has a lien:\n%s", out)
	}

	// Every run is charged: a job requeued by the admin pays for the run
	// that was requeued (run 0, the bank's job JOBID) and for the run that
	// ends (run 1, JOBID.r1), each its own elapsed time.
	job = e.submit("-A", "lab1", "-t", "2", "-n", "1", "--wrap", "sleep 8")
	if _, err := c.WaitJob(job, time.Minute, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	e.waitLien(job)
	time.Sleep(time.Second) // a run of at least a second
	if _, err := c.Run("scontrol", "requeue", job); err != nil {
		t.Fatal(err)
	}
	e.startRequeued(job)
	e.waitEnded(job, "COMPLETED")
	e.checkRuns(job, 2)

	// A job that requeues itself three times pays for its four runs: the
	// sum of its runs' charges is Slurm's own usage (sacct -D).
	job = e.submit("-A", "lab1", "-t", "2", "-n", "1", "--requeue", "--wrap",
		`sleep 2; if [ "${SLURM_RESTART_COUNT:-0}" -lt 3 ]; then scontrol requeue $SLURM_JOB_ID; sleep 60; fi`)
	for range 3 {
		e.startRequeued(job)
	}
	e.waitEnded(job, "COMPLETED")
	e.checkRuns(job, 4)

	// A run a node failure ended is charged (the default --node-fail
	// charge), as a failed run.
	job = e.submit("-A", "lab1", "-t", "2", "-n", "1", "--no-requeue", "--wrap", "sleep 30")
	if _, err := c.WaitJob(job, time.Minute, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	e.waitLien(job)
	time.Sleep(time.Second)
	if _, err := c.Run("scontrol", "update", "nodename="+c.Node, "state=down", "reason=ingot test"); err != nil {
		t.Fatal(err)
	}
	e.waitEnded(job, "NODE_FAIL")
	c.Run("scontrol", "update", "nodename="+c.Node, "state=resume") // ReturnToService may have done it
	e.waitFor("the node to be back", func() bool {
		out, err := c.Run("sinfo", "-h", "-o", "%t")
		return err == nil && strings.TrimSpace(out) == "idle"
	})
	if ch := e.charge(job); !ch.Amount.Equal(decimal.NewFromInt(e.elapsed(job))) {
		t.Errorf("the node-failed job's charge: %s for %d s", ch.Amount, e.elapsed(job))
	}
	e.audit("the Slurm jobs")

	// A Slurm reservation for lab1: sync registers it, a job inside it is
	// charged naming it, and sync charges its idle time to chem.lab1; once
	// deleted in Slurm, sync closes it.
	if _, err := c.Run("scontrol", "create", "reservation", "ReservationName=r1", "StartTime=now", "Duration=10", "Nodes=ALL", "Accounts=lab1", "Users=root"); err != nil {
		t.Fatal(err)
	}
	if out := e.ingot("slurm", "sync", "--machine", c.Name); !strings.Contains(out, "registered reservation r1 (2 processors, lab1) charged to chem.lab1") {
		t.Errorf("sync with a reservation:\n%s", out)
	}
	job = e.submit("--reservation=r1", "-A", "lab1", "-t", "1", "-n", "1", "--wrap", "sleep 1")
	e.waitEnded(job, "COMPLETED")
	e.charge(job)
	if _, err := c.Run("scontrol", "delete", "reservation=r1"); err != nil {
		t.Fatal(err)
	}
	e.ingot("slurm", "sync", "--machine", c.Name)
	var rs []struct {
		Name    string
		Charged decimal.Decimal
		Ended   bool
	}
	e.ingotJSON(&rs, "reservation", "list")
	if len(rs) != 1 || !rs[0].Ended || !rs[0].Charged.IsPositive() {
		t.Errorf("the reservation after it was deleted: %+v", rs)
	}
	e.audit("the reservation")

	// The bank down, failing closed (the default): submissions are refused.
	e.bankDown()
	out, err = c.Run("sbatch", "-A", "lab1", "-t", "1", "-n", "1", "--wrap", "true")
	if err == nil || !strings.Contains(err.Error(), "the allocation bank cannot be asked now") {
		t.Errorf("fail closed with the bank down: %q %v", out, err)
	}
	// Failing open: the job runs without a lien, its epilog cannot charge
	// it; once the bank is back, `slurm sync` does.
	e.setup("--fail-open")
	job = e.submit("-A", "lab1", "-t", "1", "-n", "1", "--wrap", "sleep 1")
	e.waitEnded(job, "COMPLETED")
	e.bankUp()
	// sacct may take a moment to list the job in a period (slurmdbd gets
	// the job's record in parts); cron runs sync again anyway.
	e.waitFor("slurm sync to charge job "+job, func() bool {
		return strings.Contains(e.ingot("slurm", "sync", "--machine", c.Name), "charged job "+job+" run 0 (COMPLETED,")
	})
	if ch := e.charge(job); !ch.Amount.Equal(decimal.NewFromInt(e.elapsed(job))) {
		t.Errorf("the job sync charged: %+v", ch)
	}
	if out := e.ingot("slurm", "sync", "--machine", c.Name); strings.Contains(out, "charged") {
		t.Errorf("a second sync charged again:\n%s", out)
	}
	e.audit("the job sync charged")

	// Slurm's own limit: phys has nothing, and no fallback now; sync
	// --limits stops Slurm taking its jobs, which Slurm then refuses by
	// itself with the bank down and the hooks failing open.
	// An account Slurm has and the bank lacks (ghost) is closed too: with
	// the hooks failing open it would run free.
	e.ingot("policy", "fallback", "none", "--project", "phys", "--yes")
	if err := c.AddAccount("ghost", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.AddUser("root", "ghost", ""); err != nil {
		t.Fatal(err)
	}
	if out := e.ingot("slurm", "sync", "--machine", c.Name, "--limits"); !strings.Contains(out, "set GrpSubmitJobs=0: Slurm account phys takes no more jobs") ||
		!strings.Contains(out, "set GrpSubmitJobs=0: Slurm account ghost takes no more jobs") {
		t.Errorf("sync --limits:\n%s", out)
	}
	e.bankDown()
	out, err = c.Run("sbatch", "-A", "phys", "-t", "1", "-n", "1", "--wrap", "true")
	if err == nil || !strings.Contains(err.Error(), "Job violates accounting/QOS policy") {
		t.Errorf("an exhausted account's job with the bank down: %q %v", out, err)
	}
	out, err = c.Run("sbatch", "-A", "ghost", "-t", "1", "-n", "1", "--wrap", "true")
	if err == nil || !strings.Contains(err.Error(), "Job violates accounting/QOS policy") {
		t.Errorf("a job of an account the bank lacks, with the bank down and failing open: %q %v", out, err)
	}
	if job, err := c.Submit("-A", "lab1", "-t", "1", "-n", "1", "--wrap", "true"); err != nil {
		t.Errorf("a job of lab1 with the bank down and failing open: %v", err)
	} else {
		e.waitEnded(job, "COMPLETED")
	}
	e.bankUp()
	e.audit("the bank down")

	// Slurm's own amount: tiny has credits for 10 CPU-minutes; sync
	// --limits gives its Slurm account GrpTRESMins=billing=10 (1 credit a
	// CPU-second: a billing-minute is 60 credits). With the bank stopped,
	// Slurm itself starts a 1-CPU 5-minute job and holds back a 1-CPU
	// 60-minute one.
	if err := c.AddAccount("tiny", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.AddUser("root", "tiny", ""); err != nil {
		t.Fatal(err)
	}
	e.ingot("slurm", "import", "--machine", c.Name)
	e.ingot("deposit", "tiny", "600")
	if out := e.ingot("slurm", "sync", "--machine", c.Name, "--limits"); !strings.Contains(out, "set GrpTRESMins=billing=10: Slurm account tiny takes at most 10 billing-minutes in all") {
		t.Errorf("sync --limits with tiny:\n%s", out)
	}
	e.bankDown()
	short := e.submit("-A", "tiny", "-t", "5", "-n", "1", "--wrap", "sleep 1")
	long := e.submit("-A", "tiny", "-t", "60", "-n", "1", "--wrap", "sleep 1")
	if got, err := c.WaitJob(short, time.Minute, "RUNNING", "COMPLETED"); err != nil {
		t.Errorf("tiny's 5-minute job with the bank down: %s %v", got, err)
	}
	e.waitFor("Slurm to hold tiny's 60-minute job", func() bool {
		out, err := c.Run("squeue", "-h", "-j", long, "-o", "%T %r")
		return err == nil && strings.TrimSpace(out) == "PENDING AssocGrpBillingMinutes"
	})
	if _, err := c.Run("scancel", long); err != nil {
		t.Fatal(err)
	}
	e.waitEnded(short, "COMPLETED")
	e.bankUp()
	e.audit("the end")
	// Every submission went through the submit server: job_submit.lua
	// never fell back to a process per job.
	if log, err := os.ReadFile(filepath.Join(c.Dir, "log", "slurmctld.log")); err != nil || strings.Contains(string(log), "ingot: no submit server answers") || strings.Contains(string(log), "LuaSocket") {
		t.Errorf("job_submit.lua did not use the submit server (%v):\n%s", err, grepLines(string(log), "ingot:"))
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// endToEnd is a bank served by a real `ingot serve` and a Slurm cluster
// with ingot's hooks.
type endToEnd struct {
	t                   *testing.T
	dir                 string
	ingotBin, db, url   string
	admin, schedulerKey string // key files
	serve               *exec.Cmd
	submitServer        *exec.Cmd
	submitSocket        string
	hooks               string // the hooks' directory
	cluster             *slurmtest.Cluster
}

func newEndToEnd(t *testing.T) *endToEnd {
	dir := t.TempDir()
	e := &endToEnd{t: t, dir: dir, ingotBin: buildIngot(t, dir), db: filepath.Join(dir, "bank.db"),
		admin: filepath.Join(dir, "admin.key"), schedulerKey: filepath.Join(dir, "slurm.key"), hooks: filepath.Join(dir, "hooks"),
		submitSocket: filepath.Join(dir, "submit.sock")}
	if err := os.Mkdir(e.hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + freeAddress(t)
	if out, err := exec.Command(e.ingotBin, "--db", e.db, "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	e.bankUp()
	t.Cleanup(func() {
		if e.submitServer != nil {
			e.submitServer.Process.Signal(syscall.SIGTERM)
			e.submitServer.Wait()
		}
		if e.serve != nil {
			e.bankDown()
		}
	})
	const cluster = "ingot"
	e.ingot("machine", "add", cluster, "--cores", "2", "--gpus", "1")
	e.ingot("rate", "add", "VBR", "GPUs", "5")
	e.ingot("client", "add", "slurm-"+cluster, "--role", "scheduler", "--scope", cluster, "--key-out", e.schedulerKey)
	// The hooks are written once for Start to install, and again once the
	// cluster's slurm.conf is known, which the prolog and epilog need.
	e.writeHooks(cluster, "")
	// Slurm's own limits as `slurm setup` prints them for sync --limits:
	// billing usage that neither decays nor resets, and no job started
	// that its account's GrpTRESMins could not see to its end.
	e.cluster = slurmtest.Start(t, slurmtest.Options{ClusterName: cluster, GPUs: 1, AccountingStorageEnforce: "associations,limits,qos,safe",
		Config:          []string{"PriorityType=priority/multifactor", "PriorityDecayHalfLife=0", "PriorityUsageResetPeriod=NONE"},
		PrologSlurmctld: filepath.Join(e.hooks, "ingot-prolog"), EpilogSlurmctld: filepath.Join(e.hooks, "ingot-epilog"),
		JobSubmitLua: filepath.Join(e.hooks, "job_submit.lua")})
	e.setup()
	e.startSubmitServer()
	c := e.cluster
	for _, a := range [][2]string{{"chem", ""}, {"lab1", "chem"}, {"lab2", "chem"}, {"bio", ""}, {"phys", ""}} {
		if err := c.AddAccount(a[0], a[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []string{"lab1", "lab2", "bio", "phys"} {
		if err := c.AddUser("root", a, "lab1"); err != nil {
			t.Fatal(err)
		}
	}
	if out := e.ingot("slurm", "import", "--machine", cluster); !strings.Contains(out, "create project chem.lab1") {
		t.Fatalf("slurm import:\n%s", out)
	}
	e.ingot("deposit", "chem", "1000")
	e.ingot("deposit", "bio", "1000")
	e.audit("the import")
	return e
}

// buildIngot builds the command into dir: the hooks run it as a program.
func buildIngot(t *testing.T, dir string) string {
	bin := filepath.Join(dir, "ingot")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/ingot")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// writeHooks runs `ingot slurm setup` into the hooks' directory, with
// SLURM_CONF slurmConf ("" for none) and extra flags.
func (e *endToEnd) writeHooks(cluster, slurmConf string, extra ...string) {
	e.t.Helper()
	cmd := exec.Command(e.ingotBin, append([]string{"--server", e.url, "--key-file", e.schedulerKey, "slurm", "setup", "--machine", cluster,
		"--write", e.hooks, "--force", "--log", filepath.Join(e.hooks, "hooks.log"), "--submit-timeout", "5", "--submit-socket", e.submitSocket}, extra...)...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+slurmConf)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("slurm setup: %v\n%s", err, out)
	}
}

// setup writes the hooks for the running cluster, with extra flags, and
// puts job_submit.lua beside its slurm.conf, where slurmctld reads it again
// when it changes.
func (e *endToEnd) setup(extra ...string) {
	e.t.Helper()
	e.writeHooks(e.cluster.Name, e.cluster.Conf, extra...)
	lua, err := os.ReadFile(filepath.Join(e.hooks, "job_submit.lua"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.cluster.Dir, "job_submit.lua"), lua, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// startSubmitServer starts `ingot slurm submit-server` with the scheduler's
// key, as a site runs it beside slurmctld, and waits for its socket.
func (e *endToEnd) startSubmitServer() {
	e.t.Helper()
	log, err := os.OpenFile(filepath.Join(e.dir, "submit-server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	defer log.Close()
	e.submitServer = exec.Command(e.ingotBin, "--server", e.url, "--key-file", e.schedulerKey, "slurm", "submit-server",
		"--machine", e.cluster.Name, "--socket", e.submitSocket)
	e.submitServer.Stdout, e.submitServer.Stderr = log, log
	if err := e.submitServer.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the submit server's socket", func() bool {
		conn, err := net.Dial("unix", e.submitSocket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
}

// bankUp starts `ingot serve` and waits until it answers.
func (e *endToEnd) bankUp() {
	e.t.Helper()
	log, err := os.OpenFile(filepath.Join(e.dir, "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	defer log.Close()
	e.serve = exec.Command(e.ingotBin, "--db", e.db, "serve", "--listen", strings.TrimPrefix(e.url, "http://"), "--first-admin-key", e.admin)
	e.serve.Stdout, e.serve.Stderr = log, log
	if err := e.serve.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("ingot serve to answer", func() bool {
		resp, err := http.Get(e.url + "/v1/settings")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
}

// bankDown stops the server.
func (e *endToEnd) bankDown() {
	e.t.Helper()
	e.serve.Process.Signal(syscall.SIGTERM)
	if err := e.serve.Wait(); err != nil {
		e.t.Errorf("ingot serve: %v", err)
	}
	e.serve = nil
}

// try runs ingot as the bank's admin.
func (e *endToEnd) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.ingotBin, append([]string{"--server", e.url, "--key-file", e.admin}, args...)...)
	cmd.Env = e.clusterEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// clusterEnv is the environment of the admin's commands: the cluster's
// (sacct, sacctmgr and squeue of `slurm sync` and `slurm import` read its
// slurm.conf) once it runs.
func (e *endToEnd) clusterEnv() []string {
	if e.cluster == nil {
		return os.Environ()
	}
	return e.cluster.Env()
}

func (e *endToEnd) ingot(args ...string) string {
	e.t.Helper()
	out, err := e.try(args...)
	if err != nil {
		e.t.Fatalf("ingot %s: %v\n%s\nhooks' log:\n%s", strings.Join(args, " "), err, out, e.hooksLog())
	}
	return out
}

func (e *endToEnd) ingotJSON(v any, args ...string) {
	e.t.Helper()
	out := e.ingot(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("ingot %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (e *endToEnd) hooksLog() string {
	raw, _ := os.ReadFile(filepath.Join(e.hooks, "hooks.log"))
	return string(raw)
}

func (e *endToEnd) audit(after string) {
	e.t.Helper()
	if out := e.ingot("audit"); !strings.Contains(out, "audit: OK") {
		e.t.Errorf("audit after %s:\n%s", after, out)
	}
}

func (e *endToEnd) submit(args ...string) string {
	e.t.Helper()
	id, err := e.cluster.Submit(args...)
	if err != nil {
		e.t.Fatalf("sbatch %s: %v", strings.Join(args, " "), err)
	}
	return id
}

// waitEnded waits for the job to end in state, and for its epilog to have
// run (the controller lets a job go only after it).
func (e *endToEnd) waitEnded(job, state string) {
	e.t.Helper()
	if got, err := e.cluster.WaitJob(job, 2*time.Minute, state); err != nil {
		e.t.Fatalf("job %s: %s, %v\nhooks' log:\n%s", job, got, err, e.hooksLog())
	}
}

// charge is the job's one charge, once its epilog has made it.
func (e *endToEnd) charge(job string) ledger.Charge {
	e.t.Helper()
	var charges []ledger.Charge
	e.waitFor("job "+job+"'s charge", func() bool {
		e.ingotJSON(&charges, "charge", "list", job, "--machine", e.cluster.Name)
		return len(charges) > 0
	})
	if len(charges) != 1 {
		e.t.Errorf("job %s has %d charges: %+v", job, len(charges), charges)
	}
	return charges[0]
}

func (e *endToEnd) waitLien(job string) {
	e.t.Helper()
	e.waitFor("job "+job+"'s lien", func() bool {
		_, err := e.try("lien", "show", job, "--machine", e.cluster.Name)
		return err == nil
	})
}

// startRequeued waits for the job to be requeued (pending, held back by
// Slurm for two minutes) and moves its start to now+2: not now, which
// can fail the job (slurmd refuses a launch in the second it revoked the
// last run's credential).
func (e *endToEnd) startRequeued(job string) {
	e.t.Helper()
	e.waitFor("job "+job+" to be requeued", func() bool {
		out, err := e.cluster.Run("squeue", "-h", "-j", job, "-o", "%T %r")
		return err == nil && strings.TrimSpace(out) == "PENDING BeginTime"
	})
	if _, err := e.cluster.Run("scontrol", "update", "jobid="+job, "starttime=now+2"); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("job "+job+" to run again", func() bool {
		out, err := e.cluster.Run("squeue", "-h", "-j", job, "-o", "%T")
		return err == nil && strings.TrimSpace(out) != "PENDING"
	})
}

// checkRuns checks that the job had runs runs (sacct -D), each charged
// once under its own job of the bank's (after a sync, which charges a run
// whose epilog could not), for its elapsed time × CPUs at 1 credit a
// CPU-second: the sum is Slurm's own usage.
func (e *endToEnd) checkRuns(job string, runs int) {
	e.t.Helper()
	out, err := e.cluster.Run("sacct", "-D", "-X", "-n", "-P", "-j", job, "-o", "ElapsedRaw,AllocCPUS,State")
	if err != nil {
		e.t.Fatal(err)
	}
	lines := strings.Fields(out)
	if len(lines) != runs {
		e.t.Fatalf("job %s: sacct -D lists %d runs, want %d:\n%s", job, len(lines), runs, out)
	}
	e.ingot("slurm", "sync", "--machine", e.cluster.Name)
	var usage, charged int64
	for run, line := range lines {
		var elapsed, cpus int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(line, "|", " "), "%d %d", &elapsed, &cpus); err != nil {
			e.t.Fatal(err)
		}
		usage += elapsed * cpus
		id := job
		if run > 0 {
			id = fmt.Sprintf("%s.r%d", job, run)
		}
		ch := e.charge(id)
		charged += ch.Amount.IntPart()
		if !ch.Amount.Equal(decimal.NewFromInt(elapsed * cpus)) {
			e.t.Errorf("job %s run %d (%s): charged %s, used %d CPU-s", job, run, line, ch.Amount, elapsed*cpus)
		}
	}
	if charged != usage || usage == 0 {
		e.t.Errorf("job %s: its runs were charged %d, Slurm's usage is %d CPU-s", job, charged, usage)
	}
}

// elapsed is the job's last run's elapsed seconds as sacct says.
func (e *endToEnd) elapsed(job string) int64 {
	e.t.Helper()
	rows, err := e.cluster.Sacct("-j", job)
	if err != nil || len(rows) != 1 {
		e.t.Fatalf("sacct -j %s: %v %v", job, rows, err)
	}
	var s int64
	if _, err := fmt.Sscan(rows[0]["ElapsedRaw"], &s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *endToEnd) waitFor(what string, ok func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			e.t.Fatalf("waited a minute for %s\nhooks' log:\n%s", what, e.hooksLog())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSlurmJobArray: a job array submitted at once (through the submit
// server), each task a job of its own number, liened and charged once by
// its hooks; sync then finds nothing to charge, and its report of the
// period equals Slurm's own usage (sacct -D). 100 tasks (about half a
// minute here), or $INGOT_SLURM_ARRAY_TASKS: make e2e-slurm runs 1,000
// (about six minutes on the 2-core test machine: two processes a task).
func TestSlurmJobArray(t *testing.T) {
	slurmtest.Require(t)
	tasks := 100
	if n, err := strconv.Atoi(os.Getenv("INGOT_SLURM_ARRAY_TASKS")); err == nil && n > 0 {
		tasks = n
	}
	start := time.Now()
	e := newEndToEnd(t)
	c := e.cluster
	e.ingot("deposit", "chem", "1000000")
	since := time.Now().Add(-time.Minute).Format("2006-01-02T15:04:05")
	array := e.submit(fmt.Sprintf("--array=1-%d", tasks), "-A", "lab1", "-t", "1", "-n", "1", "-o", "/dev/null", "--wrap", "true")
	deadline := time.Now().Add(time.Duration(tasks) * time.Second)
	for {
		out, err := c.Run("squeue", "-h", "-r", "-j", array, "-o", "%i")
		if err == nil && strings.TrimSpace(out) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the array's %d tasks did not end in %d s", tasks, tasks)
		}
		time.Sleep(time.Second)
	}
	took := time.Since(start)
	var out string
	e.waitFor("sync to find every task charged", func() bool {
		out = e.ingot("slurm", "sync", "--machine", c.Name, "--since", since, "--report")
		return strings.Contains(out, fmt.Sprintf("%d runs ended (sacct -D): ", tasks)) && strings.Contains(out, " 0 not settled")
	})
	if strings.Contains(out, "charged job") || !strings.Contains(out, "charged against Slurm's usage: equal") {
		t.Errorf("sync after the array (its hooks charged every task):\n%s", out)
	}
	var charges []ledger.Charge
	e.ingotJSON(&charges, "charge", "list", "--machine", c.Name)
	if len(charges) != tasks {
		t.Errorf("%d charges for %d tasks", len(charges), tasks)
	}
	e.audit("the array")
	t.Logf("%d tasks submitted, run and charged in %v", tasks, took.Round(time.Second))
}
