package soak

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

// buildIngot builds ./cmd/ingot into dir and returns the binary's path.
// The module's root is found from this file's directory, as `go test`
// runs in the package's.
func buildIngot(tb testing.TB, dir string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			tb.Fatalf("soak: no go command to build ingot with (give INGOT_SOAK_BIN): %v", err)
		}
	}
	out := filepath.Join(dir, "ingot")
	cmd := exec.Command(goBin, "build", "-o", out, "./cmd/ingot")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("soak: go build ./cmd/ingot: %v\n%s", err, msg)
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
			return "", errors.New("soak: no go.mod above the working directory")
		}
		dir = parent
	}
}

// command is the ingot command line on one bank: global names it (--db
// FILE or --store URL).
type command struct {
	bin    string
	global []string
}

// run runs ingot with args, and returns its output (standard output and
// error together) and an error naming its exit status if it failed. It is
// killed after timeout.
func (c command) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(append([]string{}, c.global...), args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ingot %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// must runs ingot and fails the test if it fails.
func (c command) must(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := c.run(2*time.Minute, args...)
	if err != nil {
		tb.Fatalf("%v\n%s", err, out)
	}
	return out
}

// server is `ingot serve` as a process of its own, on a loopback port
// that it keeps across restarts, so that its clients' URL stays valid.
type server struct {
	name   string
	bin    string
	global []string // --db FILE or --store URL
	flags  []string // serve's flags other than --listen
	addr   string   // host:port, fixed by the first start
	url    string
	log    string // its standard error, appended to across starts

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdout *linebuf.Buffer
	done   chan struct{}
	err    error
	starts int
}

// start starts the server and waits until it listens. It returns an
// error rather than failing the test, so that the caller can retry a
// port that the kernel has not yet let go.
func (s *server) start() error {
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	log, err := os.OpenFile(s.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	args := append(append(append([]string{}, s.global...), "serve", "--listen", addr), s.flags...)
	cmd := exec.Command(s.bin, args...)
	out := &linebuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, log
	// The server dies with this process, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
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
			s.addr, s.url = addr, "http://"+addr
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s ended before it listened: %v\n%s%s", s.name, s.exitErr(), out.String(), s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("%s did not listen within 2 minutes\n%s", s.name, s.logTail())
		}
	}
}

// mustStart starts the server, trying again for a while if it cannot: a
// port just freed by a killed server may take the kernel a moment.
func (s *server) mustStart(tb testing.TB) {
	tb.Helper()
	var err error
	for range 20 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	tb.Fatal(err)
}

func (s *server) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// running reports whether the server's process has not ended.
func (s *server) running() bool {
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

// kill kills the server with SIGKILL and waits for it to be gone.
func (s *server) kill(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatalf("%s: SIGKILL: %v\n%s", s.name, err, s.logTail())
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s lived 30 s after SIGKILL", s.name)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		tb.Fatalf("%s ended by itself before SIGKILL: %v\n%s", s.name, s.exitErr(), s.logTail())
	}
}

// stop stops the server as an operator does, with SIGTERM, and returns
// how it ended. A server that has not ended 45 s later (its shutdown
// waits 30 s for requests in flight) is killed, and that is an error.
func (s *server) stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		select {
		case <-done:
			return fmt.Errorf("%s had ended already: %v", s.name, s.exitErr())
		default:
			return err
		}
	}
	select {
	case <-done:
		return s.exitErr()
	case <-time.After(45 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within 45 s of SIGTERM", s.name)
	}
}

// logTail is the end of the server's log, to show with a failure.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.log)
	return string(b[max(0, len(b)-3000):])
}

// logSize is how long the server's log is now: a mark to look for what
// it logs after.
func (s *server) logSize() int64 {
	fi, err := os.Stat(s.log)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// loggedSince reports whether the server's log holds text after offset.
func (s *server) loggedSince(text string, offset int64) bool {
	f, err := os.Open(s.log)
	if err != nil {
		return false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
	return bytes.Contains(b, []byte(text))
}

// metrics reads the server's goroutines and heap in use from its
// /metrics page (zeros if it does not answer).
func (s *server) metrics() (goroutines, heap int64) {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(s.url + "/metrics")
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
