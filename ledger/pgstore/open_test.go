package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
)

// tables lists the tables of the database's current schema.
func tables(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// withPassword is url with another password.
func withPassword(url, password string) string {
	at := strings.LastIndex(url, "@")
	colon := strings.LastIndex(url[:at], ":")
	return url[:colon+1] + password + url[at:]
}

// TestOpenRefuses: what Open refuses, with a message that says why, and
// that a refused database is left as it was.
func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, url string) string // returns the URL to open
		opts    pgstore.Options
		want    error
		says    string
	}{
		{"wrong password", func(t *testing.T, url string) string { return withPassword(url, "wrong") },
			pgstore.Options{Create: true}, pgstore.ErrConnect, "password authentication failed"},
		{"unreachable", func(t *testing.T, url string) string { return "postgres://ingot:x@127.0.0.1:1/bank" },
			pgstore.Options{Create: true}, pgstore.ErrConnect, "connection refused"},
		{"unknown database", func(t *testing.T, url string) string { return url + "_nope" },
			pgstore.Options{Create: true}, pgstore.ErrConnect, "does not exist"},
		{"not a connection string", func(t *testing.T, url string) string { return "postgres://[::1" },
			pgstore.Options{Create: true}, pgstore.ErrConnect, "connection string"},
		{"empty, not to be created", func(t *testing.T, url string) string { return url },
			pgstore.Options{}, ledger.ErrNotInitialized, "ingot init --store"},
		{"another program's", func(t *testing.T, url string) string {
			pgtest.Exec(t, url, "CREATE TABLE accounts (name text)", "CREATE TABLE grants (amount numeric)")
			return url
		}, pgstore.Options{Create: true}, pgstore.ErrNotBank, "holds tables (accounts, grants) but no schema_version"},
		{"newer schema", func(t *testing.T, url string) string {
			pgstoretest.OpenURL(t, url).Close()
			pgtest.Exec(t, url, "INSERT INTO schema_version (version) VALUES (99)")
			return url
		}, pgstore.Options{}, pgstore.ErrNewerSchema, "has schema 99, and this ingot reads schemas up to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.DB(t)
			url := tc.prepare(t, db)
			before := tables(t, db)
			s, err := pgstore.Open(context.Background(), url, tc.opts)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Open: %v, want %v saying %q", err, tc.want, tc.says)
			}
			t.Log(err)
			if p := passwordOf(url); p != "" && strings.Contains(err.Error(), p) {
				t.Errorf("the error shows the password: %v", err)
			}
			if after := tables(t, db); !slices.Equal(after, before) {
				t.Errorf("tables %v became %v", before, after)
			}
		})
	}
}

// passwordOf is the password of a postgres:// URL, or "" if it has none.
func passwordOf(url string) string {
	rest, _ := strings.CutPrefix(url, "postgres://")
	userinfo, _, found := strings.Cut(rest, "@")
	if !found {
		return ""
	}
	_, password, _ := strings.Cut(userinfo, ":")
	return password
}

// TestReadOnly: a store opened read-only reads and refuses changes; a
// View refuses writes in any store.
func TestReadOnly(t *testing.T) {
	url := pgtest.DB(t)
	pgstoretest.OpenURL(t, url).Close()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Update(context.Background(), func(tx ledger.Tx) error { return nil })
	if !errors.Is(err, pgstore.ErrReadOnly) {
		t.Errorf("Update on a read-only store: %v", err)
	}
	err = s.View(context.Background(), func(tx ledger.Tx) error {
		if err := tx.PutNode(ledger.Node{Name: "chem"}); !errors.Is(err, pgstore.ErrReadOnly) {
			t.Errorf("PutNode in a View: %v", err)
		}
		if _, err := tx.NextLienID(); !errors.Is(err, pgstore.ErrReadOnly) {
			t.Errorf("NextLienID in a View: %v", err)
		}
		head, err := tx.Head()
		if err != nil || head.Seq != 0 {
			t.Errorf("the head of an empty journal: %+v %v", head, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
