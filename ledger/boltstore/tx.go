package boltstore

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/internal/ahead"
	"github.com/ingot-hpc/ingot/internal/packing"
	"github.com/ingot-hpc/ingot/internal/recordcache"
	"github.com/ingot-hpc/ingot/ledger"
)

// The buckets (doc.go has what each holds).
var (
	bucketMeta        = []byte("meta")
	bucketNodes       = []byte("nodes")
	bucketUsers       = []byte("users")
	bucketMachines    = []byte("machines")
	bucketAllocations = []byte("allocations")
	bucketByAccount   = []byte("allocations_by_account")
	bucketByEnd       = []byte("allocations_by_end")
	bucketUpcoming    = []byte("allocations_upcoming")
	bucketUsedUp      = []byte("allocations_used_up")
	bucketHistory     = []byte("balance_history")
	bucketJournal     = []byte("journal")
	bucketRequests    = []byte("requests")
	bucketLiens       = []byte("liens")
	bucketLiensByJob  = []byte("liens_by_job")
	bucketLiensActive = []byte("liens_active")
	bucketCharges     = []byte("charges")
	bucketChargesJob  = []byte("charges_by_job")
	bucketRecords     = []byte("records")
	bucketLarge       = []byte("records_large")
	bucketByNode      = []byte("journal_by_node")

	bucketNames = [][]byte{bucketMeta, bucketNodes, bucketUsers, bucketMachines, bucketAllocations,
		bucketByAccount, bucketHistory, bucketJournal, bucketRequests, bucketLiens, bucketLiensByJob,
		bucketLiensActive, bucketCharges, bucketChargesJob, bucketRecords, bucketByNode, bucketByEnd, bucketLarge, bucketUpcoming, bucketUsedUp}
)

var (
	keySchema   = []byte("schema")
	keySettings = []byte("settings")
	keyHead     = []byte("journal_head")
)

// tx is a ledger.Tx on a bbolt transaction; wrote says whether the call
// has written (the committer's rollback rule). The committer's
// transactions read through its record cache (nil in a View) and keep
// their writes in pending until they commit.
type tx struct {
	btx     *bolt.Tx
	wrote   bool
	cache   *recordcache.Cache
	pending recordcache.Writes
	// carried are the records this transaction stored as references to
	// their journal entries (putCarried), which the ledger appends as its
	// change ends: until then the entry is not there to read them from.
	carried map[string]any
	// buckets are those opened in this transaction: a read-only bbolt
	// transaction opens a bucket anew, from its root page, each time it is
	// asked for it, and the audit asks several times for every entry.
	buckets map[string]*bolt.Bucket
	// cursors are a read-only transaction's, one for each bucket it looks
	// up keys in (cursor).
	cursors map[string]*bolt.Cursor
}

func cacheKey(bucket, key []byte) string { return string(bucket) + "\x00" + string(key) }

// written keeps v (recordcache.Absent{} for a deletion) as this
// transaction wrote it.
func (t *tx) written(bucket, key []byte, v any) {
	if t.cache != nil {
		t.pending.Put(cacheKey(bucket, key), v)
	}
}

func encodeUint(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func decodeUint(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func encodeTime(t time.Time) uint64 { return uint64(t.UnixNano()) }

// pairKey is a, a zero byte, then b (names hold no zero byte).
func pairKey(a, b string) []byte { return append(append([]byte(a), 0), b...) }

func idKey(prefix []byte, ids ...uint64) []byte {
	k := bytes.Clone(prefix)
	for _, id := range ids {
		k = binary.BigEndian.AppendUint64(k, id)
	}
	return k
}

func (t *tx) bucket(name []byte) *bolt.Bucket {
	if b, ok := t.buckets[string(name)]; ok {
		return b
	}
	b := t.btx.Bucket(name)
	if b == nil {
		panic(fmt.Sprintf("bucket %s is missing", name)) // prepare checked they all exist
	}
	if appendOnly[string(name)] {
		b.FillPercent = 1 // full pages: no inserts come between their keys
	}
	if t.buckets == nil {
		t.buckets = map[string]*bolt.Bucket{}
	}
	t.buckets[string(name)] = b
	return b
}

// cursor is a cursor on bucket to look keys up with: in a read-only
// transaction the same one each time (bbolt makes a cursor, and its path
// through the tree, for every Get, and the audit looks up several keys
// for every entry); in a read-write one a new one, as a write may leave a
// cursor's path stale.
func (t *tx) cursor(bucket []byte) *bolt.Cursor {
	if t.btx.Writable() {
		return t.bucket(bucket).Cursor()
	}
	c, ok := t.cursors[string(bucket)]
	if !ok {
		c = t.bucket(bucket).Cursor()
		if t.cursors == nil {
			t.cursors = map[string]*bolt.Cursor{}
		}
		t.cursors[string(bucket)] = c
	}
	return c
}

// get is bucket's value at key, nil if it has none.
func (t *tx) get(bucket, key []byte) []byte {
	if t.btx.Writable() {
		return t.bucket(bucket).Get(key)
	}
	k, v := t.cursor(bucket).Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// appendOnly are the buckets whose keys grow: sequence numbers and ids.
var appendOnly = map[string]bool{"journal": true, "liens": true, "charges": true}

// packed are the buckets whose values may be packed (internal/packing):
// the records a job adds for good (a lien or a charge when it is not a
// reference to its journal entry: put without one, or before schema 11;
// an allocation before schema 12, which keeps its binary layout, smaller
// than its JSON packed). Values written before schema 10 are JSON there,
// and read as they are.
var packed = map[string]bool{"liens": true, "charges": true, "allocations": true, "balance_history": true}

// packs says whether record v is stored packed: in a packed bucket, unless
// it is an active lien, which is rewritten when its job ends: packing it
// would cost the committer more than the bytes it holds for an hour.
func packs(bucket []byte, v any) bool {
	l, lien := v.(ledger.Lien)
	return packed[string(bucket)] && !(lien && l.State == ledger.LienActive)
}

// value is a stored value as its record's JSON: unpacked if its bucket is
// packed.
func value(bucket, key, raw []byte) ([]byte, error) {
	if !packed[string(bucket)] {
		return raw, nil
	}
	v, err := packing.Unpack(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%q: %v", ledger.ErrCorrupt, bucket, key, err)
	}
	return v, nil
}

// decode decodes a stored value: an allocation's binary layout
// (ledger.AppendAllocation), or JSON.
func decode[T any](bucket, key, raw []byte) (v T, err error) {
	if raw, err = value(bucket, key, raw); err != nil {
		return v, err
	}
	if a, ok := any(&v).(*ledger.Allocation); ok && ledger.BinaryAllocation(raw) {
		if *a, err = ledger.DecodeAllocation(raw); err != nil {
			return v, fmt.Errorf("%w: %s/%q: %v", ledger.ErrCorrupt, bucket, key, err)
		}
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("%w: %s/%q: %v", ledger.ErrCorrupt, bucket, key, err)
	}
	return v, nil
}

// get decodes the JSON value at key; ok is false if there is none.
func get[T any](t *tx, bucket, key []byte) (T, bool, error) {
	return cached(t, bucket, key, func(raw []byte) (T, error) { return decode[T](bucket, key, raw) })
}

// cached is key's value from the cache, or decoded and remembered.
func cached[T any](t *tx, bucket, key []byte, decode func([]byte) (T, error)) (T, bool, error) {
	return recordcache.Get(t.cache, cacheKey(bucket, key), []recordcache.Writes{t.pending}, func() (v T, ok bool, err error) {
		raw := t.get(bucket, key)
		if raw == nil {
			return v, false, nil
		}
		v, err = decode(raw)
		return v, err == nil, err
	})
}

// put stores v's JSON at key, packed if packs says so.
func put[T any](t *tx, bucket, key []byte, v T) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("boltstore: encode %s record: %w", bucket, err)
	}
	if packs(bucket, v) {
		raw = packing.Pack(nil, raw)
	}
	if err := t.putRaw(bucket, key, raw); err != nil {
		return err
	}
	t.written(bucket, key, recordcache.Clone(v))
	return nil
}

func (t *tx) putRaw(bucket, key, raw []byte) error {
	t.wrote = true
	if err := t.bucket(bucket).Put(key, raw); err != nil {
		return fmt.Errorf("boltstore: write %s: %w", bucket, err)
	}
	return nil
}

func (t *tx) delete(bucket, key []byte) error {
	t.wrote = true
	t.written(bucket, key, recordcache.Absent{})
	if err := t.bucket(bucket).Delete(key); err != nil {
		return fmt.Errorf("boltstore: delete from %s: %w", bucket, err)
	}
	return nil
}

// scan decodes the values whose keys start with prefix, in key order.
func scan[T any](t *tx, bucket, prefix []byte) ([]T, error) {
	var out []T
	err := eachFrom(t, bucket, prefix, decoder[T](bucket), func(v T) (bool, error) { out = append(out, v); return true, nil })
	return out, err
}

// decoder is decode for bucket's values.
func decoder[T any](bucket []byte) func(k, raw []byte) (T, error) {
	return func(k, raw []byte) (T, error) { return decode[T](bucket, k, raw) }
}

// eachFrom calls fn with every value whose key starts with prefix,
// decoded, in key order.
func eachFrom[T any](t *tx, bucket, prefix []byte, decode func(k, raw []byte) (T, error), fn func(T) (bool, error)) error {
	c := t.bucket(bucket).Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		v, err := decode(k, raw)
		if err != nil {
			return err
		}
		if more, err := fn(v); err != nil || !more {
			return err
		}
	}
	return nil
}

// stored keeps a bucket's sequence at or above id, a record's stored
// under its own id: NextSequence never gives it again.
func (t *tx) stored(bucket []byte, id uint64) error {
	if b := t.bucket(bucket); b.Sequence() < id {
		t.wrote = true
		if err := b.SetSequence(id); err != nil {
			return fmt.Errorf("boltstore: id %d in %s: %w", id, bucket, err)
		}
	}
	return nil
}

func (t *tx) nextID(bucket []byte) (uint64, error) {
	t.wrote = true
	id, err := t.bucket(bucket).NextSequence()
	if err != nil {
		return 0, fmt.Errorf("boltstore: next id in %s: %w", bucket, err)
	}
	return id, nil
}

func (t *tx) Settings() (ledger.Settings, bool, error) {
	return get[ledger.Settings](t, bucketMeta, keySettings)
}

func (t *tx) PutSettings(s ledger.Settings) error { return put(t, bucketMeta, keySettings, s) }

func (t *tx) Node(name string) (ledger.Node, bool, error) {
	return get[ledger.Node](t, bucketNodes, []byte(name))
}

func (t *tx) PutNode(n ledger.Node) error { return put(t, bucketNodes, []byte(n.Name), n) }

func (t *tx) Nodes() ([]ledger.Node, error) { return scan[ledger.Node](t, bucketNodes, nil) }

func (t *tx) Subtree(name string) ([]ledger.Node, error) {
	n, ok, err := t.Node(name)
	if err != nil || !ok {
		return nil, err
	}
	below, err := scan[ledger.Node](t, bucketNodes, []byte(name+"."))
	return append([]ledger.Node{n}, below...), err
}

func (t *tx) User(name string) (ledger.User, bool, error) {
	return get[ledger.User](t, bucketUsers, []byte(name))
}

func (t *tx) PutUser(u ledger.User) error { return put(t, bucketUsers, []byte(u.Name), u) }

func (t *tx) Users() ([]ledger.User, error) { return scan[ledger.User](t, bucketUsers, nil) }

func (t *tx) Machine(name string) (ledger.Machine, bool, error) {
	return get[ledger.Machine](t, bucketMachines, []byte(name))
}

func (t *tx) PutMachine(m ledger.Machine) error { return put(t, bucketMachines, []byte(m.Name), m) }

func (t *tx) Machines() ([]ledger.Machine, error) {
	return scan[ledger.Machine](t, bucketMachines, nil)
}

func (t *tx) NextAllocationID() (uint64, error) { return t.nextID(bucketAllocations) }

func (t *tx) Allocation(id uint64) (ledger.Allocation, bool, error) {
	return get[ledger.Allocation](t, bucketAllocations, encodeUint(id))
}

func (t *tx) PutAllocation(a ledger.Allocation, seq uint64) error {
	raw := ledger.AppendAllocation(nil, a) // once, for the state and its history
	if err := t.putRaw(bucketAllocations, encodeUint(a.ID), raw); err != nil {
		return err
	}
	if err := t.stored(bucketAllocations, a.ID); err != nil {
		return err
	}
	t.written(bucketAllocations, encodeUint(a.ID), a)
	if k := idKey(append([]byte(a.Account), 0), a.ID); t.bucket(bucketByAccount).Get(k) == nil {
		if err := t.putRaw(bucketByAccount, k, nil); err != nil {
			return err
		}
	}
	if err := t.indexTimes(a.AllocationTerms); err != nil {
		return err
	}
	if err := t.sortUsedUp(a); err != nil {
		return err
	}
	return t.putRaw(bucketHistory, idKey(nil, a.ID, seq), raw)
}

// has reports whether bucket holds key. Get cannot say for the empty
// values of the indexes: bbolt gives nil for one written in the same
// transaction.
func (t *tx) has(bucket, key []byte) bool {
	k, _ := t.bucket(bucket).Cursor().Seek(key)
	return bytes.Equal(k, key)
}

// sortUsedUp lists a started allocation (one listed by end) in
// allocations_used_up while it is used up, in allocations_by_end
// otherwise: its state decides at each change.
func (t *tx) sortUsedUp(a ledger.Allocation) error {
	from, to := bucketByEnd, bucketUsedUp
	if !a.UsedUp() {
		from, to = bucketUsedUp, bucketByEnd
	}
	k := endKey(a.AllocationTerms)
	if !t.has(from, k) {
		return nil
	}
	if err := t.delete(from, k); err != nil {
		return err
	}
	return t.putRaw(to, k, nil)
}

// startKey is an allocation's key in allocations_upcoming: its account, a
// zero byte, its start (endTime's clamps) and its id.
func startKey(a ledger.AllocationTerms) []byte {
	return idKey(append([]byte(a.Account), 0), endTime(a.Start), a.ID)
}

// timeKey is a time asked about as the keys of allocations_by_end and
// allocations_upcoming order it: endTime, but 0 for the zero time (before
// every start and end).
func timeKey(at time.Time) uint64 {
	if at.IsZero() {
		return 0
	}
	return endTime(at)
}

// indexTimes lists a new allocation in allocations_upcoming if it starts
// after it was made, otherwise in allocations_by_end, once: its start and
// end never change, and an upcoming one moves to allocations_by_end when
// a change finds it started (ActiveAllocations).
func (t *tx) indexTimes(a ledger.AllocationTerms) error {
	if t.has(bucketByEnd, endKey(a)) || t.has(bucketUsedUp, endKey(a)) || t.has(bucketUpcoming, startKey(a)) {
		return nil
	}
	if !a.Created.IsZero() && a.Start.After(a.Created) {
		return t.putRaw(bucketUpcoming, startKey(a), nil)
	}
	return t.indexEnd(a)
}

// endKey is an allocation's key in allocations_by_end: its account, a
// zero byte, its end (endTime) and its id.
func endKey(a ledger.AllocationTerms) []byte {
	return idKey(append([]byte(a.Account), 0), endTime(a.End), a.ID)
}

// endTime is an end as allocations_by_end orders it: Unix nanoseconds,
// the greatest value for no end; a time beyond what Unix nanoseconds hold
// (after 2262) is the value below it, one before 1970 zero. Ends the
// clamps make equal are told apart by LiveAllocations, which reads the
// allocation's own end.
func endTime(t time.Time) uint64 {
	switch {
	case t.IsZero():
		return math.MaxUint64
	case t.Before(time.Unix(0, 0)):
		return 0
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxUint64 - 1
	}
	return encodeTime(t)
}

// indexEnd lists an allocation in allocations_by_end, once.
func (t *tx) indexEnd(a ledger.AllocationTerms) error {
	if k := endKey(a); !t.has(bucketByEnd, k) {
		return t.putRaw(bucketByEnd, k, nil)
	}
	return nil
}

func (t *tx) AccountAllocations(account string) ([]ledger.Allocation, error) {
	prefix := append([]byte(account), 0)
	return indexed(t, bucketByAccount, prefix, prefix, 0, t.Allocation, nil)
}

// LiveAllocations reads allocations_by_end and allocations_used_up from
// t's end on, and every allocation in allocations_upcoming.
func (t *tx) LiveAllocations(account string, at time.Time) ([]ledger.Allocation, error) {
	prefix := append([]byte(account), 0)
	listed, err := t.notEnded(bucketByEnd, prefix, at)
	if err != nil {
		return nil, err
	}
	usedUp, err := t.notEnded(bucketUsedUp, prefix, at)
	if err != nil {
		return nil, err
	}
	listed = append(listed, usedUp...)
	upcoming, err := indexed(t, bucketUpcoming, prefix, prefix, 8, t.Allocation, nil)
	if err != nil {
		return nil, err
	}
	return byID(append(listed, upcoming...), func(a ledger.Allocation) bool { return a.End.IsZero() || a.End.After(at) }), nil
}

// ActiveAllocations reads allocations_by_end from t's end on, and
// allocations_upcoming up to t. A change (a writable transaction) moves
// the upcoming ones that have started to allocations_by_end (or, used up,
// to allocations_used_up), so that
// allocations_upcoming holds those not started yet, give or take the
// ones that started since the account's last change. The move is not a
// write of the call's (wrote): the index says the same either way, and a
// call that fails need not undo it.
func (t *tx) ActiveAllocations(account string, at time.Time) ([]ledger.Allocation, error) {
	prefix := append([]byte(account), 0)
	listed, err := t.notEnded(bucketByEnd, prefix, at)
	if err != nil {
		return nil, err
	}
	var started [][]byte
	upcoming, err := indexed(t, bucketUpcoming, prefix, prefix, 8, t.Allocation, func(k []byte, _ int) bool {
		if decodeUint(k[len(prefix):]) > timeKey(at) {
			return true
		}
		started = append(started, bytes.Clone(k))
		return false
	})
	if err != nil {
		return nil, err
	}
	if t.btx.Writable() {
		for i, k := range started {
			if err := t.bucket(bucketUpcoming).Delete(k); err != nil {
				return nil, fmt.Errorf("boltstore: delete from %s: %w", bucketUpcoming, err)
			}
			to := bucketByEnd
			if upcoming[i].UsedUp() {
				to = bucketUsedUp
			}
			if err := t.bucket(to).Put(endKey(upcoming[i].AllocationTerms), nil); err != nil {
				return nil, fmt.Errorf("boltstore: write %s: %w", to, err)
			}
		}
	}
	return byID(append(listed, upcoming...), func(a ledger.Allocation) bool { return a.ActiveAt(at) && !a.UsedUp() }), nil
}

// UsedUpAllocations reads allocations_used_up from t's end on, in end
// order, until it has n that have not ended, and allocations_upcoming up
// to t (a read finds there the used-up ones that started since their
// account's last change; a change has moved them).
func (t *tx) UsedUpAllocations(account string, at time.Time, n int) ([]ledger.Allocation, error) {
	prefix := append([]byte(account), 0)
	seek := binary.BigEndian.AppendUint64(bytes.Clone(prefix), timeKey(at))
	// The clamps of endTime may list a few that have ended: only those
	// not ended count towards n.
	counted := 0
	get := func(id uint64) (ledger.Allocation, bool, error) {
		a, ok, err := t.Allocation(id)
		if ok && a.ActiveAt(at) {
			counted++
		}
		return a, ok, err
	}
	usedUp, err := indexed(t, bucketUsedUp, prefix, seek, 8, get, func([]byte, int) bool { return n >= 0 && counted >= n })
	if err != nil {
		return nil, err
	}
	started, err := indexed(t, bucketUpcoming, prefix, prefix, 8, t.Allocation, func(k []byte, _ int) bool {
		return decodeUint(k[len(prefix):]) > timeKey(at)
	})
	if err != nil {
		return nil, err
	}
	usedUp = slices.DeleteFunc(append(usedUp, started...), func(a ledger.Allocation) bool { return !a.ActiveAt(at) || !a.UsedUp() })
	return firstEnding(usedUp, n), nil
}

// firstEnding is, in id order, the n of as that end first (every one if n
// < 0; those with the same end by id).
func firstEnding(as []ledger.Allocation, n int) []ledger.Allocation {
	if n >= 0 && len(as) > n {
		slices.SortFunc(as, func(a, b ledger.Allocation) int {
			return cmp.Or(cmp.Compare(endTime(a.End), endTime(b.End)), cmp.Compare(a.ID, b.ID))
		})
		as = as[:n]
	}
	return byID(as, func(ledger.Allocation) bool { return true })
}

// NextStart reads the first key of allocations_upcoming after t: an
// allocation starting after t has not been moved out of it (t is at or
// after the last change's time).
func (t *tx) NextStart(account string, at time.Time) (time.Time, bool, error) {
	prefix := append([]byte(account), 0)
	from := timeKey(at)
	if from == math.MaxUint64 {
		return time.Time{}, false, nil
	}
	c := t.bucket(bucketUpcoming).Cursor()
	k, _ := c.Seek(binary.BigEndian.AppendUint64(bytes.Clone(prefix), from+1))
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return time.Time{}, false, nil
	}
	if len(k) != len(prefix)+16 {
		return time.Time{}, false, fmt.Errorf("%w: %s/%q is not what the index keeps", ledger.ErrCorrupt, bucketUpcoming, k)
	}
	a, ok, err := t.Allocation(decodeUint(k[len(prefix)+8:]))
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s/%q lists an allocation that does not exist", ledger.ErrCorrupt, bucketUpcoming, k)
	}
	return a.Start, err == nil, err
}

// UpcomingAllocations reads allocations_upcoming after t, as NextStart
// does: n keys at most.
func (t *tx) UpcomingAllocations(account string, at time.Time, n int) ([]ledger.Allocation, error) {
	prefix := append([]byte(account), 0)
	from := timeKey(at)
	if from == math.MaxUint64 {
		return nil, nil
	}
	seek := binary.BigEndian.AppendUint64(bytes.Clone(prefix), from+1)
	return indexed(t, bucketUpcoming, prefix, seek, 8, t.Allocation, func(_ []byte, listed int) bool { return n >= 0 && listed == n })
}

// notEnded reads the allocations index (allocations_by_end or
// allocations_used_up) lists under prefix from at's end on (the clamps of
// endTime may list a few that have ended).
func (t *tx) notEnded(index, prefix []byte, at time.Time) ([]ledger.Allocation, error) {
	seek := binary.BigEndian.AppendUint64(bytes.Clone(prefix), timeKey(at))
	return indexed(t, index, prefix, seek, 8, t.Allocation, nil)
}

// byID is the allocations keep accepts, in id order.
func byID(as []ledger.Allocation, keep func(ledger.Allocation) bool) []ledger.Allocation {
	as = slices.DeleteFunc(as, func(a ledger.Allocation) bool { return !keep(a) })
	slices.SortFunc(as, func(a, b ledger.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	return as
}

// indexed gets the records an index lists under prefix (keys: prefix,
// skip bytes, an 8-byte id), in key order from seek, until stop says so.
func indexed[T any](t *tx, index, prefix, seek []byte, skip int, get func(uint64) (T, bool, error), stop func(k []byte, n int) bool) ([]T, error) {
	var out []T
	c := t.bucket(index).Cursor()
	for k, _ := c.Seek(seek); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != len(prefix)+skip+8 {
			return nil, fmt.Errorf("%w: %s/%q is not what the index keeps", ledger.ErrCorrupt, index, k)
		}
		if stop != nil && stop(k, len(out)) {
			break
		}
		id := decodeUint(k[len(prefix)+skip:])
		v, ok, err := get(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s/%q lists record %d, which does not exist", ledger.ErrCorrupt, index, k, id)
		}
		out = append(out, v)
	}
	return out, nil
}

func (t *tx) Allocations() ([]ledger.Allocation, error) {
	return scan[ledger.Allocation](t, bucketAllocations, nil)
}

func (t *tx) AllocationAsOf(id, seq uint64) (ledger.Allocation, bool, error) {
	c := t.cursor(bucketHistory)
	// The state after seq is the record with the greatest key <= id‖seq.
	k, raw := c.Seek(idKey(nil, id, seq+1))
	if k == nil {
		k, raw = c.Last()
	} else {
		k, raw = c.Prev()
	}
	if k == nil || len(k) != 16 || decodeUint(k[:8]) != id {
		return ledger.Allocation{}, false, nil
	}
	a, err := decode[ledger.Allocation](bucketHistory, k, raw)
	return a, err == nil, err
}

// headSize is the journal head's: the newest entry's seq, time, hash.
const headSize = 16 + sha256.Size

func (t *tx) Head() (ledger.JournalHead, error) {
	raw := t.bucket(bucketMeta).Get(keyHead)
	if raw == nil {
		return ledger.JournalHead{}, nil
	}
	if len(raw) != headSize {
		return ledger.JournalHead{}, fmt.Errorf("%w: the journal head record has %d bytes, not %d", ledger.ErrCorrupt, len(raw), headSize)
	}
	h := ledger.JournalHead{Seq: decodeUint(raw), Time: time.Unix(0, int64(decodeUint(raw[8:]))).UTC()}
	copy(h.Hash[:], raw[16:])
	return h, nil
}

// A journal value is the entry's SHA-256, its time (Unix ns) and its
// bytes packed (internal/packing); up to schema 9 it was the SHA-256 and
// the bytes as they are, which begin with '{' (a time's first byte is
// that only after the year 2250).
const entryHeader = sha256.Size + 8

// packEntry is the journal value of e.
func packEntry(e ledger.StoredEntry) []byte {
	raw := make([]byte, 0, entryHeader+len(e.Body)/3)
	raw = append(raw, e.Hash[:]...)
	raw = binary.BigEndian.AppendUint64(raw, encodeTime(e.Time))
	return packing.Pack(raw, e.Body)
}

// storedEntry reads a journal value. Its Body is the file's bytes (valid
// only in the transaction) if the entry was stored unpacked, its own
// otherwise; an entry whose bytes do not unpack has them as its Body, so
// that the audit finds them not to be what its hash says.
func storedEntry(seq uint64, raw []byte) (ledger.StoredEntry, error) {
	if len(raw) <= sha256.Size {
		return ledger.StoredEntry{}, fmt.Errorf("%w: journal entry %d is truncated", ledger.ErrCorrupt, seq)
	}
	e := ledger.StoredEntry{Seq: seq, Body: raw[sha256.Size:]}
	copy(e.Hash[:], raw)
	if e.Body[0] == '{' { // stored before schema 10
		head, err := ledger.ReadEntryHead(e.Body)
		if err != nil {
			return e, fmt.Errorf("%w: journal entry %d does not decode: %v", ledger.ErrCorrupt, seq, err)
		}
		e.Time = head.Time
		return e, nil
	}
	if len(raw) <= entryHeader || !packing.Packed(raw[entryHeader:]) {
		return e, fmt.Errorf("%w: journal entry %d is neither packed nor JSON", ledger.ErrCorrupt, seq)
	}
	body, err := packing.Unpack(raw[entryHeader:])
	if err != nil {
		return e, fmt.Errorf("%w: journal entry %d: %v", ledger.ErrCorrupt, seq, err)
	}
	e.Time, e.Body = time.Unix(0, int64(decodeUint(raw[sha256.Size:]))).UTC(), body
	return e, nil
}

func (t *tx) Entry(seq uint64) (ledger.StoredEntry, bool, error) {
	raw := t.bucket(bucketJournal).Get(encodeUint(seq))
	if raw == nil {
		return ledger.StoredEntry{}, false, nil
	}
	e, err := storedEntry(seq, raw)
	if len(raw) > sha256.Size && raw[sha256.Size] == '{' {
		e.Body = bytes.Clone(e.Body) // the file's bytes last as long as the transaction
	}
	return e, err == nil, err
}

func (t *tx) AppendEntry(e ledger.StoredEntry) error {
	head, err := t.Head()
	if err != nil {
		return err
	}
	if e.Seq != head.Seq+1 {
		return fmt.Errorf("%w: journal entry %d appended after entry %d", ledger.ErrCorrupt, e.Seq, head.Seq)
	}
	if err := t.putRaw(bucketJournal, encodeUint(e.Seq), packEntry(e)); err != nil {
		return err
	}
	if err := t.indexEntry(e.Seq, e.Terms); err != nil {
		return err
	}
	h := binary.BigEndian.AppendUint64(encodeUint(e.Seq), encodeTime(e.Time))
	return t.putRaw(bucketMeta, keyHead, append(h, e.Hash[:]...))
}

// Entries reads the values in order and has them unpacked on the
// machine's other cores ahead of fn (package ahead).
func (t *tx) Entries(from, to uint64, fn func(ledger.StoredEntry) (bool, error)) error {
	c := t.bucket(bucketJournal).Cursor()
	return ahead.Map(func(yield func(journalValue) (bool, error)) error {
		for k, raw := c.Seek(encodeUint(from)); k != nil && decodeUint(k) <= to; k, raw = c.Next() {
			if more, err := yield(journalValue{seq: decodeUint(k), raw: raw}); err != nil || !more {
				return err
			}
		}
		return nil
	}, journalValue.entry, func(r entryRead) (bool, error) {
		if r.err != nil {
			r.e.Time = time.Time{} // let the caller say what is wrong with it
		}
		return fn(r.e)
	})
}

// journalValue is a journal value as the file holds it.
type journalValue struct {
	seq     uint64
	raw     []byte
	missing bool
}

// entryRead is a journal value read (storedEntry).
type entryRead struct {
	e       ledger.StoredEntry
	missing bool
	err     error
}

func (v journalValue) entry() entryRead {
	if v.missing {
		return entryRead{e: ledger.StoredEntry{Seq: v.seq}, missing: true}
	}
	e, err := storedEntry(v.seq, v.raw)
	return entryRead{e: e, err: err}
}

// indexEntry lists entry seq under each of the nodes it concerns.
func (t *tx) indexEntry(seq uint64, nodes []string) error {
	for _, n := range nodes {
		if err := t.putRaw(bucketByNode, idKey(append([]byte(n), 0), seq), nil); err != nil {
			return err
		}
	}
	return nil
}

// NodeEntries reads the entries the index lists in order and has them
// unpacked on the machine's other cores ahead of fn, as Entries does.
func (t *tx) NodeEntries(node string, from, to uint64, reverse bool, fn func(ledger.StoredEntry) (bool, error)) error {
	journal := t.bucket(bucketJournal)
	return ahead.Map(func(yield func(journalValue) (bool, error)) error {
		return t.nodeSeqs(node, from, to, reverse, func(seq uint64) (bool, error) {
			raw := journal.Get(encodeUint(seq))
			return yield(journalValue{seq: seq, raw: raw, missing: raw == nil})
		})
	}, journalValue.entry, func(r entryRead) (bool, error) {
		if r.missing {
			r.err = fmt.Errorf("%w: the journal's index lists entry %d under %s, which the journal does not hold", ledger.ErrCorrupt, r.e.Seq, node)
		}
		if r.err != nil {
			return false, r.err
		}
		return fn(r.e)
	})
}

func (t *tx) NodeSeqs(node string, from, to uint64, fn func(uint64) (bool, error)) error {
	return t.nodeSeqs(node, from, to, false, fn)
}

func (t *tx) TermSeqs(prefix string, fn func(string, uint64) (bool, error)) error {
	c := t.bucket(bucketByNode).Cursor()
	for k, _ := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, _ = c.Next() {
		if len(k) < 9 || k[len(k)-9] != 0 {
			return fmt.Errorf("%w: the journal's index holds a key %q that is not a term and an entry's number", ledger.ErrCorrupt, k)
		}
		if more, err := fn(string(k[:len(k)-9]), decodeUint(k[len(k)-8:])); err != nil || !more {
			return err
		}
	}
	return nil
}

// nodeSeqs calls fn with the numbers the node index lists under node
// from..to, newest first if reverse.
func (t *tx) nodeSeqs(node string, from, to uint64, reverse bool, fn func(uint64) (bool, error)) error {
	prefix := append([]byte(node), 0)
	c := t.bucket(bucketByNode).Cursor()
	k, _ := c.Seek(idKey(prefix, from))
	next := c.Next
	if reverse {
		next, k = c.Prev, nil
		last := idKey(prefix, to)
		if k, _ = c.Seek(last); k == nil {
			k, _ = c.Last()
		} else if !bytes.Equal(k, last) {
			k, _ = c.Prev()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, _ = next() {
		seq := decodeUint(k[len(prefix):])
		if seq < from || seq > to {
			break
		}
		if more, err := fn(seq); err != nil || !more {
			return err
		}
	}
	return nil
}

func (t *tx) NextLienID() (uint64, error) { return t.nextID(bucketLiens) }

func (t *tx) Lien(id uint64) (ledger.Lien, bool, error) {
	key := encodeUint(id)
	return cached(t, bucketLiens, key, func(raw []byte) (ledger.Lien, error) { return t.lien(key, raw) })
}

// lien decodes a stored lien, in full or as a reference to its entry.
func (t *tx) lien(key, raw []byte) (ledger.Lien, error) {
	return carried(t, bucketLiens, key, raw, func(e ledger.Entry) *ledger.Lien { return e.Lien }, func(l *ledger.Lien) uint64 { return l.ID })
}

// A finished lien or a charge put with the journal entry that carries it
// (Tx.PutLien's carrier) is stored as a reference to the entry: refByte,
// then the entry's number. The entry holds the record whole; keeping a
// second copy cost a cycle about a fifth of its bytes (schema 11). A
// packed value begins with a small format byte, JSON with '{': neither is
// refByte.
const refByte = 0xE1

func refValue(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte{refByte}, seq) }

// refOf is the entry a stored value refers to; ok is false for a record
// stored in full.
func refOf(raw []byte) (seq uint64, ok bool) {
	if len(raw) != 9 || raw[0] != refByte {
		return 0, false
	}
	return decodeUint(raw[1:]), true
}

// carried decodes a lien's or a charge's stored value: in full, or from
// the journal entry it refers to, which must carry the record of its key
// (of picks it out, id says which it is).
func carried[T any](t *tx, bucket, key, raw []byte, of func(ledger.Entry) *T, id func(*T) uint64) (T, error) {
	var v T
	seq, ok := refOf(raw)
	if !ok {
		return decode[T](bucket, key, raw)
	}
	if put, ok := t.carried[cacheKey(bucket, key)]; ok {
		return recordcache.Clone(put.(T)), nil
	}
	e, found, err := ledger.ReadEntry(t, seq)
	if err != nil {
		return v, err
	}
	if !found || of(e) == nil || len(key) != 8 || id(of(e)) != decodeUint(key) {
		return v, fmt.Errorf("%w: %s/%x is stored as journal entry %d's, which does not carry it", ledger.ErrCorrupt, bucket, key, seq)
	}
	return *of(e), nil
}

// carrier is the entry the record at key is stored as (ledger.Carriers).
func (t *tx) carrier(bucket []byte, id uint64) (uint64, bool, error) {
	seq, ok := refOf(t.get(bucket, encodeUint(id)))
	return seq, ok, nil
}

func (t *tx) LienCarrier(id uint64) (uint64, bool, error) { return t.carrier(bucketLiens, id) }

func (t *tx) ChargeCarrier(id uint64) (uint64, bool, error) { return t.carrier(bucketCharges, id) }

// putCarried stores v, whose journal entry is carrier (0: none), as a
// reference to it if ref, in full otherwise.
func putCarried[T any](t *tx, bucket, key []byte, v T, carrier uint64, ref bool) error {
	if carrier == 0 || !ref {
		return put(t, bucket, key, v)
	}
	if err := t.putRaw(bucket, key, refValue(carrier)); err != nil {
		return err
	}
	if t.carried == nil {
		t.carried = map[string]any{}
	}
	t.carried[cacheKey(bucket, key)] = recordcache.Clone(v)
	t.written(bucket, key, recordcache.Clone(v))
	return nil
}

// activeKey is a lien's key in the active index.
func activeKey(l ledger.Lien) []byte {
	return idKey(append([]byte(l.Account), 0), encodeTime(l.Expires), l.ID)
}

// PutLien keeps a finished lien as a reference to its carrier; an active
// one in full, since it is read on every change to its account.
func (t *tx) PutLien(l ledger.Lien, carrier uint64) error {
	old, found, err := t.Lien(l.ID)
	if err != nil {
		return err
	}
	if found && old.State == ledger.LienActive {
		if err := t.delete(bucketLiensActive, activeKey(old)); err != nil {
			return err
		}
	}
	if err := putCarried(t, bucketLiens, encodeUint(l.ID), l, carrier, l.State != ledger.LienActive); err != nil {
		return err
	}
	if err := t.stored(bucketLiens, l.ID); err != nil {
		return err
	}
	if l.State == ledger.LienActive {
		if err := t.putRaw(bucketLiensActive, activeKey(l), nil); err != nil {
			return err
		}
	}
	return t.putRaw(bucketLiensByJob, pairKey(l.Machine, l.JobID), encodeUint(l.ID))
}

func (t *tx) JobLien(machine, job string) (ledger.Lien, bool, error) {
	raw := t.bucket(bucketLiensByJob).Get(pairKey(machine, job))
	if raw == nil {
		return ledger.Lien{}, false, nil
	}
	if len(raw) != 8 {
		return ledger.Lien{}, false, fmt.Errorf("%w: the lien index of job %s on %s is malformed", ledger.ErrCorrupt, job, machine)
	}
	l, ok, err := t.Lien(decodeUint(raw))
	if err == nil && !ok {
		err = fmt.Errorf("%w: job %s on %s names lien %d, which does not exist", ledger.ErrCorrupt, job, machine, decodeUint(raw))
	}
	return l, ok, err
}

// activeLiens is ActiveLiensExpiring with no bound for a zero to.
func (t *tx) activeLiens(account string, from, to time.Time, limit int) ([]ledger.Lien, error) {
	prefix := append([]byte(account), 0)
	start := prefix
	if !from.IsZero() {
		start = idKey(prefix, encodeTime(from)+1)
	}
	return indexed(t, bucketLiensActive, prefix, start, 8, t.Lien, func(k []byte, n int) bool {
		return (!to.IsZero() && decodeUint(k[len(prefix):]) > encodeTime(to)) || (limit > 0 && n == limit)
	})
}

func (t *tx) ActiveLiens(account string) ([]ledger.Lien, error) {
	liens, err := t.activeLiens(account, time.Time{}, time.Time{}, 0)
	sortByID(liens)
	return liens, err
}

func (t *tx) ActiveLiensExpiring(account string, from, to time.Time, limit int) ([]ledger.Lien, error) {
	if to.IsZero() || !to.After(from) {
		return nil, nil
	}
	return t.activeLiens(account, from, to, limit)
}

func (t *tx) ExpiredLiens(at time.Time, limit int) ([]ledger.Lien, error) {
	var out []ledger.Lien
	c := t.bucket(bucketLiensActive).Cursor()
	// One account at a time: its keys are in expiry order, so its expired
	// liens come first; then on to the next account.
	for k, _ := c.First(); k != nil && len(out) < limit; {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return nil, fmt.Errorf("%w: %s/%q has no account", ledger.ErrCorrupt, bucketLiensActive, k)
		}
		expired, err := t.activeLiens(string(k[:i]), time.Time{}, at, limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, expired...)
		k, _ = c.Seek(append(bytes.Clone(k[:i]), 1))
	}
	return out, nil
}

func (t *tx) Liens(fn func(ledger.Lien) (bool, error)) error {
	return eachFrom(t, bucketLiens, nil, t.lien, fn)
}

func (t *tx) LienCount() (uint64, error) { return t.count(bucketLiens), nil }

// count is how many keys a bucket holds.
func (t *tx) count(bucket []byte) uint64 { return uint64(t.bucket(bucket).Stats().KeyN) }

func (t *tx) NextChargeID() (uint64, error) { return t.nextID(bucketCharges) }

func (t *tx) Charge(id uint64) (ledger.Charge, bool, error) {
	key := encodeUint(id)
	return cached(t, bucketCharges, key, func(raw []byte) (ledger.Charge, error) { return t.charge(key, raw) })
}

// charge decodes a stored charge, in full or as a reference to its entry.
func (t *tx) charge(key, raw []byte) (ledger.Charge, error) {
	return carried(t, bucketCharges, key, raw, func(e ledger.Entry) *ledger.Charge { return e.Charge }, func(c *ledger.Charge) uint64 { return c.ID })
}

func (t *tx) PutCharge(c ledger.Charge, carrier uint64) error {
	if err := putCarried(t, bucketCharges, encodeUint(c.ID), c, carrier, true); err != nil {
		return err
	}
	if err := t.stored(bucketCharges, c.ID); err != nil {
		return err
	}
	return t.putRaw(bucketChargesJob, idKey(pairKey(c.Machine, c.JobID+"\x00"), c.ID), nil)
}

func (t *tx) JobCharges(machine, job string) ([]ledger.Charge, error) {
	prefix := pairKey(machine, job+"\x00")
	return indexed(t, bucketChargesJob, prefix, prefix, 0, t.Charge, nil)
}

func (t *tx) Charges(fn func(ledger.Charge) (bool, error)) error {
	return eachFrom(t, bucketCharges, nil, t.charge, fn)
}

func (t *tx) ChargeCount() (uint64, error) { return t.count(bucketCharges), nil }

// A record is stored as its value alone: its kind and key are the key. A
// journaled record larger than largeRecord is kept in records_large, and
// records holds inLarge in its place: bbolt keeps at least two records on
// a page, so a large record shared its pages with the next one, and a
// change of that one (the running sums of an account, which every change
// of the account writes) wrote the large one again, a rate table of
// 10,000 entries at each deposit. In records_large its neighbours are
// records that only the journal changes, as it does.
const largeRecord = 2048

// inLarge stands in records for a record kept in records_large (a value
// that is not JSON).
var inLarge = []byte{0xE2}

// recordValue is the value of the record stored at k as raw.
func (t *tx) recordValue(k, raw []byte) []byte {
	if bytes.Equal(raw, inLarge) {
		return t.get(bucketLarge, k)
	}
	return raw
}

func (t *tx) Record(kind, key string) (ledger.Record, bool, error) {
	k := pairKey(kind, key)
	value, ok, err := cached(t, bucketRecords, k, func(raw []byte) ([]byte, error) { return bytes.Clone(t.recordValue(k, raw)), nil })
	return ledger.Record{Kind: kind, Key: key, Value: value}, ok, err
}

func (t *tx) PutRecord(r ledger.Record) error {
	k := pairKey(r.Kind, r.Key)
	if r.Deleted {
		if err := t.delete(bucketLarge, k); err != nil {
			return err
		}
		return t.delete(bucketRecords, k)
	}
	if len(r.Value) == 0 {
		return fmt.Errorf("%w: record %s/%s has no value", ledger.ErrInvalid, r.Kind, r.Key)
	}
	stored := []byte(r.Value)
	var err error
	if len(r.Value) > largeRecord && !strings.HasPrefix(r.Kind, ledgerKinds) {
		stored, err = inLarge, t.putRaw(bucketLarge, k, r.Value)
	} else if t.bucket(bucketLarge).Get(k) != nil {
		err = t.delete(bucketLarge, k)
	}
	if err != nil {
		return err
	}
	if err := t.putRaw(bucketRecords, k, stored); err != nil {
		return err
	}
	t.written(bucketRecords, k, bytes.Clone(r.Value))
	return nil
}

// ledgerKinds begins the kinds of the ledger's own records, which are not
// journaled: the running sums among them, which every change writes.
const ledgerKinds = "ledger."

func (t *tx) Records(kind string) ([]ledger.Record, error) {
	prefix := pairKey(kind, "")
	var out []ledger.Record
	c := t.bucket(bucketRecords).Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		out = append(out, ledger.Record{Kind: kind, Key: string(k[len(prefix):]), Value: bytes.Clone(t.recordValue(k, raw))})
	}
	return out, nil
}

// A request record is content hash (32 bytes) ‖ seq (8) ‖ time (Unix ns,
// 8) ‖ the answer's JSON: JSON would encode the answer again. The answer
// is not packed: answers are kept for days, not for good (ledger's
// RequestRetention), so packing them would cost every change more than it
// saves the file.
const requestHeader = sha256.Size + 8 + 8

func unpackRequest(raw []byte) (ledger.RequestRecord, error) {
	var r ledger.RequestRecord
	if len(raw) < requestHeader {
		return r, fmt.Errorf("%w: request record of %d bytes is truncated", ledger.ErrCorrupt, len(raw))
	}
	copy(r.ContentHash[:], raw)
	r.Seq = decodeUint(raw[sha256.Size:])
	r.Time = time.Unix(0, int64(decodeUint(raw[sha256.Size+8:]))).UTC()
	r.Result = bytes.Clone(raw[requestHeader:])
	return r, nil
}

func (t *tx) Request(k ledger.RequestKey) (ledger.RequestRecord, bool, error) {
	raw := t.bucket(bucketRequests).Get(pairKey(k.Client, k.ID))
	if raw == nil {
		return ledger.RequestRecord{}, false, nil
	}
	r, err := unpackRequest(raw)
	if err != nil {
		return r, false, fmt.Errorf("request %q of %s: %w", k.ID, k.Client, err)
	}
	return r, true, nil
}

func (t *tx) PutRequest(k ledger.RequestKey, r ledger.RequestRecord) error {
	raw := make([]byte, 0, requestHeader+len(r.Result))
	raw = append(raw, r.ContentHash[:]...)
	raw = binary.BigEndian.AppendUint64(raw, r.Seq)
	raw = binary.BigEndian.AppendUint64(raw, encodeTime(r.Time))
	return t.putRaw(bucketRequests, pairKey(k.Client, k.ID), append(raw, r.Result...))
}

func (t *tx) DeleteRequest(k ledger.RequestKey) error {
	return t.delete(bucketRequests, pairKey(k.Client, k.ID))
}

func (t *tx) Requests(fn func(ledger.RequestKey, ledger.RequestRecord) (bool, error)) error {
	c := t.bucket(bucketRequests).Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		client, id, ok := bytes.Cut(k, []byte{0})
		if !ok {
			return fmt.Errorf("%w: request key %q has no client", ledger.ErrCorrupt, k)
		}
		r, err := unpackRequest(raw)
		if err != nil {
			return fmt.Errorf("request %q of %s: %w", id, client, err)
		}
		more, err := fn(ledger.RequestKey{Client: string(client), ID: string(id)}, r)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func sortByID(liens []ledger.Lien) {
	slices.SortFunc(liens, func(a, b ledger.Lien) int { return cmp.Compare(a.ID, b.ID) })
}
