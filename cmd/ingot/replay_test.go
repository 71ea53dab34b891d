package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// TestServeReplayAfterRestart: a signed deposit captured on the way and
// sent again, byte for byte, after the server restarts (its nonces gone
// with its memory) is answered as the retry it is and deposits nothing;
// a retention under the floor, which would have pruned the answer that
// stops it, is refused at start with a reason.
func TestServeReplayAfterRestart(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "100000")
	key := b.clientKey("root", "--role", "admin")

	for _, short := range []string{"0s", "-1h", "1s", "59m"} {
		serveRefused(t, exitUsage, "could be applied again after a restart", "--db", b.db, "serve", "--listen", "127.0.0.1:0", "--request-retention", short)
	}

	body := []byte(`{"account":"chem","amount":"1000"}`)
	var captured *http.Request
	send := func(base string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+api.PathDeposits, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if captured == nil {
			req.Header.Set(auth.HeaderRequestID, "replay-1")
			req.Header.Set("Content-Type", "application/json")
			if err := auth.Sign(req, body, key, time.Now()); err != nil {
				t.Fatal(err)
			}
			captured = req
		} else {
			req.Header = captured.Header.Clone() // the very same bytes
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(answer)
	}

	// The floor itself, the shortest setting a server accepts.
	args := []string{"--db", b.db, "serve", "--listen", "127.0.0.1:0", "--request-retention", "1h"}
	srv := startServe(t, args...)
	status, first := send(srv.line(t, "listening on "))
	if status != http.StatusOK {
		t.Fatalf("deposit: %d %s", status, first)
	}
	if err := srv.shutdown(t); err != nil {
		t.Fatal(err)
	}

	again := startServe(t, args...)
	status, replayed := send(again.line(t, "listening on "))
	if err := again.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || replayed != first {
		t.Errorf("the replay after a restart got %d %s; want the first answer %s", status, replayed, first)
	}
	if out := b.ok("balance", "chem", "--parsable"); !strings.Contains(out, "|101000.00|") {
		t.Errorf("after a deposit of 1000 and its replay:\n%s", out)
	}
}
