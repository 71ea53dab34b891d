package peer_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
)

type fixture struct {
	*ledgertest.Bank
	clients *clients.Registry
	peers   *peer.Registry
	path    string
	key     [32]byte
}

func newFixture(t testing.TB) *fixture {
	dir := t.TempDir()
	path := filepath.Join(dir, "bank.db")
	b := ledgertest.NewBank(t, func(t testing.TB) ledger.Store {
		s, err := boltstore.Open(path, boltstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	b.MustNode("chem", "chem.visit", "bio")
	key, _, err := clients.LoadServerKey(filepath.Join(dir, "server.key"), true)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := clients.New(b.Ledger, key)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{Bank: b, clients: reg, peers: peer.New(b.Ledger, reg), path: path, key: key}
}

func TestAddShowRemove(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	theirs, err := auth.NewKey("siteb.0001")
	if err != nil {
		t.Fatal(err)
	}
	req := f.Req()
	spec := peer.Spec{Name: "siteb", URL: "https://bank.siteb.example:8443", Projects: []string{"chem.visit"}}
	p, key, err := f.peers.Add(ctx, req, spec, &theirs)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "siteb" || p.URL != spec.URL || p.Key == nil || p.Key.ID != "siteb.0001" || p.Key.Sealed != nil {
		t.Fatalf("added %+v", p)
	}
	// The key made answers to the peer client, of role peer, scoped to
	// the agreement's projects.
	secret, c, ok, err := f.clients.Lookup(ctx, key.ID)
	if err != nil || !ok || secret != key.Secret || c.Role != clients.RolePeer || len(c.Scope) != 1 || c.Scope[0] != "chem.visit" {
		t.Fatalf("lookup %s: %v %v %+v", key.ID, ok, err, c)
	}
	// A retry of the request gets the first answer and the same key.
	p2, key2, err := f.peers.Add(ctx, req, spec, &theirs)
	if err != nil || key2 != key || p2.Created != p.Created {
		t.Fatalf("retry: %v, same key %v", err, key2 == key)
	}
	signing, err := f.peers.SigningKey(ctx, "siteb")
	if err != nil || signing != theirs {
		t.Fatalf("signing key: %v, same %v", err, signing == theirs)
	}
	list, err := f.peers.List(ctx)
	if err != nil || len(list) != 1 || list[0].Projects[0] != "chem.visit" || list[0].Key.Sealed != nil {
		t.Fatalf("list %+v %v", list, err)
	}
	if _, _, err := f.peers.Add(ctx, f.Req(), spec, nil); !errors.Is(err, ledger.ErrExists) {
		t.Fatalf("second add: %v", err)
	}
	if _, err := f.peers.Remove(ctx, f.Req(), "siteb"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := f.clients.Lookup(ctx, key.ID); ok || err != nil {
		t.Fatalf("the removed peer's key still answers: %v %v", ok, err)
	}
	if _, err := f.peers.Get(ctx, "siteb"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("get removed: %v", err)
	}
}

func TestSetKeyLater(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.peers.Add(ctx, f.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:8080"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.peers.SigningKey(ctx, "central"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("signing key before it is given: %v", err)
	}
	k, _ := auth.NewKey("central.1")
	p, err := f.peers.SetKey(ctx, f.Req(), "central", k)
	if err != nil || p.Key.ID != "central.1" || p.Key.Sealed != nil {
		t.Fatalf("set key: %+v %v", p, err)
	}
	if got, err := f.peers.SigningKey(ctx, "central"); err != nil || got != k {
		t.Fatalf("signing key: %v", err)
	}
	// The sealed key is bound to its peer: a server key that is not the
	// bank's does not open it.
	other, err := clients.New(f.Ledger, [32]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peer.New(f.Ledger, other).SigningKey(ctx, "central"); !errors.Is(err, clients.ErrServerKey) {
		t.Fatalf("another server key: %v", err)
	}
}

func TestRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for name, spec := range map[string]peer.Spec{
		"plain http elsewhere": {Name: "a", URL: "http://bank.example.org"},
		"no scheme":            {Name: "a", URL: "bank.example.org:8443"},
		"credentials in URL":   {Name: "a", URL: "https://u:p@bank.example.org"},
		"unknown project":      {Name: "a", URL: "https://bank.example.org", Projects: []string{"nope"}},
		"bad name":             {Name: "A B", URL: "https://bank.example.org"},
	} {
		t.Run(name, func(t *testing.T) {
			n := f.JournalLen()
			if _, _, err := f.peers.Add(ctx, f.Req(), spec, nil); !errors.Is(err, ledger.ErrInvalid) && !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if f.JournalLen() != n {
				t.Fatal("a refused peer was journaled")
			}
		})
	}
	if _, _, err := f.clients.Add(ctx, f.Req(), clients.Spec{Name: "sneaky", Role: clients.RolePeer}); !errors.Is(err, clients.ErrRole) {
		t.Fatalf("a peer client made by client add: %v", err)
	}
}
