package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTimeout bounds initdb and the server's start together: on a busy
// machine initdb alone takes seconds.
const startTimeout = 2 * time.Minute

// Server is a running PostgreSQL server of a test's own.
type Server struct {
	// Port is its TCP port on 127.0.0.1, and its socket's number.
	Port int
	// SocketDir holds its Unix socket; Data is its data directory.
	SocketDir, Data string

	root    string              // the temporary directory holding both
	lock    *os.File            // held while the directory is in use (leftovers.go)
	bin     string              // the directory of PostgreSQL's programs
	cred    *syscall.Credential // the user it runs as (nil: the test's)
	logs    string              // the server's standard error
	cmd     *exec.Cmd
	exited  chan error
	stopped atomic.Bool
}

// Start starts a server that stops when the test ends; without the
// PostgreSQL binaries it skips the test (fails it under INGOT_E2E=1).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binaries(t)
	s, err := start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// binaries is the directory of initdb and postgres.
func binaries(t testing.TB) string {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		unavailable(t, "%v", err)
	}
	return bin
}

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("INGOT_E2E") == "1" {
		t.Fatalf(format+"; INGOT_E2E=1 requires it", args...)
	}
	t.Skipf(format+"; skipping (INGOT_E2E=1 makes this a failure)", args...)
}

func findBinaries() (string, error) {
	if dir := os.Getenv("INGOT_PG_BIN"); dir != "" {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
		return "", fmt.Errorf("INGOT_PG_BIN=%s holds no initdb and postgres", dir)
	}
	var dirs []string
	if path, err := exec.LookPath("initdb"); err == nil {
		// Where a link on PATH leads: the other programs are there.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		dirs = append(dirs, filepath.Dir(path))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first.
	slices.SortFunc(debian, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, dir := range append(dirs, debian...) {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL's initdb and postgres are neither on PATH nor in /usr/lib/postgresql/N/bin (Debian: apt-get install postgresql)")
}

// majorOf is N of /usr/lib/postgresql/N/bin.
func majorOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// start runs initdb and the server; the caller stops it.
func start(bin string) (*Server, error) {
	return startWith(bin, func(ctx context.Context, s *Server) error {
		initdb := s.command(ctx, "initdb", "-D", s.Data, "-U", "postgres",
			"--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync")
		if out, err := initdb.CombinedOutput(); err != nil {
			return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
		}
		return nil
	})
}

// startWith makes a server's directory, has makeData fill its data
// directory, and starts it; the caller stops it.
func startWith(bin string, makeData func(context.Context, *Server) error) (*Server, error) {
	sweepOnce.Do(sweep)
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "ingot-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{SocketDir: root, Data: filepath.Join(root, "data"), root: root, logs: filepath.Join(root, "postgres.log"), bin: bin, cred: cred}
	if s.lock, err = own(root); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(root, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := makeData(ctx, s); err != nil {
		s.remove()
		return nil, err
	}
	// Another process may take the free port before the server does:
	// then try another.
	for try := 0; ; try++ {
		err = s.run(ctx)
		if err == nil {
			return s, nil
		}
		if try == 2 || !strings.Contains(err.Error(), "could not bind") {
			s.remove()
			return nil, err
		}
	}
}

// command is one of PostgreSQL's programs, run as the server's user.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// serverUser is the user the server runs as: postgres when the test runs
// as root, else the test's own (nil).
func serverUser() (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, the server must run as the user postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// run starts postgres on a free port and waits until it answers.
func (s *Server) run(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logs, err := os.Create(s.logs)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logs.Close()
	s.Port = port
	s.cmd = exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.Data, "-p", strconv.Itoa(port), "-k", s.SocketDir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	s.cmd.Stdout, s.cmd.Stderr = logs, logs
	// The kernel kills the server if this process dies without stopping it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait() }()
	for {
		err := s.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case exit := <-s.exited:
			s.exited <- exit
			return fmt.Errorf("pgtest: postgres exited at start (%v):\n%s", exit, s.Logs())
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("pgtest: postgres does not answer on port %d after %s: %v\n%s", port, startTimeout, err, s.Logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := s.admin(ctx)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// admin connects as the superuser, over the socket.
func (s *Server) admin(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", s.SocketDir, s.Port))
}

// Logs is what the server wrote to its standard error.
func (s *Server) Logs() string {
	out, _ := os.ReadFile(s.logs)
	return string(out)
}

// Stop stops the server (a fast shutdown, SIGKILL after 10s) and removes
// its directory. It may be called again.
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	s.stopped.Store(true)
	var err error
	select {
	case exit := <-s.exited:
		s.exited <- exit
	default:
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case exit := <-s.exited:
			s.exited <- exit
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			s.exited <- <-s.exited
			err = fmt.Errorf("pgtest: postgres on port %d did not stop within 10s of a fast shutdown: killed", s.Port)
		}
	}
	if rmErr := s.remove(); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

// remove removes the server's directory, then lets go of its lock.
func (s *Server) remove() error {
	err := os.RemoveAll(s.root)
	s.lock.Close()
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}

// Binary is the path of one of PostgreSQL's programs (psql, pg_dump...)
// beside initdb; without it the test skips (fails under INGOT_E2E=1).
func Binary(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(binaries(t), name)
	if !isExecutable(path) {
		unavailable(t, "%s is not beside initdb", path)
	}
	return path
}
