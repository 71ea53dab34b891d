package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
)

// loseFirst delivers requests to the server but, the first time a path is
// posted, throws the answer away and reports a transport error: the
// answer is lost after the bank has acted.
type loseFirst struct {
	path string
	lost atomic.Bool
	sent atomic.Int32
}

func (l *loseFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	l.sent.Add(1)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == l.path && !l.lost.Swap(true) {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (simulated)")
	}
	return resp, err
}

type fixture struct {
	*ledgertest.Bank
	url     string
	sched   auth.Key
	handler http.Handler
}

func newFixture(t *testing.T, opts ...server.Option) *fixture {
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem", "chem.lab1")
	if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddUser(context.Background(), b.Req(), ledger.UserSpec{Name: "amy", DefaultProject: "chem.lab1", Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	b.MustDeposit("chem", "1000", time.Time{})
	reg, err := clients.New(b.Ledger, [32]byte{9})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := reg.Add(context.Background(), b.Req(), clients.Spec{Name: "slurm", Role: clients.RoleScheduler, Scope: []string{"hpc1"}})
	if err != nil {
		t.Fatal(err)
	}
	v := &auth.Verifier{Lookup: server.KeyLookup(reg), Now: b.Clock.Now}
	h := server.New(b.Ledger, lien.New(b.Ledger), reg, v, slog.New(slog.NewJSONHandler(io.Discard, nil)), opts...)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &fixture{Bank: b, url: ts.URL, sched: key, handler: h}
}

func (f *fixture) client(t *testing.T, key auth.Key, opts ...client.Option) *client.Client {
	c, err := client.New(f.url, key, append([]client.Option{client.WithClock(f.Clock.Now), client.WithRetries(3, time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSchedulerOverTheWire(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.sched)
	ctx := context.Background()
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	req := charge.Request{Resources: charge.Resources{Processors: 2}, WallclockLimitSeconds: 100}
	q, err := c.Quote(ctx, api.QuoteRequest{Machine: "hpc1", User: "amy", Request: req})
	if err != nil || !q.Amount.Credits.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("quote: %+v %v", q, err)
	}
	if _, err := c.PlaceLien(ctx, "", api.LienRequest{Job: lien.Job{Machine: "hpc1", ID: "7"}, User: "amy", Request: req}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Balance(ctx, "chem")
	if err != nil || !b.Reserved.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("balance: %+v %v", b, err)
	}
	a, err := c.Available(ctx, "chem.lab1")
	if err != nil || !a.Equal(decimal.NewFromInt(800)) {
		t.Errorf("available: %s %v", a, err)
	}
	big := charge.Request{Resources: charge.Resources{Processors: 32}, WallclockLimitSeconds: 3600}
	_, err = c.PlaceLien(ctx, "", api.LienRequest{Job: lien.Job{Machine: "hpc1", ID: "8"}, User: "amy", Request: big})
	if !client.IsCode(err, api.CodeInsufficientFunds) || !strings.Contains(err.Error(), "chem.lab1 needs 115200") {
		t.Errorf("lien beyond funds: %v", err)
	}
	if _, err := c.Deposit(ctx, "", api.DepositRequest{Account: "chem", Amount: decimal.NewFromInt(5)}); !client.IsCode(err, api.CodeForbidden) {
		t.Errorf("a scheduler depositing: %v", err)
	}
}

// TestLostAnswerIsRetriedOnce: the charge reaches the bank, its answer is
// lost; the client sends it again with the same request id and gets the
// first answer, and the job is charged once.
func TestLostAnswerIsRetriedOnce(t *testing.T) {
	f := newFixture(t)
	transport := &loseFirst{path: api.PathCharges}
	c := f.client(t, f.sched, client.WithHTTPClient(&http.Client{Transport: transport}))
	ctx := context.Background()
	req := charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 100}
	if _, err := c.PlaceLien(ctx, "", api.LienRequest{Job: lien.Job{Machine: "hpc1", ID: "9"}, User: "amy", Request: req}); err != nil {
		t.Fatal(err)
	}
	sent := transport.sent.Load()
	r, err := c.Charge(ctx, "", api.ChargeRequest{Job: lien.Job{Machine: "hpc1", ID: "9"},
		Usage: charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 60, State: charge.Completed}})
	if err != nil {
		t.Fatalf("charge after a lost answer: %v", err)
	}
	if got := transport.sent.Load() - sent; got != 2 {
		t.Errorf("charge sent %d times, want 2", got)
	}
	if !r.Charge.Amount.Equal(decimal.NewFromInt(60)) {
		t.Errorf("charge = %+v", r.Charge)
	}
	if amount := f.MustBalance("chem").Amount; !amount.Equal(decimal.NewFromInt(940)) {
		t.Errorf("chem holds %s after one charge of 60, want 940", amount)
	}
}

func TestRefusedRequestsAreNotRetried(t *testing.T) {
	f := newFixture(t)
	wrong := f.sched
	wrong.Secret[0] ^= 1
	transport := &loseFirst{path: "none"}
	c := f.client(t, wrong, client.WithHTTPClient(&http.Client{Transport: transport}))
	_, err := c.Balance(context.Background(), "chem")
	if !client.IsCode(err, api.CodeUnauthenticated) {
		t.Errorf("wrong secret: %v", err)
	}
	if transport.sent.Load() != 1 {
		t.Errorf("a refused request was sent %d times", transport.sent.Load())
	}
	if _, err := client.New("ftp://x", f.sched); err == nil {
		t.Error("a non-http server URL was accepted")
	}
}

// TestRequestIDsGrow: request ids are distinct and, made one after
// another, in the order of their time part (the bank's request records then go at the
// end of their B-tree), in the same form as before (32 hex digits).
func TestRequestIDsGrow(t *testing.T) {
	prev := ""
	for range 1000 {
		id := client.NewRequestID()
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("request id %q is not 32 hex digits", id)
		}
		// The time part never goes back; two ids of the same nanosecond
		// differ by their random part.
		if id == prev || (prev != "" && id[:16] < prev[:16]) {
			t.Fatalf("request id %s came after %s", id, prev)
		}
		prev = id
	}
}
