package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
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

type bank struct {
	*ledgertest.Bank
	clients *clients.Registry
	peers   *peer.Registry
}

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// onEachEngine runs test with a bank on each engine in turn, as a
// subtest named after it.
func onEachEngine(t *testing.T, test func(*testing.T, ledgertest.OpenStore)) {
	for engine, open := range map[string]ledgertest.OpenStore{"bbolt": onFile, "postgres": pgstoretest.Open} {
		t.Run(engine, func(t *testing.T) { test(t, open) })
	}
}

// onFile opens a bank's store on a new bbolt file.
func onFile(t testing.TB) ledger.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "bank.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newBank(t testing.TB, open ledgertest.OpenStore, nodes ...string) *bank {
	b := ledgertest.NewBank(t, open)
	if len(nodes) > 0 {
		b.MustNode(nodes...)
	}
	reg, err := clients.New(b.Ledger, [32]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	return &bank{Bank: b, clients: reg, peers: peer.New(b.Ledger, reg)}
}

// newRegistry is the peers of a bank, sealed under a test server key.
func newRegistry(tb testing.TB, b *ledgertest.Bank) *peer.Registry {
	reg, err := clients.New(b.Ledger, [32]byte{1})
	if err != nil {
		tb.Fatal(err)
	}
	return peer.New(b.Ledger, reg)
}

// wire is the way from the central bank to the site: up, down (the
// connection dropped before the request is read), losing (the request
// applied, then the connection dropped before the answer), or hole (held
// open, never answered, until the sender gives up).
type wire struct {
	h    http.Handler
	mode atomic.Value
	// sent counts the requests that came to it, whatever its mode.
	sent atomic.Int64
}

func (l *wire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.sent.Add(1)
	mode, _ := l.mode.Load().(string)
	if mode == "hole" { // held open, never answered, until the sender gives up or the link is mended
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for mode == "hole" {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				mode, _ = l.mode.Load().(string)
			}
		}
		// Mended: the held request's connection drops, unanswered, so
		// that no server's Close waits on it.
		mode = "down"
	}
	if mode == "losing" {
		l.h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if mode == "down" || mode == "losing" {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	l.h.ServeHTTP(w, r)
}

// TestExactlyOnceAcrossLostAnswers: a central bank deposits at a site
// through a link that loses answers and goes down; the outbox keeps
// sending until the site answers, and the site applies each deposit once.
// A deposit into an account the agreement does not name is refused for
// good, with the site's reason; a replayed transaction gets its first
// answer, and another peer cannot use it.
// The site's bank is on each engine in turn.
func TestExactlyOnceAcrossLostAnswers(t *testing.T) {
	onEachEngine(t, exactlyOnce)
}

func exactlyOnce(t *testing.T, open ledgertest.OpenStore) {
	ctx := context.Background()
	site := newBank(t, open, "chem", "bio")
	central := newBank(t, onFile)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(site.Ledger, lien.New(site.Ledger), site.clients, &auth.Verifier{Lookup: server.KeyLookup(site.clients)}, log)
	l := &wire{h: srv}
	ts := httptest.NewServer(l)
	defer ts.Close()

	_, centralKey, err := site.peers.Add(ctx, site.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:1", Projects: []string{"chem"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := central.peers.Add(ctx, central.Req(), peer.Spec{Name: "siteb", URL: ts.URL}, &centralKey); err != nil {
		t.Fatal(err)
	}
	deposit := func(account, amount string) peer.Transaction {
		t.Helper()
		tx, err := central.peers.Deposit(ctx, central.Req(), "siteb", ledger.DepositSpec{Account: account, Amount: ledgertest.Dec(t, amount)})
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	chem, bio := deposit("chem", "100"), deposit("bio", "5")

	o := &outbox.Outbox{Peers: central.peers, Log: log, Pause: 1}
	for _, mode := range []string{"losing", "down", "losing", "up"} {
		l.mode.Store(mode)
		pending, err := o.Drain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 2}[mode == "up"]; pending != want {
			t.Fatalf("link %s: %d pending, want %d", mode, pending, want)
		}
	}
	if got := site.MustBalance("chem").Amount; !got.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("site's chem holds %s after the deposit was sent four times, want 100 (once)", got)
	}
	if got := site.MustBalance("bio").Amount; !got.IsZero() {
		t.Fatalf("site's bio holds %s: a deposit beyond the agreement was applied", got)
	}
	txs, err := central.peers.Transactions(ctx, false)
	if err != nil || len(txs) != 2 {
		t.Fatalf("transactions %v %v", txs, err)
	}
	for _, x := range txs {
		var e api.Error
		switch x.ID {
		case chem.ID:
			if x.State != peer.StateDone {
				t.Errorf("chem's deposit %s", x.State)
			}
		case bio.ID:
			if x.State != peer.StateRefused || json.Unmarshal(x.Answer, &e) != nil || e.Code != api.CodeForbidden {
				t.Errorf("bio's deposit %s: %s", x.State, x.Answer)
			}
		}
	}
	if pending, _ := central.peers.Transactions(ctx, true); len(pending) != 0 {
		t.Fatalf("still pending: %v", pending)
	}

	// The same transaction sent again, as a captured one would be: its
	// first answer, nothing applied; with another body, a conflict.
	c, err := client.Open(client.Options{Server: ts.URL, Key: &centralKey}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exchange(ctx, chem.ID, api.PathExchangeDeposits, chem.Body); err != nil {
		t.Fatalf("replay: %v", err)
	}
	forged := json.RawMessage(`{"account":"chem","amount":"1000","credit_limit":"0"}`)
	if _, err := c.Exchange(ctx, chem.ID, api.PathExchangeDeposits, forged); !isCode(err, api.CodeRequestConflict) {
		t.Fatalf("a forged body under the transaction's id: %v", err)
	}
	if got := site.MustBalance("chem").Amount; !got.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("chem holds %s after the replays", got)
	}
	// Another peer, whose agreement names other projects, cannot apply it.
	_, otherKey, err := site.peers.Add(ctx, site.Req(), peer.Spec{Name: "sitec", URL: "http://127.0.0.1:2", Projects: []string{"bio"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.Open(client.Options{Server: ts.URL, Key: &otherKey}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exchange(ctx, chem.ID, api.PathExchangeDeposits, chem.Body); !isCode(err, api.CodeForbidden) {
		t.Fatalf("another peer sending central's transaction: %v", err)
	}
	reconcileTwoBanks(t, site, central, other, chem)
}

// reconcileTwoBanks: the central bank and the site agree on their
// transactions (the refused one recorded only where it was refused);
// another peer of the site reads none of them; a difference injected on
// each side is found.
func reconcileTwoBanks(t *testing.T, site, central *bank, other *client.Client, chem peer.Transaction) {
	ctx := context.Background()
	rec, err := link.Reconcile(ctx, central.peers, "siteb", time.Time{}, time.Time{})
	if err != nil || rec.Matched != 2 || len(rec.Differences) != 0 {
		t.Fatalf("reconcile after the drain: %+v %v", rec, err)
	}
	day := peer.Day(chem.Created)
	if rec, err := link.Reconcile(ctx, central.peers, "siteb", day.To, day.To.AddDate(0, 0, 1)); err != nil || rec.Matched != 0 {
		t.Fatalf("reconcile of the next day: %+v %v", rec, err)
	}
	theirs, err := other.ExchangeTransactions(ctx, time.Time{}, time.Time{})
	if err != nil || len(theirs) != 0 {
		t.Fatalf("another peer read %v (%v), want none of central's", theirs, err)
	}

	// The site's record of the deposit says 99 where 100 were sent, and
	// the central bank records a deposit done that the site never saw.
	_, err = ledger.Mutate(ctx, site.Ledger, site.Req(), ledger.KindRecord, nil, func(w *ledger.Writer) (struct{}, error) {
		r, _, err := w.Tx().Record("peer.received", "central/"+chem.ID)
		if err != nil {
			return struct{}{}, err
		}
		var x peer.Exchanged
		if err := json.Unmarshal(r.Value, &x); err != nil {
			return struct{}{}, err
		}
		x.Amount = decimal.NewFromInt(99)
		r.Value, _ = json.Marshal(x)
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Description: "tampered", Record: &r})
		return struct{}{}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	ghost, err := central.peers.Deposit(ctx, central.Req(), "siteb", ledger.DepositSpec{Account: "chem", Amount: decimal.NewFromInt(7)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := central.peers.Settle(ctx, ghost.ID, peer.StateDone, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	rec, err = link.Reconcile(ctx, central.peers, "siteb", time.Time{}, time.Time{})
	if err != nil || rec.Matched != 1 || len(rec.Differences) != 2 {
		t.Fatalf("reconcile after the injected differences: %+v %v", rec, err)
	}
	want := map[string]string{chem.ID: "amount 100 sent, 99 applied", ghost.ID: "done here; the peer has no record of applying it"}
	for _, d := range rec.Differences {
		if want[d.ID] != d.Problem {
			t.Errorf("%s: %q, want %q", d.ID, d.Problem, want[d.ID])
		}
	}
}

func isCode(err error, code api.Code) bool {
	e, ok := errors.AsType[*api.Error](err)
	return ok && e.Code == code
}
