package ledger_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// TestRecordDigests: the digest the ledger keeps of a journaled record is
// the SHA-256 of its value after each change, goes with the record when
// it is removed, and comes with the record in a copy of the bank.
func TestRecordDigests(t *testing.T) {
	bank := ledgertest.NewBank(t, bolttest.Open)
	put := func(r ledger.Record) {
		t.Helper()
		_, err := ledger.Mutate(context.Background(), bank.Ledger, bank.Req(), ledger.KindRecord, r, func(w *ledger.Writer) (bool, error) {
			_, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Record: &r, Description: "test record"})
			return err == nil, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	digestIn := func(store ledger.Store, want string) {
		t.Helper()
		var got string
		var ok bool
		err := store.View(context.Background(), func(tx ledger.Tx) (err error) {
			got, ok, err = ledger.RecordDigest(tx, "test", "k")
			return err
		})
		switch {
		case err != nil:
			t.Fatal(err)
		case want == "" && ok:
			t.Errorf("digest %s kept for a removed record", got)
		case want != "" && got != `"`+want+`"`:
			t.Errorf("digest %s (kept: %v), want %s", got, ok, want)
		}
	}
	for _, value := range []string{`{"a":1}`, `{"a":2}`} {
		put(ledger.Record{Kind: "test", Key: "k", Value: []byte(value)})
		sum := sha256.Sum256([]byte(value))
		digestIn(bank.Store, hex.EncodeToString(sum[:]))
	}
	copied := bolttest.Open(t)
	if _, err := ledger.Copy(context.Background(), bank.Store, copied, ledger.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"a":2}`))
	digestIn(copied, hex.EncodeToString(sum[:]))
	put(ledger.Record{Kind: "test", Key: "k", Deleted: true})
	digestIn(bank.Store, "")
	bank.MustAudit()
}

// TestRecordReplaces: a journaled record that replaces another kind's of
// the same key deletes that one, and its digest, in its own entry; the
// audit replays it so, and a copy of the bank holds the new one alone.
func TestRecordReplaces(t *testing.T) {
	ctx := context.Background()
	bank := ledgertest.NewBank(t, bolttest.Open)
	put := func(r ledger.Record) {
		t.Helper()
		_, err := ledger.Mutate(ctx, bank.Ledger, bank.Req(), ledger.KindRecord, r, func(w *ledger.Writer) (bool, error) {
			_, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Record: &r, Description: "test record"})
			return err == nil, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put(ledger.Record{Kind: "test.pending", Key: "k", Value: []byte(`1`)})
	n := bank.JournalLen()
	put(ledger.Record{Kind: "test.done", Key: "k", Value: []byte(`2`), Replaces: "test.pending"})
	if got := bank.JournalLen() - n; got != 1 {
		t.Fatalf("the replacing record took %d entries, want 1", got)
	}
	holds := func(store ledger.Store) {
		t.Helper()
		err := store.View(ctx, func(tx ledger.Tx) error {
			if r, ok, err := tx.Record("test.pending", "k"); err != nil || ok {
				t.Errorf("the replaced record is still there: %+v %v", r, err)
			}
			if d, ok, err := ledger.RecordDigest(tx, "test.pending", "k"); err != nil || ok {
				t.Errorf("the replaced record's digest is still there: %s %v", d, err)
			}
			if r, ok, err := tx.Record("test.done", "k"); err != nil || !ok || string(r.Value) != `2` {
				t.Errorf("the replacing record: %+v %v %v", r, ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	holds(bank.Store)
	copied := bolttest.Open(t)
	if _, err := ledger.Copy(ctx, bank.Store, copied, ledger.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	holds(copied)
	l, err := ledger.Open(ctx, copied)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := l.Audit(ctx, ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("the copy's audit: %+v %v", rep, err)
	}
	bank.MustAudit()
}
