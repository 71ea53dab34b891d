package soak

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ingot-hpc/ingot/internal/lazyfs"
	"github.com/ingot-hpc/ingot/proto/api"
)

// inject injects a fault while the workload runs, and returns once it is
// healed; the function it returns, if any, runs at the next checkpoint
// (after the checks) to put the bank back where it lives.
func (r *run) inject(kind string) func() {
	switch kind {
	case faultKill:
		r.kill()
	case faultClockIn:
		r.jumpClocks()
	case faultDisk:
		return r.fillDisk()
	case faultFsync:
		return r.failFsync()
	case faultFailover:
		r.failover()
	default:
		r.t.Fatalf("soak: no fault %q", kind)
	}
	return nil
}

// kill kills a server with SIGKILL under load and starts it again on the
// same port a moment later; its clients send what got no answer again.
func (r *run) kill() {
	s := r.servers[r.kills%len(r.servers)]
	r.kills++
	r.faultsOn.Add(1)
	defer r.faultsOn.Add(-1)
	s.Kill(r.t)
	r.stats.fault(faultKill)
	time.Sleep(200*time.Millisecond + rand.N(800*time.Millisecond))
	s.MustStart(r.t)
}

// jumpClocks moves every client's clock (the one its requests are signed
// with) 4 minutes ahead, then behind: within the server's ±5 minutes,
// nothing may be refused. Then half the clients' clocks go 6 minutes
// ahead and behind: their requests are refused as unauthenticated, and
// sent again once their clocks are right; none may be lost or applied
// twice. The server's clock is not moved: ingot serve takes no clock of
// a test's, so it is the clients' that jump.
func (r *run) jumpClocks() {
	set := func(d time.Duration, every int) {
		for i, w := range r.workers {
			if i%every == 0 {
				w.skew.Store(int64(d))
			}
		}
	}
	for _, d := range []time.Duration{4 * time.Minute, -4 * time.Minute} {
		set(d, 1)
		time.Sleep(2 * time.Second)
	}
	set(0, 1)
	r.stats.fault(faultClockIn)
	refusedBefore := r.stats.errorCount(string(api.CodeUnauthenticated))
	r.allow.open(api.CodeUnauthenticated)
	r.faultsOn.Add(1)
	for _, d := range []time.Duration{6 * time.Minute, -6 * time.Minute} {
		set(d, 2)
		time.Sleep(2 * time.Second)
	}
	set(0, 1)
	r.stats.fault(faultClockOut)
	time.Sleep(time.Second) // the refused are sent again
	r.faultsOn.Add(-1)
	r.allow.close(api.CodeUnauthenticated, 5*time.Second)
	refused := r.stats.errorCount(string(api.CodeUnauthenticated)) - refusedBefore
	r.stats.clockRefusals.Add(int64(refused))
	if refused == 0 {
		r.failf("clock jump: no request signed 6 minutes off was refused")
	}
}

// fillDisk moves the bank onto a small tmpfs, fills it while the
// workload runs, checks that changes are refused for want of space (and
// the acknowledged ones kept), frees the space, and checks that changes
// are acknowledged again without a restart. The bank goes back to its
// disk at the next checkpoint.
func (r *run) fillDisk() func() {
	t := r.t
	size, err := fileSize(r.db)
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(r.dir, "small-disk")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	// Room for the bank and a little more, so that the filler, not the
	// bank's growth alone, fills it.
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d", size+32<<20)); err != nil {
		t.Fatalf("soak: mount a tmpfs: %v", err)
	}
	r.whilePaused(func() { r.moveBank(filepath.Join(mnt, "bank.db")) })
	time.Sleep(2 * time.Second)

	r.allow.open(api.CodeInternal)
	r.faultsOn.Add(1)
	const full = "no space left on device"
	mark := r.servers[0].LogSize()
	filler := filepath.Join(mnt, "filler")
	fill(filler)
	r.stats.fault(faultDisk)
	if !r.waitForLog(full, mark, 30*time.Second) {
		r.failf("full disk: no change was refused for want of space within 30 s")
	}
	time.Sleep(2 * time.Second)
	// Space freed: the filler goes, and the file system grows, so that
	// the bank does not fill it again by itself before the round ends
	// (tmpfs takes memory only for what is written).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", 2*size+1<<30)); err != nil {
		t.Fatalf("soak: grow the tmpfs: %v", err)
	}
	r.expectChanges("full disk: after the space was freed", 10*time.Second)
	r.faultsOn.Add(-1)
	r.allow.close(api.CodeInternal, 5*time.Second)
	return func() {
		r.moveBank(r.home)
		if err := syscall.Unmount(mnt, 0); err != nil {
			r.failf("unmount the tmpfs: %v", err)
		}
	}
}

// fill writes a file until the file system is full.
func fill(path string) {
	f, err := os.Create(path)
	if err != nil {
		return // full already
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	small := chunk[:4096]
	for {
		if _, err := f.Write(small); err != nil {
			return
		}
	}
}

// failFsync moves the bank onto a lazyfs, makes its fsyncs fail while the
// workload runs, and checks that the store stops: every change is
// refused, even once the syncs work again, until the server is restarted
// (the bank reopened); then changes are acknowledged again. The bank goes
// back to its disk at the next checkpoint.
func (r *run) failFsync() func() {
	t := r.t
	mnt := filepath.Join(r.dir, "lazy")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	fsys, err := lazyfs.Mount(mnt, nil)
	if err != nil {
		t.Fatalf("soak: mount lazyfs: %v", err)
	}
	r.whilePaused(func() { r.moveBank(filepath.Join(fsys.Dir(), "bank.db")) })
	time.Sleep(2 * time.Second)

	r.allow.open(api.CodeInternal)
	r.faultsOn.Add(1)
	const stopped = "refuses every change until the bank is opened again"
	mark := r.servers[0].LogSize()
	fsys.FailSyncs(syscall.EIO)
	r.stats.fault(faultFsync)
	if !r.waitForLog(stopped, mark, 15*time.Second) {
		r.failf("fsync failure: the store did not stop within 15 s of its fsyncs failing")
	}
	// The disk works again at once; the store must not.
	time.Sleep(300 * time.Millisecond)
	fsys.FailSyncs(0)
	healed := time.Now()
	r.stopped.Store(&healed)
	time.Sleep(3 * time.Second)
	r.stopped.Store(nil)
	s := r.servers[0]
	if err := s.Stop(); err != nil {
		t.Logf("soak: the server with the stopped store ended with %v", err)
	}
	s.MustStart(t)
	r.expectChanges("fsync failure: after the restart", 15*time.Second)
	r.faultsOn.Add(-1)
	r.allow.close(api.CodeInternal, 5*time.Second)
	return func() {
		r.moveBank(r.home)
		if err := fsys.Unmount(); err != nil {
			r.failf("unmount lazyfs: %v", err)
		}
	}
}

// failover kills the PostgreSQL primary and promotes its standby while
// the servers serve; once the new primary has a standby of its own, the
// servers are restarted one at a time with a connection string naming
// the two, as an operator would after a failover.
func (r *run) failover() {
	r.faultsOn.Add(1)
	defer r.faultsOn.Add(-1)
	r.pg.failover(r.t)
	r.stats.fault(faultFailover)
	r.expectChanges("failover: after the promotion", time.Minute)
	for _, s := range r.servers {
		if err := s.Stop(); err != nil {
			r.failf("stopping %s after the failover: %v", s.Name, err)
		}
		s.Global = []string{"--store", r.pg.both()}
		s.MustStart(r.t)
	}
	r.cli.Global = []string{"--store", r.pg.current()}
}

// whilePaused runs fn with the workers stopped between requests; the
// time it takes is not the load's.
func (r *run) whilePaused(fn func()) {
	if !r.gate.pause(maxPending + time.Minute) {
		r.t.Fatal("soak: the workers did not stop")
	}
	r.stats.mu.Lock()
	r.stats.loadTime += time.Since(r.loadStart)
	r.stats.mu.Unlock()
	fn()
	r.loadStart = time.Now()
	r.gate.resume()
}

// moveBank stops the server, copies the bank's file to path, and serves
// it from there. The workers must be stopped (whilePaused, or a
// checkpoint).
func (r *run) moveBank(path string) {
	t := r.t
	s := r.servers[0]
	if err := s.Stop(); err != nil {
		r.failf("stopping the server to move the bank: %v\n%s", err, s.LogTail())
	}
	if err := copyFile(r.db, path); err != nil {
		t.Fatalf("soak: move the bank: %v", err)
	}
	r.db = path
	r.cli.Global = []string{"--db", path}
	s.Global = r.cli.Global
	s.MustStart(t)
}

// copyFile copies src to dst through a temporary file beside dst, synced
// and renamed into place. It leaves every block of zeros a hole, as cp
// --sparse=always does: bbolt grows its file ahead of its data, and on the
// small tmpfs the bank must need new space as it grows, as on a real disk,
// whatever file system the copy came from (lazyfs cannot tell holes).
// A page bbolt wrote is never all zeros, so the copy reads the same.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	const block = 4096
	buf, zero := make([]byte, 1<<20), make([]byte, block)
	for off := int64(0); ; {
		n, err := io.ReadFull(in, buf)
		for i := 0; i < n; i += block {
			b := buf[i:min(i+block, n)]
			if bytes.Equal(b, zero[:len(b)]) {
				continue
			}
			if _, err := out.WriteAt(b, off+int64(i)); err != nil {
				return err
			}
		}
		off += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := out.Truncate(fi.Size()); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// waitForLog waits until the first server logs text after mark.
func (r *run) waitForLog(text string, mark int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if r.servers[0].LoggedSince(text, mark) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// expectChanges waits until a change first sent from now on is
// acknowledged (not a change answered from its kept answer), at most
// timeout.
func (r *run) expectChanges(when string, timeout time.Duration) {
	mark := time.Now().UnixNano()
	deadline := time.Now().Add(timeout)
	for r.lastFirst.Load() <= mark {
		if time.Now().After(deadline) {
			r.failf("%s: no change acknowledged within %s", when, timeout)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
