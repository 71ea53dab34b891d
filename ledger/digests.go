package ledger

import (
	"crypto/sha256"
	"encoding/hex"
)

// digestKind is the kind of the records in which the ledger keeps, for
// each journaled record, the SHA-256 of its value (key: the record's kind
// and key): a caller that keeps something made from a large record (the
// compiled rate table) checks that it is still the record's by reading
// the digest, not the record. Like the running sums, they are the
// ledger's own and not journaled.
const digestKind = "ledger.digest"

func digestKey(kind, key string) string { return kind + "/" + key }

// putRecordDigest keeps the digest of a record written (or removes it
// with the record).
func putRecordDigest(tx Tx, r Record) error {
	d := Record{Kind: digestKind, Key: digestKey(r.Kind, r.Key), Deleted: r.Deleted}
	if !r.Deleted {
		sum := sha256.Sum256(r.Value)
		d.Value = []byte(`"` + hex.EncodeToString(sum[:]) + `"`)
	}
	return tx.PutRecord(d)
}

// RecordDigest is the SHA-256 of record kind/key's value, as the ledger
// kept it when the record was written; ok is false if the record is
// absent, or was written before the ledger kept digests (then only the
// record itself tells). Reading it costs the same whatever the record's
// size.
func RecordDigest(tx Tx, kind, key string) (digest string, ok bool, err error) {
	r, ok, err := tx.Record(digestKind, digestKey(kind, key))
	if err != nil || !ok {
		return "", false, err
	}
	return string(r.Value), true, nil
}
