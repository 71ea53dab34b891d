package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	slurmfiles "github.com/ingot-hpc/ingot/contrib/slurm"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/slurm"
)

// The Slurm hooks: job_submit.lua asks `ingot slurm submit` for a verdict
// on each job; PrologSlurmctld runs `ingot slurm prolog`, which places the
// job's lien; EpilogSlurmctld runs `ingot slurm epilog`, which charges it.
// docs/slurm.md says how they are installed and what each does when the
// bank cannot be asked.

// slurmCommandTimeout bounds each Slurm command a hook runs: the controller
// waits for the hook.
const slurmCommandTimeout = 10 * time.Second

func slurmCommands() []*cli.Command {
	machine := &cli.StringFlag{Name: "machine", Usage: "the bank's `MACHINE` for this cluster (default: $SLURM_CLUSTER_NAME, which Slurm sets for the prolog and epilog)"}
	cluster := &cli.StringFlag{Name: "cluster", Usage: "the Slurm `CLUSTER` to read (default: --machine)"}
	nodeFail := &cli.StringFlag{Name: "node-fail", Value: "charge", Usage: "what a run that a node failure ended is charged: `MODE` charge (the time it ran, as a failed run, or as a requeued one when Slurm runs the job again) or free (nothing)"}
	failOpen := &cli.BoolFlag{Name: "fail-open", Usage: "when the bank cannot be asked, let the job run (charged later by ingot slurm sync) instead of holding it"}
	submitFlags := []cli.Flag{machine,
		&cli.StringFlag{Name: "uid", Usage: "the submitting user's `UID` (job_submit.lua's submit_uid)"},
		&cli.StringFlag{Name: "user", Usage: "the submitting `USER` (instead of --uid)"},
	}
	for _, f := range slurm.SubmissionFields {
		submitFlags = append(submitFlags, &cli.StringFlag{Name: f.Name, Usage: "job_desc." + f.Lua + ", as Lua prints it"})
	}
	return []*cli.Command{{
		Name:  "slurm",
		Usage: "Slurm's hooks: a quote at submit, a lien at start, a charge at the end (docs/slurm.md)",
		Subcommands: []*cli.Command{
			{
				Name:  "setup",
				Usage: "print, or with --write DIR write, job_submit.lua and the prolog and epilog scripts for this bank, and the slurm.conf lines that use them",
				Flags: []cli.Flag{machine, failOpen, nodeFail,
					&cli.StringFlag{Name: "write", Usage: "write the files into `DIR`, the directory of slurm.conf (job_submit.lua must be beside it)"},
					&cli.BoolFlag{Name: "force", Usage: "replace files of those names in --write DIR"},
					&cli.StringFlag{Name: "ingot", Usage: "the ingot `PATH` the hooks run (default: this one)"},
					&cli.IntFlag{Name: "submit-timeout", Value: 2, Usage: "`SECONDS` the submit hook waits for the bank (every other submission waits meanwhile)"},
					&cli.IntFlag{Name: "hook-timeout", Value: 30, Usage: "`SECONDS` the prolog and epilog wait for the bank"},
					&cli.StringFlag{Name: "fallback-qos", Usage: "the `QOS` of a job moved to the fallback account (default: its own)"},
					&cli.StringFlag{Name: "submit-socket", Value: "/run/ingot/slurm-submit.sock", Usage: "the Unix socket `PATH` of ingot slurm submit-server, which job_submit.lua asks (with LuaSocket) before it starts ingot slurm submit; \"\" for none"},
					&cli.StringFlag{Name: "log", Value: "/var/log/slurm/ingot-hooks.log", Usage: "the `FILE` the prolog and epilog append their messages to (writable by SlurmUser)"},
				},
				Action: slurmSetup,
			},
			{
				Name:   "submit",
				Usage:  "for job_submit.lua: print one line, accept, account NAME (move the job to the fallback's Slurm account), refuse MESSAGE, or error MESSAGE (the bank could not be asked)",
				Flags:  submitFlags,
				Action: slurmSubmit,
			},
			{
				Name:  "submit-server",
				Usage: "for job_submit.lua: answer its questions on the Unix socket --socket, as slurm submit does, without a process per submission (run it as SlurmUser beside slurmctld, e.g. from systemd)",
				Flags: []cli.Flag{machine,
					&cli.StringFlag{Name: "socket", Value: "/run/ingot/slurm-submit.sock", Usage: "the Unix socket `PATH` to answer on (mode 600: only this user, SlurmUser, may ask)"},
				},
				Action: slurmSubmitServer,
			},
			{
				Name:   "prolog",
				Usage:  "for PrologSlurmctld: place the lien of the job in $SLURM_JOB_ID; exit 1 when refused (Slurm requeues the job), with the reason in its comment",
				Flags:  []cli.Flag{machine, failOpen},
				Action: slurmProlog,
			},
			{
				Name:  "sync",
				Usage: "settle from sacct -D what the hooks missed (safe from cron): charge each ended run of a job the bank has not charged (exit 1 if one cannot be), release liens of jobs Slurm no longer knows, register Slurm reservations of one account as chargeable reservations and charge their idle time; prints what it changed",
				Flags: []cli.Flag{machine, cluster,
					&cli.StringFlag{Name: "since", Value: "now-2d", Usage: "look at jobs from `TIME` on (now-2d, 2026-11-01, RFC 3339)"},
					&cli.BoolFlag{Name: "dry-run", Usage: "print what it would change, change nothing"},
					&cli.BoolFlag{Name: "limits", Usage: "also stop Slurm taking jobs of accounts with nothing available (GrpSubmitJobs=0), and lift that when credits return, so that Slurm refuses them while the bank cannot be asked"},
					nodeFail,
					&cli.StringSliceFlag{Name: "free-accounts", Usage: "with --limits, the Slurm `ACCOUNT`s the bank does not know that may still run jobs (free of charge); every other such account is closed (GrpSubmitJobs=0); root always may"},
					&cli.BoolFlag{Name: "report", Usage: "print the runs that ended since --since and Slurm's usage of them (sacct -D: elapsed × CPUs) against what the bank charged"},
					&cli.StringFlag{Name: "metrics-file", Usage: "write ingot_slurm_unsettled_jobs and the sync's success and time to `FILE` in Prometheus' text format (node_exporter's textfile collector)"},
				},
				Action: slurmSync,
			},
			{
				Name:  "import",
				Usage: "create the bank's accounts, projects, users and memberships from Slurm's associations (sacctmgr); the account tree becomes dotted names (lab1 under chem is chem.lab1); idempotent",
				Flags: []cli.Flag{machine, cluster,
					&cli.BoolFlag{Name: "dry-run", Usage: "print what it would create, create nothing"},
				},
				Action: slurmImport,
			},
			{
				Name:   "epilog",
				Usage:  "for EpilogSlurmctld: charge the run of the job in $SLURM_JOB_ID that ended, requeued or not, for its elapsed time (a requeued run from its sacct -D record), or release its lien when it never ran",
				Flags:  []cli.Flag{machine, nodeFail},
				Action: slurmEpilog,
			},
		},
	}}
}

// slurmSetup prints or writes the hooks, filled in with the bank this
// command line names (--server and its key, or --db), for the hooks to
// name in turn.
func slurmSetup(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	machine := c.String("machine")
	if machine == "" {
		return usageError{"slurm setup needs --machine: the bank's machine for this cluster"}
	}
	if _, err := slurm.ParseNodeFail(c.String("node-fail")); err != nil {
		return usageError{err.Error()}
	}
	if c.Int("submit-timeout") < 1 || c.Int("hook-timeout") < 1 {
		return usageError{"--submit-timeout and --hook-timeout are whole seconds, at least 1"}
	}
	command, err := hookCommand(c)
	if err != nil {
		return err
	}
	path, err := slurmPath()
	if err != nil {
		return err
	}
	settings := slurmfiles.Settings{Command: command, Machine: machine, SubmitTimeout: c.Int("submit-timeout"),
		HookTimeout: c.Int("hook-timeout"), FailOpen: c.Bool("fail-open"), NodeFail: c.String("node-fail"), FallbackQOS: c.String("fallback-qos"), SubmitSocket: c.String("submit-socket"),
		Path: path, SlurmConf: os.Getenv("SLURM_CONF"), Log: absolute(c.String("log"))}
	dir := c.String("write")
	if dir == "" {
		for _, name := range slurmfiles.Names {
			fmt.Fprintf(c.App.Writer, "==> %s <==\n", name)
			if err := slurmfiles.Write(c.App.Writer, name, settings); err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer)
		}
		dir = "DIR"
	} else if err := writeHookFiles(dir, settings, c.Bool("force")); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "# slurm.conf (job_submit.lua must be in the directory of slurm.conf):\nJobSubmitPlugins=lua\nPrologSlurmctld=%s\nEpilogSlurmctld=%s\n",
		filepath.Join(dir, "ingot-prolog"), filepath.Join(dir, "ingot-epilog"))
	// The billing that lets `slurm sync --limits` mirror credits into
	// Slurm's own limits; the rest works without it.
	var billing slurm.Billing
	err = withBank(c, func(b bank) error {
		billing, err = slurmBilling(c, b)
		return err
	})
	if err != nil {
		fmt.Fprintf(c.App.Writer, "# (for sync --limits: the bank's billing weights could not be worked out: %s)\n", message(err))
		return nil
	}
	fmt.Fprintf(c.App.Writer, "# for slurm sync --limits (Slurm holds each account to its credits: docs/slurm.md):\n"+
		"AccountingStorageEnforce=associations,limits,qos,safe\nPriorityType=priority/multifactor\nPriorityDecayHalfLife=0\nPriorityUsageResetPeriod=NONE\n"+
		"# and on each PartitionName line of this machine (one billing-minute is %s credits):\n#   TRESBillingWeights=\"%s\"\n", billing.PerMinute, billing.Weights)
	if len(billing.Approximate) > 0 {
		fmt.Fprintf(c.App.Writer, "# approximate: billing cannot express %s\n", strings.Join(billing.Approximate, ", "))
	}
	return nil
}

// slurmPath is the PATH of the prolog and epilog: the system's, and the
// directories of the Slurm commands they run as this machine has them.
func slurmPath() (string, error) {
	dirs := []string{"/usr/local/bin", "/usr/bin", "/bin"}
	for _, cmd := range []string{"squeue", "scontrol", "timeout"} {
		p, err := exec.LookPath(cmd)
		if err != nil {
			return "", fmt.Errorf("slurm setup: %s is not in PATH: run setup where Slurm's commands are: %w", cmd, err)
		}
		if dir := filepath.Dir(p); !slices.Contains(dirs, dir) {
			dirs = append([]string{dir}, dirs...)
		}
	}
	return strings.Join(dirs, ":"), nil
}

// hookCommand is the ingot command line the hooks run: this bank, as this
// command line names it.
func hookCommand(c *cli.Context) ([]string, error) {
	path := c.String("ingot")
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("slurm setup: the path of this ingot: %w (give --ingot PATH)", err)
		}
		path = exe
	}
	command := []string{path}
	if server := flagString(c, "server"); server != "" {
		command = append(command, "--server", server)
		for _, f := range []string{"key-file", "ca-file"} {
			if v := flagString(c, f); v != "" {
				command = append(command, "--"+f, absolute(v))
			}
		}
		if flagBool(c, "use-munge") {
			command = append(command, "--use-munge")
		}
		return command, nil
	}
	if flagString(c, "store") != "" {
		// Its URL may hold the database's password, which no script keeps.
		return nil, usageError{"slurm setup: the hooks of a bank in PostgreSQL go through its server: --server URL with --key-file FILE (a scheduler key for this machine)"}
	}
	if db := flagString(c, "db"); db != "" {
		return append(command, "--db", absolute(db)), nil
	}
	return nil, usageError{"slurm setup: name the bank the hooks use: --server URL with --key-file FILE (a scheduler key for this machine), or --db FILE"}
}

func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// writeHookFiles writes the hooks into dir: a file there is replaced only
// with force, as a site's own job_submit.lua may be.
func writeHookFiles(dir string, s slurmfiles.Settings, force bool) error {
	for _, name := range slurmfiles.Names {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil && !force {
			return fmt.Errorf("%w: %s exists (--force replaces it)", ledger.ErrExists, path)
		}
	}
	for _, name := range slurmfiles.Names {
		var buf bytes.Buffer
		if err := slurmfiles.Write(&buf, name, s); err != nil {
			return err
		}
		mode := os.FileMode(0o755)
		if strings.HasSuffix(name, ".lua") {
			mode = 0o644
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path+".new", buf.Bytes(), mode); err != nil {
			return fmt.Errorf("slurm setup: %w", err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			return fmt.Errorf("slurm setup: %w", err)
		}
	}
	return nil
}

// slurmSubmit prints job_submit.lua's verdict. It exits 0 whatever it
// prints: the script reads only the line (Lua 5.1's popen gives no exit
// status), and decides on "error" by its fail-open setting.
func slurmSubmit(c *cli.Context) error {
	verdict := submitVerdict(c)
	_, err := fmt.Fprintln(c.App.Writer, strings.NewReplacer("\n", " ", "\r", " ").Replace(verdict))
	return err
}

func submitVerdict(c *cli.Context) string {
	var s slurm.Submission
	for _, f := range slurm.SubmissionFields {
		*f.Field(&s) = c.String(f.Name)
	}
	userName, err := slurmUser(c.String("user"), c.String("uid"))
	if err != nil {
		return "error " + err.Error()
	}
	machine, err := slurmMachine(c)
	if err != nil {
		return "error " + message(err)
	}
	verdict := ""
	err = withBank(c, func(b bank) error {
		verdict = newSubmitter(b, machine).Verdict(c.Context, s, userName)
		return nil
	})
	if err != nil {
		return "error " + message(err)
	}
	return verdict
}

// newSubmitter is the submit verdicts of bank b for machine.
func newSubmitter(b bank, machine string) *slurm.Submitter {
	return &slurm.Submitter{Bank: b, Machine: machine, Refused: refusedByBank, Message: message}
}

// slurmUser is the job's user: --user, or the name of --uid.
func slurmUser(name, uid string) (string, error) {
	if name != "" {
		return name, nil
	}
	if uid == "" {
		return "", usageError{"slurm submit needs --uid or --user"}
	}
	return slurm.UserOf(uid)
}

// slurmMachine is --machine, or the cluster Slurm names in the hook's
// environment.
func slurmMachine(c *cli.Context) (string, error) {
	if m := c.String("machine"); m != "" {
		return m, nil
	}
	if m := os.Getenv("SLURM_CLUSTER_NAME"); m != "" {
		return m, nil
	}
	return "", usageError{commandPath(c) + ": --machine is needed outside Slurm's prolog and epilog (no $SLURM_CLUSTER_NAME)"}
}

// slurmProject is the bank's project for a Slurm account (slurm.Project).
func slurmProject(ctx context.Context, b bank, account string) (string, error) {
	return slurm.Project(ctx, b, account)
}

// refusedByBank reports whether err is the bank's answer about the job (it
// cannot be covered, names what does not exist, is not valid), rather than
// a failure to ask.
func refusedByBank(err error) bool {
	switch exitCode(err) {
	case exitUsage, exitNotFound, exitRefused:
		return true
	}
	return false
}

// bankWords is a message without the package prefixes a user of Slurm
// has no use for (slurm.BankWords).
func bankWords(msg string) string { return slurm.BankWords(msg) }

func withRequestID(c *cli.Context, id string) ledger.Request {
	req := request(c)
	req.ID = id
	return req
}

// runSlurm runs one of Slurm's commands and returns what it printed.
func runSlurm(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, slurmCommandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("slurm: %s %s: %w %s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out), nil
}

// hookSite reads the job a prolog or epilog (hook) runs for: Slurm's
// environment, which the controller sets, and what squeue says of it; the
// site's bank is set by the caller.
func hookSite(c *cli.Context, hook string) (*slurm.Site, slurm.Hook, error) {
	h := slurm.Hook{Name: hook, JobID: os.Getenv("SLURM_JOB_ID")}
	if h.JobID == "" {
		return nil, h, usageError{commandPath(c) + " runs as Slurm's PrologSlurmctld or EpilogSlurmctld: $SLURM_JOB_ID is not set"}
	}
	machine, err := slurmMachine(c)
	if err != nil {
		return nil, h, err
	}
	nodeFail, err := slurm.ParseNodeFail(c.String("node-fail"))
	if err != nil {
		return nil, h, usageError{err.Error()}
	}
	site := &slurm.Site{Run: runSlurm, Machine: machine, Cluster: orDefault(os.Getenv("SLURM_CLUSTER_NAME"), machine), NodeFail: nodeFail,
		Request: func(id string) ledger.Request { return withRequestID(c, id) },
		Refused: refusedByBank, NotFound: func(err error) bool { return exitCode(err) == exitNotFound }, Message: message,
		Out: c.App.ErrWriter, Log: c.App.ErrWriter}
	h, err = site.ReadHook(c.Context, hook, h.JobID, os.Getenv("SLURM_JOB_USER"))
	return site, h, err
}

// slurmProlog places the lien of the run about to start (slurm.Site.Prolog).
func slurmProlog(c *cli.Context) error {
	site, h, err := hookSite(c, "prolog")
	if err != nil {
		return slurm.HookError(h, err)
	}
	err = withBank(c, func(b bank) error {
		site.Bank = b
		return site.Prolog(c.Context, &h)
	})
	return site.PrologOutcome(c.Context, h, err, c.Bool("fail-open"))
}

// slurmEpilog charges the run that ended (slurm.Site.Epilog).
func slurmEpilog(c *cli.Context) error {
	site, h, err := hookSite(c, "epilog")
	if err != nil {
		return slurm.HookError(h, err)
	}
	err = withBank(c, func(b bank) error {
		site.Bank = b
		return site.Epilog(c.Context, &h, os.Getenv("SLURM_JOB_EXIT_CODE"))
	})
	return slurm.HookError(h, err)
}
