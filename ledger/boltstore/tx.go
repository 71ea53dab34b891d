package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// tx is a ledger.Tx: the file read through an overlay (merged.go). In
// the committer (s set) that is the committer's, which it writes to; in
// View, a published snapshot's (view).
type tx struct {
	btx   *bolt.Tx
	cache *decodedCache // nil outside the committer
	s     *session      // nil outside the committer
	view  *overlay
	open  *[numBuckets]kvBucket
}

func (t *tx) bucket(id bucketID) kvBucket {
	if t.s != nil {
		return t.s.bucket(id)
	}
	if t.open == nil {
		t.open = new([numBuckets]kvBucket)
	}
	b := t.open[id]
	if b == nil {
		b = newMergedBucket(nil, t.view, id, t.btx)
		t.open[id] = b
	}
	return b
}

func encodeUint(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

func decodeUint(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// Keys are made in one allocation of their exact size: appending to a
// string's bytes allocated two or three times a key, a tenth of the
// committer's allocations.

func historyKey(id, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), id), seq)
}

// pairKey is a, a zero byte, then b: a key whose first part is a name
// (which never holds a zero byte).
func pairKey(a, b string) []byte {
	return append(append(append(make([]byte, 0, len(a)+1+len(b)), a...), 0), b...)
}

func accountKey(account string, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(append(make([]byte, 0, len(account)+1+8), account...), 0), id)
}

func requestKey(k ledger.RequestKey) []byte { return pairKey(k.Client, k.ID) }

// get decodes the value at key; ok is false if there is none. In the
// committer's transactions it first asks the cache of decoded records,
// which also remembers keys found missing. Only a miss decodes into memory
// of its own (json.Unmarshal keeps what it is given on the heap).
func get[T any](t *tx, bucket bucketID, key []byte) (v T, ok bool, err error) {
	if cached, ok := t.cache.lookup(bucket, key); ok {
		if _, missing := cached.(absent); missing {
			return v, false, nil
		}
		return copyOf(cached.(*T)), true, nil
	}
	raw := t.bucket(bucket).Get(key)
	if raw == nil {
		keep(t.cache, bucket, key, absent{})
		return v, false, nil
	}
	decoded := new(T)
	if err := json.Unmarshal(raw, decoded); err != nil {
		return v, false, fmt.Errorf("%w: %s/%x: %v", ledger.ErrCorrupt, bucket, key, err)
	}
	keep(t.cache, bucket, key, *decoded)
	return *decoded, true, nil
}

// put encodes and stores a record, which the committer's cache then keeps
// as it was given: the next change often reads it (a charge the lien its
// job placed, every change the allocations the one before changed), and
// decoding it again was a sixth of the committer's time. stamp (UTC, to
// the microsecond) makes what a record holds what decoding it gives.
func put[T any](t *tx, bucket bucketID, key []byte, v T) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("boltstore: encode %s record: %w", bucket, err)
	}
	return putKept(t, bucket, key, raw, v)
}

func putKept[T any](t *tx, bucket bucketID, key, raw []byte, v T) error {
	if err := t.putRaw(bucket, key, raw); err != nil {
		return err
	}
	keep(t.cache, bucket, key, v)
	return nil
}

// putRaw stores an encoded record (the committer's session forgets what
// its cache knew of it).
func (t *tx) putRaw(bucket bucketID, key, raw []byte) error {
	if err := t.bucket(bucket).Put(key, raw); err != nil {
		return fmt.Errorf("boltstore: write %s: %w", bucket, err)
	}
	return nil
}

// all decodes every value of a bucket in key order.
func all[T any](t *tx, bucket bucketID) ([]T, error) {
	var out []T
	err := forEach(t.bucket(bucket), func(k, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%w: %s/%x: %v", ledger.ErrCorrupt, bucket, k, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

func (t *tx) Settings() (ledger.Settings, bool, error) {
	return get[ledger.Settings](t, bucketMeta, keySettings)
}

func (t *tx) PutSettings(s ledger.Settings) error { return put(t, bucketMeta, keySettings, s) }

func (t *tx) Node(name string) (ledger.Node, bool, error) {
	return get[ledger.Node](t, bucketNodes, []byte(name))
}

func (t *tx) PutNode(n ledger.Node) error { return put(t, bucketNodes, []byte(n.Name), n) }

func (t *tx) Nodes() ([]ledger.Node, error) { return all[ledger.Node](t, bucketNodes) }

func (t *tx) Subtree(name string) ([]ledger.Node, error) {
	var out []ledger.Node
	n, ok, err := t.Node(name)
	if err != nil || !ok {
		return nil, err
	}
	out = append(out, n)
	prefix := []byte(name + ".")
	c := t.bucket(bucketNodes).Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		var n ledger.Node
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("%w: node %s: %v", ledger.ErrCorrupt, k, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func (t *tx) User(name string) (ledger.User, bool, error) {
	return get[ledger.User](t, bucketUsers, []byte(name))
}

func (t *tx) PutUser(u ledger.User) error { return put(t, bucketUsers, []byte(u.Name), u) }

func (t *tx) Users() ([]ledger.User, error) { return all[ledger.User](t, bucketUsers) }

func (t *tx) Machine(name string) (ledger.Machine, bool, error) {
	return get[ledger.Machine](t, bucketMachines, []byte(name))
}

func (t *tx) PutMachine(m ledger.Machine) error { return put(t, bucketMachines, []byte(m.Name), m) }

func (t *tx) Machines() ([]ledger.Machine, error) { return all[ledger.Machine](t, bucketMachines) }

func (t *tx) NextAllocationID() (uint64, error) { return t.nextID(bucketAllocations) }

func (t *tx) Allocation(id uint64) (ledger.Allocation, bool, error) {
	return get[ledger.Allocation](t, bucketAllocations, encodeUint(id))
}

func (t *tx) PutAllocation(a ledger.Allocation, seq uint64) error {
	if t.s == nil {
		return bolt.ErrTxNotWritable
	}
	// Encoded off the committer (a deferred value, overlay.go): a is a
	// copy, and what it holds (strings, decimals) does not change.
	raw := &deferred{make: func() ([]byte, error) {
		raw, err := ledger.EncodeAllocation(a)
		if err != nil {
			return nil, fmt.Errorf("boltstore: encode allocation %d: %w", a.ID, err)
		}
		return raw, nil
	}}
	id := encodeUint(a.ID)
	t.s.record(write{bucket: bucketAllocations, key: id, later: raw})
	keep(t.cache, bucketAllocations, id, a)
	// The account's index (resident: reading it costs a lookup in memory)
	// gets a key when the allocation is new, not at every change of it.
	key := accountKey(a.Account, a.ID)
	if byAccount := t.bucket(bucketByAccount); byAccount.Get(key) == nil {
		if err := t.index(bucketByAccount, key, []byte{}, true); err != nil {
			return err
		}
	}
	t.s.record(write{bucket: bucketHistory, key: historyKey(a.ID, seq), later: raw})
	return nil
}

func (t *tx) AccountAllocations(account string) ([]ledger.Allocation, error) {
	prefix := append([]byte(account), 0)
	var out []ledger.Allocation
	c := t.bucket(bucketByAccount).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id := decodeUint(k[len(prefix):])
		a, ok, err := t.Allocation(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: account %s lists allocation %d, which does not exist", ledger.ErrCorrupt, account, id)
		}
		out = append(out, a)
	}
	return out, nil
}

func (t *tx) Allocations() ([]ledger.Allocation, error) {
	return all[ledger.Allocation](t, bucketAllocations)
}

func (t *tx) AllocationAsOf(id, seq uint64) (ledger.Allocation, bool, error) {
	var a ledger.Allocation
	c := t.bucket(bucketHistory).Cursor()
	// The state after seq is the record with the greatest key <= id‖seq.
	k, raw := c.Seek(historyKey(id, seq+1))
	if k == nil {
		k, raw = c.Last()
	} else {
		k, raw = c.Prev()
	}
	if k == nil || decodeUint(k[:8]) != id {
		return a, false, nil
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, false, fmt.Errorf("%w: history of allocation %d: %v", ledger.ErrCorrupt, id, err)
	}
	return a, true, nil
}

// A journal value is the entry's 32-byte SHA-256 followed by its canonical
// encoding (the JSON the hash covers, Hash empty): the bytes the ledger
// hashed are the bytes stored.
func decodeEntry(seq uint64, raw []byte) (ledger.Entry, error) {
	var e ledger.Entry
	if len(raw) < sha256.Size {
		return e, fmt.Errorf("%w: journal entry %d is truncated", ledger.ErrCorrupt, seq)
	}
	if err := json.Unmarshal(raw[sha256.Size:], &e); err != nil {
		return e, fmt.Errorf("%w: journal entry %d: %v", ledger.ErrCorrupt, seq, err)
	}
	e.Hash = hex.EncodeToString(raw[:sha256.Size])
	return e, nil
}

func (t *tx) Head() (ledger.JournalHead, error) {
	raw := t.bucket(bucketMeta).Get(keyHead)
	if raw == nil {
		return ledger.JournalHead{}, nil
	}
	// Files before sealing moved off the writer keep the newest entry's
	// hash after its number and time.
	if len(raw) != headSize && len(raw) != headSize+sha256.Size {
		return ledger.JournalHead{}, fmt.Errorf("%w: journal head record is malformed", ledger.ErrCorrupt)
	}
	return ledger.JournalHead{Seq: decodeUint(raw), Time: time.Unix(0, int64(decodeUint(raw[8:]))).UTC()}, nil
}

// headSize is the journal head record's: the newest entry's number and
// time (Unix ns).
const headSize = 16

func (t *tx) Entry(seq uint64) (ledger.Entry, bool, error) {
	raw := t.bucket(bucketJournal).Get(encodeUint(seq))
	if raw == nil {
		return ledger.Entry{}, false, nil
	}
	e, err := decodeEntry(seq, raw)
	return e, err == nil, err
}

// AppendEntry stores entry e as a deferred value (overlay.go) that seals
// it with the hash of the entry before it: the recorder (or the syncer,
// where it makes the records) makes the values of a group in order, and
// the groups in order, so the entry before is sealed first, and hashing
// is off the committer.
func (t *tx) AppendEntry(e ledger.Entry, enc ledger.SealableEntry) error {
	if t.s == nil {
		return bolt.ErrTxNotWritable
	}
	key := encodeUint(e.Seq)
	journal := t.bucket(bucketJournal)
	if journal.Get(key) != nil {
		return fmt.Errorf("%w: journal entry %d already exists", ledger.ErrCorrupt, e.Seq)
	}
	prev, err := t.prevHash(e.Seq)
	if err != nil {
		return err
	}
	t.s.record(write{bucket: bucketJournal, key: key, later: &deferred{make: func() ([]byte, error) {
		hash, err := prev()
		if err != nil {
			return nil, err
		}
		return enc.Seal(hash)
	}}})
	head := make([]byte, 0, headSize)
	head = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(head, e.Seq), uint64(e.Time.UnixNano()))
	if err := t.bucket(bucketMeta).Put(keyHead, head); err != nil {
		return fmt.Errorf("boltstore: journal head: %w", err)
	}
	return nil
}

// prevHash is how the entry numbered seq gets the hash of the one before
// it (nil for the first): from that entry's deferred value while the
// overlay holds one, which it does not make now, or else from the stored
// value, copied (the file's bytes last as long as the transaction).
func (t *tx) prevHash(seq uint64) (func() ([]byte, error), error) {
	if seq <= 1 {
		return func() ([]byte, error) { return nil, nil }, nil
	}
	key := encodeUint(seq - 1)
	var stored []byte
	if e, found, _ := t.s.ov.get(bucketJournal, key); found && e.later != nil {
		return func() ([]byte, error) {
			value, err := e.later.bytes()
			if err != nil {
				return nil, err
			}
			return value[:sha256.Size], nil
		}, nil
	} else if found {
		stored = e.value
	} else {
		stored = t.btx.Bucket(bucketJournal.name()).Get(key)
	}
	if len(stored) < sha256.Size {
		return nil, fmt.Errorf("%w: journal entry %d, before entry %d, is missing or truncated", ledger.ErrCorrupt, seq-1, seq)
	}
	hash := bytes.Clone(stored[:sha256.Size])
	return func() ([]byte, error) { return hash, nil }, nil
}

func (t *tx) Entries(from, to uint64, fn func(ledger.Entry) (bool, error)) error {
	c := t.bucket(bucketJournal).Cursor()
	for k, raw := c.Seek(encodeUint(from)); k != nil && decodeUint(k) <= to; k, raw = c.Next() {
		e, err := decodeEntry(decodeUint(k), raw)
		if err != nil {
			return err
		}
		more, err := fn(e)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
