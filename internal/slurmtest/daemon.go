package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// daemon is one of the cluster's daemons, running in the foreground as a
// child of the test in a process group of its own.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
	err    error         // what Wait returned, once exited is closed
}

// startDaemon starts a daemon whose standard output and error go to
// Dir/log/name.out (where a daemon says why it did not start, before it
// opens its own log).
func (c *Cluster) startDaemon(name, command string, args ...string) error {
	out, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(command, args...)
	cmd.Env = c.env
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that what it forks and leaves behind
	// (slurmctld's slurmscriptd) can be killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	c.daemons = append(c.daemons, d)
	return nil
}

// waitFor calls check until it succeeds, one of the daemons exits or the
// readiness timeout passes.
func (c *Cluster) waitFor(what string, check func() error) error {
	return poll(what, readyTimeout, func() error {
		for _, d := range c.daemons {
			select {
			case <-d.exited:
				return fmt.Errorf("%w: %s exited: %v", errGaveUp, d.name, d.err)
			default:
			}
		}
		return check()
	})
}

// stop stops d: SIGTERM, and SIGKILL to its process group if it has not
// exited after stopTimeout. Whatever is left in the group is killed too.
func (d *daemon) stop() error {
	var err error
	select {
	case <-d.exited:
		// It should have run until now.
		err = fmt.Errorf("%s had exited before the cluster stopped: %v", d.name, d.err)
	default:
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(stopTimeout):
			err = fmt.Errorf("%s did not stop within %v of SIGTERM: killed", d.name, stopTimeout)
		}
	}
	// The group's id is the daemon's pid, which the kernel does not give
	// another process while the group has members.
	if kerr := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
		err = errors.Join(err, fmt.Errorf("kill %s's process group: %w", d.name, kerr))
	}
	<-d.exited
	return err
}

// Stop cancels the cluster's jobs, stops its daemons, and kills whatever
// process of the cluster is still running after them, reporting it: after
// Stop, nothing the cluster started runs. The test's cleanup calls it; a
// test may call it before, to check its result; it runs once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	if c.running("slurmctld") {
		errs = append(errs, c.cancelJobs())
	}
	// Each daemon before those it needs.
	for _, d := range slices.Backward(c.daemons) {
		errs = append(errs, d.stop())
	}
	left, err := c.lingering()
	errs = append(errs, err)
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("still running after the daemons stopped, killed: %s", strings.Join(left, "; ")))
		errs = append(errs, c.killProcesses())
	}
	return errors.Join(errs...)
}

// running tells whether the daemon name started and has not exited.
func (c *Cluster) running(name string) bool {
	for _, d := range c.daemons {
		if d.name == name {
			select {
			case <-d.exited:
				return false
			default:
				return true
			}
		}
	}
	return false
}

// cancelJobs cancels every job and waits until the controller has none
// left, so that slurmd and slurmstepd end the jobs' processes and the
// epilogs run before the daemons stop.
func (c *Cluster) cancelJobs() error {
	deadline := time.Now().Add(stopTimeout)
	for {
		out, err := c.Run("squeue", "-h", "-o", "%A")
		if err != nil {
			return fmt.Errorf("cancel the jobs: %w", err)
		}
		ids := strings.Fields(out)
		if len(ids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cancel the jobs: jobs %s still in the queue after %v", strings.Join(ids, ", "), stopTimeout)
		}
		// Completing jobs are in the list too: cancelling them again is
		// harmless.
		if _, err := c.Run("scancel", ids...); err != nil {
			return fmt.Errorf("cancel the jobs: %w", err)
		}
		time.Sleep(pollInterval)
	}
}

// lingerGrace is how long the cluster's processes may take to go once
// the daemons have stopped: a job's slurmstepd may still be ending its
// job's processes as slurmd stops (a job's `sleep 60` was seen alive just
// after, once in a few dozen stops).
const lingerGrace = 10 * time.Second

// lingering lists the cluster's processes still alive lingerGrace after
// the daemons stopped, or none as soon as none is.
func (c *Cluster) lingering() ([]string, error) {
	var left []string
	err := poll("the cluster's processes to end", lingerGrace, func() error {
		var err error
		if left, err = c.processes(); err != nil {
			return fmt.Errorf("%w: %w", errGaveUp, err)
		}
		if len(left) > 0 {
			return fmt.Errorf("%d left", len(left))
		}
		return nil
	})
	if len(left) > 0 {
		return left, nil // Stop says which, and kills them
	}
	return nil, err
}

// processes lists the live processes of the cluster (pid and command line):
// those with the cluster's marker in their environment or its directory in
// their command line, those in the same sessions (a job's processes started
// with --export=NONE have no marker, but share their slurmstepd's session),
// and their descendants. Zombies are dead and left out.
func (c *Cluster) processes() ([]string, error) {
	pids, err := c.processIDs()
	if err != nil {
		return nil, err
	}
	var list []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		list = append(list, fmt.Sprintf("%d %s", pid, strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))))
	}
	return list, nil
}

// procInfo is what processIDs reads of a process in /proc.
type procInfo struct {
	pid, ppid, sid int
	ours           bool // marker or directory
}

// processIDs returns the pids that processes describes, and the
// descendants of those (slurmctld's prolog and epilog run with an
// environment of Slurm's making, without the marker).
func (c *Cluster) processIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	ownSid, err := unix.Getsid(0)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	marker := []byte("\x00" + markerVar + "=" + c.Dir + "\x00")
	var procs []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		// A process that exits while we look is simply not there.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		state, ppid, sid, ok := parseStat(string(stat))
		if !ok || state == "Z" {
			continue
		}
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ = append(append([]byte{0}, environ...), 0)
		procs = append(procs, procInfo{pid: pid, ppid: ppid, sid: sid,
			ours: bytes.Contains(environ, marker) || bytes.Contains(cmdline, []byte(c.Dir+"/"))})
	}
	// The daemons share the test's session: that one is not the cluster's.
	found, sessions := map[int]bool{}, map[int]bool{}
	for _, p := range procs {
		if p.ours {
			found[p.pid] = true
			if p.sid != ownSid {
				sessions[p.sid] = true
			}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if !found[p.pid] && (sessions[p.sid] || found[p.ppid]) {
				found[p.pid], grew = true, true
			}
		}
	}
	var pids []int
	for _, p := range procs {
		if found[p.pid] {
			pids = append(pids, p.pid)
		}
	}
	return pids, nil
}

// parseStat reads the state, parent and session of /proc/PID/stat: "pid
// (comm) state ppid pgrp session ...", where comm may hold spaces and
// parentheses.
func parseStat(stat string) (state string, ppid, sid int, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 4 {
		return "", 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	return f[0], ppid, sid, err1 == nil && err2 == nil
}

// killProcesses kills the cluster's processes (SIGKILL) until none is left,
// for at most stopTimeout.
func (c *Cluster) killProcesses() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	for {
		pids, err := c.processIDs()
		if err != nil || len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("processes %v survive SIGKILL", pids)
		case <-time.After(pollInterval):
		}
	}
}

// logTails returns the last lines of the cluster's logs, for a failure's
// message.
func (c *Cluster) logTails() string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		lines = lines[max(0, len(lines)-20):]
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", f, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
