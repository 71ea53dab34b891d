package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		app := newApp(&stdout, &stderr)
		done <- app.RunContext(ctx, []string{"ingot", "--db", b.db, "serve", "--listen", "127.0.0.1:0"})
	}()
	base := waitForAddress(t, &stdout, done)

	resp := signedGet(t, key, base+"/v1/balance?node=chem")
	var nb ledger.NodeBalance
	if err := json.Unmarshal(resp, &nb); err != nil || nb.Node != "chem" || nb.Amount.String() != "100" {
		t.Errorf("balance over TCP: %s (%v)", resp, err)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of its shutdown")
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"request"`, `"client":"root"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	// The bank is closed: another command opens it at once (the cleanup's
	// audit checks it is sound).
	b.ok("balance", "chem")
}

// waitForAddress returns the http://host:port serve prints once it listens.
func waitForAddress(t testing.TB, stdout *lockedBuffer, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out := stdout.String()
		if _, rest, ok := strings.Cut(out, "listening on "); ok && strings.HasSuffix(rest, "\n") {
			return strings.TrimSpace(rest)
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended before listening: %v\n%s", err, out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("serve printed no address within 10s")
	return ""
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
