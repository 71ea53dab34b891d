package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestHealthcheck: ingot healthcheck, a container's HEALTHCHECK, exits 0
// while serve answers on the address it listens on, read from
// INGOT_LISTEN as serve reads it (0.0.0.0 asked on loopback); exit 6 where
// nothing listens, or once the server has stopped.
func TestHealthcheck(t *testing.T) {
	b := newCLIBank(t)
	b.clientKey("root", "--role", "admin") // serve needs a server key
	srv := startServe(t, "--db", b.db, "serve", "--listen", "127.0.0.1:0")
	base, err := url.Parse(srv.line(t, "listening on "))
	if err != nil {
		t.Fatal(err)
	}
	port := base.Port()

	for _, listen := range []string{"127.0.0.1:" + port, "0.0.0.0:" + port, ":" + port} {
		t.Setenv("INGOT_LISTEN", listen)
		if out, errOut, code := runCLI("healthcheck"); code != exitOK || !strings.HasPrefix(out, "ok: http://127.0.0.1:"+port+"/healthz") {
			t.Errorf("INGOT_LISTEN=%s ingot healthcheck: exit %d\n%s%s", listen, code, out, errOut)
		}
	}
	if out, _, code := runCLI("healthcheck", "--listen", "127.0.0.1:"+port, "--json"); code != exitOK || strings.TrimSpace(out) != "{\n  \"status\": \"ok\"\n}" {
		t.Errorf("ingot healthcheck --json: exit %d\n%s", code, out)
	}

	if err := srv.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI("healthcheck", "--listen", "127.0.0.1:"+port); code != exitUnavailable {
		t.Errorf("ingot healthcheck of a stopped server: exit %d, want %d\n%s%s", code, exitUnavailable, out, errOut)
	}
	if _, errOut, code := runCLI("healthcheck", "--listen", "no port"); code != exitUsage {
		t.Errorf("ingot healthcheck --listen 'no port': exit %d, want %d\n%s", code, exitUsage, errOut)
	}
}
