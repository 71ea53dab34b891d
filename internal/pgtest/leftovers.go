package pgtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// sweepOnce sweeps once per test process, before its first server.
var sweepOnce sync.Once

// lockName is the file in a server's directory that its test process
// holds locked (flock) while the server may run: the kernel lets go of
// it when the process ends, however it ends.
const lockName = "pgtest.lock"

// own makes the lock file in a new server's directory and locks it.
func own(root string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(root, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("pgtest: lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// sweep removes what the servers of earlier test processes left when
// those died without stopping them (a panic ends a test process without
// its cleanups; the kernel then kills their servers): their directories,
// and their System V shared memory segments, which outlive a killed
// server. A directory whose lock another process holds is in use, and
// one without a lock is being made: both are left alone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "ingot-pg-*"))
	for _, dir := range dirs {
		f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if _, shm, err := postmaster(filepath.Join(dir, "data")); err == nil {
				removeSharedMemory(shm)
			}
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// removeSharedMemory removes a killed server's System V segment: the
// kernel frees the rest of its memory, and its next start would remove
// this one, but there is none.
func removeSharedMemory(id int) { unix.SysvShmCtl(id, unix.IPC_RMID, nil) }

// postmaster reads a data directory's postmaster.pid: the server's pid
// (its first line) and its shared memory segment (its seventh: key, id).
func postmaster(data string) (pid, shm int, err error) {
	f, err := os.Open(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var lines []string
	for scan := bufio.NewScanner(f); scan.Scan() && len(lines) < 7; {
		lines = append(lines, scan.Text())
	}
	if len(lines) == 7 {
		fields := strings.Fields(lines[6])
		pid, err = strconv.Atoi(lines[0])
		if err == nil && len(fields) == 2 {
			shm, err = strconv.Atoi(fields[1])
			return pid, shm, err
		}
	}
	return 0, 0, fmt.Errorf("pgtest: %s/postmaster.pid names no server and shared memory", data)
}
