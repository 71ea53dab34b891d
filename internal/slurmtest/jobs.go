package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"os/user"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Run runs a command (sbatch, scontrol...) against the cluster, as root, in
// JobDir with Env, and returns its standard output; a failure's error has
// its standard error. A command that runs for more than a minute is killed.
func (c *Cluster) Run(name string, args ...string) (string, error) {
	return c.run(c.env, name, args...)
}

// RunAs runs a command as Run does, but as the local user login (its uid,
// gid and groups, with setpriv); login must be in /etc/passwd.
func (c *Cluster) RunAs(login, name string, args ...string) (string, error) {
	u, err := user.Lookup(login)
	if err != nil {
		return "", fmt.Errorf("run %s as %s: %w", name, login, err)
	}
	return c.run(c.env, "setpriv", append([]string{"--reuid=" + u.Uid, "--regid=" + u.Gid, "--init-groups", name}, args...)...)
}

// run runs a command with env (this process's when nil) in JobDir.
func (c *Cluster) run(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = c.JobDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// AddAccount adds an account to Slurm's accounting, under parent ("" for
// the root account).
func (c *Cluster) AddAccount(name, parent string) error {
	args := []string{"-i", "add", "account", name}
	if parent != "" {
		args = append(args, "parent="+parent)
	}
	_, err := c.Run("sacctmgr", args...)
	return err
}

// AddUser adds the local user login to account in Slurm's accounting, with
// defaultAccount as its default account ("" keeps it, or makes account the
// default of a new user), and waits until slurmctld knows of it, so that
// the user's next job is accepted.
func (c *Cluster) AddUser(login, account, defaultAccount string) error {
	args := []string{"-i", "add", "user", login, "account=" + account}
	if defaultAccount != "" {
		args = append(args, "defaultaccount="+defaultAccount)
	}
	if _, err := c.Run("sacctmgr", args...); err != nil {
		return err
	}
	// slurmdbd sends the change to slurmctld on its own time.
	return poll(fmt.Sprintf("slurmctld to know user %s in account %s", login, account), readyTimeout, func() error {
		out, err := c.Run("scontrol", "-o", "show", "assoc_mgr", "users="+login, "accounts="+account, "flags=assoc")
		if err == nil && !strings.Contains(out, "UserName="+login+"(") {
			err = fmt.Errorf("not yet in scontrol show assoc_mgr")
		}
		return err
	})
}

// Submit submits a batch job as root with sbatch and args, and returns its
// id.
func (c *Cluster) Submit(args ...string) (string, error) {
	out, err := c.Run("sbatch", append([]string{"--parsable"}, args...)...)
	return jobID(out), err
}

// SubmitAs submits a batch job as the local user login (see RunAs).
func (c *Cluster) SubmitAs(login string, args ...string) (string, error) {
	out, err := c.RunAs(login, "sbatch", append([]string{"--parsable"}, args...)...)
	return jobID(out), err
}

// jobID is the job id in sbatch --parsable's output, "ID" or "ID;CLUSTER".
func jobID(out string) string {
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	return id
}

var jobStateRE = regexp.MustCompile(`(?:^| )JobState=(\S+)`)

// JobState returns the job's state as slurmctld has it (scontrol show job:
// PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED...), or, once
// slurmctld has forgotten the job (MinJobAge after its end), as sacct has
// it, without sacct's "by UID".
func (c *Cluster) JobState(id string) (string, error) {
	out, err := c.Run("scontrol", "-o", "show", "job", id)
	if err == nil {
		if m := jobStateRE.FindStringSubmatch(out); m != nil {
			return m[1], nil
		}
		return "", fmt.Errorf("scontrol show job %s: no JobState in %q", id, out)
	}
	if !strings.Contains(err.Error(), "Invalid job id") {
		return "", err
	}
	out, err = c.Run("sacct", "-X", "-n", "-P", "-j", id, "-o", "State")
	if err != nil {
		return "", err
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return "", fmt.Errorf("job %s: neither slurmctld nor sacct knows it", id)
	}
	state, _, _ := strings.Cut(lines[len(lines)-1], " ")
	return state, nil
}

// finalStates are the states a job does not leave.
var finalStates = []string{"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
	"PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}

// WaitJob waits until the job is in one of states (see JobState), for at
// most timeout or until it ends in another, and returns that state.
func (c *Cluster) WaitJob(id string, timeout time.Duration, states ...string) (string, error) {
	var state string
	err := poll(fmt.Sprintf("job %s to be %s", id, strings.Join(states, " or ")), timeout, func() error {
		var err error
		state, err = c.JobState(id)
		switch {
		case err != nil || slices.Contains(states, state):
			return err
		case slices.Contains(finalStates, state):
			return fmt.Errorf("%w: it ended %s", errGaveUp, state)
		default:
			return fmt.Errorf("it is %s", state)
		}
	})
	return state, err
}

// SacctFields are the fields Sacct asks for: those ingot's Slurm
// integration reads.
var SacctFields = []string{"JobID", "Account", "User", "Partition", "QOS", "AllocTRES",
	"ElapsedRaw", "Start", "End", "State", "ExitCode"}

// Sacct runs sacct -a -X -P -o SacctFields with args (-j ID, -D...) and
// returns one map of field to value per line.
func (c *Cluster) Sacct(args ...string) ([]map[string]string, error) {
	out, err := c.Run("sacct", append([]string{"-a", "-X", "-P", "-o", strings.Join(SacctFields, ",")}, args...)...)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := strings.Split(lines[0], "|")
	var rows []map[string]string
	for _, l := range lines[1:] {
		values := strings.Split(l, "|")
		if len(values) != len(header) {
			return nil, fmt.Errorf("sacct: line %q has %d fields, the header %d", l, len(values), len(header))
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = values[i]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// errGaveUp marks an error of poll's check that waiting longer cannot
// cure.
var errGaveUp = errors.New("gave up")

// poll calls check every pollInterval until it succeeds, for at most
// timeout, or until it returns an errGaveUp.
func poll(what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if errors.Is(err, errGaveUp) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not after %v: %w", what, timeout, err)
		}
		time.Sleep(pollInterval)
	}
}
