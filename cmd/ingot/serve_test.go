package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/auth"
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

// serving is `ingot serve` running in-process, stopped at the test's
// cleanup if the test did not stop it.
type serving struct {
	stdout, stderr lockedBuffer
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
func waitForLine(tb testing.TB, stdout *lockedBuffer, prefix string, ended func() (error, bool)) string {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for l := range strings.Lines(stdout.String()) {
			if rest, ok := strings.CutPrefix(l, prefix); ok && strings.HasSuffix(rest, "\n") {
				return strings.TrimSpace(rest)
			}
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
