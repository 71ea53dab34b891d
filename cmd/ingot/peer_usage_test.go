package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
	"github.com/ingot-hpc/ingot/proto/server"
)

// TestPeerUsageShown: a central bank (`ingot serve`) grants an allocation
// at a site (a bank in this process, whose clock the test moves); jobs at
// the site spend it; once the day is over the site reports the usage,
// and the central bank's usage, statement and peer statement show what
// was spent there, and reconcile finds both banks agree.
func TestPeerUsageShown(t *testing.T) {
	ctx := context.Background()
	keys := t.TempDir()
	central := newCLIBank(t)
	central.ok("account", "create", "chem")
	rootKey := filepath.Join(keys, "root.key")
	central.ok("client", "add", "root", "--role", "admin", "--key-out", rootKey)
	centralSrv := startServerWith(t, filepath.Dir(central.db), "--db", central.db, "serve", "--listen", freePort(t))
	admin := &cliBank{t: t, global: []string{"--server", centralSrv.url, "--key-file", rootKey}}

	site := ledgertest.NewBank(t, func(t testing.TB) ledger.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "site.db"), boltstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	site.MustNode("chem")
	reg, err := clients.New(site.Ledger, [32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(server.New(site.Ledger, lien.New(site.Ledger), reg, &auth.Verifier{Lookup: server.KeyLookup(reg)}, log))
	defer ts.Close()
	peers := peer.New(site.Ledger, reg)
	_, forCentral, err := peers.Add(ctx, site.Req(), peer.Spec{Name: "central", URL: centralSrv.url, Projects: []string{"chem"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(keys, "site-for-central.key")
	if err := os.WriteFile(keyFile, forCentral.KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	admin.ok("peer", "add", "siteb", "--url", ts.URL, "--key-out", filepath.Join(keys, "central-for-site.key"), "--peer-key", keyFile)
	forSite, err := readPeerKey(filepath.Join(keys, "central-for-site.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peers.SetKey(ctx, site.Req(), "central", forSite); err != nil {
		t.Fatal(err)
	}

	admin.ok("deposit", "chem", "1000", "--at", "siteb")
	waitDrained(t, admin)
	if _, err := site.AddMachine(ctx, site.Req(), ledger.MachineSpec{Name: "hpc1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := site.AddUser(ctx, site.Req(), ledger.UserSpec{Name: "amy", Memberships: []ledger.Membership{{Node: "chem", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	start := site.Clock.Now()
	used := charge.Usage{Resources: charge.Resources{Processors: 2}, WallclockSeconds: 60, WallclockLimitSeconds: 600, Start: start, End: start.Add(time.Minute), State: charge.Completed}
	if _, err := lien.New(site.Ledger).Charge(ctx, site.Req(), lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: "j1"}, User: "amy", Project: "chem", Usage: used}); err != nil {
		t.Fatal(err)
	}
	site.Clock.Advance(24 * time.Hour)
	if begun, err := peers.ReportDue(ctx, peer.DefaultReportPeriod); err != nil || len(begun) != 1 {
		t.Fatalf("reports begun: %v %v", begun, err)
	}
	if pending, err := (&outbox.Outbox{Peers: peers, Log: log}).Drain(ctx); err != nil || pending != 0 {
		t.Fatalf("the site's outbox: %d pending, %v", pending, err)
	}

	day := peer.Day(ledgertest.Epoch)
	var rows []lien.UsageRow
	admin.json(&rows, "usage", "--since", day.From.Format(time.RFC3339))
	if len(rows) != 1 || rows[0].Peer != "siteb" || rows[0].Project != "chem" || rows[0].Charges != 1 || !rows[0].Net.Equal(decimal.NewFromInt(120)) {
		t.Fatalf("usage: %+v", rows)
	}
	if out := admin.ok("usage", "--since", day.From.Format(time.RFC3339)); !containsAll(out, "At", "siteb", "120") {
		t.Fatalf("usage:\n%s", out)
	}
	var st struct {
		ledger.Statement
		SpentAtPeers []peer.Spent `json:"spent_at_peers"`
	}
	admin.json(&st, "statement", "chem", "--start", day.From.Format(time.RFC3339))
	if len(st.SpentAtPeers) != 1 || st.SpentAtPeers[0].Peer != "siteb" || st.SpentAtPeers[0].Reports != 1 || !st.SpentAtPeers[0].Net.Equal(decimal.NewFromInt(120)) {
		t.Fatalf("statement: %+v", st)
	}
	if out := admin.ok("statement", "chem", "--start", day.From.Format(time.RFC3339)); !containsAll(out, "Spent at peers", "siteb", "120") {
		t.Fatalf("statement:\n%s", out)
	}
	var pst peer.Statement
	admin.json(&pst, "peer", "statement", "siteb", "--period", time.Now().UTC().Format("2006-01"))
	if !pst.Sent.Equal(decimal.NewFromInt(1000)) || !pst.Received.Equal(decimal.NewFromInt(120)) {
		t.Fatalf("peer statement: %+v", pst)
	}
	var rec peer.Reconciliation
	admin.json(&rec, "peer", "reconcile", "siteb")
	if rec.Matched != 2 || len(rec.Differences) != 0 {
		t.Fatalf("reconcile: %+v", rec)
	}
	centralSrv.stop()
	central.ok("audit", "--full")
}

// waitDrained waits until the bank behind admin has no transaction
// pending.
func waitDrained(t *testing.T, admin *cliBank) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		var pending []peer.Transaction
		admin.json(&pending, "peer", "transactions", "--pending")
		if len(pending) == 0 {
			return
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%d transactions still pending after 30 s", len(pending))
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
