// Package bolttest opens bbolt stores for tests of the packages above the
// ledger: ledgertest.NewBank(t, bolttest.Open).
package bolttest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/packing"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// Open opens a new bbolt store in the test's temporary directory.
func Open(t testing.TB) ledger.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "bank.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatalf("open bolt store: %v", err)
	}
	return s
}

// WriteOldBank writes the bank NAME of ledger/boltstore's testdata (NAME.gz:
// banks of earlier schemas, testdata/README.md) to path and returns its
// bytes.
func WriteOldBank(t testing.TB, path, name string) []byte {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(here), "..", "testdata", name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return raw
}

// SetSchema rewrites the schema version of the bank at path, as a bank of
// another ingot would have it.
func SetSchema(t testing.TB, path string, version uint64) {
	t.Helper()
	Edit(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, version))
	})
}

// Edit changes the bank at path with bbolt itself, behind the bank's back,
// as a tool editing the file would.
func Edit(t testing.TB, path string, change func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(change); err != nil {
		t.Fatal(err)
	}
}

// EditEntry changes journal entry seq of the bank at path as change
// says, encoding it again but keeping the hash of its old bytes, as
// damage or a forger that does not know the chain would.
func EditEntry(t testing.TB, path string, seq uint64, change func(e *ledger.Entry)) {
	t.Helper()
	Edit(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("journal"))
		k := binary.BigEndian.AppendUint64(nil, seq)
		v := b.Get(k)
		if len(v) < 41 {
			return fmt.Errorf("entry %d is %d bytes", seq, len(v))
		}
		const header = 32 + 8 // SHA-256, time
		body, err := packing.Unpack(v[header:])
		if err != nil {
			return err
		}
		e, err := ledger.DecodeEntry(ledger.StoredEntry{Seq: seq, Body: body})
		if err != nil {
			return err
		}
		change(&e)
		se, err := ledger.SealEntry(e)
		if err != nil {
			return err
		}
		if bytes.Equal(se.Body, body) {
			return fmt.Errorf("entry %d unchanged", seq)
		}
		return b.Put(k, packing.Pack(bytes.Clone(v[:header]), se.Body))
	})
}
