package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/linebuf"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
)

// TestServe starts `ingot serve` on a free loopback port, makes a signed
// request over TCP, stops it as a signal would (by ending its context),
// and checks that it let go of the database: the audit at cleanup opens it.
func TestServe(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "100")
	key := b.clientKey("root", "--role", "admin")

	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0")
	base := srv.line(t, "listening on ")

	resp := signedGet(t, key, base+"/v1/balance?node=chem")
	var nb ledger.NodeBalance
	if err := json.Unmarshal(resp, &nb); err != nil || nb.Node != "chem" || nb.Amount.String() != "100" {
		t.Errorf("balance over TCP: %s (%v)", resp, err)
	}

	if err := srv.shutdown(t); err != nil {
		t.Fatalf("serve ended with %v\n%s", err, srv.stderr.String())
	}
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

// TestServeFirstAdmin: on a new bank, serve --first-admin-key makes the
// server key and client admin, whose key (in the file, and printed once)
// works; the next start leaves the clients alone; a key file left from
// another bank stops the start.
func TestServeFirstAdmin(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	keyFile := filepath.Join(t.TempDir(), "admin.key")

	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--first-admin-key", keyFile)
	base := srv.line(t, "listening on ")
	printed := srv.line(t, "first start: made API client admin (role admin)")
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v; want mode 0600 (%s)", fi, err, printed)
	}
	raw, _ := os.ReadFile(keyFile)
	if !strings.Contains(srv.stdout.String(), string(raw)) {
		t.Errorf("the key was not printed:\n%s", srv.stdout.String())
	}
	key, err := auth.ParseKeyFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	signedGet(t, key, base+"/v1/balance?node=chem")
	if err := srv.shutdown(t); err != nil {
		t.Fatal(err)
	}

	again := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--first-admin-key", keyFile)
	signedGet(t, key, again.line(t, "listening on ")+"/v1/balance?node=chem")
	if err := again.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(again.stdout.String(), "first start") {
		t.Errorf("a second start made another admin:\n%s", again.stdout.String())
	}
	if out := b.ok("client", "list", "--parsable"); strings.Count(out, "\n") != 2 {
		t.Errorf("clients after two starts:\n%s", out)
	}

	other := newCLIBank(t)
	if out, code := other.run("serve", "--listen", "127.0.0.1:0", "--first-admin-key", keyFile); code == exitOK || !strings.Contains(out, "holds the key of another bank") {
		t.Errorf("a new bank served with an old key file exited %d:\n%s", code, out)
	}
	// A key file that cannot be written stops the start before any client
	// is made, and so does a --key-out that cannot be written.
	nowhere := filepath.Join(t.TempDir(), "missing", "admin.key")
	if out, code := other.run("serve", "--listen", "127.0.0.1:0", "--first-admin-key", nowhere); code == exitOK || !strings.Contains(out, "no such file or directory") {
		t.Errorf("serve with an unwritable --first-admin-key exited %d:\n%s", code, out)
	}
	if out, code := other.run("client", "add", "slurm", "--role", "admin", "--key-out", nowhere); code == exitOK || !strings.Contains(out, "no such file or directory") {
		t.Errorf("client add with an unwritable --key-out exited %d:\n%s", code, out)
	}
	if out := other.ok("client", "list", "--parsable"); strings.Count(out, "\n") != 1 {
		t.Errorf("clients made although their key could not be written:\n%s", out)
	}
}

// serving is `ingot serve` running in-process, stopped at the test's
// cleanup if the test did not stop it.
type serving struct {
	stdout, stderr linebuf.Buffer
	stop           context.CancelFunc
	done           chan error
}

// startServe runs `ingot ARGS...`, a serve command line.
func startServe(t *testing.T, args ...string) *serving {
	ctx, stop := context.WithCancel(context.Background())
	s := &serving{stop: stop, done: make(chan error, 1)}
	go func() {
		s.done <- newApp(&s.stdout, &s.stderr).RunContext(ctx, append([]string{"ingot"}, args...))
	}()
	// Registered after the bank's audit, so it runs before it.
	t.Cleanup(func() {
		stop()
		<-s.done
	})
	return s
}

// serveRefused runs a serve command line that must end by itself, before
// it serves, with exit code code and an error saying says.
func serveRefused(t *testing.T, code int, says string, args ...string) {
	t.Helper()
	srv := startServe(t, args...)
	select {
	case err := <-srv.done:
		srv.done <- err // for the cleanup
		if exitCode(err) != code || err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ingot %s ended with exit %d: %v; want exit %d saying %q", strings.Join(args, " "), exitCode(err), err, code, says)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("ingot %s serves; want it refused saying %q:\n%s", strings.Join(args, " "), says, srv.stdout.String())
		srv.shutdown(t)
	}
}

// line waits for the line serve prints that starts with prefix (such as
// "listening on ", once it listens) and returns the rest of it.
func (s *serving) line(t *testing.T, prefix string) string {
	t.Helper()
	return waitForLine(t, &s.stdout, prefix, func() (error, bool) {
		select {
		case err := <-s.done:
			s.done <- err // for the cleanup
			return fmt.Errorf("%v\n%s", err, s.stderr.String()), true
		default:
			return nil, false
		}
	})
}

// waitForLine waits up to 10 s for a line of stdout that starts with
// prefix and returns the rest of it; ended says whether the command has
// ended, and how.
func waitForLine(tb testing.TB, stdout *linebuf.Buffer, prefix string, ended func() (error, bool)) string {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if rest, ok := stdout.Line(prefix); ok {
			return rest
		}
		if err, ok := ended(); ok {
			tb.Fatalf("serve ended before printing %q: %v\n%s", prefix, err, stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("serve printed no %q within 10s", prefix)
	return ""
}

// shutdown stops serve as a signal would (by ending its context) and
// returns its error.
func (s *serving) shutdown(t *testing.T) error {
	t.Helper()
	s.stop()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of its shutdown")
		return nil
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
	b.clientKey("slurm", "--role", "admin")

	socket := filepath.Join(mungetest.PublicDir(t), "ingot.socket")
	stale, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--socket", socket, "--munge", "--munge-socket", d.Socket)
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
	if all, err := viaMunge.Balances(ctx, time.Time{}); err != nil || len(all) != 1 || all[0].Node != "chem.lab1" {
		t.Errorf("%s lists balances over MUNGE: %+v, %v; want only chem.lab1", me.Username, all, err)
	}
	if _, err := viaMunge.Audit(ctx, ledger.AuditOptions{}); !client.IsCode(err, api.CodeForbidden) {
		t.Errorf("%s audits over MUNGE: %v; want forbidden", me.Username, err)
	}

	// The command line, both ways: on the socket as the server's own uid
	// (admin: every account), over MUNGE as a bank user (only its project).
	remote := &cliBank{t: t, global: []string{"--server", "unix:" + socket}}
	if out := remote.ok("balance", "--parsable"); !strings.Contains(out, "\nchem|") {
		t.Errorf("ingot --server unix:%s balance:\n%s", socket, out)
	}
	remote.global = []string{"--server", base, "--use-munge", "--munge-socket", d.Socket}
	if out := remote.ok("balance", "--parsable"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "\nchem.lab1|") {
		t.Errorf("ingot --use-munge balance shows other nodes than chem.lab1:\n%s", out)
	}
	if out, code := remote.run("audit"); code != exitRefused || !strings.Contains(out, "may not GET /v1/audit") {
		t.Errorf("ingot --use-munge audit exited %d:\n%s", code, out)
	}
	if out, code := remote.run("balance", "--key-file", "/nonexistent"); code == exitOK || !strings.Contains(out, "give one") {
		t.Errorf("--use-munge with --key-file exited %d:\n%s", code, out)
	}

	if err := srv.shutdown(t); err != nil {
		t.Fatalf("serve ended with %v\n%s", err, srv.stderr.String())
	}
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
// socket, nor a socket another server answers on.
func TestServeSocketInTheWay(t *testing.T) {
	b := newCLIBank(t)
	dir := t.TempDir()
	b.clientKey("slurm", "--role", "admin")
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

// TestServeSlowClients: a client that sends its body too slowly gets a
// clear 400 answer, one that sends its headers too slowly gets net/http's
// 400 and is cut off, and the server goes on serving others; nothing is
// written.
func TestServeSlowClients(t *testing.T) {
	saved := timeouts
	timeouts.readHeader, timeouts.read = 300*time.Millisecond, 600*time.Millisecond
	t.Cleanup(func() { timeouts = saved })
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	key := b.clientKey("root", "--role", "admin")
	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0")
	base := srv.line(t, "listening on ")
	host := strings.TrimPrefix(base, "http://")
	journal := func() string { return string(signedGet(t, key, base+"/v1/journal")) }
	before := journal()

	// The body: 10 of the 100 bytes announced, then nothing.
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/deposits HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"account\"", host)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("slow body: no answer: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	var e api.Error
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(answer, &e) != nil || !strings.Contains(e.Message, "reading the request body") {
		t.Errorf("slow body: %s %s; want 400 saying the body could not be read", resp.Status, answer)
	}

	// The headers: a request line and half a header, then nothing.
	slow, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "GET /v1/balance?node=chem HTTP/1.1\r\nHost: %s\r\nX-Ingot-Da", host)
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	// net/http answers itself (plain text): there is no request to hand us.
	cut, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil || cut.StatusCode != http.StatusBadRequest || !cut.Close || time.Since(start) > 4*time.Second {
		t.Errorf("slow headers: %v, %v after %s; want 400 and the connection closed within the timeout", cut, err, time.Since(start))
	}

	if after := journal(); after != before {
		t.Errorf("the slow clients wrote to the journal")
	}
}
