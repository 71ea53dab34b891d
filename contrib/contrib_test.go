package contrib

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/linebuf"
)

// root is the repository's top directory: a package's tests run in its
// own directory.
const root = ".."

// buildDir is the BUILDDIR of every make the tests run: one for all, so
// that the binary is built once (go build leaves an up-to-date binary
// alone), and not the worktree's bin/.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ingot-contrib-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func e2e() bool { return os.Getenv("INGOT_E2E") == "1" }

// needTool returns the path of a program of a Debian package: without it
// the test is skipped, or fails under INGOT_E2E=1, where .ci/run has
// installed it.
func needTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if e2e() {
		t.Fatalf("%s is needed under INGOT_E2E=1 (Debian: apt-get install %s)", name, debianPackage)
	}
	t.Skipf("no %s (Debian: apt-get install %s)", name, debianPackage)
	return ""
}

// runMake runs make TARGET in the repository, with BUILDDIR and the
// variables given (NAME=VALUE).
func runMake(t *testing.T, target string, vars ...string) string {
	t.Helper()
	args := append([]string{"-C", root, "--no-print-directory", target, "BUILDDIR=" + buildDir}, vars...)
	return run(t, exec.Command("make", args...))
}

// installPrefix runs make install with a PREFIX (and SYSCONFDIR) of its
// own and no DESTDIR, so that every path the units and the backup script
// name is real, and returns the prefix.
func installPrefix(t *testing.T) string {
	t.Helper()
	prefix := t.TempDir()
	runMake(t, "install", "DESTDIR=", "PREFIX="+prefix, "SYSCONFDIR="+filepath.Join(prefix, "etc"))
	return prefix
}

// run runs cmd and returns its output and error output; it wants exit 0.
func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return string(out)
}

// operatorEnv is the environment of the commands an operator types: this
// one without the INGOT_* variables a developer's shell may have set, with
// dirs first in PATH and HOME (where ~ is) set.
func operatorEnv(home string, dirs ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INGOT_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	path := append(dirs, os.Getenv("PATH"))
	return append(env, "PATH="+strings.Join(path, string(os.PathListSeparator)), "HOME="+home)
}

// docBlock returns the lines of the first sh block after the heading
// "## heading" of docs/operations.md.
func docBlock(t *testing.T, heading string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("docs/operations.md has no section %q", heading)
	}
	_, block, ok := strings.Cut(section, "\n```sh\n")
	if !ok {
		t.Fatalf("docs/operations.md, %s: no sh block", heading)
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	return strings.Split(block, "\n")
}

// assignment is a line NAME=$(COMMAND).
var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=\$\((.*)\)$`)

// docShell runs the commands of a block of the documentation one at a
// time, as an operator types them into a shell: each line is run by sh in
// the directory of the last `cd`, with the variables set by NAME=$(...)
// lines before it, and must succeed. Two things differ from a host: each
// line is rewritten first (host paths to the test's), and systemctl is the
// test's function.
type docShell struct {
	t         *testing.T
	dir       string
	env       []string
	rewrite   *strings.Replacer
	systemctl func(args []string)
}

// run runs the lines and returns what they printed.
func (s *docShell) run(lines []string) string {
	s.t.Helper()
	var out strings.Builder
	for _, doc := range lines {
		line := s.rewrite.Replace(doc)
		fields := strings.Fields(line)
		switch m := assignment.FindStringSubmatch(line); {
		case len(fields) == 0:
		case fields[0] == "systemctl":
			s.systemctl(fields[1:])
		case fields[0] == "cd" && len(fields) == 2 && filepath.IsAbs(fields[1]):
			s.dir = fields[1]
		case m != nil:
			s.env = append(s.env, m[1]+"="+strings.TrimSpace(s.sh(doc, m[2])))
		default:
			out.WriteString(s.sh(doc, line))
		}
	}
	return out.String()
}

// sh runs a command, the documentation's doc as rewritten, and returns
// its output.
func (s *docShell) sh(doc, command string) string {
	s.t.Helper()
	cmd := exec.Command("sh", "-ec", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("the documentation's %q, run as %q in %s: %v\n%s", doc, command, s.dir, err, out)
	}
	return string(out)
}

// unitCommand returns what systemd would run for the oneshot service of a
// unit file: its ExecStart, and its Environment with each value rewritten.
func unitCommand(t *testing.T, unit string, rewrite *strings.Replacer) (exe string, env []string) {
	t.Helper()
	text, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(text)) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exe = v
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			for _, kv := range strings.Fields(v) {
				env = append(env, rewrite.Replace(kv))
			}
		}
	}
	if exe == "" || strings.ContainsAny(exe, " \t") {
		t.Fatalf("%s: ExecStart=%q, want one program", unit, exe)
	}
	return exe, env
}

// service is `ingot serve` as ingot.service runs it (Type=notify),
// started and stopped by the test's systemctl.
type service struct {
	t    *testing.T
	argv []string
	user *syscall.Credential // as User= and Group= set, or nil for the test's own
	log  string              // its standard error, the JSON log
	url  string              // where it listens, while it runs
	proc *process            // nil while it is stopped
	// notify is the socket where it says it is ready, as systemd's.
	notify *net.UnixConn
}

// process is a server started.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has ended, err saying how
	err  error
}

// systemctl does what systemctl does to ingot.service; the timers, which
// the tests do not run, are let be.
func (s *service) systemctl(args []string) {
	s.t.Helper()
	if len(args) == 0 {
		s.t.Fatal("systemctl with no arguments")
	}
	action, units := args[0], args[1:]
	if action == "enable" && len(units) > 0 && units[0] == "--now" {
		action, units = "start", units[1:]
	}
	for _, unit := range units {
		switch {
		case (unit == "ingot-backup.timer" || unit == "ingot-notify.timer") && (action == "start" || action == "stop"):
		case unit == "ingot.service" && action == "start":
			s.start()
		case unit == "ingot.service" && action == "stop":
			s.stop()
		default:
			s.t.Fatalf("the test has no systemctl %s %s", action, unit)
		}
	}
}

// start starts the server, if it is not running, and waits until it
// listens.
func (s *service) start() {
	s.t.Helper()
	if s.proc != nil {
		return
	}
	if s.notify == nil {
		s.notify = notifySocket(s.t)
	}
	log, err := os.OpenFile(s.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close() // the server has its own copy
	var stdout linebuf.Buffer
	p := &process{cmd: exec.Command(s.argv[0], s.argv[1:]...), done: make(chan struct{})}
	p.cmd.Dir = "/" // systemd's working directory
	p.cmd.Env = append(operatorEnv(s.t.TempDir()), "NOTIFY_SOCKET="+s.notify.LocalAddr().String())
	p.cmd.Stdout, p.cmd.Stderr = &stdout, log
	// The server goes with the test, however the test ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.user, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	s.t.Cleanup(func() {
		p.cmd.Process.Kill() // an error only says it has ended
		<-p.done
	})
	s.proc = p

	// Started, for systemd, when it says READY=1.
	ready := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		s.notify.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := s.notify.Read(buf)
		if err != nil {
			ready <- err.Error()
			return
		}
		ready <- string(buf[:n])
	}()
	select {
	case <-p.done:
		s.t.Fatalf("ingot serve ended at start: %v\n%s", p.err, s.logTail())
	case state := <-ready:
		if state != "READY=1" {
			s.t.Fatalf("ingot serve said %q at start, want READY=1\n%s", state, s.logTail())
		}
	}
	// It printed its address before it said so.
	for deadline := time.Now().Add(10 * time.Second); s.url == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatal("ingot serve is ready but printed no address")
		}
		s.url, _ = stdout.Line("listening on ")
	}
}

// notifySocket is a socket such as systemd's $NOTIFY_SOCKET, that any user
// may send to.
func notifySocket(t *testing.T) *net.UnixConn {
	dir, err := os.MkdirTemp("", "ingot-notify-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, chmod := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o755}, {path, 0o777}} {
		if err := os.Chmod(chmod.path, chmod.mode); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// stop stops the server as systemd does, with SIGTERM, and wants it to
// end cleanly.
func (s *service) stop() {
	s.t.Helper()
	p := s.proc
	if p == nil {
		return
	}
	s.proc, s.url = nil, ""
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			s.t.Fatalf("ingot serve ended with %v after SIGTERM\n%s", p.err, s.logTail())
		}
		s.notify.SetReadDeadline(time.Now().Add(time.Second)) // sent before it ended
		buf := make([]byte, 256)
		if n, err := s.notify.Read(buf); err != nil || string(buf[:n]) != "STOPPING=1" {
			s.t.Fatalf("ingot serve said %q (%v) at SIGTERM, want STOPPING=1", buf[:n], err)
		}
	case <-time.After(45 * time.Second): // TimeoutStopSec of ingot.service
		s.t.Fatalf("ingot serve did not stop within 45s of SIGTERM\n%s", s.logTail())
	}
}

func (s *service) logTail() string {
	b, _ := os.ReadFile(s.log)
	return string(b[max(0, len(b)-4000):])
}
