package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/pgstore"
)

// TestServerGone: once PostgreSQL is gone, reads and changes fail with
// ledger.ErrUnavailable (the server answers 503, and clients retry with
// the same request id), changes after RetryFor.
func TestServerGone(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	s, err := pgstore.Open(ctx, srv.NewDB(t), pgstore.Options{Create: true, RetryFor: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(ctx, func(ledger.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Update(ctx, func(tx ledger.Tx) error { return tx.PutRecord(ledger.Record{Kind: "k", Key: "k", Value: []byte(`1`)}) })
	if !errors.Is(err, ledger.ErrUnavailable) || time.Since(start) < 300*time.Millisecond {
		t.Errorf("Update after %s: %v, want ErrUnavailable after RetryFor", time.Since(start), err)
	}
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.View(readCtx, func(tx ledger.Tx) error { _, err := tx.Head(); return err }); !errors.Is(err, ledger.ErrUnavailable) {
		t.Errorf("View: %v, want ErrUnavailable", err)
	}
}
