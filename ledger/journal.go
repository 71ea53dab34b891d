package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	enc, err := e.encode()
	return enc.body, enc.hash, err
}

// encodedEntry is an entry's canonical encoding and hash, and the
// encodings of the lien and charge it carries (parts of body, nil when it
// carries none), which are the records' own: a lien or charge written
// with its entry is not encoded twice.
type encodedEntry struct {
	body, lien, charge []byte
	hash               string
}

// carriedSpans are where in an entry's body the lien and charge it
// carries start and end.
type carriedSpans struct{ lien, charge [2]int }

func (e Entry) encode() (encodedEntry, error) {
	e.Hash = ""
	hint := entrySizes[e.Kind]
	b := jsonbuf.New(hint.Buf())
	var carried carriedSpans
	e.writeJSON(b, &carried)
	body, err := b.Bytes()
	if err != nil {
		return encodedEntry{}, fmt.Errorf("ledger: encode entry %d: %w", e.Seq, err)
	}
	hint.Note(body)
	sum := sha256.Sum256(body)
	enc := encodedEntry{body: body, hash: hex.EncodeToString(sum[:])}
	// Full slices: whoever appends to one gets a copy, not the body's bytes.
	if e.Lien != nil {
		enc.lien = body[carried.lien[0]:carried.lien[1]:carried.lien[1]]
	}
	if e.Charge != nil {
		enc.charge = body[carried.charge[0]:carried.charge[1]:carried.charge[1]]
	}
	return enc, nil
}

// ComputeHash is the hash Encode gives.
func (e Entry) ComputeHash() (string, error) {
	_, hash, err := e.Encode()
	return hash, err
}
