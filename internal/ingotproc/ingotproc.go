package ingotproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/linebuf"
)

// Build builds ./cmd/ingot into dir and returns the binary's path.
// The module's root is found from this file's directory, as `go test`
// runs in the package's.
func Build(tb testing.TB, dir string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			tb.Fatalf("ingotproc: no go command to build ingot with: %v", err)
		}
	}
	out := filepath.Join(dir, "ingot")
	cmd := exec.Command(goBin, "build", "-o", out, "./cmd/ingot")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("ingotproc: go build ./cmd/ingot: %v\n%s", err, msg)
	}
	return out
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("ingotproc: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Command is the ingot command line on one bank: Global names it (--db
// FILE, --store URL, or --server URL --key-file FILE).
type Command struct {
	Bin    string
	Global []string
}

// Run runs ingot with args, and returns its output (standard output and
// error together) and an error naming its exit status if it failed. It is
// killed after timeout.
func (c Command) Run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, append(append([]string{}, c.Global...), args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ingot %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Must runs ingot and fails the test if it fails.
func (c Command) Must(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := c.Run(2*time.Minute, args...)
	if err != nil {
		tb.Fatalf("%v\n%s", err, out)
	}
	return out
}

// Server is `ingot serve` as a process of its own, on a loopback port
// that it keeps across restarts, so that its clients' URL stays valid.
// Name, Bin, Global, Flags and Log are set before the first start; Addr
// may be (a port chosen for it), or the first start fixes it.
type Server struct {
	Name   string
	Bin    string
	Global []string // --db FILE or --store URL
	Flags  []string // serve's flags other than --listen
	Addr   string   // host:port
	URL    string   // http://Addr, set by the first start
	Log    string   // its standard error, appended to across starts

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdout *linebuf.Buffer
	done   chan struct{}
	err    error
	starts int
}

// Start starts the server and waits until it listens. It returns an
// error rather than failing the test, so that the caller can retry a
// port that the kernel has not yet let go.
func (s *Server) Start() error {
	addr := s.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	log, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	args := append(append(append([]string{}, s.Global...), "serve", "--listen", addr), s.Flags...)
	cmd := exec.Command(s.Bin, args...)
	out := &linebuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, log
	// The server dies with this process, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.stdout, s.done, s.err = cmd, out, done, nil
	s.starts++
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(done)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if addr, ok := out.Line("listening on http://"); ok {
			s.Addr, s.URL = addr, "http://"+addr
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s ended before it listened: %v\n%s%s", s.Name, s.ExitErr(), out.String(), s.LogTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("%s did not listen within 2 minutes\n%s", s.Name, s.LogTail())
		}
	}
}

// MustStart starts the server, trying again for a while if it cannot: a
// port just freed by a killed server may take the kernel a moment.
func (s *Server) MustStart(tb testing.TB) {
	tb.Helper()
	var err error
	for range 20 {
		if err = s.Start(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	tb.Fatal(err)
}

// ExitErr is how the server's last process ended (nil while it runs).
func (s *Server) ExitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Running reports whether the server's process has not ended.
func (s *Server) Running() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Kill kills the server with SIGKILL and waits for it to be gone.
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatalf("%s: SIGKILL: %v\n%s", s.Name, err, s.LogTail())
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s lived 30 s after SIGKILL", s.Name)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		tb.Fatalf("%s ended by itself before SIGKILL: %v\n%s", s.Name, s.ExitErr(), s.LogTail())
	}
}

// Stop stops the server as an operator does, with SIGTERM, and returns
// how it ended. A server that has not ended 45 s later (its shutdown
// waits 30 s for requests in flight) is killed, and that is an error.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		select {
		case <-done:
			return fmt.Errorf("%s had ended already: %v", s.Name, s.ExitErr())
		default:
			return err
		}
	}
	select {
	case <-done:
		return s.ExitErr()
	case <-time.After(45 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within 45 s of SIGTERM", s.Name)
	}
}

// LogTail is the end of the server's log, to show with a failure.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(s.Log)
	return string(b[max(0, len(b)-3000):])
}

// LogSize is how long the server's log is now: a mark to look for what
// it logs after.
func (s *Server) LogSize() int64 {
	fi, err := os.Stat(s.Log)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// LoggedSince reports whether the server's log holds text after offset.
func (s *Server) LoggedSince(text string, offset int64) bool {
	f, err := os.Open(s.Log)
	if err != nil {
		return false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
	return bytes.Contains(b, []byte(text))
}

// Metrics reads the server's goroutines and heap in use from its
// /metrics page (zeros if it does not answer).
func (s *Server) Metrics() (goroutines, heap int64) {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(s.URL + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	for l := range strings.Lines(string(page)) {
		name, value, ok := strings.Cut(strings.TrimSpace(l), " ")
		v, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			goroutines = int64(v)
		case "go_memstats_heap_inuse_bytes":
			heap = int64(v)
		}
	}
	return goroutines, heap
}

// Starts is how many times the server has been started.
func (s *Server) Starts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}
