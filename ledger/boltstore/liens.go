package boltstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/decimals"
	"github.com/ingot-hpc/ingot/internal/jsonbuf"
	"github.com/ingot-hpc/ingot/ledger"
)

func jobKey(machine, job string) []byte { return pairKey(machine, job) }

func expiryKey(t time.Time, id uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(t.UnixNano())), id)
}

func (t *tx) nextID(bucket bucketID) (uint64, error) {
	id, err := t.bucket(bucket).NextSequence()
	if err != nil {
		return 0, fmt.Errorf("boltstore: next %s id: %w", bucket, err)
	}
	return id, nil
}

// index adds (or, with add false, removes) an index key.
func (t *tx) index(bucket bucketID, key []byte, value []byte, add bool) error {
	b := t.bucket(bucket)
	var err error
	if add {
		err = b.Put(key, value)
	} else {
		err = b.Delete(key)
	}
	if err != nil {
		return fmt.Errorf("boltstore: index %s: %w", bucket, err)
	}
	return nil
}

func (t *tx) NextLienID() (uint64, error) { return t.nextID(bucketLiens) }

func (t *tx) Lien(id uint64) (ledger.Lien, bool, error) {
	return get[ledger.Lien](t, bucketLiens, encodeUint(id))
}

func activeKey(l ledger.Lien) []byte {
	k := append(append(make([]byte, 0, len(l.Account)+1+16), l.Account...), 0)
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(k, uint64(l.Expires.UnixNano())), l.ID)
}

func (t *tx) PutLien(l ledger.Lien, encoded []byte, old *ledger.Lien) error {
	if len(encoded) == 0 {
		return fmt.Errorf("%w: lien %d given without its encoding", ledger.ErrInvalid, l.ID)
	}
	if old != nil && old.State == ledger.LienActive {
		if err := t.index(bucketLiensActive, activeKey(*old), nil, false); err != nil {
			return err
		}
		if err := t.index(bucketLiensExpiry, expiryKey(old.Expires, old.ID), nil, false); err != nil {
			return err
		}
		if err := t.addSums(bucketReserved, old.Account, old.Project, old.Holds, -1); err != nil {
			return err
		}
		if err := t.addSums(bucketReservedSum, old.Account, "", old.Holds, -1); err != nil {
			return err
		}
	}
	if l.State == ledger.LienActive {
		if err := t.index(bucketLiensActive, activeKey(l), encodeProjectHolds(l.Project, l.Holds), true); err != nil {
			return err
		}
		if err := t.index(bucketLiensExpiry, expiryKey(l.Expires, l.ID), []byte{}, true); err != nil {
			return err
		}
		if err := t.addSums(bucketReserved, l.Account, l.Project, l.Holds, 1); err != nil {
			return err
		}
		if err := t.addSums(bucketReservedSum, l.Account, "", l.Holds, 1); err != nil {
			return err
		}
	}
	// The job index names the job's newest lien: a new lien's entry, not
	// an old one's again (a lien keeps its job).
	if old == nil || old.Machine != l.Machine || old.JobID != l.JobID {
		if err := t.index(bucketLiensByJob, jobKey(l.Machine, l.JobID), encodeUint(l.ID), true); err != nil {
			return err
		}
	}
	return putKept(t, bucketLiens, encodeUint(l.ID), encoded, l)
}

func sumKey(account, project string) []byte { return pairKey(account, project) }

// addSums adds (sign 1) or takes off (sign -1) holds from a project's
// running sums in bucket (reserved or charged).
func (t *tx) addSums(bucket bucketID, account, project string, holds []ledger.Hold, sign int64) error {
	key := sumKey(account, project)
	old, err := t.sumAt(bucket, key)
	if err != nil {
		return fmt.Errorf("%s sum of %s: %w", bucket, project, err)
	}
	// A new slice: the cache hands out the one it keeps, not a copy.
	sums := append(make([]ledger.Hold, 0, len(old)+len(holds)), old...)
	for _, h := range holds {
		// An account has few allocations: a walk finds a hold's sooner
		// than a map made for the purpose.
		i := slices.IndexFunc(sums, func(s ledger.Hold) bool { return s.Allocation == h.Allocation })
		if i < 0 {
			i = len(sums)
			sums = append(sums, ledger.Hold{Allocation: h.Allocation})
		}
		if sign < 0 {
			sums[i].Amount = decimals.Sub(sums[i].Amount, h.Amount)
		} else {
			sums[i].Amount = decimals.Add(sums[i].Amount, h.Amount)
		}
	}
	kept := sums[:0]
	for _, h := range sums {
		if !h.Amount.IsZero() {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		return t.index(bucket, key, nil, false)
	}
	// Encoded off the committer (a deferred value, overlay.go): no one
	// changes a running sum's slice once made.
	t.s.record(write{bucket: bucket, key: key, later: &deferred{make: func() ([]byte, error) { return encodeHolds(kept), nil }}})
	keep(t.cache, bucket, key, kept)
	return nil
}

// sum is the running sum at key, decoded from raw (what the bucket holds
// there) unless the committer's cache has it decoded: every lien and
// charge reads and writes an account's sums several times. The caller must
// not change it (the cache may hold the very slice).
func (t *tx) sum(bucket bucketID, key, raw []byte) ([]ledger.Hold, error) {
	if cached, ok := t.cache.lookupSum(bucket, key); ok {
		return cached, nil
	}
	holds, err := decodeHolds(raw)
	if err == nil && raw != nil {
		keep(t.cache, bucket, key, holds)
	}
	return holds, err
}

// sumAt is the running sum at key, read from the bucket only when the
// committer's cache does not have it.
func (t *tx) sumAt(bucket bucketID, key []byte) ([]ledger.Hold, error) {
	if cached, ok := t.cache.lookupSum(bucket, key); ok {
		return cached, nil
	}
	return t.sum(bucket, key, t.bucket(bucket).Get(key))
}

// sums reads an account's running sums from bucket, per project.
func (t *tx) sums(bucket bucketID, account string) (ledger.ByProject, error) {
	out := ledger.ByProject{}
	prefix := append([]byte(account), 0)
	c := t.bucket(bucket).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		holds, err := t.sum(bucket, k, v)
		if err != nil {
			return nil, fmt.Errorf("%s sum of %s: %w", bucket, k[len(prefix):], err)
		}
		for _, h := range holds {
			out.Add(string(k[len(prefix):]), h.Allocation, h.Amount)
		}
	}
	return out, nil
}

func (t *tx) JobLien(machine, job string) (ledger.Lien, bool, error) {
	v := t.bucket(bucketLiensByJob).Get(jobKey(machine, job))
	if v == nil {
		return ledger.Lien{}, false, nil
	}
	return t.mustLien(decodeUint(v))
}

func (t *tx) mustLien(id uint64) (ledger.Lien, bool, error) {
	l, ok, err := t.Lien(id)
	if err == nil && !ok {
		err = fmt.Errorf("%w: an index names lien %d, which does not exist", ledger.ErrCorrupt, id)
	}
	return l, ok, err
}

func (t *tx) ActiveLiens(account string) ([]ledger.Lien, error) {
	prefix := append([]byte(account), 0)
	var out []ledger.Lien
	c := t.bucket(bucketLiensActive).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		l, _, err := t.mustLien(decodeUint(k[len(prefix)+8:]))
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b ledger.Lien) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Reserved is the account's running sums less the holds of the active
// liens already expired at t: those the sweeper has not marked yet, found
// at the start of the account's expiry-ordered index.
func (t *tx) Reserved(account string, at time.Time) (ledger.ByProject, error) {
	reserved, err := t.sums(bucketReserved, account)
	if err != nil {
		return nil, err
	}
	err = t.expiredHolds(account, at, func(project string, h ledger.Hold) {
		reserved.Add(project, h.Allocation, h.Amount.Neg())
	})
	return reserved, err
}

func (t *tx) ReservedTotal(account string, at time.Time) (map[uint64]decimal.Decimal, error) {
	// One key, read directly (every lien and charge does): a walk of
	// the account's prefix made a cursor and a map of maps.
	total, err := t.sumAt(bucketReservedSum, sumKey(account, ""))
	if err != nil {
		return nil, fmt.Errorf("%s sum of %s: %w", bucketReservedSum, account, err)
	}
	reserved := make(map[uint64]decimal.Decimal, len(total))
	for _, h := range total {
		reserved[h.Allocation] = decimals.Add(reserved[h.Allocation], h.Amount)
	}
	err = t.expiredHolds(account, at, func(_ string, h ledger.Hold) {
		reserved[h.Allocation] = decimals.Sub(reserved[h.Allocation], h.Amount)
	})
	return reserved, err
}

// expiredHolds calls fn for each hold of the account's active liens that
// have expired at t.
func (t *tx) expiredHolds(account string, at time.Time, fn func(project string, h ledger.Hold)) error {
	prefix := append([]byte(account), 0)
	c := t.bucket(bucketLiensActive).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && decodeUint(k[len(prefix):]) <= unixNanos(at); k, v = c.Next() {
		project, expired, err := decodeProjectHolds(v)
		if err != nil {
			return fmt.Errorf("lien %d: %w", decodeUint(k[len(prefix)+8:]), err)
		}
		for _, h := range expired {
			fn(project, h)
		}
	}
	return nil
}

// unixNanos orders times as the indexes do; expiries are after 1970, so an
// earlier time comes before all of them.
func unixNanos(at time.Time) uint64 {
	if at.After(time.Unix(0, 0)) {
		return uint64(at.UnixNano())
	}
	return 0
}

func (t *tx) NextExpiry(account string, at time.Time) (time.Time, bool, error) {
	prefix := append([]byte(account), 0)
	c := t.bucket(bucketLiensActive).Cursor()
	k, _ := c.Seek(binary.BigEndian.AppendUint64(prefix, unixNanos(at)+1))
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return time.Time{}, false, nil
	}
	return time.Unix(0, int64(decodeUint(k[len(prefix):]))).UTC(), true, nil
}

func (t *tx) AccountVersion(account string) (string, error) {
	return string(t.bucket(bucketVersions).Get([]byte(account))), nil
}

func (t *tx) PutAccountVersion(account, version string) error {
	return t.index(bucketVersions, []byte(account), []byte(version), true)
}

func (t *tx) Charged(account string) (ledger.ByProject, error) {
	return t.sums(bucketCharged, account)
}

// encodeProjectHolds packs a lien's project (length, text) and holds for
// the active-lien index.
func encodeProjectHolds(project string, holds []ledger.Hold) []byte {
	return append(append([]byte{byte(len(project))}, project...), encodeHolds(holds)...)
}

func decodeProjectHolds(b []byte) (string, []ledger.Hold, error) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return "", nil, fmt.Errorf("%w: active-lien index entry is truncated", ledger.ErrCorrupt)
	}
	holds, err := decodeHolds(b[1+int(b[0]):])
	return string(b[1 : 1+int(b[0])]), holds, err
}

// encodeHolds packs holds as, for each, the allocation id, the length of
// the amount's text and the text. Balances read it on every lien and
// charge, so it avoids JSON.
func encodeHolds(holds []ledger.Hold) []byte {
	b := make([]byte, 0, len(holds)*(9+24))
	for _, h := range holds {
		b = binary.BigEndian.AppendUint64(b, h.Allocation)
		at := len(b)
		b = jsonbuf.AppendDecimal(append(b, 0), h.Amount) // the text's length, then the text
		b[at] = byte(len(b) - at - 1)
	}
	return b
}

func decodeHolds(b []byte) ([]ledger.Hold, error) {
	var holds []ledger.Hold
	for len(b) > 0 {
		if len(b) < 9 || len(b) < 9+int(b[8]) {
			return nil, fmt.Errorf("%w: packed holds are truncated", ledger.ErrCorrupt)
		}
		amount, err := decimal.NewFromString(string(b[9 : 9+int(b[8])]))
		if err != nil {
			return nil, fmt.Errorf("%w: packed hold amount: %v", ledger.ErrCorrupt, err)
		}
		holds = append(holds, ledger.Hold{Allocation: decodeUint(b), Amount: amount})
		b = b[9+int(b[8]):]
	}
	return holds, nil
}

func (t *tx) ExpiredLiens(before time.Time, limit int) ([]ledger.Lien, error) {
	var out []ledger.Lien
	end := uint64(before.UnixNano())
	c := t.bucket(bucketLiensExpiry).Cursor()
	for k, _ := c.First(); k != nil && decodeUint(k[:8]) <= end && len(out) < limit; k, _ = c.Next() {
		l, _, err := t.mustLien(decodeUint(k[8:]))
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

func (t *tx) Liens() ([]ledger.Lien, error) { return all[ledger.Lien](t, bucketLiens) }

func (t *tx) NextChargeID() (uint64, error) { return t.nextID(bucketCharges) }

func (t *tx) Charge(id uint64) (ledger.Charge, bool, error) {
	return get[ledger.Charge](t, bucketCharges, encodeUint(id))
}

func (t *tx) PutCharge(c ledger.Charge, encoded []byte, old *ledger.Charge) error {
	if len(encoded) == 0 {
		return fmt.Errorf("%w: charge %d given without its encoding", ledger.ErrInvalid, c.ID)
	}
	if old != nil {
		if err := t.addSums(bucketCharged, old.Account, old.Project, old.NetDebits(), -1); err != nil {
			return err
		}
	}
	if err := t.addSums(bucketCharged, c.Account, c.Project, c.NetDebits(), 1); err != nil {
		return err
	}
	key := binary.BigEndian.AppendUint64(append(jobKey(c.Machine, c.JobID), 0), c.ID)
	if err := t.index(bucketChargesJob, key, []byte{}, true); err != nil {
		return err
	}
	return putKept(t, bucketCharges, encodeUint(c.ID), encoded, c)
}

func (t *tx) JobCharges(machine, job string) ([]ledger.Charge, error) {
	prefix := append(jobKey(machine, job), 0)
	var out []ledger.Charge
	c := t.bucket(bucketChargesJob).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id := decodeUint(k[len(prefix):])
		ch, ok, err := t.Charge(id)
		if err == nil && !ok {
			err = fmt.Errorf("%w: job index names charge %d, which does not exist", ledger.ErrCorrupt, id)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

func (t *tx) Charges() ([]ledger.Charge, error) { return all[ledger.Charge](t, bucketCharges) }

func recordKey(kind, key string) []byte { return pairKey(kind, key) }

func (t *tx) Record(kind, key string) (ledger.Record, bool, error) {
	return get[ledger.Record](t, bucketRecords, recordKey(kind, key))
}

func (t *tx) PutRecord(r ledger.Record) error {
	if r.Deleted {
		return t.index(bucketRecords, recordKey(r.Kind, r.Key), nil, false)
	}
	return put(t, bucketRecords, recordKey(r.Kind, r.Key), r)
}

func (t *tx) Records(kind string) ([]ledger.Record, error) {
	prefix := append([]byte(kind), 0)
	var out []ledger.Record
	c := t.bucket(bucketRecords).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		r, _, err := get[ledger.Record](t, bucketRecords, k)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
