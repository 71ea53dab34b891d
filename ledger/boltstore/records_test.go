package boltstore

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestLargeRecordsApart: a journaled record larger than largeRecord is
// kept in records_large and read back whole, so that a change of a small
// record beside it (an account's running sums) does not write its pages
// again; made small or removed, it leaves records_large. The ledger's own
// records stay in records whatever their size.
func TestLargeRecordsApart(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "bank.db"), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(rs ...ledger.Record) {
		t.Helper()
		err := s.Update(ctx, func(tx ledger.Tx) error {
			for _, r := range rs {
				if err := tx.PutRecord(r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// stored is the record's value as Record and Records read it, and
	// whether records_large holds it.
	stored := func(kind, key string) (value string, apart bool) {
		t.Helper()
		err := s.View(ctx, func(tx ledger.Tx) error {
			r, _, err := tx.Record(kind, key)
			if err != nil {
				return err
			}
			all, err := tx.Records(kind)
			if err != nil {
				return err
			}
			for _, listed := range all {
				if listed.Key == key && !bytes.Equal(listed.Value, r.Value) {
					t.Errorf("%s/%s: Records reads %d bytes, Record %d", kind, key, len(listed.Value), len(r.Value))
				}
			}
			value = string(r.Value)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.db.View(func(btx *bolt.Tx) error {
			apart = btx.Bucket(bucketLarge).Get(pairKey(kind, key)) != nil
			return nil
		})
		return value, apart
	}
	large := `"` + strings.Repeat("x", 600_000) + `"`
	put(ledger.Record{Kind: "config", Key: "rates", Value: []byte(large)}, ledger.Record{Kind: "ledger.account", Key: "chem", Value: []byte(`{"v":1}`)})
	if value, apart := stored("config", "rates"); value != large || !apart {
		t.Errorf("a large record reads %d bytes (kept apart: %v), want %d, apart", len(value), apart, len(large))
	}
	pages := func() int64 { st := s.db.Stats(); return st.TxStats.GetPageAlloc() }
	before := pages()
	put(ledger.Record{Kind: "ledger.account", Key: "chem", Value: []byte(`{"v":2}`)})
	if written := pages() - before; written > 64<<10 {
		t.Errorf("a change of a small record wrote %d bytes of pages: the large one's again", written)
	}
	put(ledger.Record{Kind: "ledger.account", Key: "big", Value: []byte(large)})
	if value, apart := stored("ledger.account", "big"); value != large || apart {
		t.Errorf("a large record of the ledger's reads %d bytes (kept apart: %v), want %d, in records", len(value), apart, len(large))
	}
	put(ledger.Record{Kind: "config", Key: "rates", Value: []byte(`1`)})
	if value, apart := stored("config", "rates"); value != "1" || apart {
		t.Errorf("a record made small reads %q (kept apart: %v)", value, apart)
	}
	// A file of an earlier schema kept it in records: the upgrade moves it.
	err = s.db.Update(func(btx *bolt.Tx) error {
		if err := btx.Bucket(bucketRecords).Put(pairKey("config", "old"), []byte(large)); err != nil {
			return err
		}
		return moveLargeRecords(&tx{btx: btx})
	})
	if err != nil {
		t.Fatal(err)
	}
	if value, apart := stored("config", "old"); value != large || !apart {
		t.Errorf("a large record upgraded reads %d bytes (kept apart: %v), want %d, apart", len(value), apart, len(large))
	}
	put(ledger.Record{Kind: "config", Key: "rates", Value: []byte(large)})
	put(ledger.Record{Kind: "config", Key: "rates", Deleted: true})
	if value, apart := stored("config", "rates"); value != "" || apart {
		t.Errorf("a large record removed reads %d bytes (kept apart: %v)", len(value), apart)
	}
}
