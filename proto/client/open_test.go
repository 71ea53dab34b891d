package client_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/munge"
	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
	"github.com/ingot-hpc/ingot/proto/server"
)

// open is client.Open with quick retries.
func open(t *testing.T, o client.Options, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Open(o, append([]client.Option{client.WithRetries(3, time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMungeClient: a client with MUNGE acts as the bank user of its
// account; a lost answer is sent again with a fresh credential.
func TestMungeClient(t *testing.T) {
	d := mungetest.Start(t)
	f := newFixture(t, server.WithMunge(&munge.Verifier{Command: d.Command()}))
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddUser(context.Background(), f.Req(), ledger.UserSpec{Name: me.Username, Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}); err != nil {
		t.Fatal(err)
	}
	transport := &loseFirst{path: api.PathBalance}
	c := open(t, client.Options{Server: f.url, Munge: true, MungeSocket: d.Socket}, client.WithHTTPClient(&http.Client{Transport: transport}))
	ctx := context.Background()
	b, err := c.Balance(ctx, "chem.lab1")
	if err != nil || !b.Amount.Equal(decimal.NewFromInt(1000)) {
		t.Fatalf("%s's balance over MUNGE: %+v %v", me.Username, b, err)
	}
	if transport.sent.Load() != 2 {
		t.Errorf("the balance was asked %d times, want 2 (one answer lost)", transport.sent.Load())
	}
	if _, err := c.Audit(ctx, ledger.AuditOptions{}); !client.IsCode(err, api.CodeForbidden) {
		t.Errorf("%s over MUNGE audits the bank: %v; want forbidden (an ordinary user, even root)", me.Username, err)
	}
}

// TestSocketClient: on the server's socket, its own uid is admin with no
// key, and a key file still makes the key's client.
func TestSocketClient(t *testing.T) {
	f := newFixture(t)
	socket := filepath.Join(t.TempDir(), "ingot.socket")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f.handler, ConnContext: server.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()

	c := open(t, client.Options{Socket: socket})
	if _, err := c.Balances(ctx, time.Time{}); err != nil {
		t.Fatalf("the server's own uid on the socket: %v", err)
	}
	if _, err := c.Deposit(ctx, "", api.DepositRequest{Account: "chem", Amount: decimal.NewFromInt(5)}); err != nil {
		t.Fatalf("the server's own uid deposits on the socket: %v", err)
	}
	if amount := f.MustBalance("chem").Amount; !amount.Equal(decimal.NewFromInt(1005)) {
		t.Errorf("chem holds %s, want 1005", amount)
	}

	keyFile := filepath.Join(t.TempDir(), "slurm.key")
	if err := os.WriteFile(keyFile, f.sched.KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	sched := open(t, client.Options{Server: "http://ingot", Socket: socket, KeyFile: keyFile}, client.WithClock(f.Clock.Now))
	if _, err := sched.Deposit(ctx, "", api.DepositRequest{Account: "chem", Amount: decimal.NewFromInt(5)}); !client.IsCode(err, api.CodeForbidden) {
		t.Errorf("a scheduler's key on the socket deposits: %v; want forbidden", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	for name, o := range map[string]client.Options{
		"key file and MUNGE": {Server: "http://x", KeyFile: "k", Munge: true},
		"nothing":            {Server: "http://x"},
		"no key file":        {Server: "http://x", KeyFile: filepath.Join(t.TempDir(), "none")},
		"no server":          {Munge: true},
	} {
		if _, err := client.Open(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
