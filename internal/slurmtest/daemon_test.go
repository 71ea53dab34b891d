package slurmtest

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

// TestProcessesFindsLeftovers checks the search Stop makes for what the
// cluster left running, without Slurm: a process with the marker in a
// session of its own (as slurmstepd is), and its child without the marker
// (as a job's process started with --export=NONE).
func TestProcessesFindsLeftovers(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	cmd := exec.Command("sh", "-c", "env -i sleep 60 & wait")
	cmd.Env = append(os.Environ(), markerVar+"="+c.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	// Another process with a marker for another directory is not ours.
	other := exec.Command("sleep", "60")
	other.Env = append(os.Environ(), markerVar+"="+c.Dir+"x")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		other.Process.Kill()
		other.Wait()
	})

	var pids []int
	err := poll("sh and its sleep", readyTimeout, func() error {
		var err error
		if pids, err = c.processIDs(); err == nil && len(pids) < 2 {
			err = os.ErrNotExist
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 2 || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("processes found %v, want sh (%d) and its sleep", pids, cmd.Process.Pid)
	}
	if err := c.killProcesses(); err != nil {
		t.Fatal(err)
	}
	if pids, err := c.processIDs(); err != nil || len(pids) > 0 {
		t.Errorf("after killProcesses: %v (%v)", pids, err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process of another directory was killed: %v", err)
	}
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		stat, state   string
		ppid, session int
		ok            bool
	}{
		{"42 (slurmstepd) S 1 41 41 0 -1 4194368", "S", 1, 41, true},
		{"7 (a) b (c)) Z 3 7 5 0", "Z", 3, 5, true},
		{"7 (sh", "", 0, 0, false},
		{"7 (sh) R 1", "", 0, 0, false},
	} {
		state, ppid, sid, ok := parseStat(tc.stat)
		if state != tc.state || ppid != tc.ppid || sid != tc.session || ok != tc.ok {
			t.Errorf("parseStat(%q) = %q, %d, %d, %v, want %q, %d, %d, %v",
				tc.stat, state, ppid, sid, ok, tc.state, tc.ppid, tc.session, tc.ok)
		}
	}
}

func TestJobID(t *testing.T) {
	for out, want := range map[string]string{"12\n": "12", "12;ingot\n": "12", "": ""} {
		if got := jobID(out); got != want {
			t.Errorf("jobID(%q) = %q, want %q", out, got, want)
		}
	}
}
