package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// freePort is a loopback address no one listens on now, so that a server
// restarted there is found where its peer knows it.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeSendsPeerTransactions: a central bank's `ingot serve` sends its
// deposits at a site from its outbox while the site is killed, the
// central bank killed (SIGKILL) with deposits pending, and both started
// again: once drained, the site holds every deposit exactly once, nothing
// is pending, and both banks audit clean.
func TestServeSendsPeerTransactions(t *testing.T) {
	keys := t.TempDir()
	site := newCLIBank(t)
	site.ok("account", "create", "chem")
	site.ok("peer", "add", "central", "--url", "http://127.0.0.1:1", "--key-out", filepath.Join(keys, "site-for-central.key"), "--project", "chem")
	siteArgs := []string{"--db", site.db, "serve", "--listen", freePort(t)}
	siteSrv := startServerWith(t, filepath.Dir(site.db), siteArgs...)

	central := newCLIBank(t)
	rootKey := filepath.Join(keys, "root.key")
	central.ok("client", "add", "root", "--role", "admin", "--key-out", rootKey)
	centralArgs := []string{"--db", central.db, "serve", "--listen", freePort(t)}
	centralSrv := startServerWith(t, filepath.Dir(central.db), centralArgs...)
	admin := &cliBank{t: t, global: []string{"--server", centralSrv.url, "--key-file", rootKey}}
	admin.ok("peer", "add", "siteb", "--url", siteSrv.url, "--key-out", filepath.Join(keys, "central-for-site.key"),
		"--peer-key", filepath.Join(keys, "site-for-central.key"))

	const n = 12
	for i := range n {
		switch i {
		case 4:
			siteSrv.kill()
		case 8:
			centralSrv.kill()
			centralSrv = startServerWith(t, filepath.Dir(central.db), centralArgs...)
			siteSrv = startServerWith(t, filepath.Dir(site.db), siteArgs...)
		}
		admin.ok("deposit", "chem", "10", "--at", "siteb", "-d", fmt.Sprintf("grant %d", i))
	}
	start := time.Now()
	waitDrained(t, admin)
	t.Logf("drained in %s", time.Since(start))
	// Both banks agree on every transaction, through the central bank's
	// server; today's period holds them all, tomorrow's none.
	var rec peer.Reconciliation
	admin.json(&rec, "peer", "reconcile", "siteb")
	if rec.Matched != n || len(rec.Differences) != 0 {
		t.Fatalf("reconcile: %+v", rec)
	}
	today := peer.Day(time.Now())
	if out := admin.ok("peer", "reconcile", "siteb", "--period", today.Name); !strings.Contains(out, fmt.Sprintf("%d agree, 0 differ", n)) {
		t.Fatalf("reconcile of today: %s", out)
	}
	admin.json(&rec, "peer", "reconcile", "siteb", "--period", today.To.Format("2006-01-02"))
	if rec.Matched != 0 {
		t.Fatalf("reconcile of tomorrow: %+v", rec)
	}
	// The statement of the day: what the central bank granted the site.
	var st peer.Statement
	admin.json(&st, "peer", "statement", "siteb", "--period", today.Name)
	if len(st.Lines) != 1 || st.Lines[0].Op != peer.OpDeposit || st.Lines[0].Count != n || st.Sent.String() != fmt.Sprint(10*n) || !st.Received.IsZero() {
		t.Fatalf("statement: %+v", st)
	}
	// A deposit begun on the central bank's file while its server is down
	// is pending there and unknown at the site: reconcile on the file
	// finds it, and exits 5.
	centralSrv.stop()
	central.ok("deposit", "chem", "1", "--at", "siteb")
	out, code := central.run("peer", "reconcile", "siteb")
	if code != exitAudit || !strings.Contains(out, "pending: not applied at the peer yet") || !strings.Contains(out, fmt.Sprintf("%d agree, 1 differ", n)) {
		t.Fatalf("reconcile with a pending deposit exited %d:\n%s", code, out)
	}
	siteSrv.stop()
	var bal []ledger.NodeBalance
	site.json(&bal, "balance", "chem")
	if len(bal) != 1 || bal[0].Amount.String() != fmt.Sprint(10*n) {
		t.Fatalf("the site's chem: %+v, want %d deposited once each", bal, 10*n)
	}
	var txs []peer.Transaction
	central.json(&txs, "peer", "transactions")
	for _, x := range txs[:n] {
		if x.State != peer.StateDone {
			t.Errorf("transaction %s: %s %s", x.ID, x.State, x.Answer)
		}
	}
	if len(txs) != n+1 {
		t.Errorf("%d transactions, want %d", len(txs), n)
	}
	site.ok("audit", "--full")
	central.ok("audit", "--full")
}
