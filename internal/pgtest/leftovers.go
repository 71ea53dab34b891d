package pgtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// sweepOnce sweeps once per test process, before its first server.
var sweepOnce sync.Once

// sweep removes what the servers of earlier test processes left when
// those died without stopping them (a panic ends a test process without
// its cleanups; the kernel then kills their servers): their directories,
// and their System V shared memory segments, which outlive a killed
// server. A directory whose server still runs, or has not started yet,
// is left alone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "ingot-pg-*"))
	for _, dir := range dirs {
		pid, shm, err := postmaster(filepath.Join(dir, "data"))
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		removeSharedMemory(shm)
		os.RemoveAll(dir)
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
