package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// Buckets and meta keys of schema 7 that schema 8 does without: the sums
// and versions the ledger now keeps as records, the expiry index, the
// write-ahead log's bookkeeping.
var (
	oldBuckets  = [][]byte{[]byte("reserved"), []byte("charged"), []byte("reserved_total"), []byte("account_versions"), []byte("liens_by_expiry")}
	oldMetaKeys = [][]byte{[]byte("log_applied"), []byte("bank_id")}
)

// upgrade brings a file of schema from (0 for a new file, 7 or 8) to this
// one in one transaction (checkVersion has refused a schema 7 file with
// its log left): from 7, the changes of schema 8; then the node index.
func (s *Store) upgrade(from uint64) error {
	return s.update(func(btx *bolt.Tx) error {
		if from == 7 {
			if err := upgradeTo8(btx); err != nil {
				return err
			}
		}
		for _, name := range bucketNames {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("upgrade: bucket %s: %w", name, err)
			}
		}
		t := &tx{btx: btx}
		err := t.Entries(1, ^uint64(0), func(se ledger.StoredEntry) (bool, error) {
			e, err := ledger.DecodeEntry(se)
			if err != nil {
				return false, fmt.Errorf("upgrade: %w", err)
			}
			return true, t.indexEntry(e.Seq, ledger.IndexTerms(e))
		})
		if err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Put(keySchema, encodeUint(schemaVersion))
	})
}

// upgradeTo8 makes the changes of schema 8 to a file of schema 7.
func upgradeTo8(btx *bolt.Tx) error {
	for _, name := range oldBuckets {
		if err := btx.DeleteBucket(name); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return fmt.Errorf("upgrade: drop bucket %s: %w", name, err)
		}
	}
	meta := btx.Bucket(bucketMeta)
	for _, key := range oldMetaKeys {
		if err := meta.Delete(key); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
	}
	// The active-lien index is made again, without the packed holds.
	if err := btx.DeleteBucket(bucketLiensActive); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
		return fmt.Errorf("upgrade: %w", err)
	}
	if _, err := btx.CreateBucket(bucketLiensActive); err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	t := &tx{btx: btx}
	// Records keep their value alone, not the JSON of a ledger.Record.
	var records [][2][]byte
	if err := btx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		var r ledger.Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("%w: upgrade: record %q: %v", ledger.ErrCorrupt, k, err)
		}
		records = append(records, [2][]byte{bytes.Clone(k), r.Value})
		return nil
	}); err != nil {
		return err
	}
	for _, r := range records {
		if err := t.putRaw(bucketRecords, r[0], r[1]); err != nil {
			return err
		}
	}
	// Answers kept for changes that journaled nothing (seq 0) go: this
	// engine keeps none, and its audit checks each against its entry.
	var unanchored [][]byte
	if err := btx.Bucket(bucketRequests).ForEach(func(k, v []byte) error {
		if len(v) >= requestHeader && decodeUint(v[sha256.Size:]) == 0 {
			unanchored = append(unanchored, bytes.Clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range unanchored {
		if err := t.delete(bucketRequests, k); err != nil {
			return err
		}
	}
	err := t.Liens(func(l ledger.Lien) (bool, error) {
		if l.State == ledger.LienActive {
			return true, t.putRaw(bucketLiensActive, activeKey(l), nil)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	// The journal head gains the newest entry's hash.
	if k, raw := btx.Bucket(bucketJournal).Cursor().Last(); k != nil {
		e, err := storedEntry(decodeUint(k), raw)
		if err != nil {
			return err
		}
		if len(raw) < sha256.Size {
			return fmt.Errorf("%w: journal entry %d is truncated", ledger.ErrCorrupt, e.Seq)
		}
		head := append(encodeUint(e.Seq), encodeUint(encodeTime(e.Time))...)
		if err := t.putRaw(bucketMeta, keyHead, append(head, e.Hash[:]...)); err != nil {
			return err
		}
	}
	if err := ledger.RebuildAccountStates(t); err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	return nil
}
