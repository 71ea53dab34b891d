package mungetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/munge"
)

// Nobody is the uid and gid of the account nobody, which Debian has.
const Nobody = 65534

// Daemon is a running munged of one test.
type Daemon struct {
	// Socket is its socket, in a directory every local user may enter.
	Socket string
}

// Start starts a munged that stops when the test ends.
func Start(t testing.TB) *Daemon {
	t.Helper()
	Require(t, "munge", "unmunge", "munged")
	dir := PublicDir(t)
	key := make([]byte, 128) // what mungekey makes by default: 1024 bits
	rand.Read(key)
	// munged refuses a key file that others may read.
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Socket: filepath.Join(dir, "munge.socket")}
	logFile := filepath.Join(dir, "munged.log")
	cmd := exec.Command("munged", "--foreground", "--socket="+d.Socket,
		"--key-file="+filepath.Join(dir, "munge.key"), "--log-file="+logFile,
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--seed-file="+filepath.Join(dir, "munged.seed"))
	// Before it opens its log file, munged says what is wrong on stderr.
	stderr, err := os.Create(filepath.Join(dir, "munged.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start munged: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	logs := func() string {
		out, _ := os.ReadFile(stderr.Name())
		log, _ := os.ReadFile(logFile)
		return string(out) + string(log)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := d.Command().Encode(ctx, nil)
		cancel()
		if err == nil {
			return d
		}
		select {
		case err := <-exited:
			t.Fatalf("munged exited at start (%v):\n%s", err, logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("munged does not answer on %s after 10s: %v\n%s", d.Socket, err, logs())
		}
	}
}

// Command is the munge.Command that talks to d.
func (d *Daemon) Command() munge.Command { return munge.Command{Socket: d.Socket} }

// Credential runs munge with args as uid (see RunAs) to make a credential
// for payload.
func (d *Daemon) Credential(t testing.TB, uid int, payload []byte, args ...string) string {
	t.Helper()
	out, err := RunAs(t, uid, payload, "munge", append(args, "--socket="+d.Socket)...)
	if err != nil {
		t.Fatalf("munge as uid %d: %v", uid, err)
	}
	return strings.TrimSpace(string(out))
}

// Sign sets r's Authorization and X-Ingot-Date headers, as
// munge.Command.Sign does, with a credential that uid makes (see RunAs) for
// r with body; args go to munge.
func (d *Daemon) Sign(t testing.TB, uid int, r *http.Request, body []byte, args ...string) {
	t.Helper()
	date := time.Now().UTC().Format(auth.DateLayout)
	payload, err := munge.Payload(r, body, date)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", munge.Scheme+" "+d.Credential(t, uid, payload, args...))
	r.Header.Set(auth.HeaderDate, date)
}

// RunAs runs a command as uid, with gid uid and no supplementary groups
// (setpriv; uid need not have an account), with stdin, and returns its
// standard output; a failure's error has its standard error. The test's own
// uid runs it directly; any other needs root.
func RunAs(t testing.TB, uid int, stdin []byte, name string, args ...string) ([]byte, error) {
	t.Helper()
	if uid != os.Getuid() {
		Require(t, "setpriv")
		if os.Getuid() != 0 {
			unavailable(t, "running commands as uid %d needs root", uid)
		}
		id := strconv.Itoa(uid)
		args = append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", name}, args...)
		name = "setpriv"
	}
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// PublicDir returns a new directory, removed when the test ends, that
// every local user may enter: munged insists on one for its socket, and a
// socket other users dial must be in one. (t.TempDir's are private.)
func PublicDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ingot-munge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Require skips the test unless the commands are on PATH; under
// INGOT_E2E=1 it fails it instead.
func Require(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			unavailable(t, "%s is not on PATH (Debian: apt-get install munge util-linux curl)", name)
		}
	}
}

// unavailable skips the test, or fails it under INGOT_E2E=1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("INGOT_E2E") == "1" {
		t.Fatalf(format+"; INGOT_E2E=1 requires it", args...)
	}
	t.Skipf(format+"; skipping (INGOT_E2E=1 makes this a failure)", args...)
}
