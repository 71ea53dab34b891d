package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/progress"
	"github.com/ingot-hpc/ingot/ledger"
)

// Buckets and meta keys of schema 7 and earlier that schema 8 does without:
// the sums and versions the ledger now keeps as records, the expiry index,
// the write-ahead log's bookkeeping.
var (
	oldBuckets  = [][]byte{[]byte("reserved"), []byte("charged"), []byte("reserved_total"), []byte("account_versions"), []byte("liens_by_expiry")}
	oldMetaKeys = [][]byte{[]byte("log_applied"), []byte("bank_id")}
)

// steps are the changes that bring a file of an earlier schema to this
// one, in order: each applies to the files of the schemas below its
// before. The node index, which came with schema 9, is built after them
// (upgrade).
var steps = []struct {
	before uint64
	apply  func(*bolt.Tx) error
}{
	{5, packRequests},  // schema 5 packed the request records
	{9, unwrapRecords}, // records as their value alone, in schema 8's later files
	{8, upgradeTo8},    // the rest of schema 8
}

// prepare makes the buckets of a new file, or brings a file of an earlier
// schema to this one after copying it beside itself (backUp), and turns on
// the writing of bbolt's free list (openBolt) before the first commit. The
// schema is read again now that the file is locked for writing: another
// ingot may have upgraded it since probe looked.
func (s *Store) prepare(fresh bool, onUpgrade func(from, to uint64, backup string), report func(step string, done, total int64)) error {
	if report == nil {
		report = func(string, int64, int64) {}
	}
	if fresh {
		s.db.NoFreelistSync = false
		return s.upgrade(0, report)
	}
	from, err := s.schema()
	if err != nil {
		return err
	}
	if err := checkVersion(s.path, from, false); err != nil {
		return err
	}
	if from == schemaVersion {
		s.db.NoFreelistSync = false
		return nil
	}
	backup, err := s.backUp(from, report)
	if err != nil {
		return err
	}
	s.db.NoFreelistSync = false
	if err := s.upgrade(from, report); err != nil {
		return fmt.Errorf("upgrade from schema %d (the file as it was is %s): %w", from, backup, err)
	}
	if onUpgrade != nil {
		onUpgrade(from, schemaVersion, backup)
	}
	return nil
}

// schema reads the file's schema version (probe has checked it is there).
func (s *Store) schema() (uint64, error) {
	var version uint64
	err := s.view(func(btx *bolt.Tx) error {
		meta := btx.Bucket(bucketMeta)
		if meta == nil || len(meta.Get(keySchema)) != 8 {
			return fmt.Errorf("%w: %s has no schema version", ledger.ErrNotInitialized, s.path)
		}
		version = decodeUint(meta.Get(keySchema))
		return nil
	})
	return version, err
}

// backUp copies the file, before its upgrade from schema from, to
// PATH.schemaN.bak beside it, or PATH.schemaN.bak.1, .2... when that name
// is taken: a backup an operator may still need is never overwritten. The
// copy is of the file's bytes, not of a transaction (which rewrites the
// meta pages): the store holds the file's lock and has written nothing to
// it (openBolt), so the copy is the file exactly as the last ingot left
// it. It is synced, and its directory, before the upgrade begins; a copy
// that cannot be written whole (a full disk) is removed.
func (s *Store) backUp(from uint64, report func(step string, done, total int64)) (string, error) {
	src, err := os.Open(s.path)
	if err != nil {
		return "", fmt.Errorf("back up before the upgrade from schema %d: %w", from, err)
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return "", fmt.Errorf("back up before the upgrade from schema %d: %w", from, err)
	}
	dst, err := createBackup(fmt.Sprintf("%s.schema%d.bak", s.path, from), info.Mode().Perm())
	if err != nil {
		return "", fmt.Errorf("back up before the upgrade from schema %d: %w", from, err)
	}
	name := dst.Name()
	_, err = io.Copy(&progress.Writer{W: dst, Report: func(n int64) { report(UpgradeStepCopy, n, info.Size()) }}, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(name))
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("back up before the upgrade from schema %d: %w (the copy is removed, the bank left as it was)", from, err)
	}
	return name, nil
}

// createBackup creates base, or base.1, base.2... if it exists.
func createBackup(base string, perm fs.FileMode) (*os.File, error) {
	name := base
	for n := 1; ; n++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
		name = fmt.Sprintf("%s.%d", base, n)
	}
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// upgrade brings a file of schema from (0 for a new file) to this one in
// one transaction: the steps for its schema, then the journal's index
// (schema 9's by node, with schema 14's terms of jobs and kinds) for a
// file without it, the index of allocations by end (schema 13's) for a
// file without it, then the schema version. Schemas 10 to 12 changed how
// new values are stored, not the old ones: nothing is rewritten. Nor does
// schema 15, whose records have their digests kept beside them from then
// on (ledger.RecordDigest; one written before is compared whole): it
// marks the file so that an earlier ingot, which would change a record
// without its digest, refuses it. Schema 16 keeps the large journaled
// records in records_large: those there are moved. Schema 17 indexes the allocations
// that start after they were made by start (allocations_upcoming): those
// are moved out of the index by end. Schema 18 lists the allocations used
// up apart (allocations_used_up): those are moved out of the index by end.
func (s *Store) upgrade(from uint64, report func(step string, done, total int64)) error {
	return s.update(func(btx *bolt.Tx) error {
		// The steps of the earliest schemas write records, which may go to
		// records_large.
		if _, err := btx.CreateBucketIfNotExists(bucketLarge); err != nil {
			return fmt.Errorf("upgrade: bucket %s: %w", bucketLarge, err)
		}
		for _, step := range steps {
			if from != 0 && from < step.before {
				if err := step.apply(btx); err != nil {
					return err
				}
			}
		}
		for _, name := range bucketNames {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("upgrade: bucket %s: %w", name, err)
			}
		}
		if from != 0 && from < 14 {
			// Schema 9 made the node index; schema 14 added the jobs' and
			// kinds' terms to it.
			terms := ledger.SearchTerms
			if from < 9 {
				terms = ledger.IndexTerms
			}
			if err := indexJournal(&tx{btx: btx}, terms, report); err != nil {
				return err
			}
		}
		if from != 0 && from < 13 {
			if err := indexEnds(&tx{btx: btx}); err != nil {
				return err
			}
		}
		if from != 0 && from < 16 {
			if err := moveLargeRecords(&tx{btx: btx}); err != nil {
				return err
			}
		}
		if from != 0 && from < 17 {
			if err := indexUpcoming(&tx{btx: btx}); err != nil {
				return err
			}
		}
		if from != 0 && from < 18 {
			if err := indexUsedUp(&tx{btx: btx}); err != nil {
				return err
			}
		}
		return btx.Bucket(bucketMeta).Put(keySchema, encodeUint(schemaVersion))
	})
}

// moveLargeRecords writes every record again, so that PutRecord moves
// those it keeps in records_large there (schema 16).
func moveLargeRecords(t *tx) error {
	var large []ledger.Record
	err := t.bucket(bucketRecords).ForEach(func(k, v []byte) error {
		if len(v) > largeRecord {
			kind, key, _ := bytes.Cut(k, []byte{0})
			large = append(large, ledger.Record{Kind: string(kind), Key: string(key), Value: bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("upgrade: records: %w", err)
	}
	for _, r := range large {
		if err := t.PutRecord(r); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
	}
	return nil
}

// indexJournal lists every entry in the index under its terms.
func indexJournal(t *tx, terms func(ledger.Entry) []string, report func(step string, done, total int64)) error {
	head, err := t.Head()
	if err != nil {
		return err
	}
	return t.Entries(1, ^uint64(0), func(se ledger.StoredEntry) (bool, error) {
		e, err := ledger.DecodeEntry(se)
		if err != nil {
			return false, fmt.Errorf("upgrade: %w", err)
		}
		if e.Seq%10000 == 0 || e.Seq == head.Seq {
			report(UpgradeStepIndex, int64(e.Seq), int64(head.Seq))
		}
		return true, t.indexEntry(e.Seq, terms(e))
	})
}

// indexEnds lists every allocation in allocations_by_end (schema 13).
func indexEnds(t *tx) error {
	allocs, err := t.Allocations()
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	for _, a := range allocs {
		if err := t.indexEnd(a.AllocationTerms); err != nil {
			return err
		}
	}
	return nil
}

// indexUpcoming moves each allocation that starts after it was made from
// allocations_by_end to allocations_upcoming (schema 17), as PutAllocation
// lists a new one: the next change of its account moves it back if it has
// started.
func indexUpcoming(t *tx) error {
	allocs, err := t.Allocations()
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	for _, a := range allocs {
		if a.Created.IsZero() || !a.Start.After(a.Created) {
			continue
		}
		if err := t.delete(bucketByEnd, endKey(a.AllocationTerms)); err != nil {
			return err
		}
		if err := t.putRaw(bucketUpcoming, startKey(a.AllocationTerms), nil); err != nil {
			return err
		}
	}
	return nil
}

// indexUsedUp moves each allocation used up from allocations_by_end to
// allocations_used_up (schema 18), as PutAllocation does. The account's
// running sums keep what charges took of them apart when the ledger
// next reads them (ledger's accountState.Apart).
func indexUsedUp(t *tx) error {
	allocs, err := t.Allocations()
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	for _, a := range allocs {
		if err := t.sortUsedUp(a); err != nil {
			return err
		}
	}
	return nil
}

// The steps of an upgrade, as Options.OnUpgradeProgress names them.
const (
	UpgradeStepCopy  = "copy of the file as it was"
	UpgradeStepIndex = "index of the journal"
)

// requestJSON is a request record as schemas 2 to 4 kept it: JSON, the
// answer's JSON base64 inside it.
type requestJSON struct {
	ContentHash string    `json:"content_hash"`
	Result      []byte    `json:"result"`
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time"`
}

// packRequests rewrites the request records of schemas 2 to 4 in the
// packed form of schema 5 and later (tx.go).
func packRequests(btx *bolt.Tx) error {
	type record struct {
		key ledger.RequestKey
		rec ledger.RequestRecord
	}
	var records []record
	err := btx.Bucket(bucketRequests).ForEach(func(k, v []byte) error {
		client, id, ok := bytes.Cut(k, []byte{0})
		var old requestJSON
		if !ok || json.Unmarshal(v, &old) != nil {
			return fmt.Errorf("%w: upgrade: request record %q is not one of schema 2 to 4", ledger.ErrCorrupt, k)
		}
		hash, err := hex.DecodeString(old.ContentHash)
		if err != nil || len(hash) != sha256.Size {
			return fmt.Errorf("%w: upgrade: request record %q: content hash %q is not a SHA-256", ledger.ErrCorrupt, k, old.ContentHash)
		}
		r := record{key: ledger.RequestKey{Client: string(client), ID: string(id)},
			rec: ledger.RequestRecord{Result: old.Result, Seq: old.Seq, Time: old.Time}}
		copy(r.rec.ContentHash[:], hash)
		records = append(records, r)
		return nil
	})
	if err != nil {
		return err
	}
	t := &tx{btx: btx}
	for _, r := range records {
		if err := t.PutRequest(r.key, r.rec); err != nil {
			return err
		}
	}
	return nil
}

// unwrapRecords stores each record as its value alone. Up to schema 7, and
// in the files of schema 8 made by commit 4337ef7 (the next, 3a04375,
// changed the layout without a new schema number), a record was the JSON
// of the whole ledger.Record: a value that decodes as a ledger.Record
// naming its own kind and key is one of those; any other is a value
// already.
func unwrapRecords(btx *bolt.Tx) error {
	var records [][2][]byte
	if err := btx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		var r ledger.Record
		if json.Unmarshal(v, &r) == nil && bytes.Equal(pairKey(r.Kind, r.Key), k) {
			records = append(records, [2][]byte{bytes.Clone(k), r.Value})
		}
		return nil
	}); err != nil {
		return err
	}
	t := &tx{btx: btx}
	for _, r := range records {
		if err := t.putRaw(bucketRecords, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// upgradeTo8 makes the other changes of schema 8 to a file of schema 7 or
// earlier.
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
