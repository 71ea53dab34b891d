package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// onStore is the command line on the PostgreSQL bank of url, whatever
// the environment says of another.
func onStore(t *testing.T, url string) *cliBank {
	for _, v := range []string{"INGOT_SERVER", "INGOT_KEY_FILE", "INGOT_DB", "INGOT_STORE"} {
		// Unset, not empty: a variable set, even empty, beats a config file.
		if old, ok := os.LookupEnv(v); ok {
			os.Unsetenv(v)
			t.Cleanup(func() { os.Setenv(v, old) })
		}
	}
	return &cliBank{t: t, global: []string{"--store", url}}
}

// TestPostgresStore: every local command works on a bank in PostgreSQL
// (--store, or INGOT_STORE), ingot init makes it, and two ingot serve
// processes serve it at once; what cannot be used is refused with exit 6
// and a message saying why, and a backup is a SQL script psql restores.
func TestPostgresStore(t *testing.T) {
	srv := pgtest.Start(t)

	t.Run("commands", func(t *testing.T) {
		url := srv.NewDB(t)
		b := onStore(t, url)
		out := b.ok("init")
		if !strings.Contains(out, "created bank ingot_test_") || strings.Contains(out, passwordOf(url)) {
			t.Errorf("init said %q", out)
		}
		b.ok("account", "create", "chem")
		b.ok("deposit", "chem", "42")
		b.refused(t, exitRefused, "already holds a bank", "init")
		os.Setenv("INGOT_STORE", url)
		var nb []ledger.NodeBalance
		(&cliBank{t: t}).json(&nb, "balance", "chem")
		os.Unsetenv("INGOT_STORE")
		if len(nb) != 1 || !nb[0].Amount.Equal(dec(t, "42")) {
			t.Errorf("balance through INGOT_STORE: %+v", nb)
		}
		if out := b.ok("audit", "--full"); !strings.Contains(out, "audit: OK") {
			t.Errorf("audit: %s", out)
		}

		dest := filepath.Join(t.TempDir(), "bank.sql")
		if out := b.ok("backup", dest); !strings.Contains(out, "a SQL script of the bank in PostgreSQL") {
			t.Errorf("backup: %s", out)
		}
		copied := srv.NewDB(t)
		restore := exec.Command(pgtest.Binary(t, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", dest, "-d", copied)
		if out, err := restore.CombinedOutput(); err != nil {
			t.Fatalf("psql: %v\n%s", err, out)
		}
		c := onStore(t, copied)
		if out := c.ok("audit", "--full"); !strings.Contains(out, "audit: OK") {
			t.Errorf("audit of the restored copy: %s", out)
		}
		if got, want := c.ok("balance", "-P"), b.ok("balance", "-P"); got != want {
			t.Errorf("the copy's balances:\n%s\nthe bank's:\n%s", got, want)
		}
	})

	t.Run("archive", func(t *testing.T) {
		url := srv.NewDB(t)
		store, err := pgstore.Open(context.Background(), url, pgstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		yearOfHistoryIn(t, store, 0)
		store.Close()
		b := onStore(t, url)
		before := answers(b)
		archive := filepath.Join(t.TempDir(), "old.db")
		out := b.ok("archive", "--before", "2026-01-01T00:00:00Z", archive)
		if !strings.Contains(out, "entries 1 to ") || !strings.Contains(out, "vacuumed") {
			t.Errorf("archive said:\n%s", out)
		}
		for _, bank := range []*cliBank{b, {t: t, global: []string{"--db", archive}}} {
			if out := bank.ok("audit", "--full"); !strings.Contains(out, "audit: OK") {
				t.Errorf("%v audit --full: %s", bank.global, out)
			}
		}
		if out := b.ok("audit"); !strings.Contains(out, "audit: OK") {
			t.Errorf("audit: %s", out)
		}
		checkArchived(t, b, archive, before)
	})

	t.Run("two servers", func(t *testing.T) {
		url := srv.NewDB(t)
		b := onStore(t, url)
		b.ok("init")
		b.ok("account", "create", "chem")
		serverKey, keyFile := filepath.Join(t.TempDir(), "server.key"), filepath.Join(t.TempDir(), "root.key")
		b.ok("client", "add", "root", "--role", "admin", "--server-key", serverKey, "--key-out", keyFile)
		raw, err := os.ReadFile(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		key, err := auth.ParseKeyFile(raw)
		if err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(t.TempDir(), "serve.toml")
		if err := os.WriteFile(config, []byte("store = \""+url+"\"\nserver-key = \""+serverKey+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		one := startServe(t, "--store", url, "serve", "--listen", "127.0.0.1:0", "--server-key", serverKey)
		two := startServe(t, "serve", "--listen", "127.0.0.1:0", "--config", config)
		first, second := one.line(t, "listening on "), two.line(t, "listening on ")
		b.ok("deposit", "chem", "7")
		for _, base := range []string{first, second} {
			var nb ledger.NodeBalance
			if resp := signedGet(t, key, base+"/v1/balance?node=chem"); json.Unmarshal(resp, &nb) != nil || nb.Amount.String() != "7" {
				t.Errorf("balance from %s: %s", base, resp)
			}
		}
		// A backup through a server is the SQL script too.
		remote := &cliBank{t: t, global: []string{"--server", second, "--key-file", keyFile}}
		if out := remote.ok("backup", filepath.Join(t.TempDir(), "bank.sql")); !strings.Contains(out, "a SQL script of the bank in PostgreSQL") {
			t.Errorf("backup through a server: %s", out)
		}
		for _, s := range []*serving{one, two} {
			if err := s.shutdown(t); err != nil {
				t.Errorf("serve ended with %v\n%s", err, s.stderr.String())
			}
		}
		if out, code := b.run("serve", "--listen", "127.0.0.1:0"); code != exitUsage || !strings.Contains(out, "give its file with --server-key") {
			t.Errorf("serve without --server-key: exit %d, %s", code, out)
		}
		if out := b.ok("audit", "--full"); !strings.Contains(out, "audit: OK") {
			t.Errorf("audit: %s", out)
		}
	})

	t.Run("migrate", func(t *testing.T) {
		file := newLienSite(t)
		file.ok(jobA("A1")...)
		file.ok(jobA("A2")...)
		file.ok(jobAUsage("A1")...)
		file.ok("withdraw", "chem", "10")
		url := srv.NewDB(t)
		if out := file.ok("migrate", "--from", file.db, "--to", url); !strings.Contains(out, "both audited in full, with the same balances") ||
			!strings.Contains(out, "liens 2, charges 1") || strings.Contains(out, passwordOf(url)) {
			t.Errorf("migrate to PostgreSQL: %s", out)
		}
		back := filepath.Join(t.TempDir(), "back.db")
		if out := file.ok("migrate", "--from", url, "--to", back); !strings.Contains(out, "both audited in full") {
			t.Errorf("migrate back: %s", out)
		}
		for _, b := range []*cliBank{onStore(t, url), onFile(t, back)} {
			for _, args := range [][]string{{"balance", "-P"}, {"journal", "-P"}, {"lien", "list", "-P"}, {"charge", "list", "A1", "-P"}} {
				if got, want := b.ok(args...), file.ok(args...); got != want {
					t.Errorf("%v on the copy %v:\n%s\nthe bank's:\n%s", args, b.global, got, want)
				}
			}
		}
		for _, tc := range []struct {
			args []string
			code int
			says string
		}{
			{[]string{"migrate", "--from", file.db, "--to", url}, exitRefused, "already holds a bank"},
			{[]string{"migrate", "--from", file.db, "--to", back}, exitRefused, "exists; the copy goes into a new file"},
			{[]string{"migrate", "--from", file.db}, exitUsage, "migrate needs --from"},
		} {
			if out, code := file.run(tc.args...); code != tc.code || !strings.Contains(out, tc.says) {
				t.Errorf("ingot %s: exit %d, %s; want exit %d saying %q", strings.Join(tc.args, " "), code, out, tc.code, tc.says)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			prepare func(t *testing.T, url string) []string // the command line
			code    int
			says    string
		}{
			{"both --db and --store", func(t *testing.T, url string) []string {
				return []string{"--db", filepath.Join(t.TempDir(), "bank.db"), "--store", url, "balance"}
			}, exitUsage, "both --db (or INGOT_DB) and --store (or INGOT_STORE) name a bank: give one"},
			{"wrong password", func(t *testing.T, url string) []string {
				return []string{"--store", strings.Replace(url, ":"+passwordOf(url)+"@", ":wrong@", 1), "balance"}
			}, exitUnavailable, "password authentication failed"},
			{"unreachable", func(t *testing.T, url string) []string {
				return []string{"--store", "postgres://ingot:secret@127.0.0.1:1/bank", "balance"}
			}, exitUnavailable, "cannot connect to PostgreSQL ingot@127.0.0.1:1/bank: dial tcp 127.0.0.1:1: connect: connection refused"},
			{"no bank yet", func(t *testing.T, url string) []string {
				return []string{"--store", url, "balance"}
			}, exitUnavailable, "is empty (create a bank with `ingot init --store URL`)"},
			{"another program's database", func(t *testing.T, url string) []string {
				pgtest.Exec(t, url, "CREATE TABLE jobs (id int)")
				return []string{"--store", url, "init"}
			}, exitUnavailable, "holds tables (jobs) but no schema_version: it belongs to another program"},
			{"newer schema", func(t *testing.T, url string) []string {
				onStore(t, url).ok("init")
				pgtest.Exec(t, url, "INSERT INTO schema_version (version) VALUES (99)")
				return []string{"--store", url, "balance"}
			}, exitUnavailable, "has schema 99, and this ingot reads schemas up to"},
			{"backup --compact", func(t *testing.T, url string) []string {
				onStore(t, url).ok("init")
				return []string{"--store", url, "backup", "--compact", filepath.Join(t.TempDir(), "copy")}
			}, exitUsage, "a bank in PostgreSQL is copied as a SQL script"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				url := srv.NewDB(t)
				onStore(t, url)
				args := tc.prepare(t, url)
				out, errOut, code := runCLI(args...)
				if code != tc.code || !strings.Contains(errOut, tc.says) {
					t.Errorf("ingot %s: exit %d, %s%s; want exit %d saying %q", strings.Join(args, " "), code, out, errOut, tc.code, tc.says)
				}
				if p := passwordOf(url); strings.Contains(out+errOut, p) {
					t.Errorf("the output shows the password: %s%s", out, errOut)
				}
			})
		}
	})
}

// passwordOf is the password of a postgres:// URL.
func passwordOf(url string) string {
	rest, _ := strings.CutPrefix(url, "postgres://")
	userinfo, _, _ := strings.Cut(rest, "@")
	_, password, _ := strings.Cut(userinfo, ":")
	return password
}
