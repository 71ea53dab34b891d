package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
	"github.com/ingot-hpc/ingot/proto/server"
)

// blackHole listens on loopback, accepts every connection and never
// answers: a peer partitioned away.
func blackHole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

// TestPeerAwayHoldsUpNoOther: a central bank with a deposit pending at a
// peer that does not answer, begun first, and one at a site that does:
// the site's is done at once, not after the send to the other has timed
// out (the outbox sent every transaction one after another, so one peer
// away held up every other by its timeout at each try).
func TestPeerAwayHoldsUpNoOther(t *testing.T) {
	ctx := context.Background()
	one := decimal.NewFromInt(1)
	site := newBank(t, onFile, "chem")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(server.New(site.Ledger, lien.New(site.Ledger), site.clients, &auth.Verifier{Lookup: server.KeyLookup(site.clients)}, log))
	defer ts.Close()
	central := newBank(t, onFile)
	_, centralKey, err := site.peers.Add(ctx, site.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:1", Projects: []string{"chem"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	awayKey, _ := auth.NewKey("away.1")
	for name, p := range map[string]struct {
		url string
		key auth.Key
	}{"away": {"http://" + blackHole(t), awayKey}, "near": {ts.URL, centralKey}} {
		if _, _, err := central.peers.Add(ctx, central.Req(), peer.Spec{Name: name, URL: p.url}, &p.key); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"away", "near"} {
		if _, err := central.peers.Deposit(ctx, central.Req(), name, ledger.DepositSpec{Account: "chem", Amount: one}); err != nil {
			t.Fatal(err)
		}
	}

	const timeout = 5 * time.Second
	o := &outbox.Outbox{Peers: central.peers, Log: log, Timeout: timeout}
	start := time.Now()
	drained := make(chan int)
	go func() {
		pending, err := o.Drain(ctx)
		if err != nil {
			t.Error(err)
		}
		drained <- pending
	}()
	for {
		if got := site.MustBalance("chem").Amount; got.Equal(one) {
			break
		}
		if time.Since(start) > timeout/2 {
			t.Fatalf("the site's deposit not done %s after the outbox began: the peer away holds it up", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pending := <-drained; pending != 1 {
		t.Fatalf("%d pending after the drain, want 1 (the peer away's)", pending)
	}
}
