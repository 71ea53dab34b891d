package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
)

// TestConnectionLostBeforeCommit: a group whose connection is cut before
// its commit (its server process terminated, as a failover cuts it) runs
// again on a new connection, and its change is made once.
func TestConnectionLostBeforeCommit(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	s, err := Open(ctx, url, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	runs := 0
	err = s.Update(ctx, func(ltx ledger.Tx) error {
		if runs++; runs == 1 {
			var pid int
			if err := ltx.(*tx).q.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return err
			}
			if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
				return err
			}
		}
		return ltx.PutRecord(ledger.Record{Kind: "test", Key: "k", Value: []byte(`1`)})
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs, want success after 2", err, runs)
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM records WHERE kind = 'test'").Scan(&n); err != nil || n != 1 {
		t.Errorf("%d records (%v), want 1", n, err)
	}
}
