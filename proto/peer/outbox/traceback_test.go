package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// tracebackPair is a home bank (central: chem.lab with 1000 credits,
// its agreement with the site naming chem.lab) and a site whose project
// visit.chem is homed at central:chem.lab at a rate ratio of 2, each
// behind its server; sched is the site's scheduler, link the way from the
// site to the home bank, home a client signing as the site. The site
// accepts what central's credit line holds while central is away, in the
// site's credits ("0": it refuses).
type tracebackPair struct {
	site, central *bank
	link          *wire
	sched, home   *client.Client
	centralURL    string
}

// mend brings the link to the home bank back up, and the site knows it
// is (peer.Registry.Reached), as once its outbox, or a try after
// peer.AwayRetry, has had an answer.
func (p *tracebackPair) mend() {
	p.link.mode.Store("up")
	p.site.peers.Reached("central")
}

// heldAtHome fails the test unless the home bank's chem holds want in
// liens; why says when (its %s the amount held).
func (p *tracebackPair) heldAtHome(t *testing.T, want int64, why string) {
	t.Helper()
	if held := p.central.MustBalance("chem").Reserved; !held.Equal(decimal.NewFromInt(want)) {
		t.Fatalf(why, held)
	}
}

// settledAtHome fails the test unless the home bank's chem has amount
// left and nothing held; when says when.
func (p *tracebackPair) settledAtHome(t *testing.T, amount decimal.Decimal, when string) {
	t.Helper()
	if b := p.central.MustBalance("chem"); !b.Amount.Equal(amount) || !b.Reserved.IsZero() {
		t.Fatalf("home bank %s: %+v, want %s and nothing held", when, b, amount)
	}
}

// drained has the site's outbox send what is pending, once, and fails
// the test unless nothing is left.
func (p *tracebackPair) drained(t *testing.T) {
	t.Helper()
	o := &outbox.Outbox{Peers: p.site.peers, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Pause: 1}
	if pending, err := o.Drain(context.Background()); err != nil || pending != 0 {
		t.Fatalf("drain: %d pending, %v", pending, err)
	}
}

func newTracebackPair(t testing.TB, open ledgertest.OpenStore, creditLine string) *tracebackPair {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	central := newBank(t, open, "chem", "chem.lab", "bio", "bio.lab")
	central.MustDeposit("chem", "1000", ledgertest.Epoch.AddDate(1, 0, 0))
	central.MustDeposit("bio", "1000", ledgertest.Epoch.AddDate(1, 0, 0))
	site := newBank(t, open, "visit")
	serve := func(b *bank) *httptest.Server {
		srv := server.New(b.Ledger, lien.New(b.Ledger), b.clients, &auth.Verifier{Lookup: server.KeyLookup(b.clients)}, log)
		b.peers = srv.Peers() // the registry that keeps its answers
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return ts
	}
	centralSrv := serve(central)
	l := &wire{h: centralSrv.Config.Handler}
	toCentral := httptest.NewServer(l)
	t.Cleanup(toCentral.Close)
	siteSrv := serve(site)

	_, siteKey, err := central.peers.Add(ctx, central.Req(), peer.Spec{Name: "siteb", URL: siteSrv.URL, Projects: []string{"chem.lab"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := peer.Spec{Name: "central", URL: toCentral.URL, WhenAway: peer.AwayAccept, CreditLine: ledgertest.Dec(t, creditLine)}
	if spec.CreditLine.IsZero() {
		spec.WhenAway = peer.AwayRefuse
	}
	if _, _, err := site.peers.Add(ctx, site.Req(), spec, &siteKey); err != nil {
		t.Fatal(err)
	}
	home := &ledger.Home{Peer: "central", Project: "chem.lab", RateRatio: decimal.NewFromInt(2)}
	if _, err := site.CreateNode(ctx, site.Req(), ledger.NodeSpec{Name: "visit.chem", Home: home}); err != nil {
		t.Fatal(err)
	}
	site.MustNode("visit.local")
	site.MustDeposit("visit", "1000", ledgertest.Epoch.AddDate(1, 0, 0))
	if _, err := site.AddMachine(ctx, site.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32, MemoryMB: 128000}}); err != nil {
		t.Fatal(err)
	}
	if _, err := site.AddUser(ctx, site.Req(), ledger.UserSpec{Name: "amy", DefaultProject: "visit.chem",
		Memberships: []ledger.Membership{{Node: "visit.chem", Role: ledger.RoleMember}, {Node: "visit.local", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	_, schedKey, err := site.clients.Add(ctx, site.Req(), clients.Spec{Name: "slurm", Role: clients.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := client.Open(client.Options{Server: siteSrv.URL, Key: &schedKey}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	asSite, err := client.Open(client.Options{Server: centralSrv.URL, Key: &siteKey}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	return &tracebackPair{site: site, central: central, link: l, sched: sched, home: asSite, centralURL: centralSrv.URL}
}

func placeSpec(id, project string, procs int64) api.LienRequest {
	return api.LienRequest{Job: lien.Job{Machine: "hpc1", ID: id}, User: "amy", Project: project,
		Request: charge.Request{Resources: charge.Resources{Processors: procs}, WallclockLimitSeconds: 100}}
}

func finalCharge(id string, procs int64) api.ChargeRequest {
	return api.ChargeRequest{Job: lien.Job{Machine: "hpc1", ID: id}, User: "amy", Project: "visit.chem",
		Usage: charge.Usage{Resources: charge.Resources{Processors: procs}, WallclockSeconds: 50, State: charge.Completed}}
}

// TestTraceback: a lien and a charge on the site's homed project are made
// at the home bank, in its credits (× 2), each once however often the
// scheduler sends it or the answer is lost; the site holds nothing; a
// refusal names the home bank and its reason; a release is forwarded.
// The home bank is on each engine in turn.
func TestTraceback(t *testing.T) {
	onEachEngine(t, traceback)
}

func traceback(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	quote, err := lien.New(p.site.Ledger).Quote(ctx, lien.QuoteSpec{Machine: "hpc1", User: "amy", Request: placeSpec("", "", 2).Request})
	if err != nil {
		t.Fatal(err)
	}
	here := quote.Amount.Credits
	// The answer lost: the scheduler sends the request again.
	p.link.mode.Store("losing")
	if _, err := p.sched.PlaceLien(ctx, "req-1", placeSpec("j1", "", 2)); err == nil {
		t.Fatal("a lost answer answered")
	}
	p.mend()
	placed, err := p.sched.PlaceLien(ctx, "req-1", placeSpec("j1", "", 2))
	if err != nil {
		t.Fatalf("lien on the homed project, sent again: %v", err)
	}
	if placed.Project != "visit.chem" || !placed.Lien.Amount.Equal(here) {
		t.Fatalf("lien answered %+v, want %s on visit.chem", placed, here)
	}
	var homeLien ledger.Lien
	if h := placed.Home; h == nil || h.State != "done" || h.Peer != "central" || json.Unmarshal(h.Answer, &homeLien) != nil || !homeLien.Amount.Equal(here.Mul(decimal.NewFromInt(2))) {
		t.Fatalf("the lien's home: %+v, want central's lien of %s × 2", placed.Home, here)
	}
	held := p.central.MustBalance("chem").Reserved
	if want := here.Mul(decimal.NewFromInt(2)); !held.Equal(want) {
		t.Fatalf("home bank holds %s, want %s (once, × 2)", held, want)
	}
	if got := p.site.MustBalance("visit"); !got.Reserved.IsZero() || !got.Amount.Equal(decimal.NewFromInt(1000)) {
		t.Fatalf("the site holds %+v for a homed job", got)
	}
	// A local project's lien stays local.
	if _, err := p.sched.PlaceLien(ctx, "req-2", placeSpec("j2", "visit.local", 1)); err != nil {
		t.Fatal(err)
	}
	if p.site.MustBalance("visit").Reserved.IsZero() {
		t.Fatal("the local project's lien was not held here")
	}

	// The charge, sent twice, its first answer lost.
	p.link.mode.Store("losing")
	if _, err := p.sched.Charge(ctx, "req-3", finalCharge("j1", 2)); err == nil {
		t.Fatal("a lost answer answered")
	}
	p.mend()
	charged, err := p.sched.Charge(ctx, "req-3", finalCharge("j1", 2))
	if err != nil {
		t.Fatalf("charge: %v", err)
	}
	p.settledAtHome(t, decimal.NewFromInt(1000).Sub(charged.Charge.Amount.Mul(decimal.NewFromInt(2))), "after the charge")
	forwardedChargeAnswer(t, charged)

	// Refused at home: more than chem.lab holds. The scheduler is told why,
	// by the home bank, and nothing is held anywhere.
	_, err = p.sched.PlaceLien(ctx, "req-4", placeSpec("j3", "", 32000))
	if !isCode(err, api.CodeInsufficientFunds) || !strings.Contains(err.Error(), "home bank central refused") {
		t.Fatalf("a lien beyond the home project: %v", err)
	}
	// A release of a forwarded lien goes home.
	if _, err := p.sched.PlaceLien(ctx, "req-5", placeSpec("j4", "", 1)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // sent again: the same release
		if _, err := p.sched.ReleaseLien(ctx, "req-6", lien.Job{Machine: "hpc1", ID: "j4"}); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	p.heldAtHome(t, 0, "home bank still holds %s after the release")
	// The first lien, its answer lost, was withdrawn (the site's peer
	// refuses while away) and released at home by its withdrawal, which
	// the retry sent before it began the lien anew.
	txs, err := p.site.peers.Transactions(ctx, false)
	if err != nil || len(txs) != 7 {
		t.Fatalf("site's transactions: %d %v, want 7 (lien withdrawn, its withdrawal, lien, charge, refused lien, lien, release)", len(txs), err)
	}
	agreeingBanks(t, p)
}

// forwardedChargeAnswer: the scheduler's answer to the final charge of
// j1 (2 processors for 50 s of its lien's 100, at a ratio of 2) carries
// what a local charge's does, in the site's credits: the job's usage and
// the price's explanation, its lien settled and what the charge released
// of it; and the home bank's own answer, in its credits.
func forwardedChargeAnswer(t *testing.T, charged lien.ChargeResult) {
	t.Helper()
	usage, err := lien.UsageOf(charged.Charge)
	if err != nil || usage.Processors != 2 || usage.WallclockSeconds != 50 {
		t.Fatalf("the forwarded charge's usage: %+v %v", usage, err)
	}
	if explained, err := lien.ExplanationOf(charged.Charge); err != nil || !explained.Exact.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("the forwarded charge's explanation: %+v %v", explained, err)
	}
	if c := charged.Charge; !c.Amount.Equal(decimal.NewFromInt(100)) || c.Project != "visit.chem" || c.Account != "visit" || c.User != "amy" || !c.Final {
		t.Fatalf("the forwarded charge: %+v", c)
	}
	if l := charged.Lien; l == nil || l.State != ledger.LienSettled || !l.Charged.Equal(decimal.NewFromInt(100)) || !charged.Released.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("the forwarded charge's lien %+v, released %s: want settled, 100 charged, 100 released", l, charged.Released)
	}
	h := charged.Home
	if h == nil || h.Peer != "central" || h.Project != "chem.lab" || h.State != "done" || !strings.HasPrefix(h.Transaction, "tx-") {
		t.Fatalf("the forwarded charge's home: %+v", h)
	}
	var home lien.ChargeResult
	if err := json.Unmarshal(h.Answer, &home); err != nil || !home.Charge.Amount.Equal(decimal.NewFromInt(200)) || home.Charge.Machine != "siteb:hpc1" || !home.Released.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("the home bank's answer: %+v %v, want 200 charged and released there", home, err)
	}
}

// reconciled: reconcile finds matched transactions and both banks'
// records the same, once the last answer kept is journaled (as the
// outbox does); both banks' audits pass.
func reconciled(t *testing.T, p *tracebackPair, matched int) {
	t.Helper()
	if err := p.site.peers.RecordAnswers(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := link.Reconcile(context.Background(), p.site.peers, "central", time.Time{}, time.Time{})
	if err != nil || len(rec.Differences) != 0 || rec.Matched != matched {
		t.Fatalf("reconcile: %+v %v, want %d agreeing", rec, err, matched)
	}
	p.central.MustAudit()
	p.site.MustAudit()
}

// agreeingBanks: reconcile finds both banks' records the same, and the
// site's statement says what was done.
func agreeingBanks(t *testing.T, p *tracebackPair) {
	reconciled(t, p, 7)
	// The statement counts the charge, lists the liens, the release and
	// the withdrawal as holds, out of its totals.
	st, err := p.site.peers.Statement(context.Background(), "central", peer.Period{})
	if err != nil {
		t.Fatal(err)
	}
	charged := decimal.Zero
	for _, l := range st.Lines {
		if l.Hold != (l.Op != peer.OpCharge) || l.Direction != peer.Sent {
			t.Errorf("statement line %+v", l)
		}
		if l.Op == peer.OpCharge {
			charged = l.Amount
		}
	}
	if len(st.Lines) != 4 || charged.IsZero() || !st.Sent.Equal(charged) || !st.Received.IsZero() {
		t.Fatalf("statement: %+v", st)
	}
}

// TestTracebackAgreement: a peer acts only within its agreement: not on
// another project, not on another peer's job, not with a forged body
// under a transaction id it used; a replay gets the first answer.
func TestTracebackAgreement(t *testing.T) {
	ctx := context.Background()
	p := newTracebackPair(t, onFile, "0")
	body := func(project, id, amount string) json.RawMessage {
		raw, _ := json.Marshal(peer.JobOp{Project: project, Machine: "hpc1", JobID: id, Amount: ledgertest.Dec(t, amount), Expires: ledgertest.Epoch.Add(time.Hour)})
		return raw
	}
	if _, err := p.home.Exchange(ctx, "tx-a", api.PathExchangeLiens, body("bio.lab", "x1", "10")); !isCode(err, api.CodeForbidden) {
		t.Fatalf("a lien on a project the agreement does not name: %v", err)
	}
	if _, err := p.home.Exchange(ctx, "tx-b", api.PathExchangeLiens, body("chem.lab", "x1", "10")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.home.Exchange(ctx, "tx-b", api.PathExchangeLiens, body("chem.lab", "x1", "10")); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if _, err := p.home.Exchange(ctx, "tx-b", api.PathExchangeLiens, body("chem.lab", "x1", "900")); !isCode(err, api.CodeRequestConflict) {
		t.Fatalf("a forged body under a used id: %v", err)
	}
	p.heldAtHome(t, 10, "home holds %s, want 10 (once)")
	// Another peer, whose agreement names chem.lab too, cannot release or
	// charge the site's job: its jobs are its own.
	_, otherKey, err := p.central.peers.Add(ctx, p.central.Req(), peer.Spec{Name: "sitec", URL: "http://127.0.0.1:2", Projects: []string{"chem.lab"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.Open(client.Options{Server: p.centralURL, Key: &otherKey}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exchange(ctx, "tx-c", api.PathExchangeReleases, body("chem.lab", "x1", "0")); !isCode(err, api.CodeNotFound) {
		t.Fatalf("another peer releasing the site's job: %v", err)
	}
	if _, err := other.Exchange(ctx, "tx-b", api.PathExchangeLiens, body("chem.lab", "x1", "10")); err != nil {
		t.Fatalf("another peer's own transaction under the same id: %v", err)
	}
	p.heldAtHome(t, 20, "home holds %s, want 20: each peer's job its own")
	bad := json.RawMessage(`{"project":"chem.lab","machine":"sitec:hpc1","job_id":"x1","amount":"1","expires":"2026-01-05T10:00:00Z"}`)
	if _, err := p.home.Exchange(ctx, "tx-d", api.PathExchangeReleases, bad); !isCode(err, api.CodeInvalid) {
		t.Fatalf("a machine naming another peer's: %v", err)
	}

	// Refunds: the site's own job, charged 10, on the project the
	// agreement names; no other peer's, and once under an id.
	if _, err := p.home.Exchange(ctx, "tx-e", api.PathExchangeCharges, body("chem.lab", "x1", "10")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.home.Exchange(ctx, "tx-f", api.PathExchangeRefunds, body("bio.lab", "x1", "4")); !isCode(err, api.CodeForbidden) {
		t.Fatalf("a refund on a project the agreement does not name: %v", err)
	}
	if _, err := other.Exchange(ctx, "tx-f", api.PathExchangeRefunds, body("chem.lab", "x2", "4")); !isCode(err, api.CodeNotFound) {
		t.Fatalf("another peer refunding a job it never charged: %v", err)
	}
	if _, err := p.home.Exchange(ctx, "tx-g", api.PathExchangeRefunds, bad); !isCode(err, api.CodeInvalid) {
		t.Fatalf("a refund of another peer's job: %v", err)
	}
	for range 2 {
		if _, err := p.home.Exchange(ctx, "tx-h", api.PathExchangeRefunds, body("chem.lab", "x1", "4")); err != nil {
			t.Fatalf("a refund, and its replay: %v", err)
		}
	}
	if _, err := p.home.Exchange(ctx, "tx-h", api.PathExchangeRefunds, body("chem.lab", "x1", "6")); !isCode(err, api.CodeRequestConflict) {
		t.Fatalf("a forged refund under a used id: %v", err)
	}
	if _, err := p.home.Exchange(ctx, "tx-i", api.PathExchangeRefunds, body("chem.lab", "x1", "7")); !isCode(err, api.CodeRefund) {
		t.Fatalf("a refund beyond what is left of the charge: %v", err)
	}
	// 1000 less the site's charge of 10, 4 of it refunded once; sitec's
	// lien of 10 still held.
	if got := p.central.MustBalance("chem"); !got.Amount.Equal(decimal.NewFromInt(994)) || !got.Reserved.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("home bank: %+v, want 994 and 10 held", got)
	}
}

// TestTracebackHomeAway: with the home bank away, a site whose peer
// refuses while away refuses a homed lien, the home bank named: the first,
// sent and unanswered, is withdrawn; while the bank is known away the
// next are refused at once, not sent (a scheduler waited out the send's
// timeout at every job), and a retry of
// the request once the bank is back places it there; the refusals are
// journaled with the next change, not each in a change of its own. A site whose peer
// accepts takes liens and charges up to its credit line, in its own
// credits, without sending them while the bank is known away, and refuses
// a lien beyond it: once the bank is back, the outbox applies there what
// was pending, once, and the refused lien holds nothing there. (Before
// liens were withdrawn, it stayed pending and was placed at home once the
// bank was back: 400 held for a job that never ran.) Both banks on each
// engine in turn.
func TestTracebackHomeAway(t *testing.T) {
	onEachEngine(t, homeAway)
}

func homeAway(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	p.site.peers.SetAwayRetry(time.Hour) // known away until mended
	p.link.mode.Store("down")
	if _, err := p.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); !isCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "home bank central cannot be reached") || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("a lien with the home bank away and its peer refusing: %v", err)
	}
	sent, entries := p.link.sent.Load(), p.site.JournalLen()
	_, err := p.sched.PlaceLien(ctx, "r2", placeSpec("j2", "", 1))
	if !isCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "home bank central cannot be reached") || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("a lien with the home bank known away: %v", err)
	}
	if n := p.link.sent.Load() - sent; n != 0 {
		t.Fatalf("%d requests sent to the home bank known away, want none", n)
	}
	_, again := p.sched.PlaceLien(ctx, "r2", placeSpec("j2", "", 1))
	if !isCode(again, api.CodeUnavailable) || !strings.Contains(again.Error(), "not sent") || p.link.sent.Load() != sent {
		t.Fatalf("the request again, still away: %v", again)
	}
	// The refusals are kept to be journaled with the next change, not
	// each in a change of its own.
	if n := p.site.JournalLen() - entries; n != 0 {
		t.Fatalf("%d journal entries for the liens refused while the home bank is known away, want them kept", n)
	}
	if err := p.site.peers.RecordAnswers(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.site.JournalLen() - entries; n != 2 {
		t.Fatalf("%d journal entries for the two refusals, want 2", n)
	}
	all, err := p.site.peers.Transactions(ctx, false)
	if err != nil || len(all) != 4 || !all[2].NotSent || !all[3].NotSent || all[3].State != peer.StateRefused {
		t.Fatalf("the site's transactions: %+v %v, want j1's lien withdrawn, its withdrawal, and j2's two refused, not sent", all, err)
	}
	p.mend()
	if _, err := p.sched.PlaceLien(ctx, "r2", placeSpec("j2", "", 1)); err != nil {
		t.Fatalf("the request again, the home bank back: %v", err)
	}
	p.drained(t)
	p.heldAtHome(t, 200, "home bank holds %s, want j2's lien alone (200)")
	// j1's lien withdrawn and its withdrawal; j2's refused here twice,
	// and begun anew.
	reconciled(t, p, 5)

	// 150 of the site's credits: j1's lien (100 here, 200 at home) and
	// charge (50, 100), not j2's lien (200 more).
	q := newTracebackPair(t, open, "150")
	q.site.peers.SetAwayRetry(time.Hour)
	q.link.mode.Store("down")
	if _, err := q.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); err != nil {
		t.Fatalf("a lien within the credit line: %v", err)
	}
	sent = q.link.sent.Load()
	if _, err := q.sched.Charge(ctx, "r2", finalCharge("j1", 1)); err != nil {
		t.Fatalf("a charge within the credit line: %v", err)
	}
	// The credit line is used up, and a retry of the lien's request still
	// gets its first answer.
	if _, err := q.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); err != nil {
		t.Fatalf("the request of a lien accepted while away, again: %v", err)
	}
	_, err = q.sched.PlaceLien(ctx, "r3", placeSpec("j2", "", 2))
	if !isCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("a lien beyond the credit line: %v", err)
	}
	if n := q.link.sent.Load() - sent; n != 0 {
		t.Fatalf("%d requests sent to the home bank known away, want none", n)
	}
	states := map[peer.Op][]peer.State{}
	if err := q.site.peers.RecordAnswers(ctx); err != nil {
		t.Fatal(err)
	}
	all, err = q.site.peers.Transactions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		states[x.Op] = append(states[x.Op], x.State)
	}
	want := map[peer.Op][]peer.State{peer.OpLien: {peer.StatePending, peer.StateRefused}, peer.OpCharge: {peer.StatePending}}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("site's transactions: %v, want %v", states, want)
	}
	// The bank back: a refund of j1, whose lien and charge are still
	// pending here, sends them first, in order (sent first, it would find
	// nothing to refund there and be refused for good).
	q.mend()
	refund, err := q.sched.RefundJob(ctx, "r4", lien.JobRefundSpec{Job: lien.Job{Machine: "hpc1", ID: "j1"}, Amount: decimal.NewFromInt(10)})
	if err != nil || refund.Home == nil || refund.Home.State != "done" {
		t.Fatalf("a refund behind the job's pending charge: %+v %v", refund, err)
	}
	if err := q.site.peers.RecordAnswers(ctx); err != nil {
		t.Fatal(err)
	}
	if txs, err := q.site.peers.Transactions(ctx, true); err != nil || len(txs) != 0 {
		t.Fatalf("pending: %+v %v, want none", txs, err)
	}
	q.drained(t)
	// j1 charged there (50 s of 1 processor, × 2: 100) and 10 × 2 of it
	// refunded, once; j2's lien never placed.
	q.settledAtHome(t, decimal.NewFromInt(920), "after the drain")
	reconciled(t, q, 4)
}

// TestTracebackChargeAfterPendingLien: a job's lien accepted while the
// home bank was away, still pending, and the job's charge once the bank
// is back: the lien is sent first, then the charge, which settles it, so
// nothing stays held at home. (Sent at once, the charge was made without
// the lien, and the lien, sent after by the outbox, held credits at home
// for a job that was over.) Both banks on each engine.
func TestTracebackChargeAfterPendingLien(t *testing.T) {
	onEachEngine(t, chargeAfterPendingLien)
}

func chargeAfterPendingLien(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "1000")
	p.link.mode.Store("down")
	if _, err := p.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); err != nil {
		t.Fatalf("a lien within the credit line: %v", err)
	}
	p.mend()
	charged, err := p.sched.Charge(ctx, "r2", finalCharge("j1", 1))
	if err != nil || charged.Home == nil || charged.Home.State != "done" {
		t.Fatalf("the job's charge, the bank back: %+v %v", charged, err)
	}
	p.drained(t)
	p.settledAtHome(t, decimal.NewFromInt(900), "after the charge (100: 50 × 2)")
	reconciled(t, p, 2)
}

// TestTracebackWithdrawnAfterApplied: a lien that reached the home bank,
// its answer lost, is withdrawn at the site (its peer refuses while away):
// once the bank is back, the withdrawal releases it there, and a sending
// of the lien that arrives after gets the withdrawal as its answer and
// holds nothing. The scheduler's retry of the request, once the home bank
// has the withdrawal, begins the lien anew and it is held once. A lien
// withdrawn before it reached home is never placed there, whenever it
// arrives. Reconcile agrees throughout. Both banks on each engine.
func TestTracebackWithdrawnAfterApplied(t *testing.T) {
	onEachEngine(t, withdrawnAfterApplied)
}

func withdrawnAfterApplied(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	p.link.mode.Store("losing") // applied at home, the answer lost
	if _, err := p.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); !isCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("a lien whose answer is lost: %v", err)
	}
	p.heldAtHome(t, 200, "home bank holds %s, want the lien it applied (200)")
	txs, err := p.site.peers.Transactions(ctx, false)
	if err != nil || len(txs) != 2 || txs[0].State != peer.StateWithdrawn || txs[1].Op != peer.OpWithdraw || txs[0].Withdrawal != txs[1].ID {
		t.Fatalf("site's transactions: %+v %v, want the lien withdrawn by the second", txs, err)
	}
	lienTx := txs[0]
	// A retry while the bank is away gets the withdrawal again.
	p.link.mode.Store("down")
	if _, err := p.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); !isCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("the request again, the bank away: %v", err)
	}
	p.mend()
	p.drained(t)
	p.heldAtHome(t, 0, "home bank holds %s after the withdrawal")
	reconciled(t, p, 2)
	// The lien sent again (a second server of the site, or a copy on its
	// way): the first answer (the lien as it was placed), nothing
	// journaled, nothing held again.
	entries := p.central.JournalLen()
	again, err := p.home.Exchange(ctx, lienTx.ID, api.PathExchangeLiens, lienTx.Body)
	var first ledger.Lien
	if err != nil || json.Unmarshal(again, &first) != nil || first.JobID != "j1" || !first.Amount.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("the withdrawn lien sent again: %s %v, want its first answer, j1's lien of 200", again, err)
	}
	if n := p.central.JournalLen() - entries; n != 0 {
		t.Fatalf("the withdrawn lien sent again journaled %d entries at home", n)
	}
	p.heldAtHome(t, 0, "home bank holds %s after the withdrawn lien came again")

	// The scheduler's retry, the bank back: the lien begins anew, held once.
	if _, err := p.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); err != nil {
		t.Fatalf("the request again, the bank back: %v", err)
	}
	p.heldAtHome(t, 200, "home bank holds %s, want the new lien's 200")

	// Withdrawn before it reached home: a late copy is refused for good.
	p.link.mode.Store("down")
	if _, err := p.sched.PlaceLien(ctx, "r2", placeSpec("j2", "", 1)); !isCode(err, api.CodeUnavailable) {
		t.Fatalf("a lien with the bank away: %v", err)
	}
	p.mend()
	p.drained(t)
	txs, err = p.site.peers.Transactions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	late := txs[len(txs)-2]
	if late.State != peer.StateWithdrawn {
		t.Fatalf("j2's lien: %+v", late)
	}
	if _, err := p.home.Exchange(ctx, late.ID, api.PathExchangeLiens, late.Body); !isCode(err, api.CodeInactive) || !strings.Contains(err.Error(), "withdrew") {
		t.Fatalf("a withdrawn lien arriving late: %v", err)
	}
	p.heldAtHome(t, 200, "home bank holds %s, want j1's 200 alone")
	reconciled(t, p, 5)
}

// TestTracebackLateCopyOfWithdrawn: a lien withdrawn at the site, its
// withdrawal not sent yet, and the job's lien placed again under a new
// request id once the home bank is back: the new lien names the withdrawn
// one (peer.JobOp.Withdraws), so that a copy of the withdrawn lien that
// arrives after it places nothing, and its withdrawal, sent after, does
// not release the new lien. (Before, the late copy placed the job's lien
// again as its own, and the withdrawal then released it: the job ran with
// nothing held at home.) Both banks on each engine.
func TestTracebackLateCopyOfWithdrawn(t *testing.T) {
	onEachEngine(t, lateCopyOfWithdrawn)
}

func lateCopyOfWithdrawn(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	p.link.mode.Store("down") // dropped unread: a copy may still be on its way
	if _, err := p.sched.PlaceLien(ctx, "r1", placeSpec("j1", "", 1)); !isCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("a lien with the bank away: %v", err)
	}
	txs, err := p.site.peers.Transactions(ctx, false)
	if err != nil || len(txs) != 2 || txs[0].State != peer.StateWithdrawn {
		t.Fatalf("site's transactions: %+v %v, want j1's lien withdrawn and its withdrawal", txs, err)
	}
	withdrawn := txs[0]
	p.mend()
	if _, err := p.sched.PlaceLien(ctx, "r2", placeSpec("j1", "", 1)); err != nil {
		t.Fatalf("the job's lien under a new request id, the bank back: %v", err)
	}
	p.heldAtHome(t, 200, "home bank holds %s, want the new lien's 200")
	if _, err := p.home.Exchange(ctx, withdrawn.ID, api.PathExchangeLiens, withdrawn.Body); !isCode(err, api.CodeInactive) || !strings.Contains(err.Error(), "withdrew") {
		t.Fatalf("the withdrawn lien arriving after the new one: %v", err)
	}
	p.drained(t)
	p.heldAtHome(t, 200, "home bank holds %s after the withdrawal, want the new lien's 200")
	reconciled(t, p, 3)
}

// TestTracebackRefusalFinal: a forwarded lien the home bank refused for
// lack of credits is refused for good there: sent again after a deposit
// (as a second server of the site would, which recorded nothing yet), it
// gets the same refusal and holds nothing, and both banks record it
// refused. Before the home bank kept refusals, it was applied: refused
// at the site, held at home.
func TestTracebackRefusalFinal(t *testing.T) {
	onEachEngine(t, refusalFinal)
}

func refusalFinal(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	_, first := p.sched.PlaceLien(ctx, "req-1", placeSpec("j1", "", 32000))
	if !isCode(first, api.CodeInsufficientFunds) {
		t.Fatalf("a lien beyond the home project: %v", first)
	}
	txs, err := p.site.peers.Transactions(ctx, false)
	if err != nil || len(txs) != 1 || txs[0].State != peer.StateRefused {
		t.Fatalf("site's transactions: %+v %v, want the lien refused", txs, err)
	}
	p.central.MustDeposit("chem", "100000000", ledgertest.Epoch.AddDate(1, 0, 0))
	_, again := p.home.Exchange(ctx, txs[0].ID, api.PathExchangeLiens, txs[0].Body)
	if !isCode(again, api.CodeInsufficientFunds) {
		t.Fatalf("the refused lien sent again after a deposit: %v, want its refusal", again)
	}
	if !strings.Contains(first.Error(), api.FromError(again).Message) {
		t.Fatalf("sent again: %q, not the first refusal %q", again, first)
	}
	p.heldAtHome(t, 0, "home bank holds %s for a lien it refused")
	// Another body under the refused transaction's id is a conflict.
	other := bytes.Replace(txs[0].Body, []byte(`"j1"`), []byte(`"j2"`), 1)
	if _, err := p.home.Exchange(ctx, txs[0].ID, api.PathExchangeLiens, other); !isCode(err, api.CodeRequestConflict) {
		t.Fatalf("another body under a refused id: %v", err)
	}
	p.central.MustAudit()
	rec, err := link.Reconcile(ctx, p.site.peers, "central", time.Time{}, time.Time{})
	if err != nil || len(rec.Differences) != 0 || rec.Matched != 1 {
		t.Fatalf("reconcile: %+v %v", rec, err)
	}
	theirs, err := p.home.ExchangeTransactions(ctx, time.Time{}, time.Time{})
	if err != nil || len(theirs) != 1 || theirs[0].State != peer.StateRefused || theirs[0].Direction != peer.Received {
		t.Fatalf("home bank's record: %+v %v, want the lien received, refused", theirs, err)
	}
}

// TestTracebackRefund: a refund of a homed job's charges goes home,
// converted by the ratio its charge was (× 2), once however often it is
// sent; never beyond what the home charge took; all that is left when no
// amount is named; journaled at home as any refund, and counted by both
// banks' records: reconcile agrees, and the statement's total is the
// charge less its refunds. The home bank is on each engine in turn.
func TestTracebackRefund(t *testing.T) {
	onEachEngine(t, tracebackRefund)
}

func tracebackRefund(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	if _, err := p.sched.PlaceLien(ctx, "req-1", placeSpec("j1", "", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.sched.Charge(ctx, "req-2", finalCharge("j1", 2)); err != nil { // 100 here, 200 at home
		t.Fatal(err)
	}
	job := lien.Job{Machine: "hpc1", ID: "j1"}
	refund := func(id, amount string) (lien.JobRefund, error) {
		return p.sched.RefundJob(ctx, id, lien.JobRefundSpec{Job: job, Amount: ledgertest.Dec(t, amount), Description: "node failure"})
	}
	// The answer lost: accepted, pending (a refund only gives credits
	// back), and sent again under the same request id.
	p.link.mode.Store("losing")
	if r, err := refund("req-3", "30"); err != nil || r.Home == nil || r.Home.State != "pending" || !r.Refunded.Equal(decimal.NewFromInt(30)) {
		t.Fatalf("a refund whose answer was lost: %+v %v", r, err)
	}
	p.mend()
	r, err := refund("req-3", "30")
	if err != nil || !r.Refunded.Equal(decimal.NewFromInt(30)) || r.Home == nil || r.Home.State != "done" || r.Home.Peer != "central" {
		t.Fatalf("refund of 30: %+v %v", r, err)
	}
	var home lien.JobRefund
	if err := json.Unmarshal(r.Home.Answer, &home); err != nil || !home.Refunded.Equal(decimal.NewFromInt(60)) {
		t.Fatalf("the home bank's answer: %+v %v, want 60 refunded there", home, err)
	}
	if got := p.central.MustBalance("chem").Amount; !got.Equal(decimal.NewFromInt(860)) {
		t.Fatalf("home bank after refunding 30 × 2 of 200: %s, want 860 (once)", got)
	}
	// Beyond what is left at home (140, 70 here): refused there, named.
	if _, err := refund("req-4", "71"); !isCode(err, api.CodeRefund) || !strings.Contains(err.Error(), "home bank central refused the refund of job j1") {
		t.Fatalf("a refund beyond the home charge: %v", err)
	}
	// All that is left: 140 at home, 70 here.
	r, err = refund("req-5", "0")
	if err != nil || !r.Refunded.Equal(decimal.NewFromInt(70)) {
		t.Fatalf("refund of all that is left: %+v %v", r, err)
	}
	if got := p.central.MustBalance("chem").Amount; !got.Equal(decimal.NewFromInt(1000)) {
		t.Fatalf("home bank after refunding all: %s, want 1000", got)
	}
	if _, err := refund("req-6", "0"); !isCode(err, api.CodeRefund) {
		t.Fatalf("a refund of a job refunded in full: %v", err)
	}
	// A job whose lien and charge were never forwarded is the site's own.
	if _, err := p.sched.RefundJob(ctx, "req-7", lien.JobRefundSpec{Job: lien.Job{Machine: "hpc1", ID: "j9"}}); !isCode(err, api.CodeNotFound) {
		t.Fatalf("a refund of an unknown job: %v", err)
	}
	// At home, refunds as any: the charge's refunded, journaled, in usage.
	charges, err := lien.New(p.central.Ledger).Charges(ctx, lien.Job{Machine: "siteb:hpc1", ID: "j1"})
	if err != nil || len(charges) != 1 || !charges[0].Refunded.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("the home bank's charge of j1: %+v %v, want 200 refunded", charges, err)
	}
	rows, err := lien.Usage(charges, nil, "", time.UTC)
	if err != nil || len(rows) != 1 || !rows[0].Refunded.Equal(decimal.NewFromInt(200)) || !rows[0].Net.IsZero() {
		t.Fatalf("the home bank's usage: %+v %v", rows, err)
	}
	refunds, err := p.central.Journal(ctx, ledger.JournalFilter{Kinds: []ledger.Kind{ledger.KindRefund}})
	if err != nil || len(refunds) != 2 {
		t.Fatalf("the home bank's journal: %d refunds %v, want 2", len(refunds), err)
	}

	if err := p.site.peers.RecordAnswers(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := link.Reconcile(ctx, p.site.peers, "central", time.Time{}, time.Time{})
	if err != nil || len(rec.Differences) != 0 || rec.Matched != 6 {
		t.Fatalf("reconcile: %+v %v, want 6 agreeing (lien, charge, 2 refunds, 2 refused)", rec, err)
	}
	st, err := p.site.peers.Statement(ctx, "central", peer.Period{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(st.Lines, func(l peer.StatementLine) bool { return l.Op == peer.OpRefund })
	if i < 0 || st.Lines[i].Count != 2 || !st.Lines[i].Amount.Equal(decimal.NewFromInt(200)) || st.Lines[i].Refused != 2 || !st.Sent.IsZero() {
		t.Fatalf("statement: %+v, want 2 refunds of 200 in all, 2 refused, 0 sent in all", st)
	}
}

// TestTracebackBatch: a batch's liens and charges of a homed project are
// forwarded item by item, each answered with the home bank's answer (a
// refusal naming the home bank), the batch's other items unaffected; a
// retried batch applies none of them twice. The home bank is on each
// engine in turn.
func TestTracebackBatch(t *testing.T) {
	onEachEngine(t, tracebackBatch)
}

func tracebackBatch(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	p := newTracebackPair(t, open, "0")
	homed, local, tooBig := placeSpec("j1", "", 2), placeSpec("j2", "visit.local", 1), placeSpec("j3", "", 32000)
	charged := finalCharge("j1", 2)
	items := []api.BatchItem{{Lien: &homed}, {Lien: &local}, {Lien: &tooBig}, {Charge: &charged}}
	for range 2 {
		res, err := p.sched.Batch(ctx, "batch-1", items)
		if err != nil {
			t.Fatal(err)
		}
		if err := res[0].Err(); err != nil || res[0].Lien.Project != "visit.chem" || res[0].Lien.Lien.Amount.String() != "200" {
			t.Fatalf("the homed lien: %+v %v", res[0].Lien, err)
		}
		if err := res[1].Err(); err != nil || !res[1].Lien.Lien.Amount.Equal(decimal.NewFromInt(100)) {
			t.Fatalf("the local lien: %v", err)
		}
		if err := res[2].Err(); !isCode(err, api.CodeInsufficientFunds) || !strings.Contains(err.Error(), "home bank central refused the lien of job j3") {
			t.Fatalf("the lien beyond the home project: %v", err)
		}
		if err := res[3].Err(); err != nil || res[3].Charge.Home == nil || res[3].Charge.Home.State != "done" {
			t.Fatalf("the homed charge: %+v %v", res[3].Charge, err)
		}
		forwardedChargeAnswer(t, *res[3].Charge)
	}
	// Once: j1 charged 100 × 2 at home, nothing held there; j2 held here.
	if got := p.central.MustBalance("chem"); !got.Amount.Equal(decimal.NewFromInt(800)) || !got.Reserved.IsZero() {
		t.Fatalf("home bank after the batch, sent twice: %+v, want 800, nothing held", got)
	}
	if got := p.site.MustBalance("visit"); !got.Reserved.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("the site holds %s, want j2's 100", got.Reserved)
	}
}
