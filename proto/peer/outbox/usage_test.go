package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
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
	"github.com/ingot-hpc/ingot/proto/clients"
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

// granted is a site and the central bank, linked as peers, each serving
// its API, once the central bank's grant of 1000 into the site's chem
// has arrived; the site has a machine and a user of chem for jobs.
type granted struct {
	site, central       *bank
	siteURL, centralURL string
	forSite             auth.Key // the key the site signs with at the central bank
	forCentral          auth.Key // the key the central bank signs with at the site
	siteOut, centralOut *outbox.Outbox
	grant               peer.Transaction
}

func grantAtSite(t *testing.T, open ledgertest.OpenStore) *granted {
	ctx := context.Background()
	g := &granted{site: newBank(t, open, "chem"), central: newBank(t, onFile, "chem")}
	site, central := g.site, g.central
	g.siteURL, g.centralURL = serve(t, site), serve(t, central)
	var err error
	if _, g.forCentral, err = site.peers.Add(ctx, site.Req(), peer.Spec{Name: "central", URL: g.centralURL, Projects: []string{"chem"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, g.forSite, err = central.peers.Add(ctx, central.Req(), peer.Spec{Name: "siteb", URL: g.siteURL}, &g.forCentral); err != nil {
		t.Fatal(err)
	}
	if _, err := site.peers.SetKey(ctx, site.Req(), "central", g.forSite); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g.siteOut, g.centralOut = &outbox.Outbox{Peers: site.peers, Log: log}, &outbox.Outbox{Peers: central.peers, Log: log}
	if g.grant, err = central.peers.Deposit(ctx, central.Req(), "siteb", ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1000)}); err != nil {
		t.Fatal(err)
	}
	g.drain(t, g.centralOut)
	if _, err := site.AddMachine(ctx, site.Req(), ledger.MachineSpec{Name: "hpc1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := site.AddUser(ctx, site.Req(), ledger.UserSpec{Name: "amy", Memberships: []ledger.Membership{{Node: "chem", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	return g
}

// drain sends what o holds, which must all be answered.
func (g *granted) drain(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	if pending, err := o.Drain(context.Background()); err != nil || pending != 0 {
		t.Fatalf("drain: %d pending, %v", pending, err)
	}
}

// charge charges a job of a processor for seconds at the site's clock:
// seconds credits, at the default rate.
func (g *granted) charge(t *testing.T, job string, seconds int64) ledger.Charge {
	t.Helper()
	start := g.site.Clock.Now()
	used := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: seconds, WallclockLimitSeconds: 3600,
		Start: start, End: start.Add(time.Duration(seconds) * time.Second), State: charge.Completed}
	r, err := lien.New(g.site.Ledger).Charge(context.Background(), g.site.Req(), lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: job}, User: "amy", Project: "chem", Usage: used})
	if err != nil {
		t.Fatal(err)
	}
	return r.Charge
}

// reportDue begins the site's reports due, of periods of every, and says
// how many it began.
func (g *granted) reportDue(t *testing.T, every time.Duration) []peer.Transaction {
	t.Helper()
	begun, err := g.site.peers.ReportDue(context.Background(), every)
	if err != nil {
		t.Fatalf("reports of %s due at %s: %v", every, g.site.Clock.Now(), err)
	}
	return begun
}

func usageReportedBack(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	g := grantAtSite(t, open)
	site, central, grant, centralURL, forSite := g.site, g.central, g.grant, g.centralURL, g.forSite
	// A local allocation beside the grant: its usage is not the central
	// bank's business.
	site.MustDeposit("chem", "50", time.Time{})
	charged := []ledger.Charge{g.charge(t, "j1", 100), g.charge(t, "j2", 100)}
	if _, err := lien.New(site.Ledger).Refund(ctx, site.Req(), lien.RefundSpec{Charge: charged[1].ID, Amount: decimal.NewFromInt(30)}); err != nil {
		t.Fatal(err)
	}

	// Nothing is due while the day lasts.
	if begun := g.reportDue(t, peer.DefaultReportPeriod); len(begun) != 0 {
		t.Fatalf("reports begun during the day: %v", begun)
	}
	site.Clock.Advance(40 * time.Hour) // 01:00 two days later: two days over
	begun := g.reportDue(t, peer.DefaultReportPeriod)
	if len(begun) != 2 {
		t.Fatalf("reports begun: %v", begun)
	}
	if again := g.reportDue(t, peer.DefaultReportPeriod); len(again) != 0 {
		t.Fatalf("reports begun a second time: %v", again)
	}
	g.drain(t, g.siteOut)

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
	// Through the server, an admin reads both, a reader of chem the one
	// with a line of it.
	_, rootKey, err := central.clients.Add(ctx, central.Req(), clients.Spec{Name: "root", Role: clients.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	root, err := client.Open(client.Options{Server: centralURL, Key: &rootKey}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]int{"": 2, "chem": 1} {
		if got, err := root.UsagePeers(ctx, api.UsagePeersQuery{Node: node}); err != nil || len(got) != want {
			t.Errorf("GET /v1/usage/peers of %q: %+v %v; want %d reports", node, got, err, want)
		}
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

// TestUsageReportPeriods: a site reports hourly, is started again
// reporting daily, then every five minutes. Each report begins where the
// last one ended (the first after a change ends at the next multiple of
// the new length), so the central bank holds periods that follow each
// other from the grant's on, and what they say was spent is every charge
// and refund, once. A report of a period that overlaps one received, or
// longer than a day, or misnamed, is refused. Each engine for the site.
func TestUsageReportPeriods(t *testing.T) {
	onEachEngine(t, usageReportPeriods)
}

func usageReportPeriods(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	g := grantAtSite(t, open) // at 09:00 on the epoch's day
	site, clock := g.site, g.site.Clock
	g.charge(t, "j1", 10)
	clock.Advance(30 * time.Minute)
	g.charge(t, "j2", 20) // 09:30
	if begun := g.reportDue(t, time.Hour); len(begun) != 0 {
		t.Fatalf("reports begun within the first hour: %v", begun)
	}
	clock.Advance(45 * time.Minute)
	refunded := g.charge(t, "j3", 40) // 10:15
	if begun := g.reportDue(t, time.Hour); len(begun) != 1 || !begun[0].Amount.Equal(decimal.NewFromInt(30)) {
		t.Fatalf("hourly reports at 10:15: %v", begun)
	}
	// Started again, reporting daily: the first period runs from 10:00
	// to midnight.
	clock.Advance(2 * time.Hour)
	if _, err := lien.New(site.Ledger).Refund(ctx, site.Req(), lien.RefundSpec{Charge: refunded.ID, Amount: decimal.NewFromInt(5)}); err != nil {
		t.Fatal(err)
	}
	g.charge(t, "j4", 80) // 12:15
	if begun := g.reportDue(t, 24*time.Hour); len(begun) != 0 {
		t.Fatalf("daily reports at 12:15: %v", begun)
	}
	clock.Advance(11*time.Hour + 57*time.Minute)
	g.charge(t, "j5", 160) // 00:12 the next day
	// Every five minutes from here: [00:00, 00:05) and so on.
	clock.Advance(3 * time.Minute)
	begun := g.reportDue(t, 24*time.Hour)
	begun = append(begun, g.reportDue(t, 5*time.Minute)...)
	if len(begun) != 4 {
		t.Fatalf("reports at 00:15 the next day: %v", begun)
	}
	if again := g.reportDue(t, 5*time.Minute); len(again) != 0 {
		t.Fatalf("reports begun a second time: %v", again)
	}
	if _, err := site.peers.ReportDue(ctx, 7*time.Minute); !errors.Is(err, peer.ErrReportPeriod) {
		t.Fatalf("a period of 7m, which does not divide a day: %v", err)
	}
	g.drain(t, g.siteOut)

	reports, err := peer.Reported(ctx, g.central.Ledger, "siteb", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	day := peer.Day(ledgertest.Epoch)
	at := func(h, m int) time.Time {
		return day.From.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
	}
	want := []struct {
		from, to time.Time
		net      int64
	}{{at(9, 0), at(10, 0), 30}, {at(10, 0), at(24, 0), 115}, {at(24, 0), at(24, 5), 0}, {at(24, 5), at(24, 10), 0}, {at(24, 10), at(24, 15), 160}}
	if len(reports) != len(want) {
		t.Fatalf("reports received: %+v", reports)
	}
	for i, w := range want {
		u := reports[i]
		if !u.From.Equal(w.from) || !u.To.Equal(w.to) || u.Period != peer.Span(w.from, w.to).Name || !u.Net().Equal(decimal.NewFromInt(w.net)) {
			t.Errorf("report %d: %s from %s to %s, net %s; want from %s to %s, net %d", i, u.Period, u.From, u.To, u.Net(), w.from, w.to, w.net)
		}
	}
	if b := site.MustBalance("chem"); !b.Amount.Equal(decimal.NewFromInt(1000 - 305)) {
		t.Fatalf("the site's chem: %+v; the reports say 305 spent", b)
	}

	c, err := client.Open(client.Options{Server: g.centralURL, Key: &g.forSite}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		from, to time.Time
		code     api.Code
	}{
		"overlapping the last":    {at(24, 12), at(24, 20), api.CodeExists},
		"before the last":         {at(8, 0), at(9, 0), api.CodeExists},
		"longer than a day":       {at(24, 15), at(48, 20), api.CodeInvalid},
		"ending as it begins":     {at(24, 15), at(24, 15), api.CodeInvalid},
		"named as another period": {at(24, 15), at(24, 20), api.CodeInvalid},
	} {
		u := peer.UsageReport{Period: peer.Span(tc.from, tc.to).Name, From: tc.from, To: tc.to, Lines: []peer.UsageLine{}}
		if name == "named as another period" {
			u.Period = peer.Day(tc.from).Name
		}
		if _, err := c.Exchange(ctx, "tx-"+strings.ReplaceAll(name, " ", "-"), api.PathExchangeUsage, mustJSON(t, u)); !isCode(err, tc.code) {
			t.Errorf("a report %s: %v; want %s", name, err, tc.code)
		}
	}
	// The next period is received.
	next := peer.UsageReport{Period: peer.Span(at(24, 15), at(24, 20)).Name, From: at(24, 15), To: at(24, 20), Lines: []peer.UsageLine{}}
	if _, err := c.Exchange(ctx, "tx-next", api.PathExchangeUsage, mustJSON(t, next)); err != nil {
		t.Fatalf("the next period: %v", err)
	}
}

// TestUsageReportBacklog: a backlog of periods due is begun
// peer.ReportsAtOnce at a time, each call going on where the last ended,
// so that the outbox, which begins them before it sends, is not held up
// by thousands of changes; every period is begun once.
func TestUsageReportBacklog(t *testing.T) {
	g := grantAtSite(t, onFile)
	g.site.Clock.Advance(time.Duration(2*peer.ReportsAtOnce+50) * time.Minute)
	var got []int
	for range 4 {
		got = append(got, len(g.reportDue(t, time.Minute)))
	}
	if want := []int{peer.ReportsAtOnce, peer.ReportsAtOnce, 50, 0}; !slices.Equal(got, want) {
		t.Fatalf("reports begun by each call: %v, want %v", got, want)
	}
}

// TestUsageReportedDaysBefore: a site whose last report was recorded by
// the day's name (as sites recorded days before periods were recorded by
// their bounds) reports from the day after it on.
func TestUsageReportedDaysBefore(t *testing.T) {
	ctx := context.Background()
	g := grantAtSite(t, onFile)
	day := peer.Day(ledgertest.Epoch)
	g.charge(t, "j1", 10) // in the day recorded as reported
	if _, err := ledger.Mutate(ctx, g.site.Ledger, g.site.Req(), ledger.KindRecord, nil, func(w *ledger.Writer) (ledger.Entry, error) {
		return w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: "central", Description: "usage reported through " + day.Name,
			Record: &ledger.Record{Kind: "peer.reported", Key: "central", Value: json.RawMessage(`"` + day.Name + `"`)}})
	}); err != nil {
		t.Fatal(err)
	}
	g.site.Clock.Advance(24 * time.Hour)
	g.charge(t, "j2", 20)
	g.site.Clock.Advance(24 * time.Hour)
	begun := g.reportDue(t, peer.DefaultReportPeriod)
	if len(begun) != 1 || !begun[0].Amount.Equal(decimal.NewFromInt(20)) {
		t.Fatalf("reports begun: %+v", begun)
	}
	var u peer.UsageReport
	if err := json.Unmarshal(begun[0].Body, &u); err != nil || u.Period != peer.Day(day.To).Name {
		t.Fatalf("the report: %+v %v", u, err)
	}
}

// TestUsageOfGrantNotAnswered: the site applies a grant whose answer the
// central bank has not recorded (lost on the way back), and reports its
// usage before the central bank's outbox sends the grant again. The
// report is refused for now (unavailable), not for good: once the central
// bank has the answer, the report sent again is received, and the usage
// of the grant counted.
func TestUsageOfGrantNotAnswered(t *testing.T) {
	ctx := context.Background()
	g := grantAtSite(t, onFile)
	second, err := g.central.peers.Deposit(ctx, g.central.Req(), "siteb", ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(1000)})
	if err != nil {
		t.Fatal(err)
	}
	// The central bank's sending of it, whose answer is lost.
	c, err := client.Open(client.Options{Server: g.siteURL, Key: &g.forCentral}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exchange(ctx, second.ID, api.PathExchangeDeposits, second.Body); err != nil {
		t.Fatal(err)
	}
	g.charge(t, "j1", 1500) // both grants
	g.site.Clock.Advance(24 * time.Hour)
	if begun := g.reportDue(t, peer.DefaultReportPeriod); len(begun) != 1 || !begun[0].Amount.Equal(decimal.NewFromInt(1500)) {
		t.Fatalf("reports begun: %+v", begun)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if pending, err := (&outbox.Outbox{Peers: g.site.peers, Log: log}).Drain(ctx); err != nil || pending != 1 {
		t.Fatalf("the report sent before the central bank has the grant's answer: %d pending, %v", pending, err)
	}
	g.drain(t, g.centralOut) // the grant sent again: the site's first answer
	g.drain(t, &outbox.Outbox{Peers: g.site.peers, Log: log})
	reports, err := peer.Reported(ctx, g.central.Ledger, "siteb", time.Time{}, time.Time{})
	if err != nil || len(reports) != 1 || len(reports[0].Lines) != 2 || !reports[0].Net().Equal(decimal.NewFromInt(1500)) {
		t.Fatalf("reports received: %+v %v", reports, err)
	}
}
