package pgtest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// Standby starts a standby of s (pg_basebackup -R: a copy of s that
// streams its log), on a port and in a directory of its own, and makes it
// synchronous: once Standby returns, a commit on s is answered only when
// the standby has its log. It stops when the test ends.
func (s *Server) Standby(t testing.TB) *Server {
	t.Helper()
	standby, err := startWith(s.bin, func(ctx context.Context, sb *Server) error {
		backup := sb.command(ctx, "pg_basebackup", "-D", sb.Data, "-R", "-X", "stream", "--no-sync", "--checkpoint=fast",
			"-h", s.SocketDir, "-p", strconv.Itoa(s.Port), "-U", "postgres")
		if out, err := backup.CombinedOutput(); err != nil {
			return fmt.Errorf("pgtest: pg_basebackup: %w\n%s", err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A primary left waiting for a standby that is gone would wait
		// for ever: the test's other cleanups still use it.
		if !s.stopped.Load() {
			s.exec(t, "ALTER SYSTEM RESET synchronous_standby_names", "SELECT pg_reload_conf()")
		}
		if err := standby.Stop(); err != nil {
			t.Error(err)
		}
	})
	s.exec(t, "ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		var n int
		conn, err := s.admin(ctx)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`).Scan(&n)
			conn.Close(ctx)
		}
		if err == nil && n > 0 {
			return standby
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: the standby on port %d is not synchronous after %s (%v):\n%s", standby.Port, startTimeout, err, standby.Logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// exec runs statements as the superuser.
func (s *Server) exec(t testing.TB, statements ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := s.admin(ctx)
	if err != nil {
		t.Fatalf("pgtest: connect to the server on port %d: %v", s.Port, err)
	}
	defer conn.Close(context.Background())
	for _, sql := range statements {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("pgtest: %s: %v", sql, err)
		}
	}
}

// Promote makes a standby a primary, and returns once it takes writes.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	s.exec(t, "SELECT pg_promote(true, 60)")
}

// Kill kills the server with SIGKILL, as the loss of its machine stops it:
// its processes end at once, without a checkpoint. Stop then removes its
// directory.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.stopped.Store(true)
	_, shm, pidErr := postmaster(s.Data)
	s.cmd.Process.Kill()
	s.exited <- <-s.exited
	if pidErr == nil {
		removeSharedMemory(shm)
	}
}
