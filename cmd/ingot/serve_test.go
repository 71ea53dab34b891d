package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
)

// lockedBuffer is a bytes.Buffer safe to write from the server's goroutine
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServe starts `ingot serve` on a free loopback port, makes a signed
// request over TCP, stops it as a signal would (by ending its context),
// and checks that it let go of the database: the audit at cleanup opens it.
func TestServe(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "100")
	keyFile := filepath.Join(t.TempDir(), "root.key")
	b.ok("client", "add", "root", "--role", "admin", "--key-out", keyFile)
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := auth.ParseKeyFile(raw)
	if err != nil {
		t.Fatal(err)
	}

	srv := startServe(t, b, "--listen", "127.0.0.1:0")
	base := srv.line(t, "listening on ")

	resp := signedGet(t, key, base+"/v1/balance?node=chem")
	var nb ledger.NodeBalance
	if err := json.Unmarshal(resp, &nb); err != nil || nb.Node != "chem" || nb.Amount.String() != "100" {
		t.Errorf("balance over TCP: %s (%v)", resp, err)
	}

	srv.shutdown(t)
	logs := srv.stderr.String()
	for _, want := range []string{`"msg":"request"`, `"client":"root"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	// The bank is closed: another command opens it at once (the cleanup's
	// audit checks it is sound).
	b.ok("balance", "chem")
}

// serving is an ingot serve running in the test's process.
type serving struct {
	stdout, stderr lockedBuffer
	done           chan error
	stop           context.CancelFunc
}

// startServe runs ingot serve with args on b's bank until the test ends or
// shutdown.
func startServe(t *testing.T, b *cliBank, args ...string) *serving {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	s := &serving{done: make(chan error, 1), stop: stop}
	go func() {
		app := newApp(&s.stdout, &s.stderr)
		s.done <- app.RunContext(ctx, append([]string{"ingot", "--db", b.db, "serve"}, args...))
	}()
	return s
}

// line waits for serve to print a line starting with prefix, and returns
// the rest of it.
func (s *serving) line(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out := s.stdout.String()
		if _, rest, ok := strings.Cut(out, prefix); ok {
			if line, _, ok := strings.Cut(rest, "\n"); ok {
				return line
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve ended before printing %q: %v\n%s%s", prefix, err, out, s.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no %q within 10s", prefix)
	return ""
}

// shutdown stops serve as a signal would; it must end within 10 s, without
// an error.
func (s *serving) shutdown(t *testing.T) {
	t.Helper()
	s.stop()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve ended with %v\n%s", err, s.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of its shutdown")
	}
}

// signedGet makes a signed GET and returns its body; it wants 200.
func signedGet(t *testing.T, key auth.Key, url string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Sign(req, nil, key, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	return body
}

// TestServeSocketAndMunge starts `ingot serve --socket --munge` with a
// stale socket file in the way and a munged of the test's own: root is
// admin on the socket (mode 0666) without a key, a MUNGE request over TCP
// acts as the bank user of its account, and the socket file is gone after
// the shutdown.
func TestServeSocketAndMunge(t *testing.T) {
	d := mungetest.Start(t)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("deposit", "chem", "100")
	b.ok("user", "add", me.Username, "--member", "chem.lab1")
	// The server needs its server key, which the first client makes, even
	// when no request uses a key.
	b.ok("client", "add", "slurm", "--role", "admin", "--key-out", filepath.Join(t.TempDir(), "slurm.key"))

	socket := filepath.Join(mungetest.PublicDir(t), "ingot.socket")
	stale, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	srv := startServe(t, b, "--listen", "127.0.0.1:0", "--socket", socket, "--munge", "--munge-socket", d.Socket)
	base := srv.line(t, "listening on ")
	if got := srv.line(t, "listening on unix socket "); got != socket {
		t.Errorf("serve says it listens on %q, want %q", got, socket)
	}
	if fi, err := os.Stat(socket); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("socket file: %v, %v; want mode 0666", fi, err)
	}

	ctx := context.Background()
	local, err := client.Open(client.Options{Socket: socket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.Deposit(ctx, "", api.DepositRequest{Account: "chem", Amount: decimal.NewFromInt(5)}); err != nil {
		t.Errorf("the server's own uid deposits on the socket: %v", err)
	}
	viaMunge, err := client.Open(client.Options{Server: base, Munge: true, MungeSocket: d.Socket})
	if err != nil {
		t.Fatal(err)
	}
	if nb, err := viaMunge.Balance(ctx, "chem.lab1"); err != nil || nb.Amount.String() != "105" {
		t.Errorf("%s reads chem.lab1 over MUNGE: %+v, %v", me.Username, nb, err)
	}
	if _, err := viaMunge.Balances(ctx); !client.IsCode(err, api.CodeForbidden) {
		t.Errorf("%s asks every balance over MUNGE: %v; want forbidden", me.Username, err)
	}

	srv.shutdown(t)
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket file is still there after the shutdown: %v", err)
	}
	logs := srv.stderr.String()
	for _, want := range []string{`"client":"socket:` + me.Username + `"`, `"client":"munge:` + me.Username + `"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

// TestServeSocketInTheWay: serve does not remove a file that is not a
// socket, nor a socket another server answers on; --munge-socket alone is
// a mistake.
func TestServeSocketInTheWay(t *testing.T) {
	b := newCLIBank(t)
	dir := t.TempDir()
	b.ok("client", "add", "slurm", "--role", "admin", "--key-out", filepath.Join(dir, "slurm.key"))
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.socket")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if out, code := b.run("serve", "--munge-socket", live); code != exitUsage || !strings.Contains(out, "--munge-socket goes with --munge") {
		t.Errorf("serve --munge-socket without --munge exited %d: %s", code, out)
	}
	for path, says := range map[string]string{file: "exists and is not a socket", live: "another server answers on"} {
		out, code := b.run("serve", "--listen", "127.0.0.1:0", "--socket", path)
		if code == exitOK || !strings.Contains(out, says) {
			t.Errorf("serve --socket %s exited %d: %s; want a refusal saying %q", path, code, out, says)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed: %v", path, err)
		}
	}
}
