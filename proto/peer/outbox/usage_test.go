package outbox_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/link"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
	"github.com/ingot-hpc/ingot/proto/server"
)

// serve serves a bank's API on loopback until the test ends.
func serve(t *testing.T, b *bank) string {
	srv := server.New(b.Ledger, lien.New(b.Ledger), b.clients, &auth.Verifier{Lookup: server.KeyLookup(b.clients)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestUsageReportedBack: a central bank grants an allocation at a site;
// jobs at the site charge it and one is refunded; once the day is over,
// the site's outbox reports the day's usage to the central bank once, and
// a day with none as zero. The central bank's records, statement and
// reconcile show it. A report of an allocation the bank did not grant, or
// of a day reported already, is refused. Each engine for the site.
func TestUsageReportedBack(t *testing.T) {
	onEachEngine(t, usageReportedBack)
}

func usageReportedBack(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	site := newBank(t, open, "chem")
	central := newBank(t, onFile, "chem")
	siteURL, centralURL := serve(t, site), serve(t, central)
	_, forCentral, err := site.peers.Add(ctx, site.Req(), peer.Spec{Name: "central", URL: centralURL, Projects: []string{"chem"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, forSite, err := central.peers.Add(ctx, central.Req(), peer.Spec{Name: "siteb", URL: siteURL}, &forCentral)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := site.peers.SetKey(ctx, site.Req(), "central", forSite); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	drain := func(o *outbox.Outbox) {
		t.Helper()
		if pending, err := o.Drain(ctx); err != nil || pending != 0 {
			t.Fatalf("drain: %d pending, %v", pending, err)
		}
	}
	siteOut, centralOut := &outbox.Outbox{Peers: site.peers, Log: log}, &outbox.Outbox{Peers: central.peers, Log: log}

	grant, err := central.peers.Deposit(ctx, central.Req(), "siteb", ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1000)})
	if err != nil {
		t.Fatal(err)
	}
	drain(centralOut)
	// A local allocation beside the grant: its usage is not the central
	// bank's business.
	site.MustDeposit("chem", "50", time.Time{})
	if _, err := site.AddMachine(ctx, site.Req(), ledger.MachineSpec{Name: "hpc1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := site.AddUser(ctx, site.Req(), ledger.UserSpec{Name: "amy", Memberships: []ledger.Membership{{Node: "chem", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	lb := lien.New(site.Ledger)
	var charged []ledger.Charge
	for _, job := range []string{"j1", "j2"} {
		start := site.Clock.Now()
		used := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 100, WallclockLimitSeconds: 3600, Start: start, End: start.Add(100 * time.Second), State: charge.Completed}
		r, err := lb.Charge(ctx, site.Req(), lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: job}, User: "amy", Project: "chem", Usage: used})
		if err != nil {
			t.Fatal(err)
		}
		charged = append(charged, r.Charge)
	}
	if _, err := lb.Refund(ctx, site.Req(), lien.RefundSpec{Charge: charged[1].ID, Amount: decimal.NewFromInt(30)}); err != nil {
		t.Fatal(err)
	}

	// Nothing is due while the day lasts.
	if begun, err := site.peers.ReportDue(ctx); err != nil || len(begun) != 0 {
		t.Fatalf("reports begun during the day: %v %v", begun, err)
	}
	site.Clock.Advance(40 * time.Hour) // 01:00 two days later: two days over
	begun, err := site.peers.ReportDue(ctx)
	if err != nil || len(begun) != 2 {
		t.Fatalf("reports begun: %v %v", begun, err)
	}
	if again, err := site.peers.ReportDue(ctx); err != nil || len(again) != 0 {
		t.Fatalf("reports begun a second time: %v %v", again, err)
	}
	drain(siteOut)

	reports, err := peer.Reported(ctx, central.Ledger, "siteb", time.Time{}, time.Time{})
	if err != nil || len(reports) != 2 {
		t.Fatalf("reports received: %+v %v", reports, err)
	}
	day := reports[0]
	if day.Period != peer.Day(ledgertest.Epoch).Name || len(day.Lines) != 1 || day.Lines[0].Grant != grant.ID || day.Lines[0].Charges != 2 ||
		!day.Lines[0].Charged.Equal(decimal.NewFromInt(200)) || !day.Lines[0].Refunded.Equal(decimal.NewFromInt(30)) || !day.Net().Equal(decimal.NewFromInt(170)) {
		t.Fatalf("the first day's report: %+v", day)
	}
	if len(reports[1].Lines) != 0 {
		t.Fatalf("the second day's report: %+v", reports[1])
	}
	// Periods select by the time the ids carry: the real clock's, where
	// the banks' is the test's.
	month, _ := peer.ParsePeriod(time.Now().UTC().Format("2006-01"))
	st, err := central.peers.Statement(ctx, "siteb", month)
	if err != nil || !st.Sent.Equal(decimal.NewFromInt(1000)) || !st.Received.Equal(decimal.NewFromInt(170)) {
		t.Fatalf("central's statement: %+v %v", st, err)
	}
	for _, b := range []struct {
		peers *peer.Registry
		name  string
	}{{central.peers, "siteb"}, {site.peers, "central"}} {
		rec, err := link.Reconcile(ctx, b.peers, b.name, time.Time{}, time.Time{})
		if err != nil || rec.Matched != 3 || len(rec.Differences) != 0 {
			t.Fatalf("reconcile with %s: %+v %v", b.name, rec, err)
		}
	}

	// The site reporting a day again under another id, or an allocation
	// that is not the central bank's grant, is refused.
	c, err := client.Open(client.Options{Server: centralURL, Key: &forSite}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exchange(ctx, "tx-again", api.PathExchangeUsage, mustJSON(t, day.UsageReport)); !isCode(err, api.CodeExists) {
		t.Fatalf("a day reported again: %v", err)
	}
	forged := day.UsageReport
	forged.Period, forged.From, forged.To = "2026-02-01", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	forged.Lines = []peer.UsageLine{day.Lines[0]}
	forged.Lines[0].Allocation++ // the grant's, but another allocation
	if _, err := c.Exchange(ctx, "tx-forged-1", api.PathExchangeUsage, mustJSON(t, forged)); !isCode(err, api.CodeInvalid) {
		t.Fatalf("usage of another allocation under the grant: %v", err)
	}
	forged.Lines[0].Grant = begun[0].ID // the site's own transaction, not a grant
	if _, err := c.Exchange(ctx, "tx-forged-2", api.PathExchangeUsage, mustJSON(t, forged)); !isCode(err, api.CodeInvalid) {
		t.Fatalf("usage of an allocation not granted: %v", err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
