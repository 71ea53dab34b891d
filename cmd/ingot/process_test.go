package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/linebuf"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
)

// The crash test and the loopback benchmark run `ingot serve` as a process
// of its own: this test binary again, which TestMain turns into the ingot
// command when envRunAsIngot is set. (Building ./cmd/ingot instead would
// need the toolchain and a build cache at test time, and would not carry
// the test's build flags such as -race.)
const envRunAsIngot = "INGOT_TEST_RUN_AS_INGOT"

// serverCPUProfile names the file where the servers that a test starts
// write their CPU profile (go test ... -args -server.cpuprofile FILE; a
// relative name is in the package's directory). The test stops such a
// server with SIGTERM rather than SIGKILL, so that the profile is written;
// each server started overwrites the file of the one before.
var serverCPUProfile = flag.String("server.cpuprofile", "", "write the CPU profile of `ingot serve` processes to `file`")

// envCPUProfile passes serverCPUProfile to the server process.
const envCPUProfile = "INGOT_TEST_CPUPROFILE"

func TestMain(m *testing.M) {
	if os.Getenv(envRunAsIngot) != "" {
		// The test holds our standard input open while it runs: at its end
		// of file the test is gone (killed, or timed out), and so are we,
		// rather than serve a temporary bank forever.
		go func() {
			io.Copy(io.Discard, os.Stdin)
			os.Exit(exitError)
		}()
		os.Exit(runProfiled(os.Getenv(envCPUProfile), append([]string{"ingot"}, os.Args[1:]...)))
	}
	// The tests are scripts: they answer no question, whatever standard
	// input the test binary was given (those that do set console).
	console = func() (io.Reader, bool) { return os.Stdin, false }
	os.Exit(m.Run())
}

// runProfiled runs the ingot command, writing its CPU profile to file
// unless file is "".
func runProfiled(file string, args []string) int {
	if file == "" {
		return run(args, os.Stdout, os.Stderr)
	}
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitError
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitError
	}
	defer pprof.StopCPUProfile()
	return run(args, os.Stdout, os.Stderr)
}

// servedBank is a bank file ready to serve: account chem (project
// chem.lab1 of user amy) with 10^12 credits, machines hpc1 and hpc2, and
// two API clients: root (admin) and slurm (scheduler of hpc1).
type servedBank struct {
	*cliBank
	admin, scheduler auth.Key
}

func newServedBank(tb testing.TB) *servedBank {
	b := newCLIBank(tb)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("machine", "add", "hpc1", "--cores", "32")
	b.ok("machine", "add", "hpc2", "--cores", "32")
	b.ok("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	b.ok("deposit", "chem", "1000000000000")
	return &servedBank{cliBank: b,
		admin:     b.clientKey("root", "--role", "admin"),
		scheduler: b.clientKey("slurm", "--role", "scheduler", "--scope", "hpc1")}
}

// clientKey adds an API client with `ingot client add` and returns its key.
func (b *cliBank) clientKey(name string, flags ...string) auth.Key {
	b.t.Helper()
	file := filepath.Join(b.t.TempDir(), name+".key")
	b.ok(append([]string{"client", "add", name, "--key-out", file}, flags...)...)
	raw, err := os.ReadFile(file)
	if err != nil {
		b.t.Fatal(err)
	}
	key, err := auth.ParseKeyFile(raw)
	if err != nil {
		b.t.Fatalf("key file of %s: %v", name, err)
	}
	return key
}

// cycleOf is a job's life as the scheduler tells the bank: a lien on 4
// processors for an hour when it starts, a final charge for half an hour
// when it ends.
func cycleOf(jobID string) (api.LienRequest, api.ChargeRequest) {
	job := lien.Job{Machine: "hpc1", ID: jobID}
	// The lien starts with the job, as a scheduler's placed at job start
	// does.
	place := api.LienRequest{Job: job, User: "amy", Request: charge.Request{Resources: charge.Resources{Processors: 4}, WallclockLimitSeconds: 3600, Start: time.Now().UTC()}}
	usage := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 1800, WallclockLimitSeconds: 3600, State: charge.Completed}
	return place, api.ChargeRequest{Job: job, Usage: usage}
}

// serverProcess is `ingot serve` on a loopback port, in a process of its own.
type serverProcess struct {
	tb  testing.TB
	cmd *exec.Cmd
	url string
	// roots check its certificate when it serves HTTPS (nil: the system's).
	roots  *x509.CertPool
	log    string         // its standard error: the JSON request log
	stdout linebuf.Buffer // what it prints: where it listens
	done   chan struct{}  // closed when it has ended, err saying how
	err    error
}

// startServer starts `ingot serve` on bank db and waits until it listens.
// Its log is appended to serve.log beside db. It is killed at the end of
// the test if it still runs.
func startServer(tb testing.TB, db string, flags ...string) *serverProcess {
	tb.Helper()
	return startServerWith(tb, filepath.Dir(db), append([]string{"--db", db, "serve", "--listen", "127.0.0.1:0"}, flags...)...)
}

// startServerWith is startServer for the command line args (a serve on a
// loopback port), its log in dir.
func startServerWith(tb testing.TB, dir string, args ...string) *serverProcess {
	tb.Helper()
	p := &serverProcess{tb: tb, log: filepath.Join(dir, "serve.log"), done: make(chan struct{})}
	log, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer log.Close() // the child has its own copy
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), envRunAsIngot+"=1", envCPUProfile+"="+*serverCPUProfile)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, log
	if _, err := p.cmd.StdinPipe(); err != nil { // closed by Wait: see TestMain
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start ingot serve: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		if *serverCPUProfile != "" {
			p.cmd.Process.Signal(syscall.SIGTERM) // an error only says it has ended already
		} else {
			p.cmd.Process.Kill()
		}
		<-p.done
	})
	p.url = p.line("listening on ")
	return p
}

// line waits for the line the server prints that starts with prefix and
// returns the rest of it.
func (p *serverProcess) line(prefix string) string {
	p.tb.Helper()
	return waitForLine(p.tb, &p.stdout, prefix, func() (error, bool) {
		select {
		case <-p.done:
			return p.err, true
		default:
			return nil, false
		}
	})
}

// wait waits up to a timeout for the server to end, and returns how.
func (p *serverProcess) wait(timeout time.Duration) error {
	p.tb.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.tb.Fatalf("ingot serve did not end within %s", timeout)
		return nil
	}
}

// kill kills the server with SIGKILL and waits for it to be gone.
func (p *serverProcess) kill() {
	p.tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.tb.Fatalf("SIGKILL: %v", err)
	}
	p.wait(10 * time.Second)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		p.tb.Fatalf("ingot serve ended by itself before SIGKILL: %v\n%s", p.err, p.logTail())
	}
}

// stop stops the server as an operator would, with SIGTERM, and wants it
// to finish cleanly.
func (p *serverProcess) stop() {
	p.tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.tb.Fatalf("SIGTERM: %v", err)
	}
	if err := p.wait(shutdownTimeout + 10*time.Second); err != nil {
		p.tb.Fatalf("ingot serve ended with %v after SIGTERM\n%s", err, p.logTail())
	}
}

// logTail is the end of the server's log, to show with a failure.
func (p *serverProcess) logTail() string {
	b, _ := os.ReadFile(p.log)
	return string(b[max(0, len(b)-4000):])
}

// client is a client of the server with the key and a connection of its
// own (its own transport), retrying a lost answer quickly.
func (p *serverProcess) client(key auth.Key) *client.Client {
	p.tb.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: p.roots}
	p.tb.Cleanup(transport.CloseIdleConnections)
	c, err := client.New(p.url, key, client.WithHTTPClient(&http.Client{Transport: transport, Timeout: 30 * time.Second}),
		client.WithRetries(3, 10*time.Millisecond))
	if err != nil {
		p.tb.Fatal(err)
	}
	return c
}

// cpu is the CPU time (user and system, all its threads) the server has
// used so far, from /proc/PID/stat, in clock ticks of 10 ms: the kernel
// shows /proc's times in USER_HZ, which is 100 on Linux whatever the
// kernel's own tick. It fails the test where /proc cannot tell.
func (p *serverProcess) cpu() time.Duration {
	p.tb.Helper()
	const userHZ = 100
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		p.tb.Fatalf("the server's CPU time: %v", err)
	}
	// The fields after the command's name, which is in parentheses and may
	// hold spaces: state is the 3rd field of the line, utime the 14th.
	_, rest, _ := bytes.Cut(stat, []byte(") "))
	fields := strings.Fields(string(rest))
	if len(fields) < 13 {
		p.tb.Fatalf("the server's CPU time: /proc/%d/stat has %d fields after the name, want at least 13", p.cmd.Process.Pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			p.tb.Fatalf("the server's CPU time: /proc/%d/stat: %v", p.cmd.Process.Pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ
}
