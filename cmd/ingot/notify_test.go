package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeNotifiesSystemd runs serve as a Type=notify unit would, with
// NOTIFY_SOCKET set: it says READY=1 once it listens, and STOPPING=1 when
// it shuts down.
func TestServeNotifiesSystemd(t *testing.T) {
	b := newCLIBank(t)
	b.clientKey("root", "--role", "admin") // serve needs the server key
	path := filepath.Join(t.TempDir(), "notify")
	manager, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	next := func() string {
		t.Helper()
		manager.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 256)
		n, err := manager.Read(buf)
		if err != nil {
			t.Fatalf("no word from serve on NOTIFY_SOCKET: %v", err)
		}
		return string(buf[:n])
	}

	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0")
	if got := next(); got != "READY=1" {
		t.Fatalf("serve sent %q first, want READY=1", got)
	}
	if !strings.Contains(srv.stdout.String(), "listening on http://") {
		t.Errorf("READY=1 before serve listens; it printed %q", srv.stdout.String())
	}
	if err := srv.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "STOPPING=1" {
		t.Errorf("serve sent %q at shutdown, want STOPPING=1", got)
	}
}
