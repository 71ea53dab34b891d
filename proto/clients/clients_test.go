package clients_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
)

type fixture struct {
	*ledgertest.Bank
	reg  *clients.Registry
	path string
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	path := filepath.Join(dir, "bank.db")
	b := ledgertest.NewBank(t, func(t testing.TB) ledger.Store {
		s, err := boltstore.Open(path, boltstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	b.MustNode("chem", "chem.lab1")
	if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: "hpc1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddUser(context.Background(), b.Req(), ledger.UserSpec{Name: "amy"}); err != nil {
		t.Fatal(err)
	}
	key, created, err := clients.LoadServerKey(filepath.Join(dir, "server.key"), true)
	if err != nil || !created {
		t.Fatalf("server key: %v %v", created, err)
	}
	reg, err := clients.New(b.Ledger, key)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{Bank: b, reg: reg, path: path}
}

func TestAddRotateRevoke(t *testing.T) {
	f := newFixture(t)
	c, key, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: "slurm", Role: clients.RoleScheduler, Scope: []string{"hpc1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Keys) != 1 || c.Keys[0].ID != key.ID || !strings.HasPrefix(key.ID, "slurm.") {
		t.Fatalf("client = %+v, key id %s", c, key.ID)
	}
	secret, found, ok, err := f.reg.Lookup(context.Background(), key.ID)
	if err != nil || !ok || secret != key.Secret || found.Role != clients.RoleScheduler {
		t.Fatalf("lookup: ok %v err %v", ok, err)
	}
	_, second, err := f.reg.Rotate(context.Background(), f.Req(), "slurm")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []auth.Key{key, second} {
		if _, _, ok, err := f.reg.Lookup(context.Background(), k.ID); !ok || err != nil {
			t.Errorf("key %s after rotation: ok %v err %v", k.ID, ok, err)
		}
	}
	if _, err := f.reg.Revoke(context.Background(), f.Req(), "slurm", key.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := f.reg.Lookup(context.Background(), key.ID); ok || err != nil {
		t.Errorf("revoked key: ok %v err %v", ok, err)
	}
	if _, _, ok, _ := f.reg.Lookup(context.Background(), second.ID); !ok {
		t.Error("the new key stopped working when the old one was revoked")
	}
	if _, err := f.reg.Revoke(context.Background(), f.Req(), "slurm", key.ID); !errors.Is(err, ledger.ErrInactive) {
		t.Errorf("second revoke: %v", err)
	}
	if _, _, ok, err := f.reg.Lookup(context.Background(), "nobody.00000000"); ok || err != nil {
		t.Errorf("unknown key: ok %v err %v", ok, err)
	}
	list, err := f.reg.List(context.Background())
	if err != nil || len(list) != 1 || len(list[0].Keys) != 2 {
		t.Errorf("list = %+v %v", list, err)
	}
}

func TestRoleRefusals(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: "boss", Role: clients.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		role  clients.Role
		scope []string
		want  error
	}{
		{"duplicate", clients.RoleAdmin, nil, ledger.ErrExists},
		{"unknown role", "root", nil, ledger.ErrInvalid},
		{"admin with scope", clients.RoleAdmin, []string{"chem"}, ledger.ErrInvalid},
		{"manager without scope", clients.RoleManager, nil, ledger.ErrInvalid},
		{"manager of an unknown node", clients.RoleManager, []string{"bio"}, ledger.ErrNotFound},
		{"scheduler of an unknown machine", clients.RoleScheduler, []string{"hpc9"}, ledger.ErrNotFound},
		{"user of two users", clients.RoleUser, []string{"amy", "bob"}, ledger.ErrInvalid},
		{"user unknown", clients.RoleUser, []string{"bob"}, ledger.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "boss"
			if tc.name != "duplicate" {
				name = "c" + strings.ReplaceAll(tc.name, " ", "-")
			}
			before := f.JournalLen()
			if _, _, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: name, Role: tc.role, Scope: tc.scope}); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if f.JournalLen() != before {
				t.Error("a refused client wrote to the journal")
			}
		})
	}
	for _, ok := range []struct {
		role  clients.Role
		scope []string
	}{{clients.RoleManager, []string{"chem"}}, {clients.RoleUser, []string{"amy"}}} {
		if _, _, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: "ok-" + string(ok.role), Role: ok.role, Scope: ok.scope}); err != nil {
			t.Errorf("%s: %v", ok.role, err)
		}
	}
}

// TestSecretsNotAtRest looks for every secret, raw and encoded, in the
// whole database file: the journal, the records and the stored answers.
func TestSecretsNotAtRest(t *testing.T) {
	f := newFixture(t)
	var keys []auth.Key
	req := f.Req()
	for _, name := range []string{"a", "b"} {
		_, k, err := f.reg.Add(context.Background(), req, clients.Spec{Name: name, Role: clients.RoleAdmin})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		req = f.Req()
	}
	_, k, err := f.reg.Rotate(context.Background(), f.Req(), "a")
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, k)
	var copyBuf bytes.Buffer
	if _, err := f.Backup(context.Background(), &copyBuf); err != nil {
		t.Fatal(err)
	}
	file := copyBuf.Bytes()
	for _, k := range keys {
		for _, form := range [][]byte{k.Secret[:], []byte(base64.RawURLEncoding.EncodeToString(k.Secret[:])), k.KeyFile()} {
			if bytes.Contains(file, form) {
				t.Fatalf("the secret of %s is in the database file", k.ID)
			}
		}
	}
}

// TestRetryGetsTheFirstKey: an add or a rotation sent again with its
// request id (its answer was lost) gets the first answer and the key made
// then, which works; nothing more is made. Other content under the same id
// is refused.
func TestRetryGetsTheFirstKey(t *testing.T) {
	f := newFixture(t)
	add := ledger.Request{Actor: "admin", ID: "add-slurm"}
	_, first, err := f.reg.Add(context.Background(), add, clients.Spec{Name: "slurm", Role: clients.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	rotate := ledger.Request{Actor: "admin", ID: "rotate-slurm"}
	_, rotated, err := f.reg.Rotate(context.Background(), rotate, "slurm")
	if err != nil {
		t.Fatal(err)
	}
	journal := f.JournalLen()
	for _, tc := range []struct {
		what string
		do   func() (clients.Client, auth.Key, error)
		want auth.Key
	}{
		{"add", func() (clients.Client, auth.Key, error) {
			return f.reg.Add(context.Background(), add, clients.Spec{Name: "slurm", Role: clients.RoleAdmin})
		}, first},
		{"rotation", func() (clients.Client, auth.Key, error) { return f.reg.Rotate(context.Background(), rotate, "slurm") }, rotated},
	} {
		_, again, err := tc.do()
		if err != nil || again != tc.want {
			t.Errorf("retried %s: key %s, %v; want the first, %s", tc.what, again.ID, err, tc.want.ID)
		}
		if secret, _, ok, err := f.reg.Lookup(context.Background(), again.ID); !ok || err != nil || secret != again.Secret {
			t.Errorf("the key a retried %s gave does not work: %v %v", tc.what, ok, err)
		}
	}
	if got := f.JournalLen(); got != journal {
		t.Errorf("the retries wrote %d journal entries", got-journal)
	}
	if _, _, err := f.reg.Add(context.Background(), add, clients.Spec{Name: "slurm", Role: clients.RoleManager, Scope: []string{"chem"}}); !errors.Is(err, ledger.ErrRequestConflict) {
		t.Errorf("the add's id with another role: %v", err)
	}
}

func TestWrongServerKey(t *testing.T) {
	f := newFixture(t)
	_, k, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: "slurm", Role: clients.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	var other [32]byte
	rand.Read(other[:])
	wrong, err := clients.New(f.Ledger, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := wrong.Lookup(context.Background(), k.ID); ok || !errors.Is(err, clients.ErrServerKey) {
		t.Errorf("lookup under another server key: ok %v err %v", ok, err)
	}
}

func TestServerKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.key")
	if _, _, err := clients.LoadServerKey(path, false); !errors.Is(err, clients.ErrServerKey) {
		t.Errorf("missing key without create: %v", err)
	}
	k1, created, err := clients.LoadServerKey(path, true)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	k2, created, err := clients.LoadServerKey(path, true)
	if err != nil || created || k1 != k2 {
		t.Errorf("second load: created %v err %v same %v", created, err, k1 == k2)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("server key mode %v", st.Mode().Perm())
	}
	// Open to others, the key is refused (as ssh refuses such a private
	// key), saying how to fix it.
	os.Chmod(path, 0o644)
	if _, _, err := clients.LoadServerKey(path, false); !errors.Is(err, clients.ErrServerKey) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("server key readable by others: %v", err)
	}
	os.Chmod(path, 0o600)
	os.WriteFile(path, []byte("short\n"), 0o600)
	if _, _, err := clients.LoadServerKey(path, true); !errors.Is(err, clients.ErrServerKey) {
		t.Errorf("malformed key: %v", err)
	}
}

// TestVerifyWithRegistry signs a request with a client's key and checks it
// through auth.Verifier looking keys up in the registry.
// TestLookupCopies changes the client Lookup returns: the next lookup,
// from the cache, must not see it.
func TestLookupCopies(t *testing.T) {
	f := newFixture(t)
	_, k, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: "slurm", Role: clients.RoleScheduler, Scope: []string{"hpc1"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, c, ok, err := f.reg.Lookup(context.Background(), k.ID)
		if !ok || err != nil || c.Scope[0] != "hpc1" || c.Keys[0].ID != k.ID {
			t.Fatalf("lookup: %+v ok %v err %v", c, ok, err)
		}
		c.Scope[0], c.Keys[0].ID = "changed", "changed"
	}
}

func TestVerifyWithRegistry(t *testing.T) {
	f := newFixture(t)
	_, k, err := f.reg.Add(context.Background(), f.Req(), clients.Spec{Name: "slurm", Role: clients.RoleScheduler, Scope: []string{"hpc1"}})
	if err != nil {
		t.Fatal(err)
	}
	// The first Verify caches the key; the revocation must empty the cache.
	v := &auth.Verifier{Lookup: f.reg.Secret}
	body := []byte(`{"job":"1"}`)
	r := httptest.NewRequest("POST", "/v1/liens", bytes.NewReader(body))
	if err := auth.Sign(r, body, k, time.Now()); err != nil {
		t.Fatal(err)
	}
	if id, err := v.Verify(r, body); err != nil || id != k.ID {
		t.Fatalf("verify: %s %v", id, err)
	}
	if _, err := f.reg.Revoke(context.Background(), f.Req(), "slurm", k.ID); err != nil {
		t.Fatal(err)
	}
	r2 := httptest.NewRequest("POST", "/v1/liens", bytes.NewReader(body))
	auth.Sign(r2, body, k, time.Now())
	if _, err := v.Verify(r2, body); !errors.Is(err, auth.ErrUnknownKey) {
		t.Errorf("verify with a revoked key: %v", err)
	}
}
