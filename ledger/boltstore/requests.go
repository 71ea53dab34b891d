package boltstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/ledger"
)

// A request record is packed rather than JSON: every change with a request
// id writes one, and its answer (already JSON) would otherwise be encoded a
// second time, as base64 inside a JSON object. The layout is
//
//	content hash (32 bytes) ‖ seq (8) ‖ time (Unix ns, 8) ‖ answer (the rest)
//
// where the answer is its JSON or, for an answer kept by reference to
// entry seq, 0x01 and what the answer holds beyond the entry
// (ledger.AnswerReference): the store keeps either as it is given.
const requestHeader = sha256.Size + 8 + 8

// packRequest packs r with answer, its JSON (r.Result, or nothing for
// r.Answer to append). hash is r.ContentHash decoded (contentHash).
func packRequest(r ledger.RequestRecord, hash, answer []byte) []byte {
	out := make([]byte, 0, requestHeader+len(answer))
	out = append(out, hash...)
	out = binary.BigEndian.AppendUint64(out, r.Seq)
	out = binary.BigEndian.AppendUint64(out, uint64(r.Time.UnixNano()))
	return append(out, answer...)
}

func contentHash(r ledger.RequestRecord) ([]byte, error) {
	hash, err := hex.DecodeString(r.ContentHash)
	if err != nil || len(hash) != sha256.Size {
		return nil, fmt.Errorf("%w: request content hash %q is not a SHA-256", ledger.ErrInvalid, r.ContentHash)
	}
	return hash, nil
}

func unpackRequest(raw []byte) (ledger.RequestRecord, error) {
	if len(raw) < requestHeader {
		return ledger.RequestRecord{}, fmt.Errorf("%w: request record of %d bytes is truncated", ledger.ErrCorrupt, len(raw))
	}
	return ledger.RequestRecord{
		ContentHash: hex.EncodeToString(raw[:sha256.Size]),
		Seq:         binary.BigEndian.Uint64(raw[sha256.Size:]),
		Time:        time.Unix(0, int64(binary.BigEndian.Uint64(raw[sha256.Size+8:]))).UTC(),
		Result:      append([]byte(nil), raw[requestHeader:]...), // raw is only valid in the transaction
	}, nil
}

func (t *tx) Request(k ledger.RequestKey) (ledger.RequestRecord, bool, error) {
	raw := t.bucket(bucketRequests).Get(requestKey(k))
	if raw == nil {
		return ledger.RequestRecord{}, false, nil
	}
	r, err := unpackRequest(raw)
	if err != nil {
		return r, false, fmt.Errorf("request %q of %s: %w", k.ID, k.Client, err)
	}
	return r, true, nil
}

// PutRequest stores r; an answer given as r.Answer is encoded after the
// record's header, at once or, deferred, when the log or a retry first
// needs the record (a deferred value).
func (t *tx) PutRequest(k ledger.RequestKey, r ledger.RequestRecord) error {
	hash, err := contentHash(r)
	if err != nil {
		return err
	}
	if r.Answer == nil {
		return t.putRaw(bucketRequests, requestKey(k), packRequest(r, hash, r.Result))
	}
	if !r.Deferred {
		packed, err := packAnswer(r, hash)
		if err != nil {
			return err
		}
		return t.putRaw(bucketRequests, requestKey(k), packed)
	}
	if t.s == nil {
		return bolt.ErrTxNotWritable
	}
	t.s.record(write{bucket: bucketRequests, key: requestKey(k), later: &deferred{make: func() ([]byte, error) { return packAnswer(r, hash) }}})
	return nil
}

// packAnswer packs r with the answer r.Answer appends to the header.
func packAnswer(r ledger.RequestRecord, hash []byte) ([]byte, error) {
	return r.Answer(packRequest(r, hash, nil))
}
