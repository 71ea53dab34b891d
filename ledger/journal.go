package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/jsonbuf"
)

// Kind names what a journal entry did. Kinds are stored: add, never rename.
type Kind string

// The journal entry kinds.
const (
	KindInit           Kind = "init"
	KindNodeCreate     Kind = "node_create"
	KindNodeModify     Kind = "node_modify"
	KindNodeDeactivate Kind = "node_deactivate"
	KindUserAdd        Kind = "user_add"
	KindUserModify     Kind = "user_modify"
	KindMachineAdd     Kind = "machine_add"
	KindMachineModify  Kind = "machine_modify"
	KindDeposit        Kind = "deposit"
	KindWithdraw       Kind = "withdraw"
	KindTransfer       Kind = "transfer"
	KindRecord         Kind = "record"
	KindLienPlace      Kind = "lien_place"
	KindLienExtend     Kind = "lien_extend"
	KindLienRelease    Kind = "lien_release"
	KindLienExpire     Kind = "lien_expire"
	KindCharge         Kind = "charge"
	KindRefund         Kind = "refund"
)

// Kinds lists every entry kind, for validation and help texts.
var Kinds = []Kind{
	KindInit, KindNodeCreate, KindNodeModify, KindNodeDeactivate,
	KindUserAdd, KindUserModify, KindMachineAdd, KindMachineModify,
	KindDeposit, KindWithdraw, KindTransfer, KindRecord,
	KindLienPlace, KindLienExtend, KindLienRelease, KindLienExpire, KindCharge, KindRefund,
}

// Delta is the change one entry made to one allocation's amounts.
type Delta struct {
	Allocation uint64          `json:"allocation"`
	Account    string          `json:"account"`
	Amount     decimal.Decimal `json:"amount"`
	Deposited  decimal.Decimal `json:"deposited"`
}

// Entry is one journaled change. The state fields (Terms, NodeState, ...)
// carry the new value of whatever the entry created or modified; amounts move
// only through Deltas, so a replay recomputes them.
type Entry struct {
	Seq         uint64            `json:"seq"`
	Time        time.Time         `json:"time"`
	Actor       string            `json:"actor"`
	RequestID   string            `json:"request_id,omitempty"`
	Kind        Kind              `json:"kind"`
	Node        string            `json:"node,omitempty"`
	Ref         string            `json:"ref,omitempty"`
	Description string            `json:"description,omitempty"`
	Settings    *Settings         `json:"settings,omitempty"`
	NodeState   *Node             `json:"node_state,omitempty"`
	UserState   *User             `json:"user_state,omitempty"`
	Machine     *Machine          `json:"machine_state,omitempty"`
	Lien        *Lien             `json:"lien,omitempty"`
	Charge      *Charge           `json:"charge,omitempty"`
	Record      *Record           `json:"record,omitempty"`
	Terms       []AllocationTerms `json:"terms,omitempty"`
	Deltas      []Delta           `json:"deltas,omitempty"`
	PrevHash    string            `json:"prev_hash"`
	Hash        string            `json:"hash"`
}

// entrySizes and answerSizes hold the last length of each kind's entry
// and answer (set up once, then only read: safe for concurrent use).
var entrySizes, answerSizes = sizeHints(), sizeHints()

func sizeHints() map[Kind]*jsonbuf.SizeHint {
	m := make(map[Kind]*jsonbuf.SizeHint, len(Kinds))
	for _, k := range Kinds {
		m[k] = new(jsonbuf.SizeHint)
	}
	return m
}

// Encode is the entry's canonical encoding (JSON with Hash empty, exactly
// as encoding/json gives it: see encode.go) and its SHA-256. PrevHash is
// inside the hashed text, which is what chains the entries.
func (e Entry) Encode() (body []byte, hash string, err error) {
	body, _, err = e.writeBody(nil)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(body)
	return body, hex.EncodeToString(sum[:]), nil
}

// carriedSpans are where in an entry's body the lien and charge it
// carries start and end.
type carriedSpans struct{ lien, charge [2]int }

// writeBody appends e's canonical encoding (Hash empty) to dst and notes
// where the lien and charge it carries are.
func (e Entry) writeBody(dst []byte) (out []byte, carried carriedSpans, err error) {
	e.Hash = ""
	b := jsonbuf.New(dst)
	e.writeJSON(b, &carried)
	out, err = b.Bytes()
	if err != nil {
		return nil, carried, fmt.Errorf("ledger: encode entry %d: %w", e.Seq, err)
	}
	return out, carried, nil
}

// parts are the lien's and charge's encodings in body, as full slices:
// whoever appends to one gets a copy, not the body's bytes.
func (c carriedSpans) parts(e Entry, body []byte) (lien, charge []byte) {
	if e.Lien != nil {
		lien = body[c.lien[0]:c.lien[1]:c.lien[1]]
	}
	if e.Charge != nil {
		charge = body[c.charge[0]:c.charge[1]:c.charge[1]]
	}
	return lien, charge
}

// A SealableEntry is a journal entry encoded as it is stored (room for its
// SHA-256, then its canonical JSON) but for the hash of the entry before
// it, which Seal writes in before it hashes the text. The store seals
// entries in journal order after their transaction, on another goroutine:
// the previous entry's hash is only known once it is sealed, and hashing
// on the single writer was a tenth of its time.
type SealableEntry struct {
	value []byte
	// prevAt is where the previous entry's hash goes in value, in hex;
	// -1 for the first entry, which has none.
	prevAt int
	sealed bool // the value is complete as it is (SealedEntry)
}

// prevHashPlaceholder fills prev_hash until Seal writes the hash in: as
// long as one in hex, so that nothing around it moves.
var prevHashPlaceholder = strings.Repeat("0", 2*sha256.Size)

// entryTail is how every entry's canonical JSON ends after its previous
// hash (its own hash is empty in what is hashed).
const entryTail = `","hash":""}`

// sealableEntry is an entry encoded for the store (its PrevHash to be
// sealed in, unless it is the first) and the encodings of the lien and
// charge it carries (parts of the entry's value).
type sealableEntry struct {
	sealable     SealableEntry
	lien, charge []byte
}

// encodeSealable encodes e for Tx.AppendEntry. Its PrevHash is ignored:
// an entry after the first gets its previous entry's as it is sealed.
func (e Entry) encodeSealable() (sealableEntry, error) {
	e.PrevHash = ""
	if e.Seq > 1 {
		e.PrevHash = prevHashPlaceholder
	}
	hint := entrySizes[e.Kind]
	value, carried, err := e.writeBody(append(hint.Buf(), make([]byte, sha256.Size)...))
	if err != nil {
		return sealableEntry{}, err
	}
	hint.Note(value)
	enc := sealableEntry{sealable: SealableEntry{value: value, prevAt: -1}}
	if e.Seq > 1 {
		enc.sealable.prevAt = len(value) - len(entryTail) - len(prevHashPlaceholder)
		if !bytes.HasSuffix(value, []byte(prevHashPlaceholder+entryTail)) {
			return sealableEntry{}, fmt.Errorf("ledger: encode entry %d: its previous hash is not where it belongs", e.Seq)
		}
	}
	enc.lien, enc.charge = carried.parts(e, value)
	return enc, nil
}

// SealedEntry is an entry stored as it is, its hashes set already (hash
// and PrevHash inside body): a copy of a journal, or a forged entry for
// the audit to find. body is the canonical encoding (Encode).
func SealedEntry(hash string, body []byte) (SealableEntry, error) {
	value := make([]byte, sha256.Size, sha256.Size+len(body))
	if len(hash) != 2*sha256.Size {
		return SealableEntry{}, fmt.Errorf("%w: entry hash %q is not a SHA-256", ErrInvalid, hash)
	}
	if _, err := hex.Decode(value, []byte(hash)); err != nil {
		return SealableEntry{}, fmt.Errorf("%w: entry hash %q is not a SHA-256", ErrInvalid, hash)
	}
	return SealableEntry{value: append(value, body...), sealed: true}, nil
}

// Seal writes prev (the previous entry's SHA-256; nil for the first
// entry) into the entry and its own hash before it, and returns the value
// to store: the hash, then the canonical JSON. It is called once: it
// writes into the entry's own bytes.
func (s SealableEntry) Seal(prev []byte) ([]byte, error) {
	if s.sealed {
		return s.value, nil
	}
	if (s.prevAt < 0) != (prev == nil) || (prev != nil && len(prev) != sha256.Size) {
		return nil, fmt.Errorf("ledger: seal an entry with a previous hash of %d bytes: %w", len(prev), ErrCorrupt)
	}
	if prev != nil {
		hex.Encode(s.value[s.prevAt:], prev)
	}
	sum := sha256.Sum256(s.value[sha256.Size:])
	copy(s.value, sum[:])
	return s.value, nil
}

// ComputeHash is the hash Encode gives.
func (e Entry) ComputeHash() (string, error) {
	_, hash, err := e.Encode()
	return hash, err
}
